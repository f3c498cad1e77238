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

The submission's code runs in the sandbox (elmo_conformance/sandbox.py, docs/sandbox.md): its
build command and its mutation run each in one, the job's folder its only writable one; its
adapter behind the protocol server or its program, started by the suite, in one of its own. In the
sandbox's PID namespace every process of it ends with it, and it has no network: no route to the
scheduler or the workers. A job refuses to run without the sandbox unless the batch was given
--no-sandbox. The suite's installed files are hashed before and after each job
(``resources.suite_digest``): a job that finds them other than the client's, or leaves them
changed, has no verdict.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elmo_conformance import sandbox
from elmo_conformance.resources import suite_digest

JOB_ENV = "ELMO_CONFORMANCE_BATCH_JOB"
OUTPUT_TAIL = 20_000  # characters of a job's output shipped back

# The guard: waits for its stdin to close (the job ended, or the worker process died), then kills
# every process whose environment carries JOB_ENV=<id>, until none is left, and removes the job's
# scratch folder.
GUARD = r"""
import os, shutil, signal, sys, time
marker = ("%s=%s" % (sys.argv[1], sys.argv[2])).encode()
sys.stdin.buffer.read()
def marked():
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % entry, "rb") as handle:
                if marker in handle.read().split(b"\0"):
                    found.append(int(entry))
        except OSError:
            pass
    return found
for _ in range(200):
    pids = marked()
    if not pids:
        break
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    time.sleep(0.05)
if len(sys.argv) > 3:
    shutil.rmtree(sys.argv[3], ignore_errors=True)
"""


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
        env = {k: v for k, v in os.environ.items() if k != JOB_ENV}
        self.process = subprocess.Popen(
            [sys.executable, "-c", GUARD, JOB_ENV, job_id, *([str(scratch)] if scratch else [])],
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
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


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
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.kill()
            process.wait()
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
    from elmo_conformance import __version__

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
            from .submissions import unpack

            unpack(job.files, work)
        env = dict(os.environ)
        env[JOB_ENV] = job_id
        env.pop("PYTEST_CURRENT_TEST", None)
        if not job.sandboxed:
            env[sandbox.OFF_ENV] = "1"

        def left() -> float:
            return job.deadline_s - (time.monotonic() - started)

        if job.build:
            box = sandbox.Sandbox(writable=(str(work),), keep=(JOB_ENV,))
            code, text, seconds = run_group(["/bin/sh", "-c", job.build], cwd=work, env=env, deadline_s=left(), box=box)
            result.update(build={"exit_status": code, "output": _tail(text), "duration_s": round(seconds, 3)})
            if code != 0:
                result.update(stage="build", timed_out=code is None)
        if result.get("stage") != "build":
            if job.kind == "suite":
                result.update(_suite(job, work, tmp, env, left()))
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


def _suite(job: Job, work: Path, tmp: Path, env: dict[str, str], deadline_s: float) -> dict[str, Any]:
    from elmo_conformance import run

    if deadline_s <= 0:
        return {"timed_out": True, "exit_status": None, "problem": "no time was left for the suite"}
    report = tmp / "report.json" if job.margins else None
    result = run(job.impl, job.suite_args, report=report, deadline_s=deadline_s, capture=True, cwd=work, env=env)
    timed_out = any("deadline" in note for note in result.notes) and result.exit_status == 3
    return {
        "exit_status": result.exit_status,
        "complete": result.complete,
        "problem": result.problem,
        "timed_out": timed_out,
        "notes": result.notes,
        "report": result.report,
        "output": _tail(result.output),
        "suite_s": round(result.duration_s, 3),
    }


def _mutants(job: Job, work: Path, tmp: Path, env: dict[str, str], deadline_s: float) -> dict[str, Any]:
    """A mutation run on the submission: `elmo-conformance mutants` (declared mutants) or
    `elmo-conformance mutate` (generated), in a process group of its own."""
    from elmo_conformance.resources import child_environment

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
    else:  # generated: `elmo-conformance mutate`, the mutants of the submission's own source (§13.3)
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
