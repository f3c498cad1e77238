"""The mutation runner's workers: the executor's (elmo_conformance.executor), each serving
`worker.serve`, here on this machine (`run_jobs`) or on a Dask cluster (`mutate --scheduler`,
remote.py).

The runner never forks: a worker is a fresh Python process, so no worker inherits a process that
has already imported torch or JAX (their thread pools do not survive a fork). A worker that passes
its deadline is killed and replaced (the job is a Timeout); one that dies is replaced too (the job
is a RuntimeError), and the run goes on.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from elmo_conformance.executor import local
from elmo_conformance.executor.local import Scheduler, WorkerStartError
from elmo_conformance.mutation.worker import SINGLE_THREADED

SERVE = "elmo_conformance.mutation.worker:serve"  # what each worker process runs

__all__ = ["SERVE", "Scheduler", "WorkerStartError", "run_jobs"]


def run_jobs(scheduler: Scheduler, n_workers: int, log_dir: Path, progress: Callable[[str], None]) -> None:
    """Run the scheduler's jobs on `n_workers` local workers until it has finished."""
    for key, value in SINGLE_THREADED.items():
        os.environ.setdefault(key, value)  # inherited by the workers
    local.run_jobs(scheduler, n_workers, log_dir, progress, SERVE)
