"""The project's own tests run the conformance suite through the one entry point,
``elmo_conformance.run`` (elmo_conformance/runner/running.py), like every other caller.

``run_suite`` is the shape most tests want: (exit status, the JSON report or None, the output).
``run_suite_here`` is the same run in this process (``elmo_conformance.run`` with ``where="here"``, as the
mutation workers run the suite): for tests of what the suite says about an implementation, where
the supervision of a pytest process is not what is tested; it saves the start-up of a pytest
process (about 1.2 CPU-seconds) per run. Both take the suite's own configuration
(conformance/suite.ini, which turns pytest's cache off), so they add no option of their own.
A run in this process that has not ended after
``HUNG_S`` seconds ends the process with every thread's stack, where ``run_suite``'s run would be
stopped at its deadline: a harness that hangs fails a test rather than the test run never ending.
"""

from __future__ import annotations

import contextlib
import faulthandler
import io
import json
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

import elmo_conformance
from elmo_conformance.runner import running

ROOT = Path(__file__).resolve().parent.parent
BROKEN = ROOT / "tests" / "broken"
# The tests that read the one shared whole-suite run of the reference (tests/conftest.py): one
# pytest-xdist worker runs them all (`--dist loadgroup`), so the run happens once.
NUMPY_REFERENCE_RUN = pytest.mark.xdist_group("numpy-reference-run")
# A suite run in the test's own process that has not ended by then: the harness hung.
HUNG_S = 600.0


def run_suite(
    tmp_path: Path,
    impl: str | list[str],
    *args: str,
    timeout: float = 900,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = ROOT,
    report_name: str = "report.json",
) -> tuple[int, dict[str, Any] | None, str]:
    """The suite on `impl` with the suite's or pytest's `args`; (exit status, report, output). A
    run that does not finish within `timeout` seconds fails the test: the harness hung."""
    result = run(tmp_path, impl, *args, timeout=timeout, env=env, cwd=cwd, report_name=report_name)
    report = tmp_path / report_name
    data = json.loads(report.read_text()) if report.is_file() else None
    return result.exit_status, data, result.output or ""


def run(
    tmp_path: Path,
    impl: str | list[str],
    *args: str,
    timeout: float = 900,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = ROOT,
    report_name: str = "report.json",
) -> running.RunResult:
    """The suite through the entry point, writing --report `tmp_path/report_name` as a user would;
    ``RunResult.report`` is this run's report (the same record)."""
    report = tmp_path / report_name
    merged = {**os.environ, **(env or {})}
    result = elmo_conformance.run(impl, args, report=report, deadline_s=timeout, env=merged, cwd=cwd, capture=True)
    if result.timed_out:
        pytest.fail(f"the run did not finish within {timeout} s: the harness hung\n{result.describe()}")
    return result


def run_suite_here(
    tmp_path: Path, impl: str | list[str], *args: str, report_name: str = "report.json"
) -> tuple[int, dict[str, Any] | None, str]:
    """``run_suite`` in this process: pytest's own run of the suite (``pytest.main``) with the same
    command line, its terminal output collected; (exit status, report, output)."""
    report = tmp_path / report_name
    code, output = run_args_here(*args, impls=impl, report=report)
    data = json.loads(report.read_text()) if report.is_file() else None
    return code, data, output


def run_args_here(
    *args: str, impls: str | Sequence[str] = (), report: Path | None = None, deadline_s: float = HUNG_S
) -> tuple[int, str]:
    """The suite in this process with the suite's or pytest's `args` (``--impl numpy -k ...`` as the
    console command takes them, or `impls` and `report` as ``run`` takes them); (exit status, its
    terminal output and error output together). A run that has not ended after `deadline_s`
    seconds (the harness hung) ends this process (``end_hung_process``), so that pytest-xdist
    reports the test's worker as crashed rather than the test run never ending."""
    output = io.StringIO()
    stderr = os.dup(2)  # the error output as it is now: the run's pytest captures file descriptor 2
    watchdog = threading.Timer(deadline_s, end_hung_process, args=(deadline_s, output, stderr))
    watchdog.daemon = True
    watchdog.start()
    try:
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            code = running.run(impls, args, where="here", report=report).exit_status
    finally:
        watchdog.cancel()
        os.close(stderr)
    return code, output.getvalue()


def end_hung_process(deadline_s: float, output: io.StringIO, stderr: int) -> None:
    """Write the run's output so far and every thread's stack to `stderr` (a file descriptor),
    then exit with status 1."""
    said = f"\na suite run in this process did not end within {deadline_s:g} s (the harness hung); its output so far:\n"
    os.write(stderr, (said + output.getvalue()[-3000:] + "\n").encode("utf-8", errors="replace"))
    faulthandler.dump_traceback(file=stderr, all_threads=True)
    os._exit(1)
