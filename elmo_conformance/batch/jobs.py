"""One job of a batch, as it runs on a worker: self-contained, bounded in time, and leaving no
process behind.

A job gets everything it needs in its ``Job`` (the submission's packed files, the --impl argument,
the build command, the suite's options, its deadline) and returns a plain dict (the exit status,
the run's own JSON report, the tail of its output), so that no file system is shared between the
client and the workers, and the HTML pages are rendered on the client.

The executor (Dask) has no per-task timeout and cannot stop a task hung in a worker thread, and
when a worker process dies its child processes keep running. So:

- the job runs its work (the build command, the suite through ``elmo_conformance.run``, a mutation
  run) as child processes in sessions of their own, each with what is left of the job's deadline,
  and ends each process group at the deadline (``run`` does this for the suite);
- every process of the job carries ``JOB_ENV`` = the job's id in its environment, and a *guard*
  process, started first, holds the read end of a pipe whose write end only the worker process has.
  When the job ends, or the worker process dies (the kernel closes the pipe then), the guard kills
  every process that carries the id, including any that left its session, and removes the job's
  scratch folder (the submission's files). No process of a job outlives it.

The submission's code runs in the sandbox (elmo_conformance/processes/sandbox.py, docs/sandbox.md): its
build command and its mutation run each in one, the job's folder its only writable one; its
adapter behind the protocol server or its program, started by the suite, in one of its own. In the
sandbox's PID namespace every process of it ends with it, and it has no network: no route to the
scheduler or the workers. A job refuses to run without the sandbox unless the batch was given
--no-sandbox. The suite's installed files are hashed before and after each job
(``resources.suite_digest``): a job that finds them other than the client's, or leaves them
changed, has no verdict.

A suite job is graded from what its harness observed (docs/grading.md): the harness writes a
journal of its tests as they finish (``journal``, a pytest plugin in the harness's process), so a
job stopped at its deadline still has the outcomes of the tests that finished. Before the first
suite job on a worker, the reference (``REFERENCE``) runs the same selection there with the same
plugin, and its CPU time per test, times the job's ``time_factor`` (at least ``time_floor_s``), is
each test's CPU-time limit for the submissions that run on that worker (``calibrate``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elmo_conformance.batch import journal
from elmo_conformance.ground.resources import child_environment, suite_digest
from elmo_conformance.processes import kill, sandbox
from elmo_conformance.processes.guard import sweep

JOB_ENV = "ELMO_CONFORMANCE_BATCH_JOB"
OUTPUT_TAIL = 20_000  # characters of a job's output shipped back
REFERENCE = "numpy"  # the implementation each worker's CPU-time limits are calibrated on
CALIBRATION_DEADLINE_S = 3600.0  # the reference's run on a worker, the calibration
MESSAGE_SHIPPED = 1500  # characters of each journal entry's failure message shipped back
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")  # kept in the sandbox
# A call the harness gave up on after --call-timeout (conformance/case.py's message): a time limit.
CALL_TIMEOUT_TEXT = "s (--call-timeout)"

# The guard (elmo_conformance/processes/guard.py): waits for its stdin to close (the job ended, or
# the worker process died), then kills every process whose environment carries JOB_ENV=<id>, until
# none is left, and removes the job's scratch folder. -P: never a module of the working folder.
GUARD = [sys.executable, "-P", "-m", "elmo_conformance.processes.guard"]


@dataclass
class Job:
    """One job: the suite on a submission (kind "suite"), or a mutation run on it ("declared",
    "generated"), with the suite's options and a deadline in seconds for the whole job."""

    name: str
    impl: str
    kind: str = "suite"  # suite, declared, generated, generated-list (the ids of the generated mutants)
    files: bytes | None = None
    build: str | None = None
    suite_args: list[str] = field(default_factory=list)
    deadline_s: float = 3600.0
    margins: bool = False  # write --report on the worker: the margins of §10 (and a page there, discarded)
    mutants: list[str] = field(default_factory=list)  # --mutant ids of a shard (none: every mutant)
    version: str = ""  # the client's suite version: a worker with another refuses the job
    pool: int = 1  # a mutation job: the mutation runner's own worker processes (--workers)
    job_id: str = ""  # this try's id (JOB_ENV), set by the executor for each try
    sandboxed: bool = True  # False: --no-sandbox, the submission runs with the worker's rights
    suite_digest: str = ""  # the client's suite_digest(): a worker whose suite differs refuses the job
    time_factor: float = 0.0  # a suite job: each test's CPU-time limit, times the reference's (0: none)
    time_floor_s: float = 0.0  # ... and at least this many CPU seconds
    alone: bool = False  # the executor runs it with no other job of the batch beside it


def read_tail(handle: Any, limit: int = OUTPUT_TAIL * 4) -> str:
    """The last `limit` bytes of an open binary file, decoded: a job's output is read with a cap
    (a submission that writes a gigabyte costs the worker no gigabyte of memory)."""
    handle.seek(0, os.SEEK_END)
    size = handle.tell()
    handle.seek(max(0, size - limit))
    text = handle.read().decode("utf-8", errors="replace")
    return text if size <= limit else f"[... {size - limit} bytes cut]\n" + text


def _tail(text: str | None, limit: int = OUTPUT_TAIL) -> str:
    if not text:
        return ""
    return text if len(text) <= limit else "[...]\n" + text[-limit:]


class Guard:
    """The guard process of one job (see the module's docstring)."""

    def __init__(self, job_id: str, scratch: Path | None = None) -> None:
        self.job_id, self.scratch = job_id, scratch
        env = child_environment({k: v for k, v in os.environ.items() if k != JOB_ENV})  # this copy of the suite
        self.process = subprocess.Popen(
            [*GUARD, JOB_ENV, job_id, *([str(scratch)] if scratch else [])],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )

    def close(self) -> None:
        """End the job: the guard kills whatever of it is left, then exits."""
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()
        try:
            code = self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        if code != 0:  # it could not run (or was killed): what it would have done, done here
            sweep(JOB_ENV, self.job_id, str(self.scratch) if self.scratch else None)


def run_group(
    command: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    deadline_s: float,
    box: sandbox.Sandbox | None = None,
) -> tuple[int | None, str, float]:
    """Run `command` in a session of its own (in the sandbox `box`, unless None or --no-sandbox),
    its output captured (its tail read back); its whole process group is killed at the deadline.
    Returns (exit status or None when it ran past the deadline, output, seconds)."""
    started = time.monotonic()
    if box is not None and sandbox.active(env):
        command = box.command(command, cwd=cwd, env=env)
        env = box.environment(env)
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            code: int | None = process.wait(timeout=max(deadline_s, 0.1))
        except subprocess.TimeoutExpired:
            code = None
        finally:
            kill.end_group(process)
        text = read_tail(output)
    return code, text, time.monotonic() - started


def _where() -> dict[str, Any]:
    import socket

    where: dict[str, Any] = {"host": socket.gethostname(), "pid": os.getpid()}
    with contextlib.suppress(Exception):
        from distributed import get_worker

        where["worker"] = get_worker().address
    return where


def run_job(job: Job) -> dict[str, Any]:
    """Run one job and return its result (a plain dict; see ``records`` for how it is judged)."""
    from elmo_conformance.ground.version import __version__

    started = time.monotonic()
    job_id = job.job_id or uuid.uuid4().hex
    result: dict[str, Any] = {"job": job_id, "kind": job.kind, "where": _where(), "version": __version__}
    if job.version and job.version != __version__:
        result.update(
            stage="version",
            problem=f"this worker has elmo-conformance {__version__}, the client {job.version}: "
            f"install elmo-conformance=={job.version} on every worker and the scheduler",
        )
        return result
    if job.sandboxed and sandbox.unavailable():
        result.update(
            stage="sandbox",
            problem=f"the sandbox cannot run on this worker ({sandbox.unavailable()}); the batch runs submissions "
            "only in it, unless given --no-sandbox",
        )
        return result
    before = suite_digest()
    if job.suite_digest and before != job.suite_digest:
        result.update(
            stage="suite-files",
            problem=f"the suite's installed files on this worker ({before[:12]}) are not the client's "
            f"({job.suite_digest[:12]}): changed since it was installed? reinstall it",
        )
        return result
    tmp = Path(tempfile.mkdtemp(prefix="elmo-batch-"))
    guard = Guard(job_id, tmp)
    try:
        work = tmp / "submission"
        work.mkdir()
        if job.files is not None:
            from elmo_conformance.batch.submissions import unpack

            unpack(job.files, work)
        env = _job_env(job, job_id)

        calibrating = [0.0]  # seconds of the reference's run on this worker: not the job's

        def left() -> float:
            return job.deadline_s - (time.monotonic() - started - calibrating[0])

        if job.build:
            box = sandbox.Sandbox(writable=(str(work),), keep=(JOB_ENV,))
            code, text, seconds = run_group(["/bin/sh", "-c", job.build], cwd=work, env=env, deadline_s=left(), box=box)
            result.update(build={"exit_status": code, "output": _tail(text), "duration_s": round(seconds, 3)})
            if code != 0:
                result.update(stage="build", timed_out=code is None)
        if result.get("stage") != "build":
            if job.kind == "suite":
                # The reference's CPU time per test on this worker, outside the job's deadline.
                before_calibration = time.monotonic()
                result["calibration"] = calibrate(job, job_id, before, tmp / "calibration")
                calibrating[0] = time.monotonic() - before_calibration
                result.update(_suite(job, work, tmp, env, left(), result))
            else:
                result.update(_mutants(job, work, tmp, env, left()))
            result["stage"] = job.kind
    finally:
        guard.close()
        shutil.rmtree(tmp, ignore_errors=True)
    after = suite_digest()
    result["suite_digest"] = {"before": before, "after": after}
    if after != before:
        result.update(
            stage="suite-files",
            problem=f"the suite's installed files changed during the job ({before[:12]} -> {after[:12]}): "
            "its verdict is refused, and so is every later job on this worker until the suite is reinstalled",
        )
    result["duration_s"] = round(time.monotonic() - started, 3)
    return result


# The calibrations made in this worker process: (suite options, sandbox, suite digest) -> calibration.
_CALIBRATIONS: dict[tuple[Any, ...], dict[str, Any]] = {}


def calibrate(job: Job, job_id: str, digest: str, folder: Path) -> dict[str, Any]:
    """The reference's CPU seconds per test on this worker, for the job's selection: run once per
    worker process, selection and suite (`digest`; the first suite job pays it), with the
    journal's plugin and in the same sandbox as a submission, outside any job's deadline; in
    `folder`, inside the job's own (its guard ends what is left of it)."""
    key = (tuple(job.suite_args), job.sandboxed, digest)
    if key in _CALIBRATIONS:
        return {**_CALIBRATIONS[key], "reused": True}
    from elmo_conformance import run

    started = time.monotonic()
    work = folder / "reference"
    work.mkdir(parents=True)
    try:
        env = _job_env(job, job_id)
        env[journal.JOURNAL_ENV] = str(folder / "journal.jsonl")
        ran = run(
            REFERENCE,
            [*job.suite_args, "-p", journal.PLUGIN],
            deadline_s=CALIBRATION_DEADLINE_S,
            capture=True,
            cwd=work,
            env=env,
        )
        entries = journal.read(folder / "journal.jsonl")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    cpu: dict[str, float] = {}
    items: dict[str, int] = {}
    sections: dict[str, list[str]] = {}
    for entry in entries:
        if entry.get("event") == "test":
            name = str(entry.get("test"))
            cpu[name] = max(cpu.get(name, 0.0), float(entry.get("cpu_s") or 0.0))
            items[name] = items.get(name, 0) + 1
            sections.setdefault(name, list(entry.get("sections") or []))
    calibration: dict[str, Any] = {
        "reference": REFERENCE,
        "where": _where(),
        "exit_status": ran.exit_status,
        "cpu_s": cpu,
        "items": items,
        "sections": sections,
        "seconds": round(time.monotonic() - started, 3),
    }
    if not ran.complete:
        calibration["problem"] = f"the reference's run did not finish: {ran.problem}"
    else:
        _CALIBRATIONS[key] = calibration
    return calibration


def limits(calibration: dict[str, Any], factor: float, floor_s: float) -> dict[str, float]:
    """Each test's CPU-time limit: `factor` times the reference's CPU time, and at least `floor_s`;
    "*" for a test the reference did not run."""
    cpu = calibration.get("cpu_s") or {}
    found = {name: round(max(floor_s, factor * seconds), 3) for name, seconds in cpu.items()}
    found["*"] = round(max(floor_s, factor * max(cpu.values(), default=0.0)), 3)
    return found


def _job_env(job: Job, job_id: str) -> dict[str, str]:
    env = dict(os.environ)
    env[JOB_ENV] = job_id
    env.pop("PYTEST_CURRENT_TEST", None)
    # The harness runs in the submission's folder: Python must not import from it (a submission's
    # own pytest.py or elmo_conformance/ would run in the harness's process, outside the sandbox).
    env["PYTHONSAFEPATH"] = "1"
    # One thread per worker (docs/batch.md, "Where the jobs run"), and a CPU time that does not grow with
    # the machine's load: a BLAS pool waiting for its threads on busy cores spins, and counts.
    for variable in THREAD_VARIABLES:
        env.setdefault(variable, "1")
    if not job.sandboxed:
        env[sandbox.OFF_ENV] = "1"
    return env


def time_limit_hits(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tests of a journal that hit a time limit: their CPU-time limit, or --call-timeout."""
    hits = []
    for entry in entries:
        if entry.get("event") != "test":
            continue
        if entry.get("hit"):
            hits.append({"nodeid": entry.get("nodeid"), "test": entry.get("test"), **entry["hit"]})
        elif entry.get("outcome") == "failed" and CALL_TIMEOUT_TEXT in (entry.get("message") or ""):
            hits.append({"nodeid": entry.get("nodeid"), "test": entry.get("test"), "kind": "call-timeout"})
    return hits


def _suite(
    job: Job, work: Path, tmp: Path, env: dict[str, str], deadline_s: float, given: dict[str, Any]
) -> dict[str, Any]:
    from elmo_conformance import run

    if deadline_s <= 0:
        return {"timed_out": True, "exit_status": None, "problem": "no time was left for the suite"}
    report = tmp / "report.json" if job.margins else None
    path = tmp / "journal.jsonl"  # the job's folder, not the submission's: out of the sandbox's reach
    env = {**env, journal.JOURNAL_ENV: str(path)}
    calibration = given.get("calibration") or {}
    applied: dict[str, float] = {}
    if job.time_factor > 0 and not calibration.get("problem"):
        applied = limits(calibration, job.time_factor, job.time_floor_s)
        (tmp / "limits.json").write_text(json.dumps(applied), encoding="utf-8")
        env[journal.LIMITS_ENV] = str(tmp / "limits.json")
    args = [*job.suite_args, "-p", journal.PLUGIN]
    result = run(job.impl, args, report=report, deadline_s=deadline_s, capture=True, cwd=work, env=env)
    timed_out = any("deadline" in note for note in result.notes) and result.exit_status == 3
    entries = journal.read(path)
    for entry in entries:
        if isinstance(entry.get("message"), str):
            entry["message"] = entry["message"][-MESSAGE_SHIPPED:]
    return {
        "exit_status": result.exit_status,
        "complete": result.complete,
        "problem": result.problem,
        "timed_out": timed_out,
        "notes": result.notes,
        "report": result.report,
        "output": _tail(result.output),
        "suite_s": round(result.duration_s, 3),
        "journal": entries,
        "limits": {"factor": job.time_factor, "floor_s": job.time_floor_s, "per_test": applied},
        "time_limit_hits": time_limit_hits(entries),
    }


def _mutants(job: Job, work: Path, tmp: Path, env: dict[str, str], deadline_s: float) -> dict[str, Any]:
    """A mutation run on the submission: `elmo-conformance mutants` (declared mutants) or
    `elmo-conformance mutate` (generated), in a process group of its own."""
    from elmo_conformance.ground.resources import child_environment

    out = tmp / "mutants"
    command = [sys.executable, "-m", "elmo_conformance"]
    if job.kind == "declared":
        command += [
            "mutants",
            "--impl",
            job.impl,
            "--out",
            str(out),
            "--workers",
            str(job.pool),
            "--no-html",
            "--fail-fast",
        ]
    else:  # generated: `elmo-conformance mutate`, the mutants of the submission's own source (§13.2)
        command += [
            "mutate",
            "--impl",
            job.impl,
            "--out",
            str(out),
            "--workers",
            str(job.pool),
            "--no-html",
            "--no-cache",
        ]
        command += ["--build", job.build] if job.build else []
        command += job.suite_args  # -k EXPR
        command += ["--list"] if job.kind == "generated-list" else []
    for mutant in job.mutants:
        command += ["--mutant", mutant]
    # The mutation run holds the submission in its own processes (mutants switched in memory): the
    # whole run is one sandbox, the job's folder writable; inside it, no sandbox of its own.
    run_env = child_environment(env)
    if sandbox.active(env):
        box = sandbox.Sandbox(writable=(str(tmp),), keep=(JOB_ENV,))
        command = box.command(command, cwd=work, env=run_env)
        run_env = box.environment(run_env, {sandbox.OFF_ENV: "1"})
    code, text, seconds = run_group(command, cwd=work, env=run_env, deadline_s=deadline_s)
    if job.kind == "generated-list":  # "ID  label" lines: the shards' mutant ids
        ids = [line.split()[0] for line in text.splitlines() if line.strip() and not line.startswith(("error", " "))]
        return {"exit_status": code, "timed_out": code is None, "mutant_ids": ids, "output": _tail(text)}
    report = None
    path = out / "mutation-report.json"
    with contextlib.suppress(OSError, ValueError):
        report = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(report, dict):  # the mutants and their verdicts travel back, not the sources
        report.pop("testFiles", None)
        for entry in (report.get("files") or {}).values():
            if isinstance(entry, dict):
                entry.pop("source", None)
    return {
        "exit_status": code,
        "timed_out": code is None,
        "report": report,
        "output": _tail(text),
        "mutants_s": round(seconds, 3),
        "command": command[1:],
    }
