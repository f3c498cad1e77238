"""A process implementation (§15) started as the harness starts it, for the tests that speak the
wire protocol to it byte by byte: its end of input (§15.1), and what it answers to requests that
are not the calls of §15.5 (§15.6).

`fresh_process` starts a new process of the case's program with the harness's own command,
environment and sandbox, and completes the handshake (§15.4); `exchange` sends it one frame of
bytes the test wrote and reads one answer with the harness's own reader (its deadlines and frame
limits), so that a process that hangs, dies or writes garbage fails the test with a message, and
never stalls the run. A case whose adapter is not a process skips: these clauses bind programs.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from elmo_conformance.adapters.wire import codec
from elmo_conformance.adapters.wire.client import Connection, ProcessAdapter, ProcessStartError, _Broken
from elmo_conformance.conformance.case import Case
from elmo_conformance.conformance.checks import fail

ANSWER_LIMIT = 1 << 20  # bytes an answer to one of these requests can need: an error's message


@contextmanager
def fresh_process(case: Case, section: str, served: bool = False) -> Iterator[tuple[ProcessAdapter, Connection]]:
    """A new process of `case`'s program, handshake done; stopped at the end. Skips the test
    when `case` is not a process, or (unless `served`) is a Python adapter behind the harness's
    own protocol server."""
    adapter = case.impl.adapter
    if not isinstance(adapter, ProcessAdapter):
        pytest.skip(f"{case.name} is not a process (§{section} applies to programs speaking the wire protocol)")
    if adapter.served and not served:
        pytest.skip(
            f"{case.name} is a Python adapter: the harness's own protocol server speaks §{section} for it "
            "(checked with the harness's tests, tests/test_wire_server.py)"
        )
    try:
        fresh = ProcessAdapter(
            adapter.arg,
            adapter.argv,
            call_timeout=adapter.call_timeout,
            env=adapter.env,
            startup_timeout=adapter.startup_timeout,
            box=adapter.box,  # sandboxed as the harness sandboxes it
            served=adapter.served,
        )
    except ProcessStartError as exc:  # it started for the run, and not again: a failed test, not an error
        fail((section,), f"a fresh process of {case.name}, started as the run started its first, failed: {exc}")
    connection = fresh._connection
    assert connection is not None
    try:
        yield fresh, connection
    finally:
        fresh.stop()


def framed(body: bytes) -> bytes:
    """`body` behind a frame header (§15.2): the magic, then its length."""
    return codec.HEADER.pack(codec.MAGIC, len(body)) + body


def exchange(case: Case, connection: Connection, data: bytes, sent: str, sections: tuple[str, ...]) -> dict[str, Any]:
    """Write `data` (described as `sent` in a failure) and read one answer within the call
    timeout; a process that does not answer with a frame fails the test."""
    deadline = time.monotonic() + case.call_timeout
    connection.timeout_text = f"the call timeout of {case.call_timeout:g} s"
    try:
        connection.send(data, deadline)
        return connection.receive(deadline, ANSWER_LIMIT)
    except _Broken as exc:
        tail = connection.stderr.tail()
        shown = f"\n  received: {exc.shown()}" if exc.received else ""
        fail(sections, f"sent {sent}: the process {exc.what}{shown}{chr(10) + tail if tail else ''}")


# -- values written byte by byte (§15.3), for requests that the harness's encoder cannot make


def u32(n: int) -> bytes:
    return struct.pack("<I", n)


def text(value: str | bytes) -> bytes:
    data = value.encode("utf-8") if isinstance(value, str) else value
    return u32(len(data)) + data


def string(value: str | bytes) -> bytes:
    return b"s" + text(value)


def mapping(*entries: tuple[str | bytes, bytes]) -> bytes:
    """A map of already encoded values, keys as given (a duplicate or a bad key included)."""
    return b"m" + u32(len(entries)) + b"".join(text(key) + value for key, value in entries)


def value(python: Any) -> bytes:
    """A well-formed value, encoded by the harness's own encoder."""
    return codec.encode(python)
