"""Larder inside LMCache's multi-process server: the `native_plugin` L2 adapter.

    lmcache server ... --l2-adapter '{"type": "native_plugin",
        "module_path": "larder.lmcache_native", "class_name": "LarderConnector",
        "adapter_params": {"path": "/nvme/larder", "max_disk_bytes": 2000000000000}}'

`LarderConnector(**adapter_params)` opens the store in `path` in LMCache's own process (no
server, no socket) and returns larder_native.LmcachePlugin, which implements the six methods
LMCache calls (event_fd, submit_batch_get/set/exists/delete, drain_completions, close): GET
batches are read by the engine's read threads straight into LMCache's buffers, and completions
are signalled through the eventfd. See docs/lmcache.md and native/lmcache_plugin.h.

Parameters: `path` (required), `max_disk_bytes` (0 = 80% of the free space), `wal` (False),
`workers` (batch threads, 2), `eviction_policy` ("lru-reuse").
"""
from .native import _native


def LarderConnector(path, max_disk_bytes=0, wal=False, workers=2, eviction_policy="lru-reuse",
                    **store_options):  # noqa: N802 - the name LMCache's config refers to
    store = _native.Store(path, max_disk_bytes=max_disk_bytes, wal=wal,
                          eviction_policy=eviction_policy, **store_options)
    return _native.LmcachePlugin(store, workers=workers)
