"""Spawned, long-lived workers, one job each at a time, with per-job deadlines.

The runner never forks: workers are started with the "spawn" method, so no worker inherits a
process that has already imported torch or JAX (their thread pools do not survive a fork). A
worker that passes its deadline is killed and replaced (the job is a Timeout); one that dies is
replaced too (the job is a RuntimeError), and the run goes on.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any, Protocol

from elmo_conformance.mutation.worker import SINGLE_THREADED, serve


class Scheduler(Protocol):
    def next_job(self) -> tuple[Any, float | None] | None: ...  # (job, timeout in s) or None for now
    def on_event(self, job: Any, event: tuple) -> None: ...
    def on_done(self, job: Any, result: Any) -> None: ...
    def on_lost(self, job: Any, status: str, reason: str, running: str | None, elapsed: float) -> None: ...
    def finished(self) -> bool: ...


class WorkerStartError(RuntimeError):
    """A worker died before it was ready: nothing can run."""


class Worker:
    def __init__(self, index: int, log_dir: Path) -> None:
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.log_path = log_dir / f"worker-{index}.log"
        self.process = context.Process(
            target=serve, args=(child, str(self.log_path)), name=f"mutants-worker-{index}", daemon=True
        )
        self.process.start()
        child.close()
        self.ready = False
        self.job: Any = None
        self.deadline: float | None = None
        self.timeout: float | None = None
        self.running: str | None = None
        self.started = 0.0

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
            self.process.kill()
        else:
            try:
                self.conn.send(None)
            except OSError:
                pass
        self.process.join(5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5)
        self.conn.close()


def _exit_description(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            import signal

            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def run_jobs(scheduler: Scheduler, n_workers: int, log_dir: Path, progress: Callable[[str], None]) -> None:
    """Run the scheduler's jobs on `n_workers` spawned workers until it has finished."""
    for key, value in SINGLE_THREADED.items():
        os.environ.setdefault(key, value)  # inherited by the spawned workers
    log_dir.mkdir(parents=True, exist_ok=True)
    started = 0

    def start() -> Worker:
        nonlocal started
        started += 1
        return Worker(started, log_dir)

    workers = [start() for _ in range(n_workers)]
    try:
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
            wait([w.conn for w in busy] + [w.process.sentinel for w in busy], wait_for)
            for index, worker in enumerate(workers):
                if worker not in busy:
                    continue
                replacement = _service(worker, scheduler, progress)
                if replacement:
                    worker.stop(kill=True)
                    workers[index] = start()
    finally:
        for worker in workers:
            worker.stop(kill=worker.job is not None)


def _service(worker: Worker, scheduler: Scheduler, progress: Callable[[str], None]) -> bool:
    """Handle what one worker sent; True when it must be replaced (it hung or died)."""
    try:
        while worker.conn.poll():
            kind, payload = worker.conn.recv()
            if kind == "ready":
                worker.ready = True
            elif kind == "start":
                worker.running = payload
            elif kind == "test":
                scheduler.on_event(worker.job, (kind, payload))
            elif kind == "done":
                job = worker.job
                worker.release()
                scheduler.on_done(job, payload)
            elif kind == "failed":
                job, running, elapsed = worker.job, worker.running, worker.elapsed()
                worker.release()
                scheduler.on_lost(job, "RuntimeError", f"the worker raised {payload}", running, elapsed)
    except (EOFError, OSError):
        pass
    if not worker.process.is_alive():
        if not worker.ready:
            raise WorkerStartError(
                f"a worker {_exit_description(worker.process.exitcode)} while starting:\n{worker.log_tail()}"
            )
        if worker.job is not None:
            job, running, elapsed = worker.job, worker.running, worker.elapsed()
            reason = f"the worker process {_exit_description(worker.process.exitcode)}"
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
