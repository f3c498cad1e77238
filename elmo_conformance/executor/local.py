"""Long-lived worker processes on this machine, one job each at a time, with per-job deadlines.

A worker is a fresh Python process (never a fork: no worker inherits a process that has already
imported torch or JAX, whose thread pools do not survive a fork) that runs the caller's `serve`
function, named "module:function", with one end of a socket pair as a
`multiprocessing.connection.Connection` and the path of its log (its standard output and error).
It is started as a subprocess, not with multiprocessing, so that a daemonic process (a Dask
worker's) can start one too.

What travels on the connection: the runner sends a job (or None: stop); the worker sends
("ready", pid) once, ("start", what) when a part of the job starts (named in a lost job's
reason), any other (kind, payload) event, which goes to the scheduler's `on_event` as it comes,
and ("done", result) or ("failed", why) at the end of the job.

A worker that passes its job's deadline is killed and replaced (the job is lost as a Timeout); one
that dies is replaced too (the job is lost as a RuntimeError), and the run goes on. A worker that
dies before it is ready is a WorkerStartError: nothing can run.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, Protocol

# The worker's first lines: the parent's import path (as multiprocessing's spawn passes it), then
# child_main, which imports nothing but this module before the caller's `serve`.
LAUNCH = (
    "import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
    "from elmo_conformance.executor.local import child_main; child_main(sys.argv[2:])"
)
PARENT_VARIABLE = "ELMO_WORKER_PARENT"  # the pid of the process that started the worker
EXIT_WAIT_S = 5.0  # how long a worker whose connection closed is given to end


class Scheduler(Protocol):
    def next_job(self) -> tuple[Any, float | None] | None: ...  # (job, timeout in s) or None for now
    def on_event(self, job: Any, event: tuple) -> None: ...
    def on_done(self, job: Any, result: Any) -> None: ...
    def on_lost(self, job: Any, status: str, reason: str, running: str | None, elapsed: float) -> None: ...
    def finished(self) -> bool: ...


class WorkerStartError(RuntimeError):
    """A worker died before it was ready: nothing can run."""


def next_job(conn: Any) -> Any:
    """In a worker: the next job on its connection, or None when the runner is done with it (it
    sent None, or closed its end)."""
    try:
        return conn.recv()
    except EOFError:
        return None


def child_main(argv: list[str]) -> None:
    """The worker process: `serve(connection, log_path)` for argv = [FD, "module:function", LOG]
    and, for a worker of a Dask worker, "unship" (shipping.Unshipping: it reads shipped jobs)."""
    import importlib

    fd, target, log_path, *how = argv
    end_with_parent(int(os.environ.pop(PARENT_VARIABLE, "0")) or os.getppid())
    module, _, function = target.partition(":")
    serve = getattr(importlib.import_module(module), function)
    conn: Any = Connection(int(fd))
    if how == ["unship"]:
        from elmo_conformance.executor.shipping import Unshipping

        conn = Unshipping(conn)
    serve(conn, log_path)


def end_with_parent(parent: int) -> None:
    """In a worker: SIGKILL this process as soon as `parent` (the runner, or the Dask worker that
    started it) has ended, however it ended (SIGKILL included), so that no worker outlives its run
    (§11.1); what the worker started ends with it (a warm child's PR_SET_PDEATHSIG, bwrap's
    --die-with-parent). A thread waits on the parent's pidfd, or looks every second where there is
    none; it is not inherited by a fork."""

    def watch() -> None:
        try:
            handle = os.pidfd_open(parent)
        except (AttributeError, OSError):
            handle = None
        if handle is not None:
            watcher = select.poll()
            watcher.register(handle, select.POLLIN)
            while not watcher.poll():
                pass
        else:
            while os.getppid() == parent:
                time.sleep(1.0)
        os.kill(os.getpid(), signal.SIGKILL)

    if os.getppid() != parent:  # already ended: adopted by another process
        os.kill(os.getpid(), signal.SIGKILL)
    threading.Thread(target=watch, name="elmo-end-with-parent", daemon=True).start()


class Worker:
    """One worker process and the job it runs."""

    def __init__(
        self, index: int, log_dir: Path, serve: str, env: dict[str, str] | None = None, unship: bool = False
    ) -> None:
        self.log_path = log_dir / f"worker-{index}.log"
        ours, theirs = socket.socketpair()
        try:
            with open(self.log_path, "ab") as log:
                argv = [sys.executable, "-c", LAUNCH, json.dumps(sys.path), str(theirs.fileno()), serve]
                self.process = subprocess.Popen(
                    [*argv, str(self.log_path), *(["unship"] if unship else [])],
                    pass_fds=(theirs.fileno(),),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env={**(os.environ if env is None else env), PARENT_VARIABLE: str(os.getpid())},
                )
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        self.sentinel: int | None = None  # readable when the process ends (Linux's pidfd)
        with contextlib.suppress(AttributeError, OSError):
            self.sentinel = os.pidfd_open(self.process.pid)
        self.ready = False
        self.job: Any = None
        self.deadline: float | None = None
        self.timeout: float | None = None
        self.running: str | None = None
        self.started = 0.0

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def assign(self, job: Any, timeout: float | None) -> None:
        self.job, self.timeout, self.running = job, timeout, None
        self.started = time.monotonic()
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.conn.send(job)

    def elapsed(self) -> float:
        """Seconds since the current job was assigned."""
        return time.monotonic() - self.started

    def release(self) -> None:
        self.job = self.deadline = self.timeout = self.running = None

    def log_tail(self, lines: int = 12) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.rstrip().splitlines()[-lines:])

    def stop(self, kill: bool) -> None:
        if kill:
            with contextlib.suppress(OSError):
                self.process.kill()
        else:
            with contextlib.suppress(OSError):
                self.conn.send(None)
        try:
            self.process.wait(EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(EXIT_WAIT_S)
        self.conn.close()
        if self.sentinel is not None:
            os.close(self.sentinel)
            self.sentinel = None


def exit_description(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


class Pool:
    """`n_workers` workers that stay up between runs of schedulers (a remote slot keeps its
    worker warm from one job to the next); `close` ends them."""

    def __init__(
        self, n_workers: int, log_dir: Path, serve: str, env: dict[str, str] | None = None, unship: bool = False
    ) -> None:
        if n_workers < 1:
            raise ValueError(f"n_workers: expected an integer >= 1, got {n_workers}")
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir, self.serve, self.env, self.unship = log_dir, serve, env, unship
        self.started = 0
        self.closed = False
        self.workers: list[Worker] = []
        for _ in range(n_workers):
            self.workers.append(self._start())

    def _start(self) -> Worker:
        if self.closed:  # closed under a running scheduler (a remote run ended): start nothing more
            raise RuntimeError("the workers were stopped")
        self.started += 1
        return Worker(self.started, self.log_dir, self.serve, self.env, self.unship)

    def run(self, scheduler: Scheduler, progress: Callable[[str], None]) -> None:
        """Run the scheduler's jobs until it has finished."""
        workers = self.workers
        while not scheduler.finished():
            for worker in workers:
                if worker.ready and worker.job is None:
                    picked = scheduler.next_job()
                    if picked is not None:
                        worker.assign(*picked)
            busy = [w for w in workers if w.job is not None or not w.ready]
            if not busy:
                raise RuntimeError("no job can start and none is running (a job waits on a result that never came)")
            deadlines = [w.deadline for w in busy if w.deadline is not None]
            wait_for = None if not deadlines else max(0.0, min(deadlines) - time.monotonic())
            sentinels = [w.sentinel for w in busy if w.sentinel is not None]
            if len(sentinels) < len(busy):  # no pidfd: look at the processes every half second
                wait_for = 0.5 if wait_for is None else min(wait_for, 0.5)
            waited: list[Any] = [w.conn for w in busy]
            wait(waited + sentinels, wait_for)
            for index, worker in enumerate(workers):
                if worker not in busy:
                    continue
                if _service(worker, scheduler, progress):
                    worker.stop(kill=True)
                    workers[index] = self._start()

    def close(self) -> None:
        self.closed = True
        for worker in self.workers:
            worker.stop(kill=worker.job is not None)
        self.workers = []


def run_jobs(
    scheduler: Scheduler,
    n_workers: int,
    log_dir: Path,
    progress: Callable[[str], None],
    serve: str,
    env: dict[str, str] | None = None,
) -> None:
    """Run the scheduler's jobs on `n_workers` workers running `serve` until it has finished."""
    pool = Pool(n_workers, log_dir, serve, env)
    try:
        pool.run(scheduler, progress)
    finally:
        pool.close()


def _service(worker: Worker, scheduler: Scheduler, progress: Callable[[str], None]) -> bool:
    """Handle what one worker sent; True when it must be replaced (it hung or died)."""
    try:
        while worker.conn.poll():
            kind, payload = worker.conn.recv()
            if kind == "ready":
                worker.ready = True
            elif kind == "start":
                worker.running = payload
            elif kind == "done":
                job = worker.job
                worker.release()
                scheduler.on_done(job, payload)
            elif kind == "failed":
                job, running, elapsed = worker.job, worker.running, worker.elapsed()
                worker.release()
                scheduler.on_lost(job, "RuntimeError", f"the worker raised {payload}", running, elapsed)
            else:
                scheduler.on_event(worker.job, (kind, payload))
    except (EOFError, OSError):  # the worker closed its end: it is ending
        with contextlib.suppress(subprocess.TimeoutExpired):
            worker.process.wait(EXIT_WAIT_S)
    if not worker.alive():
        if not worker.ready:
            raise WorkerStartError(
                f"a worker {exit_description(worker.process.returncode)} while starting:\n{worker.log_tail()}"
            )
        if worker.job is not None:
            job, running, elapsed = worker.job, worker.running, worker.elapsed()
            reason = f"the worker process {exit_description(worker.process.returncode)}"
            reason += f" while running {running}" if running else ""
            tail = worker.log_tail()
            worker.release()
            tail_text = f"; its last output:\n{tail}" if tail else ""
            scheduler.on_lost(job, "RuntimeError", reason + tail_text, running, elapsed)
        return True
    if worker.deadline is not None and time.monotonic() > worker.deadline:
        job, running, timeout, elapsed = worker.job, worker.running, worker.timeout, worker.elapsed()
        worker.release()
        reason = f"did not finish within {timeout:.0f} s" + (f"; it was running {running}" if running else "")
        progress(f"timeout: {reason}")
        scheduler.on_lost(job, "Timeout", reason, running, elapsed)
        return True
    return False
