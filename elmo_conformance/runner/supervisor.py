"""The supervision of a suite run in a pytest child process (spec §11.1): the run never counts as
passed unless every collected test ran and this run's own report says so.

The supervisor judges a run only by a report that the run itself wrote: the child writes a copy of
its report into a private folder of the supervisor's (never a file a previous or a concurrent run
could have written), stamped with a run id that only this run knows. A user's ``--report`` path is
written as well, but is never what the run is judged by; when another run replaced it, the
supervisor says so.

The child runs in a session of its own, so that the whole process group can be ended: when the
run's deadline passes, when pytest has finished but its process does not exit (a thread an adapter
left running), and on Ctrl-C after a grace period in which pytest may write its report.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from elmo_conformance.processes import kill

# The run did not finish: the pytest process ended early or was killed, or left a report that is
# missing, incomplete, or short of outcomes. pytest's own "internal error" status.
NOT_FINISHED = 3
INTERRUPTED = 2  # pytest's status for a run stopped by Ctrl-C
# Once pytest has finished, how long its process may take to exit before it is stopped (a thread
# an adapter left running keeps a Python process alive), and how long after this run's complete
# report when pytest never says it finished.
EXIT_GRACE_S = 5.0
REPORT_GRACE_S = 120.0
# After Ctrl-C, how long pytest may take to stop and write its report.
INTERRUPT_GRACE_S = 30.0
POLL_S = 0.05


def read_report(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """The report at `path`, or None and why not."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, f"it wrote no report ({path})"
    except OSError as exc:
        return None, f"its report {path} cannot be read: {exc.strerror or exc}"
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None, f"its report {path} is not JSON (cut off?)"
    if not isinstance(data, dict):
        return None, f"its report {path} is not a report"
    return data, None


def problem(report: dict[str, Any] | None, why: str | None, run_id: str | None = None) -> str | None:
    """Why a report does not show a finished run, or None when it does: this run's report
    (`run_id`), complete, and an outcome for every collected test."""
    if report is None:
        return why
    if run_id is not None and report.get("run_id") != run_id:
        return "its report was not written by this run"
    if report.get("complete") is not True:
        return "its report says the run did not finish (the process ended early: os._exit, a crash, a kill?)"
    if report.get("refused"):
        return f"it refused to run: {report['refused']}"
    collected = report.get("collected")
    if not isinstance(collected, int):
        return "its report does not record how many tests were collected"
    ran = len({test.get("nodeid") for test in report.get("tests", []) if isinstance(test, dict)})
    if ran < collected:
        return f"its report has outcomes for {ran} of the {collected} tests collected"
    return None


class CompleteWatch:
    """Whether this run's report says its run is complete, read again only when the file changed;
    a report of another run, or one that goes back to incomplete, resets the time it was seen."""

    def __init__(self, path: Path, run_id: str) -> None:
        self.path, self.run_id = path, run_id
        self.seen: tuple[int, int, int] | None = None
        self.complete = False

    def __call__(self) -> bool:
        try:
            info = self.path.stat()
        except OSError:
            self.seen, self.complete = None, False
            return False
        key = (info.st_ino, info.st_mtime_ns, info.st_size)
        if key != self.seen:
            self.seen = key
            data, _ = read_report(self.path)
            self.complete = bool(data and data.get("complete") is True and data.get("run_id") == self.run_id)
        return self.complete


@dataclass
class Supervised:
    """What the supervision saw: the exit status it judged, and why the run is not complete."""

    exit_status: int
    report: dict[str, Any] | None
    problem: str | None
    notes: list[str]
    timed_out: bool = False  # stopped at its deadline


def supervise(
    command: list[str],
    env: dict[str, str],
    run_report: Path,
    finished: Path,
    run_id: str,
    *,
    cwd: Path | None = None,
    stdout: IO[Any] | None = None,
    deadline_s: float | None = None,
    exit_grace: float = EXIT_GRACE_S,
    report_grace: float = REPORT_GRACE_S,
    clock: Callable[[], float] = time.monotonic,
) -> Supervised:
    """Run the pytest `command` in a session of its own and judge it by `run_report` (the copy of
    the report only this run writes, stamped `run_id`). The status is pytest's, made 3
    (NOT_FINISHED) when the run did not finish; a process that has finished (it wrote `finished`,
    or a complete report) but does not exit is stopped after a grace period, and the report's
    status is used; a run past `deadline_s` is stopped and is NOT_FINISHED."""
    notes: list[str] = []
    started = clock()
    process = subprocess.Popen(
        command,
        env=env,
        cwd=cwd,
        stdout=stdout,
        stderr=subprocess.STDOUT if stdout is not None else None,
        start_new_session=True,
    )
    complete = CompleteWatch(run_report, run_id)
    since: dict[str, float] = {}  # "finished", "complete" -> when first seen
    stopped: str | None = None
    interrupted = timed_out = False
    try:
        while True:
            try:
                code = process.wait(timeout=POLL_S if clock() - started < 2 else 0.2)
                break
            except subprocess.TimeoutExpired:
                pass
            now = clock()
            if finished.exists():
                since.setdefault("finished", now)
            if complete():
                since.setdefault("complete", now)
            else:
                since.pop("complete", None)
            for what, grace in (("finished", exit_grace), ("complete", report_grace)):
                if what in since and now - since[what] > grace:
                    stopped = (
                        "the pytest process had finished but did not exit (a thread an adapter left running?); "
                        f"stopped it after {grace:g} s"
                    )
            if stopped is None and deadline_s is not None and now - started > deadline_s:
                stopped = f"the run took longer than its deadline of {deadline_s:g} s; stopped it"
                timed_out = True
            if stopped is not None:
                code = kill.end_group(process)
                break
    except KeyboardInterrupt:  # pytest is in a session of its own: pass the Ctrl-C on
        kill.signal_group(process.pid, signal.SIGINT)
        try:
            code = process.wait(timeout=INTERRUPT_GRACE_S)
        except subprocess.TimeoutExpired:
            code = kill.end_group(process)
        interrupted = True
    finally:
        if process.poll() is None:
            kill.end_group(process)
        # Whatever the adapters left in pytest's process group (§11.1).
        kill.signal_group(process.pid, signal.SIGKILL)
    data, why = read_report(run_report)
    if interrupted:
        notes.append("interrupted (Ctrl-C)")
        return Supervised(INTERRUPTED, data, "the run was interrupted (Ctrl-C)", notes)
    if stopped is not None:
        finished_report = problem(data, why, run_id) is None
        status = data.get("exit_status") if data and finished_report else None
        code = status if isinstance(status, int) else NOT_FINISHED
        notes.append(f"{stopped}; exit status {code}" + (", from its report" if isinstance(status, int) else ""))
        reason = None if isinstance(status, int) else (stopped if timed_out else problem(data, why, run_id) or stopped)
        return Supervised(code, data, reason, notes, timed_out and not isinstance(status, int))
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        reason = f"the pytest process was killed by {name}"
        notes.append(f"the run did not finish: {reason}")
        return Supervised(NOT_FINISHED, data, reason, notes)
    why = problem(data, why, run_id)
    if code == 0 and why:
        notes.append(f"the run did not finish although pytest exited 0: {why}")
        return Supervised(NOT_FINISHED, data, why, notes)
    if code == 0 and data and data.get("exit_status") not in (0, None):
        notes.append(f"pytest exited 0 but its report records exit status {data['exit_status']}")
        return Supervised(int(data["exit_status"]), data, None, notes)
    if code in (0, 1):
        return Supervised(code, data, why, notes)
    page_error = data.get("page_error") if data else None
    return Supervised(code, data, why or page_error or f"pytest exited {code}", notes)
