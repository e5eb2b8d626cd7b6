"""liblarder in-process, without a server: `larder.native.Store` is the pybind11 binding
`larder_native` of the C API (built by CMake into build/python/; put that directory on
PYTHONPATH, or set LARDER_NATIVE_DIR to it).

    from larder.native import Store
    with Store("/nvme/larder", max_disk_bytes=100 << 30) as s:
        s.put(b"key", memoryview(tensor_bytes))          # read in place, GIL released
        n = s.get_into(b"key", pinned_buffer)             # verified value written into buffer

Errors: larder.native.Error (NoSpaceError, CorruptionError) with the engine's message.
"""
import os
import sys

_dir = os.environ.get("LARDER_NATIVE_DIR") or os.path.normpath(
    os.path.join(os.path.dirname(__file__), "..", "..", "..", "build", "python"))
try:
    import larder_native as _native
except ImportError:
    if _dir not in sys.path:
        sys.path.append(_dir)
    try:
        import larder_native as _native
    except ImportError as e:
        raise ImportError(f"larder_native is not built (looked on PYTHONPATH and in {_dir}); "
                          "run scripts/build after scripts/deps --test (needs pybind11-dev, "
                          "python3-dev)") from e

Store = _native.Store
LmcachePlugin = _native.LmcachePlugin
Error = _native.Error
NoSpaceError = _native.NoSpaceError
CorruptionError = _native.CorruptionError

__all__ = ["Store", "LmcachePlugin", "Error", "NoSpaceError", "CorruptionError"]
