"""Where a batch's jobs run: a Dask distributed cluster, embedded (a ``LocalCluster`` of worker
processes on 127.0.0.1, the default) or an existing one (``--scheduler tcp://HOST:PORT`` or
``--scheduler-file PATH``), through the same code path: the executor's client
(elmo_conformance.executor.cluster: the connection, the options' validation, the version check on
the scheduler and every worker), with the batch's queue on top.

What this module handles, because Dask does not:

- The queue stays here, on the client: the cluster is handed no more jobs than it has worker
  threads, and more as jobs finish. A worker's death counts against every task assigned to it, so
  a job queued behind a job that kills its worker would otherwise be blamed too.
- A job marked ``alone`` (a submission that hit a time limit, run again before the limit counts)
  goes to the front of the queue and runs with no other job of the batch beside it: the client
  hands out nothing else until it is done.
- A job whose worker died (``KilledWorker``) is retried once, on another worker where there is
  one; a second death is the submission's verdict, "killed its worker". A timeout or a failed
  suite comes back as a result and is never retried. Dask's own retries are off (``retries=0``;
  the embedded scheduler runs with ``allowed-failures`` 0, so the first death is reported at
  once; a cluster's scheduler may retry up to its own ``allowed-failures`` first).
"""

from __future__ import annotations

import dataclasses
import os
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from elmo_conformance.batch.jobs import Job, run_job
from elmo_conformance.executor import cluster
from elmo_conformance.executor.cluster import NO_WORKERS_S, VERSION_PROBE, ExecutorError, cores

__all__ = ["VERSION_PROBE", "Attempt", "Cluster", "ExecutorError", "Outcome", "cores"]


@dataclass
class Attempt:
    """One submission of a job to the cluster."""

    job: Job
    tag: Any  # the caller's: which submission and which part of it
    tries: int = 0
    workers_died: list[str] = field(default_factory=list)
    started: float = 0.0
    ids: list[str] = field(default_factory=list)  # each try's job id


@dataclass
class Outcome:
    """What became of a job: its result, or why there is none (`died`: its worker died on every
    try; `lost`: no result for another reason)."""

    tag: Any
    job: Job
    result: dict[str, Any] | None
    died: list[str] = field(default_factory=list)
    lost: str | None = None
    seconds: float = 0.0
    ids: list[str] = field(default_factory=list)  # each try's job id (the JOB_ENV its processes carried)


class Cluster(cluster.Cluster):
    """The executor's Dask client (elmo_conformance.executor.cluster), with the batch's queue."""

    # ------------------------------------------------------------------ running jobs

    @staticmethod
    def _first_done(futures: list[Any], timeout: float) -> list[Any]:
        """The futures that are done, waiting up to `timeout` for one."""
        end = time.monotonic() + timeout
        while True:
            done = [future for future in futures if future.done()]
            if done or time.monotonic() >= end:
                return done
            time.sleep(0.05)

    def run(
        self,
        first: list[tuple[Job, Any]],
        then: Callable[[Outcome], list[tuple[Job, Any]]],
        progress: Callable[[str, int, int], None] = lambda event, running, queued: None,
        client_timeout_s: Callable[[Job], float] = lambda job: job.deadline_s + 300.0,
    ) -> Iterator[Outcome]:
        """Run the jobs `first`, and the jobs `then(outcome)` returns for each outcome, with at
        most as many jobs on the cluster as it has worker threads; yields each job's outcome."""
        from distributed import KilledWorker

        queue: deque[Attempt] = deque(Attempt(job, tag) for job, tag in first)
        running: dict[Any, Attempt] = {}
        no_workers_since: float | None = None
        while queue or running:
            threads = self.threads()
            slots = sum(threads.values())
            if not threads:
                no_workers_since = no_workers_since or time.monotonic()
                if time.monotonic() - no_workers_since > NO_WORKERS_S and not running:
                    for attempt in queue:
                        yield Outcome(
                            attempt.tag,
                            attempt.job,
                            None,
                            attempt.workers_died,
                            "the cluster has no workers",
                            0.0,
                            attempt.ids,
                        )
                    return
            else:
                no_workers_since = None
            while queue and len(running) < max(slots, 1 if not running else 0):
                if any(a.job.alone for a in running.values()) or (queue[0].job.alone and running):
                    break  # a job that runs alone: nothing beside it
                attempt = queue.popleft()
                attempt.job = dataclasses.replace(attempt.job, job_id=uuid.uuid4().hex)
                attempt.ids.append(attempt.job.job_id)
                avoid = set(attempt.workers_died)
                elsewhere = [w for w in threads if w not in avoid] if avoid else None
                placement = {"workers": elsewhere, "allow_other_workers": True} if elsewhere else {}
                future = self.client.submit(
                    run_job,
                    attempt.job,
                    pure=False,
                    retries=0,
                    key=f"elmo-batch-{attempt.job.kind}-{attempt.job.name}-{os.urandom(4).hex()}",
                    **placement,
                )
                attempt.tries += 1
                attempt.started = time.monotonic()
                running[future] = attempt
                progress("submitted", len(running), len(queue))
                if attempt.job.alone:
                    break
            if not running:
                time.sleep(0.5)
                continue
            done = self._first_done(list(running), timeout=1.0)
            now = time.monotonic()
            for future in list(running):
                attempt = running[future]
                if future not in done and now - attempt.started > client_timeout_s(attempt.job):
                    future.cancel()
                    del running[future]
                    yield Outcome(
                        attempt.tag,
                        attempt.job,
                        None,
                        attempt.workers_died,
                        f"no result from the cluster {client_timeout_s(attempt.job):g} s after it was handed out",
                        now - attempt.started,
                        attempt.ids,
                    )
                    progress("lost", len(running), len(queue))
            for future in done:
                attempt = running.pop(future)
                seconds = now - attempt.started
                outcome: Outcome | None = None
                if future.status == "finished":
                    try:
                        outcome = Outcome(
                            attempt.tag, attempt.job, future.result(), attempt.workers_died, None, seconds, attempt.ids
                        )
                    except Exception as exc:  # the result could not be read back
                        outcome = Outcome(
                            attempt.tag, attempt.job, None, attempt.workers_died, repr(exc), seconds, attempt.ids
                        )
                else:
                    error = future.exception() if future.status == "error" else None
                    if isinstance(error, KilledWorker):
                        worker = getattr(getattr(error, "last_worker", None), "address", None) or "a worker"
                        attempt.workers_died.append(worker)
                        if attempt.tries < 2:
                            queue.appendleft(attempt)
                            progress("retry", len(running), len(queue))
                            continue
                        outcome = Outcome(
                            attempt.tag, attempt.job, None, attempt.workers_died, None, seconds, attempt.ids
                        )
                    else:
                        why = (
                            f"{type(error).__name__}: {error}" if error is not None else f"the job was {future.status}"
                        )
                        outcome = Outcome(
                            attempt.tag, attempt.job, None, attempt.workers_died, why, seconds, attempt.ids
                        )
                future.release()
                progress("done", len(running), len(queue))
                yield outcome
                for job, tag in then(outcome):
                    if job.alone:
                        queue.appendleft(Attempt(job, tag))
                    else:
                        queue.append(Attempt(job, tag))
                progress("queued", len(running), len(queue))
