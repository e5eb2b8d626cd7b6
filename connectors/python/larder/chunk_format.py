"""The value layout of one KV-cache chunk stored by the LMCache `larder://` connector: one key
per chunk, the chunk's description in front of its bytes, so a get needs one round trip, an
unfull chunk keeps its real shape, and a value that does not describe itself exactly is a miss,
never a tensor of the wrong shape.

A chunk of one tensor (one KV-cache group, every model but hybrid-attention ones):

    offset  size  field
    0       4     magic b"LKV1"
    4       2     header length H (little-endian u16), this table included
    6       1     ndim (1..8)
    7       1     dtype name length D
    8       4     memory format code (little-endian i32; LMCache's MemoryFormat value)
    12      8*ndim shape (little-endian i64 each)
    ..      D     dtype name, ASCII (torch's name without "torch.", e.g. "bfloat16")
    H       ...   payload: the chunk's bytes, exactly prod(shape) * itemsize(dtype)

A chunk of several groups (LMCache's memory object of a hybrid-attention model, one tensor per
KV-cache group, the groups' bytes one after another in one buffer):

    0       4     magic b"LKV2"
    4       2     header length H (little-endian u16), this table included
    6       1     group count G (1..255)
    7       1     0
    8       4     memory format code (little-endian i32)
    12      ...   G group descriptors, each: ndim (1 byte, 1..8), dtype name length D (1 byte),
                  shape (8*ndim: little-endian i64 each), dtype name (D bytes, ASCII)
    H       ...   payload: group 0's bytes, then group 1's, ...; exactly the sum over the groups
                  of prod(shape) * itemsize(dtype)

A one-group chunk is always written as LKV1, so what this connector stored before it knew of
groups reads back unchanged, and connectors that know only LKV1 still read every one-group chunk.
"""
import math
import struct

MAGIC = b"LKV1"  # one group
MAGIC_GROUPS = b"LKV2"  # several groups
MAX_NDIM = 8
MAX_GROUPS = 255
_FIXED = struct.Struct("<4sHBBi")  # magic, header length, ndim | group count, dtype length | 0, fmt
_GROUP = struct.Struct("<BB")  # LKV2's per-group ndim, dtype name length
ITEMSIZE = {"bfloat16": 2, "float16": 2, "half": 2, "float32": 4, "float": 4, "float64": 8,
            "double": 8, "uint8": 1, "int8": 1, "float8_e4m3fn": 1, "float8_e5m2": 1,
            "int32": 4, "int64": 8}


class ChunkFormatError(ValueError):
    """The stored value is not a chunk this connector wrote (treat it as a miss)."""


def _check_group(shape, dtype_name):
    if not 1 <= len(shape) <= MAX_NDIM:
        raise ValueError(f"shape {tuple(shape)} must have 1 to {MAX_NDIM} dimensions")
    if dtype_name not in ITEMSIZE:
        raise ValueError(f"unsupported dtype {dtype_name!r}")


def _dims(shape):
    return struct.pack(f"<{len(shape)}q", *shape)


def encode_header(shapes, dtype_names, fmt_code):
    """The header of a chunk of len(shapes) groups, group i a tensor of shapes[i] in
    dtype_names[i]; LKV1 for one group, LKV2 for several. Raises ValueError for a chunk this
    layout cannot describe."""
    if len(shapes) != len(dtype_names) or not 1 <= len(shapes) <= MAX_GROUPS:
        raise ValueError(f"{len(shapes)} shapes and {len(dtype_names)} dtypes: a chunk needs one "
                         f"of each per group, 1 to {MAX_GROUPS} groups")
    for shape, name in zip(shapes, dtype_names):
        _check_group(shape, name)
    if len(shapes) == 1:
        shape, name = shapes[0], dtype_names[0].encode("ascii")
        size = _FIXED.size + 8 * len(shape) + len(name)
        return _FIXED.pack(MAGIC, size, len(shape), len(name), int(fmt_code)) + _dims(shape) + name
    body = b"".join(_GROUP.pack(len(shape), len(name)) + _dims(shape) + name.encode("ascii")
                    for shape, name in zip(shapes, dtype_names))
    return _FIXED.pack(MAGIC_GROUPS, _FIXED.size + len(body), len(shapes), 0,
                       int(fmt_code)) + body


def payload_size(shapes, dtype_names):
    return sum(math.prod(shape) * ITEMSIZE[name] for shape, name in zip(shapes, dtype_names))


def _read_group(view, pos, ndim, dlen, end):
    """(shape, dtype name, position after them) of the group described at view[pos:end]."""
    if not 1 <= ndim <= MAX_NDIM or pos + 8 * ndim + dlen > end:
        raise ChunkFormatError("inconsistent chunk header")
    shape = struct.unpack_from(f"<{ndim}q", view, pos)
    pos += 8 * ndim
    name = bytes(view[pos:pos + dlen]).decode("ascii", "replace")
    if name not in ITEMSIZE or any(d < 0 for d in shape):
        raise ChunkFormatError(f"bad dtype {name!r} or shape {shape}")
    return shape, name, pos + dlen


def _read_groups(view, magic, size, count, dlen):
    if magic == MAGIC:
        shape, name, end = _read_group(view, _FIXED.size, count, dlen, size)
        groups = [(shape, name)]
    elif magic == MAGIC_GROUPS and count >= 1 and dlen == 0:
        groups, end = [], _FIXED.size
        for _ in range(count):
            if end + _GROUP.size > size:
                raise ChunkFormatError("inconsistent chunk header")
            ndim, glen = _GROUP.unpack_from(view, end)
            shape, name, end = _read_group(view, end + _GROUP.size, ndim, glen, size)
            groups.append((shape, name))
    else:
        raise ChunkFormatError(f"bad magic {bytes(magic)!r} or group count {count}")
    if end != size:
        raise ChunkFormatError("inconsistent chunk header")
    return [g[0] for g in groups], [g[1] for g in groups]


def decode(value):
    """(shapes, dtype names, fmt_code, payload memoryview) of a stored value, one shape and one
    dtype name per group; raises ChunkFormatError unless the header is well formed and the
    payload has exactly the size the header describes."""
    view = memoryview(value).cast("B")
    if len(view) < _FIXED.size:
        raise ChunkFormatError(f"value of {len(view)} bytes is shorter than a chunk header")
    magic, size, count, dlen, fmt = _FIXED.unpack_from(view)
    if size > len(view):
        raise ChunkFormatError("inconsistent chunk header")
    shapes, names = _read_groups(view, magic, size, count, dlen)
    payload = view[size:]
    if len(payload) != payload_size(shapes, names):
        raise ChunkFormatError(f"payload of {len(payload)} bytes, header says "
                               f"{payload_size(shapes, names)}")
    return shapes, names, fmt, payload
