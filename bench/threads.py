"""How many threads the contenders may use, and a record of what they did use.

By default every library keeps its own default (one thread per core). On a machine shared with
other jobs, threads that wait on each other can lose more to the load than they gain; `--threads 1`
then gives steadier figures. The limit applies to NumPy's BLAS and OpenMP (through threadpoolctl,
which scikit-learn brings), to torch, and, through the environment, to the suite's subprocesses.
"""

from __future__ import annotations

import os

import torch

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
_limits: list[object] = []  # keeps threadpoolctl's limiter alive for the whole run


def limit_threads(n: int) -> None:
    """Every library of this process and of its subprocesses uses at most `n` threads."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        raise ValueError("--threads: needs the package threadpoolctl (pip install threadpoolctl)") from None
    _limits.append(threadpool_limits(limits=n))
    torch.set_num_threads(n)
    os.environ.update({name: str(n) for name in THREAD_VARIABLES})


def thread_report() -> dict:
    """The threads each library is set to use, as far as can be seen."""
    report: dict = {"torch": torch.get_num_threads(), "environment": {k: os.environ.get(k) for k in THREAD_VARIABLES}}
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return report
    report["native"] = [
        {"library": lib.get("internal_api"), "prefix": lib.get("prefix"), "threads": lib.get("num_threads")}
        for lib in threadpool_info()
    ]
    return report
