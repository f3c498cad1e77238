"""A worker for the executor's own tests (tests/test_mutate_dask.py): it serves jobs (KIND, N) as
the mutation runner's workers do, over the executor's connection, and can die, hang or kill the
Dask worker that started it on demand.

    ok     -> ("done", "ok N by PID")
    die    -> the worker kills itself (SIGKILL) after a partial event
    hang   -> sleeps past any deadline
    raise  -> ("failed", "...") as a worker reports an exception
    kill-dask-worker -> SIGKILL to its parent process (the Dask worker), then hangs
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from elmo_conformance.executor.local import next_job


def serve(conn: Any, log_path: str) -> None:
    conn.send(("ready", os.getpid()))
    while (job := next_job(conn)) is not None:
        kind, n = job
        conn.send(("start", f"{kind} {n}"))
        conn.send(("test", f"{kind} {n} partial"))
        if kind == "die":
            os.kill(os.getpid(), signal.SIGKILL)
        elif kind == "hang":
            time.sleep(3600)
        elif kind == "kill-dask-worker":
            os.kill(os.getppid(), signal.SIGKILL)
            time.sleep(3600)
        elif kind == "raise":
            conn.send(("failed", "ValueError: asked to"))
            continue
        conn.send(("done", f"{kind} {n} by {os.getpid()}"))


def localize(job: Any, where: Any) -> Any:
    """The job with the shipped file's content in place of its name: a job reads what was shipped."""
    kind, n = job
    if isinstance(n, str) and os.path.isabs(n):
        with open(where.here(n), encoding="utf-8") as f:
            return kind, f.read().strip()
    return job


def delocalize(answer: tuple, where: Any) -> tuple:
    return answer
