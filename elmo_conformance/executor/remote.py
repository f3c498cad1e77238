"""The local workers' design on a Dask cluster: each Dask worker thread keeps a warm worker.

The client keeps the queue (the caller's scheduler, as `local.Pool.run` keeps it) and hands the
cluster no more jobs than it has worker threads, one job per task. A task runs where Dask puts
it, in a Dask worker process, and there:

1. the run's files (a `Shipment`: folders and files of this machine) are unpacked once per machine,
   under a base folder, each absolute path P at BASE/P (`Relocation`), so that the paths between
   them keep their shape; the next tasks of the run on that machine find them there;
2. the job goes through the caller's `localize(job, relocation)`, which maps the paths it names
   into the base, to a local worker (`local.Pool` of one, running the caller's `serve`) that the
   Dask worker keeps for the run, one per Dask worker thread: it is started by the run's first
   task there, pays its imports, collection and builds once, and takes the next tasks' jobs warm;
3. the job keeps its own deadline there, as it does in a local run: a worker that passes it is
   killed and replaced (the job is a Timeout), one that dies is replaced (a RuntimeError);
4. the task returns what the job sent, in order (its events, then its result or why it was lost),
   through the caller's `delocalize`, and the client hands them to the scheduler.

A Dask worker that dies loses the job it was running: a RuntimeError saying so (the client runs
with Dask's retries off; a cluster's scheduler may first run the task again elsewhere, up to its
own ``allowed-failures``, and then the job's verdict is that run's). A task still running
`GRACE_S` after its job's deadline (its Dask worker stopped answering) is given up, the same way.
At the end, every worker of the cluster stops the run's local workers and removes its files.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import itertools
import os
import pickle
import shutil
import tarfile
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from elmo_conformance.executor.local import Pool, Scheduler, WorkerStartError
from elmo_conformance.executor.shipping import Localize, Relocation, Shipment, Shipped

GRACE_S = 120.0  # seconds past a job's deadline before the client gives its task up
COMPLETE = ".complete"  # written in a base folder once the shipment is unpacked there


# What a Dask worker process keeps for a run: its local workers, each taken by one task at a time.
_IDLE: dict[str, list[Pool]] = {}  # run -> the workers that no task is using
_ALL: dict[str, list[Pool]] = {}  # run -> every worker started for it here
_LOCK = threading.Lock()
_STARTED = itertools.count(1)  # names each local worker's log folder


def _base(run: str) -> str:
    return os.path.join(tempfile.gettempdir(), f"elmo-executor-{run}")


def _unpacked(run: str, blob: bytes) -> str:
    """The run's base folder on this machine, unpacked by the first task that needs it (a file
    lock: the Dask workers of one machine share it, as the local workers share the scratch)."""
    base = _base(run)
    with open(base + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(os.path.join(base, COMPLETE)):
            shutil.rmtree(base, ignore_errors=True)
            os.makedirs(base)
            with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
                if hasattr(tarfile, "data_filter"):
                    tar.extractall(base, filter="data")
                else:  # pragma: no cover - Python before 3.11.4
                    tar.extractall(base)  # noqa: S202 - packed by this run's client
            Path(base, COMPLETE).touch()
    return base


def _take(run: str, serve: str, environment: dict[str, str], base: str) -> Pool:
    """An idle local worker of the run in this process, or a new one (started now)."""
    with _LOCK:
        idle = _IDLE.setdefault(run, [])
        if idle:
            return idle.pop()
        logs = Path(base) / "logs" / f"{os.getpid()}-{next(_STARTED)}"
    pool = Pool(1, logs, serve, environment, unship=True)
    with _LOCK:
        _ALL.setdefault(run, []).append(pool)
    return pool


def _task(
    run: str,
    blob: bytes,
    paths: tuple[str, ...],
    serve: str,
    env: dict[str, str],
    env_paths: tuple[str, ...],
    payload: bytes,
    timeout: float | None,
) -> list[tuple]:
    """One job on a warm local worker of this Dask worker; what it sent, in order (delocalized
    by the local worker). `payload`: the pickled (job, localize, delocalize), read there."""
    relocation = Relocation(_unpacked(run, blob), paths)
    extra = {key: relocation.here(value) if key in env_paths else value for key, value in env.items()}
    pool = _take(run, serve, {**os.environ, **extra}, relocation.base)
    keep = True
    try:
        answers: list[tuple] = []
        one = _One(Shipped(payload, relocation), timeout, answers)
        pool.run(one, lambda line: answers.append(("progress", line)))
        return answers
    except WorkerStartError:
        keep = False
        pool.close()
        raise
    finally:
        with _LOCK:
            back = keep and run in _ALL  # not when the run was closed meanwhile
            if back:
                _IDLE.setdefault(run, []).append(pool)
        if keep and not back:
            pool.close()


class _One:
    """The scheduler of one task: its one job, what the local worker sent about it recorded."""

    def __init__(self, job: Any, timeout: float | None, answers: list[tuple]) -> None:
        self.job, self.timeout, self.answers = job, timeout, answers
        self.given = self.over = False

    def next_job(self) -> tuple[Any, float | None] | None:
        if self.given:
            return None
        self.given = True
        return self.job, self.timeout

    def on_event(self, job: Any, event: tuple) -> None:
        self.answers.append(("event", event))

    def on_done(self, job: Any, result: Any) -> None:
        self.answers.append(("done", result))
        self.over = True

    def on_lost(self, job: Any, status: str, reason: str, running: str | None, elapsed: float) -> None:
        self.answers.append(("lost", status, reason, running, elapsed))
        self.over = True

    def finished(self) -> bool:
        return self.over


def close_run(run: str) -> None:
    """On a Dask worker: stop the run's local workers in this process and remove its files."""
    with _LOCK:
        pools = _ALL.pop(run, [])
        _IDLE.pop(run, None)
    for pool in pools:
        pool.close()
    base = _base(run)
    shutil.rmtree(base, ignore_errors=True)
    with contextlib.suppress(OSError):
        os.unlink(base + ".lock")


def run_on_cluster(
    scheduler: Scheduler,
    client: Any,
    serve: str,
    progress: Callable[[str], None],
    shipment: Shipment,
    localize: Localize,
    delocalize: Localize,
    env: dict[str, str] | None = None,
    env_paths: tuple[str, ...] = (),
) -> None:
    """Run the scheduler's jobs on the cluster of `client` (a distributed.Client) until it has
    finished: each job in a task, on a warm local worker of the Dask worker that takes it.
    `localize(job, relocation)` maps the paths of a job into the worker's copy of `shipment`;
    `delocalize(answer, relocation)` maps a worker's answers back; both are importable functions
    (pickled by name). `env`: what the local workers' environment adds to the Dask worker's, the
    values of the keys in `env_paths` being the client's paths (mapped as a job's are)."""
    from distributed import KilledWorker

    run = uuid.uuid4().hex
    packed = shipment.pack()
    blob = client.scatter(packed, broadcast=True, hash=False)
    paths = tuple(os.path.abspath(p) for p in shipment.paths)
    running: dict[Any, tuple[Any, float | None, float]] = {}
    try:
        while not scheduler.finished():
            slots = max(1, sum(dict(client.nthreads()).values()))
            while len(running) < slots:
                picked = scheduler.next_job()
                if picked is None:
                    break
                job, timeout = picked
                if blob.status != "finished":  # every worker that held the files died: scatter them again
                    blob = client.scatter(packed, broadcast=True, hash=False)
                future = client.submit(
                    _task,
                    run,
                    blob,
                    paths,
                    serve,
                    dict(env or {}),
                    env_paths,
                    pickle.dumps((job, localize, delocalize)),
                    timeout,
                    pure=False,
                    retries=0,
                    key=f"elmo-executor-{run[:8]}-{uuid.uuid4().hex[:12]}",
                )
                running[future] = (job, timeout, time.monotonic())
            if not running:
                raise RuntimeError("no job can start and none is running (a job waits on a result that never came)")
            _first_done(list(running), timeout=1.0)
            now = time.monotonic()
            for future in list(running):
                job, timeout, started = running[future]
                if not future.done():
                    if timeout is not None and now - started > timeout + GRACE_S:
                        del running[future]
                        future.cancel()
                        scheduler.on_lost(
                            job,
                            "RuntimeError",
                            f"no answer from the cluster {timeout + GRACE_S:.0f} s after the job was handed out "
                            "(its deadline and a grace period): its Dask worker stopped answering",
                            None,
                            now - started,
                        )
                    continue
                del running[future]
                _answer(scheduler, job, future, now - started, progress, KilledWorker)
    finally:
        for future in running:
            future.cancel()
        with contextlib.suppress(Exception):
            client.run(close_run, run)
        with contextlib.suppress(Exception):
            blob.release()


def _first_done(futures: list[Any], timeout: float) -> None:
    """Wait up to `timeout` seconds for one of the futures to be done."""
    end = time.monotonic() + timeout
    while not any(future.done() for future in futures) and time.monotonic() < end:
        time.sleep(0.02)


def _answer(
    scheduler: Scheduler, job: Any, future: Any, elapsed: float, progress: Callable[[str], None], killed: type
) -> None:
    """Hand what a finished task returned to the scheduler."""
    if future.status == "finished":
        try:
            answers = future.result()
        except Exception as exc:  # the result could not be read back
            scheduler.on_lost(job, "RuntimeError", f"its result could not be read back: {exc!r}", None, elapsed)
            return
        for answer in answers:
            if answer[0] == "progress":
                progress(answer[1])
            elif answer[0] == "event":
                scheduler.on_event(job, answer[1])
            elif answer[0] == "done":
                scheduler.on_done(job, answer[1])
            else:
                scheduler.on_lost(job, *answer[1:])
        return
    error = future.exception() if future.status == "error" else None
    if isinstance(error, WorkerStartError):
        raise WorkerStartError(f"on the cluster: {error}")
    if isinstance(error, killed):
        worker = getattr(getattr(error, "last_worker", None), "address", None) or "a Dask worker"
        reason = f"the Dask worker running it ({worker}) died"
    elif error is not None:
        reason = f"its task failed on the cluster: {type(error).__name__}: {error}"
    elif future.status == "cancelled":  # the client cancels nothing before the end: the cluster did
        reason = "its task was cancelled by the cluster: a Dask worker died (the one running it, or every one holding the run's files)"
    else:
        reason = f"its task was {future.status} on the cluster"
    scheduler.on_lost(job, "RuntimeError", reason, None, elapsed)
