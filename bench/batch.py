"""The batch command (`elmo-conformance batch`): a class of submissions on Dask workers.

Three ways to check the same N submissions (folders with an adapter.py, each the reference under
its own name), with the same suite options:

- one at a time, one console command each (`python -m elmo_conformance --impl adapter.py ...`
  from the submission's folder), as a maintainer would without the batch: the sum of their times;
- one batch on the embedded default (a LocalCluster of W worker processes, started by the batch);
- one batch on a cluster of W workers started beforehand with Dask's own tools (`dask scheduler`,
  `dask worker`, on 127.0.0.1), through --scheduler-file.

Targets (issue 20): embedded <= 0.6x the sum of single runs; cluster <= 1.2x embedded. The per-job
figures (each job's time in batch.json) give the cost of a class on paper (README).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from elmo_conformance.processes import kill

SUBMISSION = """from elmo_conformance.adapters.numpy import NumpyAdapter


class Student(NumpyAdapter):
    name = "{name}"


adapter = Student()
"""
SELECTION = ["-k", "test_hand_example_scalar_mix or test_padding_never_leaks", "--dtype", "float64"]


def dask_command() -> list[str]:
    beside = Path(sys.executable).parent / "dask"
    found = str(beside) if beside.exists() else shutil.which("dask")
    return [found] if found else [sys.executable, "-m", "dask"]


def environment() -> dict[str, str]:
    from elmo_conformance.ground.resources import child_environment

    return child_environment()


@contextlib.contextmanager
def dask_cluster(
    folder: Path,
    workers: int = 2,
    env: dict[str, str] | None = None,
    scheduler_args: Sequence[str] = (),
    worker_args: Sequence[str] = (),
    security: Any = None,
) -> Iterator[Path]:
    """A scheduler and `workers` one-thread workers, started with `dask scheduler` and `dask worker`
    on 127.0.0.1 (dashboards too), each in a session of its own and ended as a group at the end.
    Yields the scheduler file. The scheduler runs with allowed-failures 0: the batch retries a job
    whose worker died once itself. `scheduler_args`, `worker_args`: more of their options (TLS's);
    `security`: the distributed.Security this process waits for the workers with."""
    scheduler_file = folder / "scheduler.json"
    env = dict(environment() if env is None else env)
    env["DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES"] = "0"
    logs = folder / "dask-logs"
    logs.mkdir(parents=True, exist_ok=True)
    started: list[subprocess.Popen] = []

    def start(name: str, args: list[str]) -> None:
        with open(logs / f"{name}.log", "wb") as log:
            command = [*dask_command(), *args]
            started.append(
                subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            )

    loopback = ["--host", "127.0.0.1", "--dashboard-address", "127.0.0.1:0"]
    try:
        start(
            "scheduler",
            ["scheduler", "--port", "0", "--scheduler-file", str(scheduler_file), *scheduler_args, *loopback],
        )
        deadline = time.monotonic() + 60
        while not scheduler_file.exists():
            if time.monotonic() > deadline or started[0].poll() is not None:
                raise RuntimeError("dask scheduler did not start: " + (logs / "scheduler.log").read_text()[-2000:])
            time.sleep(0.2)
        for i in range(workers):
            worker = ["worker", "--scheduler-file", str(scheduler_file), "--nthreads", "1", *worker_args, *loopback]
            start(f"worker{i}", worker)
        from distributed import Client

        with Client(
            scheduler_file=str(scheduler_file), timeout="30s", set_as_default=False, security=security
        ) as client:
            client.wait_for_workers(workers, timeout=90)
        yield scheduler_file
    finally:
        for process in started:
            kill.signal_group(process.pid, signal.SIGTERM)
        for process in started:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)
            kill.end_group(process)


def make_submissions(folder: Path, n: int) -> list[Path]:
    made = []
    for i in range(n):
        path = folder / f"student{i + 1:03d}"
        path.mkdir(parents=True, exist_ok=True)
        (path / "adapter.py").write_text(SUBMISSION.format(name=path.name), encoding="utf-8")
        made.append(path)
    return made


def single_runs(submissions: list[Path], selection: list[str], timeout: float) -> dict:
    """Each submission alone: one console command each, from its folder."""
    times, statuses = [], []
    for path in submissions:
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "elmo_conformance", "--impl", "adapter.py", "-q", *selection],
            cwd=path,
            env=environment(),
            capture_output=True,
            timeout=timeout,
        )
        times.append(time.perf_counter() - started)
        statuses.append(done.returncode)
    return {"runs": len(times), "sum_s": sum(times), "median_s": statistics.median(times), "exit_statuses": statuses}


def batch_run(submissions: list[Path], out: Path, where: list[str], selection: list[str], timeout: float) -> dict:
    """One batch of every submission; its wall time and its jobs' times from batch.json."""
    command = [sys.executable, "-m", "elmo_conformance", "batch", *map(str, submissions), "--out", str(out)]
    command += ["--no-progress", "--no-dashboard", *where, *selection]
    started = time.perf_counter()
    done = subprocess.run(command, env=environment(), capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - started
    result: dict = {"wall_s": wall, "exit_status": done.returncode}
    try:
        data = json.loads((out / "batch.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        result["error"] = (done.stdout + done.stderr)[-2000:]
        return result
    jobs = [r["duration_s"] for r in data["submissions"] if r.get("duration_s") is not None]
    result.update(
        summary=data["summary"],
        executor={k: data["executor"].get(k) for k in ("kind", "workers", "threads")},
        job_median_s=statistics.median(jobs) if jobs else None,
        job_sum_s=sum(jobs),
    )
    return result


def compare(n: int = 20, workers: int = 2, selection: list[str] | None = None, timeout: float = 1800.0) -> dict:
    """The three ways, on the same n submissions; the ratios against the targets."""
    selection = SELECTION if selection is None else selection
    with tempfile.TemporaryDirectory(prefix="elmo-bench-batch-") as tmp:
        folder = Path(tmp)
        submissions = make_submissions(folder / "class", n)
        single = single_runs(submissions, selection, timeout)
        embedded = batch_run(submissions, folder / "embedded", ["--workers", str(workers)], selection, timeout)
        with dask_cluster(folder / "cluster", workers) as scheduler_file:
            cluster = batch_run(
                submissions, folder / "cluster-out", ["--scheduler-file", str(scheduler_file)], selection, timeout
            )
    result = {
        "submissions": n,
        "workers": workers,
        "selection": selection,
        "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "single": single,
        "embedded": embedded,
        "cluster": cluster,
    }
    if single["sum_s"] and "wall_s" in embedded:
        result["embedded_over_single"] = embedded["wall_s"] / single["sum_s"]
    if embedded.get("wall_s") and "wall_s" in cluster:
        result["cluster_over_embedded"] = cluster["wall_s"] / embedded["wall_s"]
    result["targets"] = {"embedded_over_single": 0.6, "cluster_over_embedded": 1.2}
    return result


def rows(result: dict) -> list[str]:
    """Lines of the printed table."""
    if not result:
        return []

    def x(key: str) -> str:
        value = result.get(key)
        return "-" if value is None else f"{value:.2f}x (target <= {result['targets'][key]}x)"

    single, embedded, cluster = result["single"], result["embedded"], result["cluster"]
    return [
        "",
        f"| Batch of {result['submissions']} submissions, {result['workers']} workers, {result['cores']} cores | wall | per job (median) |",
        "|---|---|---|",
        f"| {single['runs']} single runs, one after another (sum) | {single['sum_s']:.1f} s | {single['median_s']:.1f} s |",
        f"| batch, embedded LocalCluster | {embedded.get('wall_s', 0):.1f} s | {embedded.get('job_median_s') or 0:.1f} s |",
        f"| batch, dask scheduler + workers | {cluster.get('wall_s', 0):.1f} s | {cluster.get('job_median_s') or 0:.1f} s |",
        f"| embedded / single runs | {x('embedded_over_single')} | |",
        f"| cluster / embedded | {x('cluster_over_embedded')} | |",
    ]
