"""Each test's own deadline in a mutant's warm run (spec §13.2; docs/mutation.md, "Timeouts").

A mutant that hangs (a loop whose counter no longer moves, a read of bytes that never come) is
stopped at the first of two deadlines:

- the whole run's, kept by the runner: `--timeout-min` + `--timeout-factor` x the clean run's time
  of every test the mutant is to run; it stops the worker;
- its current test's, kept here, in the process that judges the mutant: `--test-timeout-min` +
  `--timeout-factor` x that test's call in the clean run.

The second is the one a hang meets first: a mutant that hangs in its first test of 20 ms is a
Timeout after about `--test-timeout-min` rather than after 20 s and more, and its worker (its
warm session) lives on. Only a test's call is timed, as the clean run timed it (pytest's call
phase): its fixtures' setup, which the clean run paid once per module, is left to the run's
deadline.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

TEST_TIMEOUT_MIN = 5.0  # seconds; the default of --test-timeout-min


def deadline_of(clean_call_s: float, factor: float, minimum: float) -> float:
    """A test's deadline in a mutant's run: `minimum` + `factor` x its call in the clean run."""
    return minimum + factor * max(0.0, clean_call_s)


class Watchdog:
    """A pytest plugin that times each test's call against its deadline, on one thread of its own
    (started at the first call; a thread per test would cost about 0.1 ms each, 0.15 s for a
    survivor that runs the whole suite).

    When a call passes its deadline, `expired(nodeid, seconds)` runs on that thread; it must end
    the process (it hands the verdict on and exits). Whether a deadline passed is decided under
    the lock that arms and disarms it, so a call that ended, or another test's call, is never
    taken for the late one. After the last test, `close()` stops the watchdog, or, when a deadline
    has already fired, waits for that exit: the verdict is then the watchdog's, and nothing else
    may be reported."""

    def __init__(self, deadlines: Mapping[str, float], expired: Callable[[str, float], None]) -> None:
        self.deadlines = dict(deadlines)
        self.expired = expired
        self._changed = threading.Condition()
        self._armed: tuple[str, float, float] | None = None  # (nodeid, seconds, when it is due)
        self._thread: threading.Thread | None = None
        self._closed = False
        self._fired = False

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Iterator[Any]:
        seconds = self.deadlines.get(item.nodeid)
        if seconds is not None:
            self._arm(item.nodeid, seconds)
        try:
            return (yield)
        finally:
            self._disarm()

    @contextlib.contextmanager
    def deadline(self, name: str, seconds: float | None) -> Iterator[None]:
        """A deadline on what the `with` block does (the mutant's start, outside every test):
        `expired(name, seconds)` when it passes; none when `seconds` is None."""
        if seconds is not None:
            self._arm(name, seconds)
        try:
            yield
        finally:
            if seconds is not None:
                self._disarm()

    def _arm(self, nodeid: str, seconds: float) -> None:
        with self._changed:
            if self._closed:
                return
            self._armed = (nodeid, seconds, time.monotonic() + seconds)
            if self._thread is None:
                self._thread = threading.Thread(target=self._watch, name="elmo-test-deadlines", daemon=True)
                self._thread.start()
            self._changed.notify()

    def _disarm(self) -> None:
        with self._changed:
            self._armed = None
            self._changed.notify()

    def _watch(self) -> None:
        with self._changed:
            while True:
                if self._closed:
                    return
                if self._armed is None:
                    self._changed.wait()
                    continue
                nodeid, seconds, due = self._armed
                left = due - time.monotonic()
                if left > 0:
                    self._changed.wait(left)  # then look again: disarmed, armed for another call, or due
                    continue
                self._closed = self._fired = True
                break
        self.expired(nodeid, seconds)

    def close(self) -> None:
        """Stop for good; when a deadline already fired, wait for `expired` to end the process."""
        with self._changed:
            self._closed = True
            fired = self._fired
            self._changed.notify()
        while fired:  # `expired` is handing the verdict on, then exits the process
            time.sleep(1.0)
