"""Each test's own deadline in a warm mutant run (elmo_conformance/mutation/deadlines.py, spec §13.2):
the watchdog fires for a call past its deadline, names that test, and never for a call that ended
in time, nor for a test other than the one it was armed for; one thread times every call. The whole path (a hanging mutant
handed back as a Timeout by its worker) is tests/test_mutate_warm.py's."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

from elmo_conformance.mutation.deadlines import Watchdog, deadline_of


def call(watchdog: Watchdog, nodeid: str, seconds: float) -> None:
    """One test's call phase through the watchdog's hook wrapper, taking `seconds`."""
    wrapper = watchdog.pytest_runtest_call(SimpleNamespace(nodeid=nodeid))
    next(wrapper)
    time.sleep(seconds)
    try:
        wrapper.send(None)
    except StopIteration:
        pass


def recorder() -> tuple[list[tuple[str, float]], threading.Event, object]:
    fired: list[tuple[str, float]] = []
    event = threading.Event()

    def expired(nodeid: str, seconds: float) -> None:
        fired.append((nodeid, seconds))
        event.set()

    return fired, event, expired


def test_a_deadline_is_the_minimum_plus_the_factor_times_the_clean_call() -> None:
    assert deadline_of(0.25, 3.0, 5.0) == 5.75
    assert deadline_of(-1.0, 3.0, 5.0) == 5.0  # a clock that went back gives no less than the minimum


def test_a_call_past_its_deadline_fires_once_naming_its_test() -> None:
    fired, event, expired = recorder()
    watchdog = Watchdog({"t[a]": 0.05, "t[b]": 5.0}, expired)  # type: ignore[arg-type]
    call(watchdog, "t[a]", 0.3)
    assert event.wait(2)
    assert fired == [("t[a]", 0.05)]


def test_calls_within_their_deadlines_never_fire() -> None:
    fired, _, expired = recorder()
    watchdog = Watchdog({"t[a]": 0.2, "t[b]": 0.2}, expired)  # type: ignore[arg-type]
    call(watchdog, "t[a]", 0.01)
    call(watchdog, "t[b]", 0.01)
    call(watchdog, "t[c]", 0.3)  # no deadline of its own: the run's deadline keeps it
    watchdog.close()
    time.sleep(0.4)
    assert fired == []


def test_a_deadline_that_passes_after_its_call_ended_does_not_fire_for_the_next_test() -> None:
    """t[a]'s deadline (0.05 s) passes while t[b] is being timed (5 s): t[a]'s call has ended, so
    nothing fires, and t[b] is judged by its own deadline."""
    fired, _, expired = recorder()
    watchdog = Watchdog({"t[a]": 0.05, "t[b]": 5.0}, expired)  # type: ignore[arg-type]
    call(watchdog, "t[a]", 0.0)
    call(watchdog, "t[b]", 0.3)  # t[a]'s deadline passes during this call
    assert fired == []  # (close() would wait for the process's exit after a firing)
    watchdog.close()


def test_one_thread_times_every_call() -> None:
    fired, _, expired = recorder()
    watchdog = Watchdog({f"t[{i}]": 5.0 for i in range(50)}, expired)  # type: ignore[arg-type]
    before = threading.active_count()
    for i in range(50):
        call(watchdog, f"t[{i}]", 0.0)
    assert threading.active_count() == before + 1
    watchdog.close()
    assert fired == []


def test_close_disarms_the_watchdog_for_good() -> None:
    fired, _, expired = recorder()
    watchdog = Watchdog({"t[a]": 0.05}, expired)  # type: ignore[arg-type]
    watchdog.close()
    call(watchdog, "t[a]", 0.2)
    time.sleep(0.1)
    assert fired == []
