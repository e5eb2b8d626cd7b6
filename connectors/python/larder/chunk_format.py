"""The value layout of one KV-cache chunk stored by the LMCache `larder://` connector: one key
per chunk, the chunk's description in front of its bytes, so a get needs one round trip, an
unfull chunk keeps its real shape, and a value that does not describe itself exactly is a miss,
never a tensor of the wrong shape.

    offset  size  field
    0       4     magic b"LKV1"
    4       2     header length H (little-endian u16), this table included
    6       1     ndim (1..8)
    7       1     dtype name length D
    8       4     memory format code (little-endian i32; LMCache's MemoryFormat value)
    12      8*ndim shape (little-endian i64 each)
    ..      D     dtype name, ASCII (torch's name without "torch.", e.g. "bfloat16")
    H       ...   payload: the chunk's bytes, exactly prod(shape) * itemsize(dtype)
"""
import math
import struct

MAGIC = b"LKV1"
_FIXED = struct.Struct("<4sHBBi")
ITEMSIZE = {"bfloat16": 2, "float16": 2, "half": 2, "float32": 4, "float": 4, "float64": 8,
            "double": 8, "uint8": 1, "int8": 1, "float8_e4m3fn": 1, "float8_e5m2": 1,
            "int32": 4, "int64": 8}


class ChunkFormatError(ValueError):
    """The stored value is not a chunk this connector wrote (treat it as a miss)."""


def encode_header(shape, dtype_name, fmt_code):
    if not 1 <= len(shape) <= 8:
        raise ValueError(f"shape {tuple(shape)} must have 1 to 8 dimensions")
    name = dtype_name.encode("ascii")
    if dtype_name not in ITEMSIZE:
        raise ValueError(f"unsupported dtype {dtype_name!r}")
    size = _FIXED.size + 8 * len(shape) + len(name)
    return (_FIXED.pack(MAGIC, size, len(shape), len(name), int(fmt_code))
            + struct.pack(f"<{len(shape)}q", *shape) + name)


def payload_size(shape, dtype_name):
    return math.prod(shape) * ITEMSIZE[dtype_name]


def decode(value):
    """(shape, dtype_name, fmt_code, payload memoryview) of a stored value; raises
    ChunkFormatError unless the header is well formed and the payload has exactly the size
    the header describes."""
    view = memoryview(value).cast("B")
    if len(view) < _FIXED.size:
        raise ChunkFormatError(f"value of {len(view)} bytes is shorter than a chunk header")
    magic, size, ndim, dlen, fmt = _FIXED.unpack_from(view)
    if magic != MAGIC:
        raise ChunkFormatError(f"bad magic {bytes(magic)!r}")
    if not 1 <= ndim <= 8 or size != _FIXED.size + 8 * ndim + dlen or size > len(view):
        raise ChunkFormatError("inconsistent chunk header")
    shape = struct.unpack_from(f"<{ndim}q", view, _FIXED.size)
    name = bytes(view[_FIXED.size + 8 * ndim:size]).decode("ascii", "replace")
    if name not in ITEMSIZE or any(d < 0 for d in shape):
        raise ChunkFormatError(f"bad dtype {name!r} or shape {shape}")
    payload = view[size:]
    if len(payload) != payload_size(shape, name):
        raise ChunkFormatError(f"payload of {len(payload)} bytes, header says "
                               f"{payload_size(shape, name)}")
    return shape, name, fmt, payload
