"""The one way to run the conformance suite: ``elmo_conformance.run``.

Every caller runs the suite through ``run`` (the console command, the nox sessions through it, the
fixtures checks, the sanitizer run, the benchmarks, the screenshots, the project's own tests, the
batch command, the mutation workers). ``run`` owns the pytest invocation, one command line for
both places a run can happen (``where``), its supervision (spec §11.1: completeness, hangs, a
process that does not exit) and the reading of the report, and returns a ``RunResult``:

- ``where="child"`` (the default): pytest in a supervised child process; the result is read from
  the run's own report.
- ``where="here"``: pytest in this process (``pytest.main``), for long-lived processes that run
  many suites and are themselves supervised (the mutation workers); ``plugins`` observe the run,
  and the outcomes are what pytest reported in this process.

Where the *adapter* runs is another question, ``isolation`` (§11.1): "child" (a Python adapter
behind the protocol server in its own process) or "in-process" (in pytest's process).

    >>> from elmo_conformance import run
    >>> result = run("numpy", ["-k", "test_hand_example_scalar_mix"])
    >>> result.exit_status, result.counts
    (0, {'passed': 2})

A run exits 0 only when every collected test ran and passed and this run's own report says so: a
stale report at the ``report`` path, a report written by another run, or one made read-only never
decides the verdict (``elmo_conformance.runner.supervisor``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from elmo_conformance.ground.outcomes import is_final, outcome
from elmo_conformance.ground.resources import FINISHED_ENV, RUN_ID_ENV, RUN_REPORT_ENV, child_environment
from elmo_conformance.runner.invocation import INFORMATION, option_value, suite_arguments
from elmo_conformance.runner.supervisor import NOT_FINISHED, REPORT_GRACE_S, read_report, supervise

Isolation = Literal["child", "in-process"]
ISOLATIONS: tuple[str, ...] = ("child", "in-process")
Where = Literal["child", "here"]
WHERES: tuple[str, ...] = ("child", "here")


@dataclass(frozen=True)
class TestOutcome:
    """One test's outcome, as the report records it (spec/schemas/report.schema.json)."""

    nodeid: str
    outcome: str  # passed, failed, skipped, xfailed, xpassed, error
    sections: tuple[str, ...] = ()
    message: str | None = None

    __test__ = False  # not a pytest test class


@dataclass
class RunResult:
    """What a run of the suite gave: its exit status (the console command's, see ``elmo-conformance
    --help``), whether it finished, why not, and every test's outcome."""

    exit_status: int
    complete: bool
    problem: str | None  # why the run is not complete, or not trusted; None when it is
    report_path: Path | None  # the caller's --report, when one was asked for
    report: dict[str, Any] | None  # this run's own report (where='child'; None with where='here')
    tests: list[TestOutcome] = field(default_factory=list)
    duration_s: float = 0.0
    output: str | None = None  # stdout and stderr, when captured
    notes: list[str] = field(default_factory=list)  # what the supervision had to say
    command: list[str] = field(default_factory=list)
    timed_out: bool = False  # stopped at its deadline_s

    @property
    def passed(self) -> bool:
        return self.exit_status == 0

    @property
    def counts(self) -> dict[str, int]:
        return dict(Counter(test.outcome for test in self.tests))

    @property
    def outcomes(self) -> dict[str, str]:
        """nodeid -> outcome."""
        return {test.nodeid: test.outcome for test in self.tests}

    def failures(self) -> list[TestOutcome]:
        return [test for test in self.tests if test.outcome in ("failed", "error", "xpassed")]

    def describe(self, tail: int = 3000) -> str:
        """A few lines for an assertion message or a log: the status, the problem, the output's tail."""
        lines = [f"exit status {self.exit_status}: {self.problem or 'complete'}; {self.counts}", *self.notes]
        if self.output:
            lines.append(self.output[-tail:])
        return "\n".join(lines)


def _outcomes(report: dict[str, Any] | None) -> list[TestOutcome]:
    tests = report.get("tests", []) if report else []
    return [
        TestOutcome(
            str(test.get("nodeid")),
            str(test.get("outcome")),
            tuple(test.get("sections") or ()),
            test.get("message"),
        )
        for test in tests
        if isinstance(test, dict)
    ]


def suite_options(
    impls: str | Iterable[str] = (),
    pytest_args: Sequence[str] = (),
    *,
    isolation: Isolation = "child",
    report: str | os.PathLike[str] | None = None,
    mutant: str | None = None,
    dtype: str | None = None,
    call_timeout: float | None = None,
) -> list[str]:
    """The suite's options for these arguments (before ``invocation.suite_arguments``)."""
    if isolation not in ISOLATIONS:
        raise ValueError(f"isolation: expected one of {', '.join(ISOLATIONS)}, got {isolation!r}")
    if isinstance(impls, str):
        impls = [impls]
    if isinstance(pytest_args, str):
        raise TypeError("pytest_args: expected a sequence of arguments, got one string (split it with shlex)")
    args: list[str] = []
    for impl in impls:
        args += ["--impl", str(impl)]
    if isolation == "in-process":
        args.append("--in-process")
    if mutant is not None:
        args += ["--mutant", mutant]
    if dtype is not None:
        args += ["--dtype", dtype]
    if call_timeout is not None:
        args += ["--call-timeout", f"{call_timeout:g}"]
    if report is not None:
        args += ["--report", str(report)]
    return args + list(pytest_args)


def run(
    impls: str | Iterable[str] = (),
    pytest_args: Sequence[str] = (),
    *,
    where: Where = "child",
    isolation: Isolation = "child",
    report: str | os.PathLike[str] | None = None,
    mutant: str | None = None,
    dtype: str | None = None,
    call_timeout: float | None = None,
    deadline_s: float | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    capture: bool = False,
    report_grace_s: float = REPORT_GRACE_S,
    plugins: Sequence[object] = (),
) -> RunResult:
    """Run the conformance suite and return its result.

    `impls`: the --impl arguments (one string or several; none: every available built-in).
    `pytest_args`: the suite's other options and pytest's (``-k``, ``-x``, test ids, ...), or a
    whole command line as the console command takes it (``["--impl", "numpy", "-k", "mix"]``).
    `where`: "child" (a supervised pytest child process, the default) or "here" (``pytest.main``
    in this process). `isolation`: "child" (a Python adapter runs behind the protocol server in a
    child process, the default) or "in-process" (§11.1). `report`: also write the JSON report
    (and its page) there.

    Only with where="child": `deadline_s`, stop the run after this many seconds (then
    NOT_FINISHED); `env`, the child's environment (default: this process's); `cwd`, its working
    directory; `capture`, collect stdout and stderr into ``RunResult.output``; `report_grace_s`, how
    long a pytest process whose complete report this run has written may take to exit before it is
    stopped (a thread an adapter left running). Only with where="here": `plugins`, pytest plugins
    that observe the run.
    """
    if where not in WHERES:
        raise ValueError(f"where: expected one of {', '.join(WHERES)}, got {where!r}")
    args = suite_options(
        impls,
        pytest_args,
        isolation=isolation,
        report=report,
        mutant=mutant,
        dtype=dtype,
        call_timeout=call_timeout,
    )
    if where == "here":
        child_only = {"deadline_s": deadline_s, "env": env, "cwd": cwd, "capture": capture or None}
        given = [name for name, value in child_only.items() if value is not None]
        if given:
            raise ValueError(
                f"{', '.join(given)}: taken only with where='child' (with where='here' pytest runs in this "
                "process, under its deadline, environment and working directory)"
            )
        return _here(args, plugins)
    if plugins:
        raise ValueError("plugins: taken only with where='here' (a child process cannot run this process's objects)")
    return _supervised(args, env=env, cwd=cwd, capture=capture, deadline_s=deadline_s, report_grace_s=report_grace_s)


def _supervised(
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None,
    cwd: str | os.PathLike[str] | None,
    capture: bool,
    deadline_s: float | None,
    report_grace_s: float,
) -> RunResult:
    """The run in a supervised pytest child process, judged by its own report."""
    args = list(args)
    workdir = Path(cwd) if cwd is not None else None
    given = option_value(args, "--report")
    user_report = Path(workdir or Path.cwd(), given) if given else None
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="elmo-conformance-") as tmp:
        run_id = uuid.uuid4().hex
        run_report, finished = Path(tmp) / "run-report.json", Path(tmp) / "finished"
        child_env = child_environment(dict(os.environ if env is None else env))
        child_env.update({FINISHED_ENV: str(finished), RUN_ID_ENV: run_id, RUN_REPORT_ENV: str(run_report)})
        command = [sys.executable, "-m", "pytest", *suite_arguments(args, workdir)]
        output_file = open(Path(tmp) / "output.txt", "w+b") if capture else None  # noqa: SIM115
        try:
            if INFORMATION & set(args):  # pytest prints something and runs nothing: no report to judge
                code = subprocess.run(command, env=child_env, cwd=workdir, stdout=output_file, stderr=output_file)
                return RunResult(
                    code.returncode,
                    True,
                    None,
                    None,
                    None,
                    output=_read_output(output_file),
                    command=command,
                    duration_s=time.perf_counter() - started,
                )
            seen = supervise(
                command,
                child_env,
                run_report,
                finished,
                run_id,
                cwd=workdir,
                stdout=output_file,
                deadline_s=deadline_s,
                report_grace=report_grace_s,
            )
            output = _read_output(output_file)
        finally:
            if output_file is not None:
                output_file.close()
    notes = list(seen.notes)
    if user_report is not None and seen.report is not None:
        theirs, _ = read_report(user_report)
        if theirs is None or theirs.get("run_id") != run_id:
            notes.append(
                f"the report at {given} is not this run's (another run wrote it, or it could not be written); "
                "this run was judged by its own copy"
            )
    complete = seen.problem is None and seen.exit_status in (0, 1)
    return RunResult(
        seen.exit_status,
        complete,
        seen.problem,
        user_report,
        seen.report,
        _outcomes(seen.report),
        time.perf_counter() - started,
        output,
        notes,
        command,
        seen.timed_out,
    )


OUTPUT_KEPT = 8 << 20  # bytes of a captured run's output read back: its tail


def _read_output(handle: Any) -> str | None:
    """The captured output, its last OUTPUT_KEPT bytes at most (a run whose adapter floods the
    terminal costs no more memory than that)."""
    if handle is None:
        return None
    handle.flush()
    size = handle.seek(0, os.SEEK_END)
    handle.seek(max(0, size - OUTPUT_KEPT))
    text = handle.read().decode("utf-8", errors="replace")
    return text if size <= OUTPUT_KEPT else f"[... the first {size - OUTPUT_KEPT} bytes of the output cut]\n" + text


class _Outcomes:
    """A pytest plugin: every test's outcome as this process saw it (for where="here"), by the rule
    the harness's report records them (ground/outcomes.py)."""

    def __init__(self) -> None:
        self.tests: list[TestOutcome] = []

    def pytest_runtest_logreport(self, report: Any) -> None:
        if is_final(report):
            self.tests.append(TestOutcome(report.nodeid, outcome(report)))


def _here(args: Sequence[str], plugins: Sequence[object]) -> RunResult:
    """The run in this process (``pytest.main``), with the command line a child would get."""
    import pytest

    # A run after the first finds the suite's modules imported already: pytest cannot rewrite
    # their assertions again and would say so in every run's warnings summary.
    quiet = ["-W", "ignore:Module already imported so cannot be rewritten:pytest.PytestAssertRewriteWarning"]
    command = suite_arguments([*quiet, *args])
    seen = _Outcomes()
    started = time.perf_counter()
    status = int(pytest.main(command, plugins=[seen, *plugins]))
    given = option_value(list(args), "--report")
    return RunResult(
        status,
        status in (0, 1),
        None if status in (0, 1) else f"pytest exited with status {status}",
        Path(given) if given else None,
        None,
        seen.tests,
        time.perf_counter() - started,
        command=["pytest", *command],
    )


__all__ = ["ISOLATIONS", "NOT_FINISHED", "WHERES", "RunResult", "TestOutcome", "run", "suite_options"]
