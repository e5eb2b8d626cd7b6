"""Larder inside LMCache's multi-process server: the `native_plugin` L2 adapter.

In-process (no server, no socket; LMCache's process opens the data directory itself):

    lmcache server ... --l2-adapter '{"type": "native_plugin",
        "module_path": "larder.lmcache_native", "class_name": "LarderConnector",
        "adapter_params": {"path": "/nvme/larder", "max_disk_bytes": 2000000000000}}'

Over a running larder-server, for nodes that keep the sidecar:

        "adapter_params": {"server": "/run/larder/larder.sock", "timeout": 1.0}}'

Either way `LarderConnector(**adapter_params)` returns larder_native.LmcachePlugin, which
implements the methods LMCache calls (event_fd, submit_batch_get/set/exists/delete,
drain_completions, close) and signals completions through the eventfd. In-process, GET batches
are read by the engine's read threads straight into LMCache's buffers. Over the server, each
worker keeps one connection, a batch is split into one pipelined tile per worker, and each value
is received straight into its buffer; every socket wait is bounded by `timeout`, and a dead, restarting or stalled
server costs misses (failed completions), never a stall or an exception. See docs/lmcache.md,
native/lmcache_plugin.h and native/server_backend.h.

Parameters, in-process: `path` (required), `max_disk_bytes` (0 = 80% of the free space),
`wal` (False), `workers` (batch threads, 2), `eviction_policy` ("lru-reuse"), and the other
options of larder.native.Store. Over a server: `server` (a unix socket path, or host:port;
required), `workers` (connections, 4), `timeout` (seconds per socket wait, 1.0), `username`,
`password`.
"""
from .native import _native


def LarderConnector(path=None, server=None, workers=None, **options):  # noqa: N802 - LMCache's name
    if (path is None) == (server is None):
        raise ValueError("LarderConnector needs exactly one of path= (in-process store) "
                         "or server= (a running larder-server)")
    if server is not None:
        return _native.connect_plugin(server, workers=4 if workers is None else workers,
                                      **options)
    options.setdefault("wal", False)
    options.setdefault("eviction_policy", "lru-reuse")
    store = _native.Store(path, **options)
    # The store is the plugin's alone: LMCache's close() closes it (flushed, unlocked).
    return _native.LmcachePlugin(store, workers=2 if workers is None else workers,
                                 close_store=True)
