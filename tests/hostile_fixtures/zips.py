"""Zip archives written byte by byte, so that they can say what a hostile npz says: a member
that declares 2**40 bytes, a deflated run of zeros that expands to gigabytes (a zip bomb), a
name given twice or a name with a path in it.

Only what Python's ``zipfile`` reads is written: a local header, the data, the central
directory, and its end record. A declared size that does not fit 32 bits goes in a ZIP64 extra
field of the central directory, where ``zipfile`` looks for it.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

STORED, DEFLATED = zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED
_SMALL = 0xFFFF_FFFF  # a 32-bit size field at this value means: see the ZIP64 extra field


@dataclass(frozen=True)
class Member:
    """One entry: ``data`` is what the archive holds (compressed when ``method`` is DEFLATED),
    ``size`` and ``crc`` what the zip directory declares about the expanded member."""

    name: str
    data: bytes
    method: int
    size: int
    crc: int


def stored(name: str, payload: bytes) -> Member:
    return Member(name, payload, STORED, len(payload), zlib.crc32(payload))


def npy_header(shape: tuple[int, ...], descr: str = "<f8") -> bytes:
    """A ``.npy`` version 1.0 header claiming ``shape``; no data follows it."""
    header = {"descr": descr, "fortran_order": False, "shape": shape}
    text = repr(header).encode("latin1")
    pad = -(10 + len(text) + 1) % 64
    body = text + b" " * pad + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(body)) + body


def members_of(npz: Path) -> list[Member]:
    """The members of a real npz, stored as they are."""
    with zipfile.ZipFile(npz) as archive:
        return [stored(info.filename, archive.read(info)) for info in archive.infolist()]


def write_zip(path: Path, members: list[Member]) -> None:
    """Write ``members`` as a zip archive, exactly as declared (nothing is checked)."""
    out, directory = bytearray(), bytearray()
    for member in members:
        name = member.name.encode("utf-8")
        small = member.size >= _SMALL
        extra = struct.pack("<HHQ", 0x0001, 8, member.size) if small else b""
        size32 = _SMALL if small else member.size
        version = 45 if small else 20
        offset = len(out)
        out += struct.pack(
            "<4s5H3L2H", b"PK\x03\x04", version, 0x800, member.method, 0, 0x21,
            member.crc, len(member.data), size32, len(name), 0,
        )  # fmt: skip
        out += name + member.data
        directory += struct.pack(
            "<4s6H3L5H2L", b"PK\x01\x02", 0x031E, version, 0x800, member.method, 0, 0x21,
            member.crc, len(member.data), size32, len(name), len(extra), 0, 0, 0, 0o644 << 16, offset,
        )  # fmt: skip
        directory += name + extra
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(members), len(members), len(directory), len(out), 0)
    path.write_bytes(bytes(out + directory + end))


def huge_claim(name: str, nbytes: int = 2**40) -> Member:
    """A stored member whose ``.npy`` header and zip directory both claim ``nbytes`` of float64
    data; the archive holds the header and 64 bytes, with their CRC (so that reading the header
    raises nothing)."""
    data = npy_header((nbytes // 8 // 1024, 1024)) + bytes(64)
    return Member(name, data, STORED, len(data) - 64 + nbytes, zlib.crc32(data))


@cache
def zip_bomb(name: str, nbytes: int = 2**32) -> Member:
    """A valid deflated member (right sizes, right CRC) whose ``.npy`` header claims ``nbytes``
    of float64 zeros, and whose data expands to exactly that: about 4 MB holding 4 GiB.

    Deflate with a full flush after each block forgets what came before, so every 16 MiB block
    of zeros compresses to the same bytes, and the stream is those bytes repeated."""
    chunk = 16 * 2**20
    assert nbytes % chunk == 0
    header = npy_header((nbytes // 8 // 1024, 1024))
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    start = compressor.compress(header) + compressor.flush(zlib.Z_FULL_FLUSH)
    zeros = bytes(chunk)
    block = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    assert compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH) == block
    stream = start + block * (nbytes // chunk) + compressor.flush()
    crc = zlib.crc32(header)
    for _ in range(nbytes // chunk):
        crc = zlib.crc32(zeros, crc)
    return Member(name, stream, DEFLATED, len(header) + nbytes, crc)


def deflated(name: str, payload: bytes) -> Member:
    """A member as ``zipfile`` would deflate it (zlib's default level, as ``zipfile`` uses)."""
    data, crc = _deflate(payload)
    return Member(name, data, DEFLATED, len(payload), crc)


@cache
def _deflate(payload: bytes) -> tuple[bytes, int]:
    """The raw deflate stream and the CRC of `payload`, once per payload: the test modules build
    their members when they are collected, by every pytest-xdist worker."""
    compressor = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
    return compressor.compress(payload) + compressor.flush(), zlib.crc32(payload)


def npy_bytes(array: np.ndarray) -> bytes:
    """The ``.npy`` bytes of a real array."""
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, allow_pickle=False)
    return buffer.getvalue()
