"""The wire protocol's frames and values (spec §15.2, §15.3): encoding and decoding.

A frame is b"ELMO", the body's length as a little-endian u32, and the body: one value, a map. A
value is a one-byte tag and its payload; arrays carry their dtype, shape and raw little-endian
bytes. Both ends use this module: the harness (adapters/wire/client.py) and the protocol server for
Python adapters (adapters/wire/server.py).

Costs: encoding a frame copies each array's buffer once (into the frame; an array that is not
C-contiguous little-endian is converted first), decoding copies each array's bytes once (out of
the body); no per-element Python work either way. Decoding is bounded (§11.1, §15.7): a body
that holds more than `max_values` values is refused as soon as the count is passed, a list, map or
array that declares more than its body can hold is refused before anything is built, and a
deadline is checked as values are built.
"""

from __future__ import annotations

import struct
import sys
import time
from collections.abc import Mapping
from typing import Any, BinaryIO

import numpy as np

MAGIC = b"ELMO"
HEADER = struct.Struct("<4sI")
MAX_FRAME = 1 << 30  # 1 GiB: a larger declared body is refused before it is read (§15.7)
MAX_DIMS = 64  # the most dimensions a NumPy array has; an array with more cannot be decoded

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
_NATIVE = sys.byteorder == "little"
# code bytes -> (wire dtype, native dtype)
_BY_CODE = {code.encode("ascii"): (dtype, dtype.newbyteorder("=")) for code, dtype in DTYPES.items()}
_I64 = struct.Struct("<q")
_F64 = struct.Struct("<d")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_TAG_I64 = struct.Struct("<cq")
_TAG_F64 = struct.Struct("<cd")
_TAG_U32 = struct.Struct("<cI")
_ARRAY_HEADS: dict[int, struct.Struct] = {}
# NumPy dtype -> (code, wire dtype, whether an array of it is sent as its own bytes)
_BY_DTYPE = {dtype: (code.encode("ascii"), dtype, True) for code, dtype in DTYPES.items()}


class WireError(ValueError):
    """Bytes that are not a frame or a value of §15, or a Python value §15.3 cannot carry."""


class WireTimeout(WireError):
    """Decoding passed its deadline."""


# ------------------------------------------------------------------------------------- encoding


class _Unencodable(Exception):
    """Raised deep inside _encode; the path to the value is built on the way out."""

    def __init__(self, why: str) -> None:
        self.why = why
        self.path: list[str] = []


def _text(out: list, text: str) -> None:
    data = text.encode("utf-8")
    out.append(_U32.pack(len(data)))
    out.append(data)


def _encode(value: Any, out: list) -> None:
    kind = type(value)
    if kind is np.ndarray:
        _encode_array(value, out)
    elif kind is float:
        out.append(_TAG_F64.pack(b"d", value))
    elif kind is str:
        data = value.encode("utf-8")
        out.append(_TAG_U32.pack(b"s", len(data)))
        out.append(data)
    elif kind is dict:
        _encode_map(value, out)
    elif kind is list or kind is tuple:
        _encode_list(value, out)
    elif value is None:
        out.append(b"n")
    elif kind is bool:
        out.append(b"t" if value else b"f")
    elif kind is int:
        if not -(2**63) <= value < 2**63:
            raise _Unencodable(f"the integer {value} does not fit in 64 bits")
        out.append(_TAG_I64.pack(b"i", value))
    else:
        _encode_other(value, out)


def _encode_other(value: Any, out: list) -> None:
    """Subclasses and NumPy scalars, in the order of the exact types above."""
    if isinstance(value, bool | np.bool_):
        out.append(b"t" if value else b"f")
    elif isinstance(value, int | np.integer):
        if not -(2**63) <= int(value) < 2**63:
            raise _Unencodable(f"the integer {value} does not fit in 64 bits")
        out.append(_TAG_I64.pack(b"i", int(value)))
    elif isinstance(value, float):  # np.float64 is a float; other NumPy floats go as 0-d arrays
        out.append(_TAG_F64.pack(b"d", value))
    elif isinstance(value, np.floating):
        _encode_array(np.asarray(value), out)
    elif isinstance(value, str):
        out.append(b"s")
        _text(out, value)
    elif isinstance(value, np.ndarray):
        _encode_array(value, out)
    elif isinstance(value, Mapping):
        _encode_map(value, out)
    elif isinstance(value, list | tuple):
        _encode_list(value, out)
    else:
        raise _Unencodable(f"a {type(value).__name__} has no encoding")


def _encode_map(value: Mapping, out: list) -> None:
    out.append(_TAG_U32.pack(b"m", len(value)))
    for key, item in value.items():
        if type(key) is not str and not isinstance(key, str):
            raise _Unencodable(f"the key {key!r} is not a string; maps carry string keys only")
        _text(out, key)
        try:
            _encode(item, out)
        except _Unencodable as exc:
            exc.path.append(f"[{key!r}]")
            raise


def _encode_list(value: list | tuple, out: list) -> None:
    out.append(_TAG_U32.pack(b"l", len(value)))
    for i, item in enumerate(value):
        try:
            _encode(item, out)
        except _Unencodable as exc:
            exc.path.append(f"[{i}]")
            raise


def _encode_array(value: np.ndarray, out: list) -> None:
    if type(value) is not np.ndarray:
        raise _Unencodable(f"a {type(value).__name__} (an ndarray subclass) has no encoding")
    dtype = value.dtype
    found = _BY_DTYPE.get(dtype)
    if found is None:
        code = _CODES.get((dtype.kind, dtype.itemsize))
        if code is None or dtype.kind not in "fiub":
            raise _Unencodable(f"arrays of dtype {dtype} have no encoding")
        found = (code.encode("ascii"), DTYPES[code], False)
    code_bytes, wanted, as_is = found
    ndim = value.ndim
    if ndim > 255:
        raise _Unencodable(f"an array of {ndim} dimensions has no encoding")
    head = _ARRAY_HEADS.get(ndim)
    if head is None:
        head = _ARRAY_HEADS[ndim] = struct.Struct(f"<c2sB{ndim}Q")
    out.append(head.pack(b"a", code_bytes, ndim, *value.shape))
    if as_is and value.flags.c_contiguous:
        if value.size:
            out.append(memoryview(value).cast("B"))  # type: ignore[arg-type]  # the buffer itself: copied once, into the frame
        return
    value = np.ascontiguousarray(value, dtype=wanted)  # the byte order of §15.3, C order
    out.append(value.reshape(-1).view(np.uint8))


def _parts(value: Any, path: str) -> list:
    out: list = []
    try:
        _encode(value, out)
    except _Unencodable as exc:
        raise WireError(f"{path}{''.join(reversed(exc.path))}: {exc.why} (§15.3)") from None
    return out


def encode(value: Any, path: str = "value") -> bytes:
    """One value's bytes (§15.3); WireError names the path of a value that has no encoding."""
    return b"".join(_parts(value, path))


def frame(message: Mapping[str, Any]) -> bytes:
    """A whole frame (§15.2) holding `message`: each array's bytes are copied once, into it."""
    parts = _parts(message, "message")
    size = sum(map(len, parts))
    if size > MAX_FRAME:
        raise WireError(f"a message of {size} bytes is larger than the frame limit of {MAX_FRAME} bytes (§15.7)")
    parts.insert(0, HEADER.pack(MAGIC, size))
    return b"".join(parts)


# ------------------------------------------------------------------------------------- decoding

_N, _T, _F, _I, _D, _S, _L, _M, _A = b"ntfidslma"
_CHECK_EVERY = 4096  # values between two looks at the clock


class _Decoder:
    """One body's values. `left` counts the values that may still be built; `sources` (when
    kept) maps id(array) to the read-only bytes it was copied from, for the purity check."""

    __slots__ = ("buf", "end", "left", "deadline", "next_check", "sources", "max_values")

    def __init__(self, body: bytes | bytearray | memoryview, max_values: int, deadline: float | None, keep: bool):
        self.buf = body if isinstance(body, memoryview) else memoryview(body)
        if self.buf.format != "B" or self.buf.ndim != 1:
            self.buf = self.buf.cast("B")
        self.end = len(self.buf)
        self.max_values = max_values
        self.left = max_values
        self.deadline = deadline
        self.next_check = _CHECK_EVERY
        self.sources: dict[int, np.ndarray] | None = {} if keep else None

    def short(self, pos: int, n: int, what: str) -> WireError:
        return WireError(f"the body ends inside {what} (byte {pos} of {self.end}, {n} more bytes needed)")

    def count(self, n: int = 1) -> None:
        self.left -= n
        if self.left < 0:
            raise WireError(f"the body holds more than {self.max_values} values, more than any answer can (§15.7)")
        if self.deadline is not None and self.max_values - self.left >= self.next_check:
            self.next_check += _CHECK_EVERY
            if time.monotonic() > self.deadline:
                raise WireTimeout("decoding the answer passed the call's deadline")

    def text(self, pos: int, what: str) -> tuple[str, int]:
        if pos + 4 > self.end:
            raise self.short(pos, 4, what)
        n = _U32.unpack_from(self.buf, pos)[0]
        pos += 4
        if pos + n > self.end:
            raise self.short(pos, n, what)
        try:
            return str(self.buf[pos : pos + n], "utf-8"), pos + n
        except UnicodeDecodeError as exc:
            raise WireError(f"{what} at byte {pos} is not UTF-8: {exc.reason}") from None

    def value(self, pos: int, depth: int) -> tuple[Any, int]:
        if pos >= self.end:
            raise self.short(pos, 1, "a tag")
        self.count()
        tag = self.buf[pos]
        pos += 1
        if tag == _A:
            return self.array(pos)
        if tag == _M:
            if depth >= 64:
                raise WireError("values are nested more than 64 deep")
            if pos + 4 > self.end:
                raise self.short(pos, 4, "a map's length")
            n = _U32.unpack_from(self.buf, pos)[0]
            pos += 4
            if n * 5 > self.end - pos:  # a key's length and a tag at least
                raise WireError(f"a map at byte {pos - 5} declares {n} entries, more than its body holds")
            result: dict[str, Any] = {}
            for _ in range(n):
                key, pos = self.text(pos, "a map key")
                if key in result:
                    raise WireError(f"the map key {key!r} appears twice")
                result[key], pos = self.value(pos, depth + 1)
            return result, pos
        if tag == _S:
            return self.text(pos, "a string")
        if tag == _D:
            if pos + 8 > self.end:
                raise self.short(pos, 8, "a float")
            return _F64.unpack_from(self.buf, pos)[0], pos + 8
        if tag == _L:
            if depth >= 64:
                raise WireError("values are nested more than 64 deep")
            if pos + 4 > self.end:
                raise self.short(pos, 4, "a list's length")
            n = _U32.unpack_from(self.buf, pos)[0]
            pos += 4
            if n > self.end - pos:  # a tag at least per item
                raise WireError(f"a list at byte {pos - 5} declares {n} items, more than its body holds")
            self.count(n)  # refused before anything is built when there are too many
            self.left += n
            items = []
            for _ in range(n):
                item, pos = self.value(pos, depth + 1)
                items.append(item)
            return items, pos
        if tag == _N:
            return None, pos
        if tag == _I:
            if pos + 8 > self.end:
                raise self.short(pos, 8, "an integer")
            return _I64.unpack_from(self.buf, pos)[0], pos + 8
        if tag == _T:
            return True, pos
        if tag == _F:
            return False, pos
        raise WireError(f"unknown tag {bytes([tag])!r} at byte {pos - 1} (expected one of n t f i d s l m a)")

    def array(self, pos: int) -> tuple[np.ndarray, int]:
        where = pos - 1
        if pos + 3 > self.end:
            raise self.short(pos, 3, "an array's dtype and number of dimensions")
        code = bytes(self.buf[pos : pos + 2])
        found = _BY_CODE.get(code)
        if found is None:
            shown = code.decode("ascii", "replace")
            raise WireError(f"unknown array dtype {shown!r} at byte {where} (expected one of {', '.join(DTYPES)})")
        dtype, native = found
        ndim = self.buf[pos + 2]
        pos += 3
        if pos + 8 * ndim > self.end:
            raise self.short(pos, 8 * ndim, "an array's shape")
        shape = _shape_struct(ndim).unpack_from(self.buf, pos) if ndim else ()
        pos += 8 * ndim
        if ndim > MAX_DIMS:
            raise WireError(f"an array at byte {where} has {ndim} dimensions; at most {MAX_DIMS} can be decoded")
        count = 1
        for n in shape:
            count *= n
        size = count * dtype.itemsize
        if size > self.end - pos:
            raise self.short(pos, size, f"the data of a {code.decode()} array of shape {list(shape)}")
        try:
            raw = np.ndarray(shape, dtype, self.buf, pos)
        except (ValueError, OverflowError, TypeError) as exc:  # a shape NumPy cannot hold, such as [0, 2**63]
            raise WireError(f"an array at byte {where} of shape {list(shape)} cannot be decoded: {exc}") from None
        if code == b"b1" and count and np.frombuffer(self.buf, np.uint8, count, pos).max() > 1:
            raise WireError(f"a b1 array at byte {where} holds bytes other than 0 and 1")
        array = raw.copy() if _NATIVE or native is dtype else raw.astype(native)
        if self.sources is not None and (_NATIVE or native is dtype):
            self.sources[id(array)] = raw
        return array, pos + size


def decode(
    body: bytes | bytearray | memoryview,
    max_values: int = 1 << 62,
    deadline: float | None = None,
    sources: dict[int, np.ndarray] | None = None,
) -> Any:
    """The one value of a frame's body (§15.3); trailing bytes are an error. At most `max_values`
    values are built, and WireTimeout is raised once `deadline` (time.monotonic) has passed. When
    `sources` is given it receives, for each decoded array, a read-only view of the bytes it was
    copied from, keyed by the array's id (the protocol server's purity check, §1.4)."""
    decoder = _Decoder(body, max_values, deadline, sources is not None)
    try:
        value, pos = decoder.value(0, 0)
    except WireError:
        raise
    except Exception as exc:  # whatever else fails, the answer does not decode (§15.7)
        raise WireError(f"the body cannot be decoded: {type(exc).__name__}: {exc}") from None
    if pos != decoder.end:
        raise WireError(f"{decoder.end - pos} bytes follow the value in the body")
    if sources is not None and decoder.sources:
        sources.update(decoder.sources)
    return value


_SHAPES: dict[int, struct.Struct] = {}


def _shape_struct(ndim: int) -> struct.Struct:
    found = _SHAPES.get(ndim)
    if found is None:
        found = _SHAPES[ndim] = struct.Struct(f"<{ndim}Q")
    return found


def read_frame(stream: BinaryIO, sources: dict[int, np.ndarray] | None = None) -> dict[str, Any] | None:
    """The next message from a blocking stream, or None at end of file before a frame starts.
    The protocol server reads this way; the harness reads with deadlines (adapters/wire/client.py)."""
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
    message = decode(body, sources=sources)
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
