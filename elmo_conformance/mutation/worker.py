"""A worker: a spawned, long-lived process that runs the suite in-process, one job at a time.

Each backend (torch, JAX, ...) is imported once per worker, on its first job, and kept. Jobs
arrive on a pipe; every test outcome goes back as it happens, so that when a mutant hangs or
kills the process the runner still knows which tests finished and which one was running.
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import signal
import sys
import time
import traceback
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from hypothesis import Phase, settings

import elmo_conformance.conformance.plugin  # noqa: F401  (registers the harness's "conformance" Hypothesis profile)
from elmo_conformance.adapters.declared import declared_mutants, describe
from elmo_conformance.adapters.loading import AdapterLoadError, load_adapter, load_mutant
from elmo_conformance.executor.local import next_job
from elmo_conformance.ground.resources import package_dir
from elmo_conformance.mutation import warm
from elmo_conformance.mutation.collector import CallRecorder, Collector, Coverage, LineCoverage, Send
from elmo_conformance.mutation.copies import FromCopy
from elmo_conformance.mutation.equivalence import changed_output
from elmo_conformance.mutation.gcov import CoverageFailed, ProgramLines, coverage_copy
from elmo_conformance.mutation.generate import Generated
from elmo_conformance.mutation.model import Baseline, MutantRun
from elmo_conformance.mutation.programs import SameProgram
from elmo_conformance.mutation.scratch import BuildFailed, Target, prepare
from elmo_conformance.runner.running import run
from elmo_conformance.spec.protocol import protocol

SUITE = package_dir("conformance")  # the conformance package: the suite to run
PROFILE = "elmo-mutants"  # the harness's Hypothesis profile without shrinking (a kill needs no minimal example)
PRECHECK = "the equivalence pre-check"  # what a mutant job runs before its tests
# One worker per core: each computes on one thread, or the workers' thread pools fight.
SINGLE_THREADED = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


@dataclass(frozen=True)
class BaselineJob:
    impl: str
    shard: int = 0  # this job runs every `shards`-th test from the `shard`-th: the workers share a baseline
    shards: int = 1
    select: str | None = None  # pytest -k: only these tests of the suite
    lines: tuple[str, ...] = ()  # Python files whose lines each test runs are recorded (generated mutants)
    record_calls: bool = False  # record which protocol functions each test calls (generated mutants)
    copy: FromCopy | None = None  # generated mutants: run the implementation from this copy of its project
    run_as: str = ""  # the --impl argument that runs it there (else impl)
    cwd: str = ""  # and the working folder it runs in
    # A program whose lines are measured with gcov (target.coverage, gcov.py): its coverage copy is
    # made and built in `scratch`, and this shard's tests run against it.
    target: Target | None = None
    scratch: str = ""


@dataclass(frozen=True)
class MutantJob:
    impl: str
    mutant: str
    order: tuple[str, ...]  # nodeids to run, expected killers first
    must_run: frozenset[str]  # the expected killers' nodeids
    fail_fast: bool
    select: str | None = None  # pytest -k, as in the baseline


@dataclass(frozen=True)
class GeneratedJob(MutantJob):
    """A generated mutant (spec §13.2): written into a scratch copy, built there, and run."""

    target: Target | None = None
    generated: Generated | None = None  # None: the clean implementation, run as every mutant is
    scratch: str = ""  # the run's scratch folder; this mutant's own is made inside it
    control: bool = False  # the clean implementation through every test (the control run)
    fresh: bool = False  # run in a pytest session of its own, not a warm worker's fork (warm.py)
    deadlines: tuple[float, ...] = ()  # each test's of `order`, in a warm run (deadlines.py)
    start_timing: tuple[float, ...] = ()  # (minimum, factor) of the program's start's deadline, in a warm run


_SAID: list[str] = []  # what the last suite run wrote to standard error (a refusal's reason)


def _run_suite(
    impl: str, collector: object, mutant: str | None = None, select: str | None = None, plugins: tuple = ()
) -> int:
    """The suite in this worker through the entry point's in-process form (elmo_conformance.run with where="here"):
    the same command line as every other run, pytest's exit status. What pytest writes to standard
    error (a refusal to start says why there) is kept for the verdict and copied to the log.
    `collector` observes the run (with `plugins`, when there are more)."""
    # unraisableexception runs gc.collect() five times per session: about a second once torch is loaded.
    args = ["-p", "no:cacheprovider", "-p", "no:terminal", "-p", "no:unraisableexception"]
    args += ["--hypothesis-profile", PROFILE]
    args += ["-k", select] if select else []
    # In-process: the worker is the isolation (a hang or crash costs the worker, not the run), and
    # a mutant's `replaces` coverage needs its code to run in this process.
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said):
            return run(
                impl, args, where="here", isolation="in-process", mutant=mutant, plugins=[collector, *plugins]
            ).exit_status
    finally:
        _SAID[:] = [said.getvalue()]
        sys.stderr.write(said.getvalue())


def exit_problem(exit_code: int, collector: Collector) -> str | None:
    """Why a run's pytest exit code means it could not be judged, or None. Exit 2 after the
    collector stopped the session itself (--fail-fast) is a finished run: pytest 9 reports a
    session stopped early as interrupted."""
    if collector.collect_errors or exit_code not in (0, 1, 5) and not (exit_code == 2 and collector.stopped):
        return f"pytest exited with code {exit_code}" + "".join("\n" + e for e in collector.collect_errors)
    return None


def _register_profile() -> None:
    phases = tuple(phase for phase in Phase if phase.name not in ("shrink", "explain"))
    settings.register_profile(PROFILE, parent=settings.get_profile("conformance"), phases=phases)


def run_baseline(job: BaselineJob, send: Send) -> Baseline:
    """The clean run. For generated mutants it runs from the run's baseline copy of the project
    (job.copy): the worker imports the implementation's modules from the copy and works in the
    copy's folder for the run, so the user's files are only read; the lines each test ran are
    reported by the user's file names, as the mutants know them."""
    if job.target is not None and job.target.coverage is not None:
        return _run_measured(job, send)
    if job.copy is None:
        return _run_baseline(job, send)
    here = os.getcwd()
    sys.meta_path.insert(0, job.copy)
    sys.path.append(job.cwd)  # a clean served run imports from its working folder (beside the adapter)
    os.chdir(job.cwd)
    try:
        baseline = _run_baseline(job, send)
    finally:
        os.chdir(here)
        sys.path.remove(job.cwd)
        sys.meta_path.remove(job.copy)
    back = {os.path.realpath(job.copy.mapped(file) or file): file for file in job.lines}
    back.update({os.path.realpath(file): file for file in job.lines})
    merged: dict[str, dict[int, list[str]]] = {}
    for measured, by_line in baseline.lines.items():
        into = merged.setdefault(back.get(os.path.realpath(measured), measured), {})
        for line, tests in by_line.items():
            into[line] = sorted({*into.get(line, []), *tests})
    baseline.lines = merged
    return baseline


def _run_measured(job: BaselineJob, send: Send) -> Baseline:
    """The baseline shard of a program whose lines each test runs are measured (gcov.py): against
    the program of a coverage copy built in the run's scratch folder, stopped after each test. When
    the coverage build fails, the shard runs as any program's does and says why."""
    import shutil

    assert job.target is not None and job.target.coverage is not None
    folder = Path(job.scratch) / f"coverage-{job.shard}"
    plain = replace(job, target=None)
    try:
        try:
            impl, copy_root = coverage_copy(job.target, folder)
        except CoverageFailed as exc:
            baseline = _run_baseline(plain, send)
            baseline.coverage_problem = f"the coverage build failed: {exc}"
            return baseline
        tracer = ProgramLines(copy_root, Path(job.target.root), job.target.coverage.gcov)
        baseline = _run_baseline(replace(plain, run_as=impl, cwd=str(copy_root)), send, tracer)
        lines, functions = tracer.result()
        if tracer.problem is not None:
            baseline.coverage_problem = f"gcov could not read a test's counts: {tracer.problem}"
        else:
            baseline.lines, baseline.functions, baseline.measured = lines, functions, "gcov"
        return baseline
    finally:
        _stop_processes()  # the coverage program's (its folder goes now)
        shutil.rmtree(folder, ignore_errors=True)


def _run_baseline(job: BaselineJob, send: Send, program_lines: ProgramLines | None = None) -> Baseline:
    baseline = Baseline(job.impl)
    impl = job.run_as or job.impl
    try:
        loaded = load_adapter(impl)
        baseline.name, baseline.unavailable = loaded.name, loaded.unavailable
        baseline.components = tuple(sorted(protocol().components_of(loaded.capabilities)))
        baseline.mutants = [describe(key, factory) for key, factory in declared_mutants(loaded.adapter).items()]
        if any(not info.id.strip() for info in baseline.mutants):
            baseline.error = f"--impl {job.impl}: `mutants` declares an empty id; a mutant id names the mutant (§11)"
            return baseline
    except AdapterLoadError as exc:
        baseline.error = str(exc)
        return baseline
    except Exception as exc:  # a malformed `mutants` declaration, or an adapter that breaks describing
        baseline.error = f"{type(exc).__name__}: {exc}"
        return baseline
    coverage = Coverage(key for info in baseline.mutants for key in info.covers or ())
    # The copy's files, and the user's: a module the worker had imported before the run (the
    # reference, which the suite's own modules import) runs from where it was first imported.
    files = [*(job.copy.mapped(f) or f for f in job.lines), *job.lines] if job.copy else job.lines
    lines = LineCoverage(files) if files else None
    calls = CallRecorder() if job.record_calls else None
    collector = Collector(
        send, coverage=coverage, shard=(job.shard, job.shards), lines=lines, calls=calls, program_lines=program_lines
    )
    started = time.perf_counter()
    baseline.exit_code = _run_suite(impl, collector, select=job.select)
    if lines is not None:
        baseline.lines = lines.result()
    if calls is not None:
        baseline.calls = calls.result()
    baseline.duration = time.perf_counter() - started
    baseline.tests = collector.outcomes
    problem = exit_problem(baseline.exit_code, collector)
    if problem:
        baseline.error = problem
    for info in baseline.mutants:
        if info.covers is not None:
            reached = set().union(*(coverage.hits[key] for key in info.covers))
            baseline.coverage[info.id] = [nodeid for nodeid in baseline.tests if nodeid in reached]
    return baseline


def run_mutant(job: MutantJob, send: Send) -> MutantRun:
    run = MutantRun(job.impl, job.mutant, selected=list(job.order))
    started = time.perf_counter()
    try:
        clean = load_adapter(job.impl)
        mutant = load_mutant(clean, job.mutant)
        send(("start", PRECHECK))
        # The pre-check only records what it sees change; the mutant is run whatever it finds
        # (§13.1): its few ordinary inputs cannot show what only special inputs reveal.
        run.difference = changed_output(clean.adapter, mutant.adapter, clean.capabilities)
        run.prechecked = True
    except Exception as exc:
        run.status, run.reason = "RuntimeError", f"loading the mutant raised {type(exc).__name__}: {exc}"
        return run
    if not job.order:
        run.status, run.reason = "NoCoverage", "no test of the clean run reaches the code it replaces"
        return run
    return _run_tests(run, job.impl, job.mutant, job, send, started)


def _run_tests(run: MutantRun, impl: str, mutant: str | None, job: MutantJob, send: Send, started: float) -> MutantRun:
    """The mutant through its selected tests, in order; its status from their outcomes. Killed
    means that a test failed: a run that could not start or broke is a RuntimeError, whatever
    tests failed before it broke."""
    order = None if isinstance(job, GeneratedJob) and job.control else list(job.order)
    collector = Collector(send, order=order, must_run=job.must_run, fail_fast=job.fail_fast)
    exit_code = _run_suite(impl, collector, mutant, job.select)
    run.duration = time.perf_counter() - started
    return judge(run, exit_code, collector)


def judge(run: MutantRun, exit_code: int, collector: Collector) -> MutantRun:
    """The mutant's status from its run's outcomes and pytest's exit status (a warm run, which
    runs no pytest session of its own, passes the status a session would have ended with)."""
    run.tests = collector.outcomes
    problem = exit_problem(exit_code, collector)
    if problem:
        run.status, run.reason = "RuntimeError", problem
    elif run.killers:
        run.status = "Killed"
    elif not run.tests:
        run.status, run.reason = "NoCoverage", "none of the selected tests was collected"
    elif run.possibly_equivalent:
        run.reason = (
            f"survived all {len(run.tests)} tests that reach it, and changes no output of the adapter on the "
            "equivalence pre-check's inputs: possibly equivalent (spec §13.1)"
        )
    return run


def run_generated(job: GeneratedJob, send: Send) -> MutantRun:
    """Copy the project's clean copy into a fresh scratch folder with the mutant written in it,
    build it there, and run its tests until the first kill; the folder is removed whatever
    happens (the user's files are only read). A harness that cannot start the mutant (pytest's
    exit status 4: the implementation's process died or broke the handshake before any test) is
    a RuntimeError with the reason: no test failed, so nothing killed it."""
    import shutil
    import tempfile

    assert job.target is not None
    run = MutantRun(job.impl, job.mutant, selected=list(job.order))
    started = time.perf_counter()
    # One folder per worker, at the same path for each of its mutants: a compiler's incremental
    # cache (rustc's) is only reused by a build in the folder that made it (scratch.py).
    folder = Path(job.scratch or tempfile.gettempdir()) / f"mutant-worker-{os.getpid()}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    try:
        send(("start", "building the mutant" if job.target.build else "writing the mutant"))
        try:
            impl, _ = prepare(job.target, job.generated, folder)
        except BuildFailed as exc:
            run.status, run.reason = "CompileError", str(exc)
            run.duration = time.perf_counter() - started
            return run
        except SameProgram as exc:  # trivial compiler equivalence (programs.py): set aside, not run
            run.status, run.reason = "Ignored", exc.reason
            run.duration = time.perf_counter() - started
            return run
        if not job.order and not job.control:
            return warm.unreached(run, job, started)
        run = _run_tests(run, impl, None, job, send, started)
        if run.status == "RuntimeError" and (run.reason or "").startswith("pytest exited with code 4"):
            run.reason = "the harness could not start the implementation: " + _refusal(run.reason or "")
        return run
    finally:
        _stop_processes()
        shutil.rmtree(folder, ignore_errors=True)


def _refusal(reason: str) -> str:
    """What the harness said when it refused to start (pytest's usage error: the adapter's
    process could not be started, and its standard error), or pytest's exit status alone."""
    said = "\n".join(line.removeprefix("ERROR: ") for line in "".join(_SAID).strip().splitlines())
    return said or reason


def _stop_processes() -> None:
    """End the mutant's process (a `cmd:` program, the served Python mutant) before its scratch
    folder goes: the harness keeps one process per --impl argument for the worker's life."""
    from elmo_conformance.adapters import loading

    for key in [key for key in loading._PROCESSES if isinstance(key, str) and key.startswith("cmd:")]:
        process = loading._PROCESSES.pop(key)
        try:
            process.stop()  # type: ignore[attr-defined]
        except Exception:  # noqa: S110 - a process that is already gone
            pass


def serve(conn: Connection, log_path: str) -> None:
    """The worker's main loop: receive a job, stream its events, send ("done", result)."""
    for key, value in SINGLE_THREADED.items():
        os.environ.setdefault(key, value)
    # Ctrl-C is the runner's to handle (it stops the workers and writes a partial report): a worker
    # that took it would end its mutant's run early and report a verdict that is not one.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    log = open(log_path, "a", buffering=1, encoding="utf-8")  # kept open for the worker's lifetime
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    _register_profile()
    conn.send(("ready", os.getpid()))
    pending: Any = None  # a job a warm session received but could not run
    while True:
        job = pending if pending is not None else next_job(conn)
        pending = None
        if job is None:
            return
        try:
            result: Baseline | MutantRun
            if warm.eligible(job):
                # A Python implementation's mutants: one session, forked per mutant; it answers
                # the jobs it takes itself and returns the first one it cannot take.
                pending = warm.run_warm(job, conn)
                if pending is warm.STOP:
                    return
                continue
            if isinstance(job, BaselineJob):
                result = run_baseline(job, conn.send)
            elif isinstance(job, GeneratedJob):
                result = run_generated(job, conn.send)
            else:
                result = run_mutant(job, conn.send)
            conn.send(("done", result))
            # What outlived the job (modules, backends, cached fixtures) stays: keep the cyclic
            # collector from scanning it again in every later test.
            gc.collect()
            gc.freeze()
        except BaseException as exc:  # report anything, then go on; the runner decides
            print(traceback.format_exc(), file=sys.stderr)
            conn.send(("failed", f"{type(exc).__name__}: {exc}"))
