"""The journal of a batch job's suite run: a pytest plugin in the harness's own process
(``-p elmo_conformance.batch.journal``), never in the code under test's.

It does two things, both from what the harness observes (docs/grading.md, "Partial results" and
"Time limits"):

- **Partial results.** Each test's final outcome is appended to the journal, one JSON line, flushed
  and synced as the test finishes: a run that is stopped at its deadline, or whose process dies,
  leaves a journal of every test that finished before, and the batch grades those. The journal is a
  file in the job's own folder, outside the sandbox's writable folder; its path comes in the
  harness's environment (``JOURNAL_ENV``), which this plugin takes out of the environment before
  any adapter process starts.
- **CPU-time limits.** The CPU time of a test is the CPU time that the harness's child processes
  (the adapter's server or program, in its sandbox, and whatever it started) use while the test
  runs: their utime + stime (and their reaped children's), from /proc, plus the harness's own
  reaped children; not the wall clock, which grows with the machine's load. When the limit file
  (``LIMITS_ENV``) gives the test a limit, a watchdog thread kills those processes as soon as the
  test passes it: the call fails ("the process died"), the next call starts a fresh process
  (spec §15.7), and the journal line says that the test hit its limit. Without a limit file the
  plugin measures only: that is how the reference is calibrated on each worker.

An entry: ``{"event": "test", "nodeid", "test", "sections", "outcome", "message", "cpu_s",
"wall_s", "limit_s", "hit"}``; the first line is ``{"event": "collected", "nodeids": [...]}``,
and a run that finished ends with ``{"event": "finished", "exit_status": N}``.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from elmo_conformance.ground.outcomes import is_final
from elmo_conformance.processes import kill, tree

JOURNAL_ENV = "ELMO_CONFORMANCE_BATCH_JOURNAL"
LIMITS_ENV = "ELMO_CONFORMANCE_BATCH_LIMITS"
PLUGIN = "elmo_conformance.batch.journal"
POLL_S = 0.1  # how often the watchdog reads the CPU time of a running test
MESSAGE_KEPT = 4000  # characters of a failure's message kept in the journal


class Journal:
    """The plugin object: the journal's writer and the CPU-time watchdog."""

    def __init__(self, path: Path, limits: dict[str, float] | None) -> None:
        self.handle = open(path, "a", encoding="utf-8")  # noqa: SIM115  (closed at the session's end)
        self.limits = limits or {}
        self.lock = threading.Lock()  # the journal file
        self.switch = threading.Lock()  # the running test: taken to change it, and to stop its processes
        self.current: dict[str, Any] | None = None
        self.done = threading.Event()
        self.watchdog = threading.Thread(target=self._watch, name="elmo-batch-cpu-watchdog", daemon=True)
        if self.limits:
            self.watchdog.start()

    def write(self, entry: dict[str, Any]) -> None:
        with self.lock:
            if self.handle.closed:
                return
            self.handle.write(json.dumps(entry) + "\n")
            self.handle.flush()
            with contextlib.suppress(OSError):
                os.fsync(self.handle.fileno())

    def _watch(self) -> None:
        while not self.done.wait(POLL_S):
            current = self.current
            if current is None or current["limit_s"] is None:
                continue
            used = tree.cpu_seconds() - current["cpu0"]
            if used > current["limit_s"]:
                with self.switch:  # only while this test still runs: never the next test's process
                    if self.current is current:
                        current["hit"] = {"kind": "cpu", "cpu_s": round(used, 3), "limit_s": current["limit_s"]}
                        kill.kill_descendants()

    # ---------------------------------------------------------------- pytest's hooks

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.write({"event": "collected", "nodeids": [item.nodeid for item in session.items]})

    def pytest_runtest_logstart(self, nodeid: str, location: tuple) -> None:
        name = nodeid.split("::")[-1].split("[")[0]
        limit = self.limits.get(name, self.limits.get("*"))
        started = {
            "nodeid": nodeid,
            "limit_s": limit,
            "cpu0": tree.cpu_seconds(),
            "wall0": time.monotonic(),
            "hit": None,
        }
        with self.switch:
            self.current = started

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        current = self.current
        if not is_final(report) or current is None or current["nodeid"] != report.nodeid:
            return
        outcome = "xfailed" if hasattr(report, "wasxfail") and report.skipped else report.outcome
        message = None if report.passed else report.longreprtext[-MESSAGE_KEPT:]
        if current["hit"] is not None:
            outcome = "failed" if outcome == "passed" else outcome  # a test stopped at its limit never passes
        self.write(
            {
                "event": "test",
                "nodeid": report.nodeid,
                "test": report.nodeid.split("::")[-1].split("[")[0],
                "sections": list(getattr(report, "spec_sections", ())),
                "outcome": outcome,
                "message": message,
                "cpu_s": round(tree.cpu_seconds() - current["cpu0"], 3),
                "wall_s": round(time.monotonic() - current["wall0"], 3),
                "limit_s": current["limit_s"],
                "hit": current["hit"],
            }
        )
        with self.switch:  # its outcome is written: no longer watched (its teardown is the harness's)
            if self.current is current:
                self.current = None

    def pytest_runtest_logfinish(self, nodeid: str, location: tuple) -> None:
        with self.switch:
            self.current = None

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.done.set()
        self.write({"event": "finished", "exit_status": int(exitstatus)})
        with self.lock:
            self.handle.close()


# Taken out of the environment when pytest imports this plugin (-p), before any adapter process
# starts: none inherits them, with or without the sandbox.
_GIVEN = (os.environ.pop(JOURNAL_ENV, ""), os.environ.pop(LIMITS_ENV, ""))


def pytest_configure(config: pytest.Config) -> None:
    path, limits_file = _GIVEN
    if not path:
        return
    limits = None
    if limits_file:
        limits = {str(k): float(v) for k, v in json.loads(Path(limits_file).read_text(encoding="utf-8")).items()}
    config.pluginmanager.register(Journal(Path(path), limits), "elmo-conformance-batch-journal")


def read(path: Path, limit_bytes: int = 8 << 20) -> list[dict[str, Any]]:
    """The journal's entries (a line cut off by a kill is left out); at most `limit_bytes` read."""
    entries: list[dict[str, Any]] = []
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit_bytes)
    except OSError:
        return entries
    for line in data.splitlines():
        with contextlib.suppress(ValueError):
            entry = json.loads(line)
            if isinstance(entry, dict):
                entries.append(entry)
    return entries
