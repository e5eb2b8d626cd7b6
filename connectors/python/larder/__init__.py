"""Python clients for Larder, the node-local KV-cache store.

* `larder.Client` / `larder.AsyncClient` — over RESP (TCP or unix socket) on redis-py, with
  batched and prefix operations in one round trip each.
* `larder.native.Store` — the engine in-process (pybind11 binding of the C API).
* `larder.lmcache_connector.LarderConnectorAdapter` — an LMCache remote-storage plugin
  claiming `larder://` URLs (docs/lmcache.md).
"""
from .client import DEFAULT_URL, PREFIX_COMMAND, AsyncClient, Client, parse_url

__all__ = ["AsyncClient", "Client", "DEFAULT_URL", "PREFIX_COMMAND", "parse_url"]
