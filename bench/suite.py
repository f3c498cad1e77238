"""The suite: pytest time of `conformance` per adapter, with 1, 2 and 4 workers, and the cost of
running a Python adapter in a child process behind the protocol server (the default, spec §11.1)
against calling it in the harness's process (`--in-process`).

Each run is a fresh `python -m pytest conformance` process writing the harness's --report JSON,
whose duration and per-test durations give the pytest time and the share of the slowest five
tests. The wall time of the process (interpreter start and imports included) is kept beside it.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_pytest(args: list[str], timeout: float) -> dict:
    """One conformance run; a failing or crashing run is reported, not raised."""
    with tempfile.TemporaryDirectory() as tmp:
        report_path = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "pytest", "conformance", "-q", "-p", "no:cacheprovider", *args]
        start = time.perf_counter()
        try:
            done = subprocess.run(
                [*cmd, "--report", str(report_path)], cwd=ROOT, capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return {"command": _shown(args), "error": f"did not finish within {timeout:g} s"}
        wall = time.perf_counter() - start
        if not report_path.is_file():
            tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
            return {"command": _shown(args), "exit_status": done.returncode, "error": " | ".join(tail)}
        report = json.loads(report_path.read_text(encoding="utf-8"))
    return {"command": _shown(args), "exit_status": done.returncode, "wall_s": wall, **summarize(report)}


def summarize(report: dict, top: int = 5) -> dict:
    """Pytest time, outcome counts and the slowest `top` tests with their share of the time."""
    tests = sorted(report["tests"], key=lambda t: t["duration_s"], reverse=True)
    total = report["duration_s"]
    slowest = [{"nodeid": t["nodeid"], "duration_s": t["duration_s"]} for t in tests[:top]]
    share = sum(t["duration_s"] for t in slowest) / total if total > 0 else 0.0
    return {"pytest_s": total, "summary": report["summary"], "slowest": slowest, "slowest_share": share}


def _shown(args: list[str]) -> str:
    return shlex.join(["python", "-m", "pytest", "conformance", *args])


def per_adapter(impls: list[str], extra: list[str], timeout: float) -> dict:
    return {impl: run_pytest(["--impl", impl, *extra], timeout) for impl in impls}


def has_xdist() -> bool:
    return importlib.util.find_spec("xdist") is not None


def workers(impl: str, counts: list[int], extra: list[str], timeout: float) -> dict:
    """The suite for one adapter with pytest-xdist's `-n N` workers."""
    if not has_xdist():
        return {"pending": "pytest-xdist is not installed (nox -s bench installs it)"}
    return {str(n): run_pytest(["--impl", impl, "-n", str(n), *extra], timeout) for n in counts}


def isolation(impls: list[str], rounds: int, extra: list[str], timeout: float) -> dict:
    """For each Python adapter, the suite's pytest time in a child process (the default, §11.1)
    against in-process, `rounds` runs of each, alternating (the order flips every round), with the
    ratio of the medians and of the fastest runs. A `cmd:` adapter is always a process: left out."""
    result: dict = {}
    for impl in (i for i in impls if not i.startswith("cmd:") and i != "c"):
        runs: dict[str, list[dict]] = {"in_process": [], "child_process": []}
        modes = {"in_process": ["--in-process"], "child_process": []}
        for round_ in range(rounds):
            order = list(modes) if round_ % 2 == 0 else list(reversed(modes))
            for mode in order:
                runs[mode].append(run_pytest(["--impl", impl, *modes[mode], *extra], timeout))
        errors = [run["error"] for mode in runs.values() for run in mode if "error" in run]
        if errors:
            result[impl] = {"error": errors[0]}
            continue
        times = {mode: [run["pytest_s"] for run in mode_runs] for mode, mode_runs in runs.items()}
        result[impl] = {
            "pytest_s": times,
            "median_s": {mode: statistics.median(t) for mode, t in times.items()},
            "ratio_median": statistics.median(times["child_process"]) / statistics.median(times["in_process"]),
            "ratio_min": min(times["child_process"]) / min(times["in_process"]),
        }
    return result
