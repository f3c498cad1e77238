"""The wire protocol's frames and values (spec §15.2, §15.3): encoding and decoding.

A frame is b"ELMO", the body's length as a little-endian u32, and the body: one value, a map. A
value is a one-byte tag and its payload; arrays carry their dtype, shape and raw little-endian
bytes, so that encoding an array is one copy of its buffer. Both ends use this module: the harness
(conformance/process.py) and the protocol server for Python adapters (conformance/serve.py).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any, BinaryIO

import numpy as np

MAGIC = b"ELMO"
HEADER = struct.Struct("<4sI")
MAX_FRAME = 1 << 30  # 1 GiB: a larger declared body is refused before it is read (§15.7)

# dtype code (§15.3) <-> NumPy dtype, little-endian
DTYPES: dict[str, np.dtype] = {
    "f8": np.dtype("<f8"),
    "f4": np.dtype("<f4"),
    "i8": np.dtype("<i8"),
    "i4": np.dtype("<i4"),
    "i2": np.dtype("<i2"),
    "i1": np.dtype("<i1"),
    "u8": np.dtype("<u8"),
    "u4": np.dtype("<u4"),
    "u2": np.dtype("<u2"),
    "u1": np.dtype("<u1"),
    "b1": np.dtype("?"),
}
_CODES = {(dtype.kind, dtype.itemsize): code for code, dtype in DTYPES.items()}
_I64 = struct.Struct("<q")
_F64 = struct.Struct("<d")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")


class WireError(ValueError):
    """Bytes that are not a frame or a value of §15, or a Python value §15.3 cannot carry."""


# ------------------------------------------------------------------------------------- encoding


def _put_text(out: list[bytes], text: str) -> None:
    data = text.encode("utf-8")
    out.append(_U32.pack(len(data)))
    out.append(data)


class _Unencodable(Exception):
    """Raised deep inside _encode; the path to the value is built on the way out."""

    def __init__(self, why: str) -> None:
        self.why = why
        self.path: list[str] = []


def _encode(value: Any, out: list[bytes]) -> None:
    if value is None:
        out.append(b"n")
    elif isinstance(value, bool | np.bool_):
        out.append(b"t" if value else b"f")
    elif isinstance(value, int | np.integer):
        if not -(2**63) <= int(value) < 2**63:
            raise _Unencodable(f"the integer {value} does not fit in 64 bits")
        out.append(b"i" + _I64.pack(int(value)))
    elif isinstance(value, float):  # np.float64 is a float; other NumPy floats go as 0-d arrays
        out.append(b"d" + _F64.pack(value))
    elif isinstance(value, np.floating):
        _encode(np.asarray(value), out)
    elif isinstance(value, str):
        out.append(b"s")
        _put_text(out, value)
    elif isinstance(value, np.ndarray):
        _encode_array(value, out)
    elif isinstance(value, Mapping):
        out.append(b"m" + _U32.pack(len(value)))
        for key, item in value.items():
            if not isinstance(key, str):
                raise _Unencodable(f"the key {key!r} is not a string; maps carry string keys only")
            _put_text(out, key)
            try:
                _encode(item, out)
            except _Unencodable as exc:
                exc.path.append(f"[{key!r}]")
                raise
    elif isinstance(value, list | tuple):
        out.append(b"l" + _U32.pack(len(value)))
        for i, item in enumerate(value):
            try:
                _encode(item, out)
            except _Unencodable as exc:
                exc.path.append(f"[{i}]")
                raise
    else:
        raise _Unencodable(f"a {type(value).__name__} has no encoding")


def _encode_array(value: np.ndarray, out: list[bytes]) -> None:
    if type(value) is not np.ndarray:
        raise _Unencodable(f"a {type(value).__name__} (an ndarray subclass) has no encoding")
    code = _CODES.get((value.dtype.kind, value.dtype.itemsize))
    if code is None or value.dtype.kind not in "fiub":
        raise _Unencodable(f"arrays of dtype {value.dtype} have no encoding")
    if value.ndim > 255:
        raise _Unencodable(f"an array of {value.ndim} dimensions has no encoding")
    out.append(b"a" + code.encode("ascii") + bytes([value.ndim]) + b"".join(_U64.pack(n) for n in value.shape))
    out.append(np.ascontiguousarray(value, dtype=DTYPES[code]).tobytes())


def encode(value: Any, path: str = "value") -> bytes:
    """One value's bytes (§15.3); WireError names the path of a value that has no encoding."""
    out: list[bytes] = []
    try:
        _encode(value, out)
    except _Unencodable as exc:
        raise WireError(f"{path}{''.join(reversed(exc.path))}: {exc.why} (§15.3)") from None
    return b"".join(out)


def frame(message: Mapping[str, Any]) -> bytes:
    """A whole frame (§15.2) holding `message`."""
    body = encode(message, "message")
    if len(body) > MAX_FRAME:
        raise WireError(f"a message of {len(body)} bytes is larger than the frame limit of {MAX_FRAME} bytes (§15.7)")
    return HEADER.pack(MAGIC, len(body)) + body


# ------------------------------------------------------------------------------------- decoding


class _Reader:
    def __init__(self, data: bytes | memoryview) -> None:
        self.data = memoryview(data)
        self.at = 0

    def take(self, n: int, what: str) -> memoryview:
        if n < 0 or self.at + n > len(self.data):
            raise WireError(f"the body ends inside {what} (byte {self.at} of {len(self.data)})")
        chunk = self.data[self.at : self.at + n]
        self.at += n
        return chunk

    def u32(self, what: str) -> int:
        return _U32.unpack(self.take(4, what))[0]

    def text(self, what: str) -> str:
        raw = self.take(self.u32(what), what)
        try:
            return str(raw, "utf-8")
        except UnicodeDecodeError as exc:
            raise WireError(f"{what} at byte {self.at} is not UTF-8: {exc.reason}") from None


def _decode(reader: _Reader, depth: int) -> Any:
    if depth > 64:
        raise WireError("values are nested more than 64 deep")
    where = reader.at
    tag = bytes(reader.take(1, "a tag"))
    if tag == b"n":
        return None
    if tag == b"t":
        return True
    if tag == b"f":
        return False
    if tag == b"i":
        return _I64.unpack(reader.take(8, "an integer"))[0]
    if tag == b"d":
        return _F64.unpack(reader.take(8, "a float"))[0]
    if tag == b"s":
        return reader.text("a string")
    if tag == b"l":
        count = reader.u32("a list's length")
        return [_decode(reader, depth + 1) for _ in range(count)]
    if tag == b"m":
        count = reader.u32("a map's length")
        result: dict[str, Any] = {}
        for _ in range(count):
            key = reader.text("a map key")
            if key in result:
                raise WireError(f"the map key {key!r} appears twice")
            result[key] = _decode(reader, depth + 1)
        return result
    if tag == b"a":
        code = bytes(reader.take(2, "an array's dtype")).decode("ascii", "replace")
        if code not in DTYPES:
            raise WireError(f"unknown array dtype {code!r} at byte {where} (expected one of {', '.join(DTYPES)})")
        ndim = reader.take(1, "an array's number of dimensions")[0]
        shape = tuple(_U64.unpack(reader.take(8, "an array's shape"))[0] for _ in range(ndim))
        count = 1
        for n in shape:
            count *= n
        dtype = DTYPES[code]
        raw = reader.take(count * dtype.itemsize, f"the data of a {code} array of shape {list(shape)}")
        array = np.frombuffer(raw, dtype=dtype).reshape(shape).astype(dtype.newbyteorder("="), copy=True)
        if code == "b1" and np.any(np.frombuffer(raw, dtype=np.uint8) > 1):
            raise WireError(f"a b1 array at byte {where} holds bytes other than 0 and 1")
        return array
    raise WireError(f"unknown tag {tag!r} at byte {where} (expected one of n t f i d s l m a)")


def decode(body: bytes | memoryview) -> Any:
    """The one value of a frame's body (§15.3); trailing bytes are an error."""
    reader = _Reader(body)
    value = _decode(reader, 0)
    if reader.at != len(reader.data):
        raise WireError(f"{len(reader.data) - reader.at} bytes follow the value in the body")
    return value


def read_frame(stream: BinaryIO) -> dict[str, Any] | None:
    """The next message from a blocking stream, or None at end of file before a frame starts.
    The protocol server reads this way; the harness reads with deadlines (conformance/process.py)."""
    header = stream.read(HEADER.size)
    if not header:
        return None
    if len(header) < HEADER.size:
        raise WireError(f"the stream ends inside a frame header ({len(header)} of {HEADER.size} bytes)")
    magic, length = HEADER.unpack(header)
    if magic != MAGIC:
        raise WireError(f"expected a frame starting with {MAGIC!r}, got {header!r}")
    if length > MAX_FRAME:
        raise WireError(f"a frame declares {length} bytes, more than the limit of {MAX_FRAME}")
    body = stream.read(length)
    if len(body) < length:
        raise WireError(f"the stream ends inside a frame body ({len(body)} of {length} bytes)")
    message = decode(body)
    if not isinstance(message, dict):
        raise WireError(f"a frame holds a {type(message).__name__}; every message is a map (§15.2)")
    return message


def describe(value: Any, limit: int = 4) -> str:
    """A short description of a value for messages: types, dtypes and shapes, never the data."""
    if isinstance(value, np.ndarray):
        return f"{value.dtype}{list(value.shape)}"
    if isinstance(value, Mapping):
        items = list(value.items())
        shown = ", ".join(f"{key}: {describe(item, limit)}" for key, item in items[:limit])
        return "{" + shown + (f", ... ({len(items)} entries)" if len(items) > limit else "") + "}"
    if isinstance(value, list | tuple):
        shown = ", ".join(describe(item, limit) for item in value[:limit])
        return "[" + shown + (f", ... ({len(value)} items)" if len(value) > limit else "") + "]"
    if isinstance(value, str):
        return repr(value if len(value) <= 60 else value[:57] + "...")
    return repr(value)
