"""The suite: pytest time of `conformance` per adapter, with 1, 2 and 4 workers, and the cost of
running a Python adapter in a child process behind the protocol server (the default, spec §11.1)
against calling it in the harness's process (`--in-process`).

Each run is a fresh `elmo-conformance` run (the one entry point) writing the harness's --report JSON,
whose duration and per-test durations give the pytest time and the share of the slowest five
tests. The wall time of the process (interpreter start and imports included) is kept beside it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_pytest(args: list[str], timeout: float, root: Path = ROOT) -> dict:
    """One conformance run in the checkout `root`; a failing or crashing run is reported, not
    raised."""
    with tempfile.TemporaryDirectory() as tmp:
        report_path = Path(tmp) / "report.json"
        # The console command of the checkout at `root`: its one entry point (elmo_conformance.run).
        cmd = [sys.executable, "-m", "elmo_conformance", "-q", "-p", "no:cacheprovider", *args]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
        start = time.perf_counter()
        cpu_start = _children_cpu()
        try:
            done = subprocess.run(
                [*cmd, "--report", str(report_path)], cwd=root, env=env, capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return {"command": _shown(args), "error": f"did not finish within {timeout:g} s"}
        wall = time.perf_counter() - start
        cpu = _children_cpu() - cpu_start
        if not report_path.is_file():
            tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
            return {"command": _shown(args), "exit_status": done.returncode, "error": " | ".join(tail)}
        report = json.loads(report_path.read_text(encoding="utf-8"))
    return {"command": _shown(args), "exit_status": done.returncode, "wall_s": wall, "cpu_s": cpu, **summarize(report)}


def _children_cpu() -> float:
    """User and system CPU seconds of the finished child processes, theirs included (the protocol
    server is the harness's child): unlike wall time, hardly changed by what else the machine runs."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def summarize(report: dict, top: int = 5) -> dict:
    """Pytest time, outcome counts and the slowest `top` tests with their share of the time."""
    tests = sorted(report["tests"], key=lambda t: t["duration_s"], reverse=True)
    total = report["duration_s"]
    slowest = [{"nodeid": t["nodeid"], "duration_s": t["duration_s"]} for t in tests[:top]]
    share = sum(t["duration_s"] for t in slowest) / total if total > 0 else 0.0
    return {"pytest_s": total, "summary": report["summary"], "slowest": slowest, "slowest_share": share}


def _shown(args: list[str]) -> str:
    return shlex.join(["elmo-conformance", *args])


def per_adapter(impls: list[str], extra: list[str], timeout: float) -> dict:
    return {impl: run_pytest(["--impl", impl, *extra], timeout) for impl in impls}


def has_xdist() -> bool:
    return importlib.util.find_spec("xdist") is not None


def workers(impl: str, counts: list[int], extra: list[str], timeout: float) -> dict:
    """The suite for one adapter with pytest-xdist's `-n N` workers."""
    if not has_xdist():
        return {"pending": "pytest-xdist is not installed (nox -s bench installs it)"}
    return {str(n): run_pytest(["--impl", impl, "-n", str(n), *extra], timeout) for n in counts}


def isolation(
    impls: list[str], rounds: int, extra: list[str], timeout: float, roots: dict[str, Path] | None = None
) -> dict:
    """For each Python adapter, the suite's pytest time in a child process (the default, §11.1)
    against in-process, `rounds` runs of each, alternating (the order flips every round), with the
    ratio of the medians and of the fastest runs, and the cost of one call each way
    (bench/wire.py). A `cmd:` adapter is always a process: left out.

    With `roots` (name -> checkout), each checkout's suite is run the same way, all of them
    alternating within each round, so that two versions of the harness (before and after a
    change) are measured side by side: the result then holds one entry per name and adapter."""
    result: dict = {}
    checkouts = roots or {"": ROOT}
    for impl in (i for i in impls if not i.startswith("cmd:") and i != "c"):
        modes = {
            (name, mode): (root, args)
            for name, root in checkouts.items()
            for mode, args in (("in_process", ["--in-process"]), ("child_process", []))
        }
        runs: dict[tuple[str, str], list[dict]] = {key: [] for key in modes}
        for round_ in range(rounds):
            order = list(modes) if round_ % 2 == 0 else list(reversed(modes))
            for key in order:
                root, args = modes[key]
                runs[key].append(run_pytest(["--impl", impl, *args, *extra], timeout, root))
        for name in checkouts:
            entry = _isolation_entry({mode: runs[(name, mode)] for mode in ("in_process", "child_process")})
            if roots is None:
                entry["per_call"] = _per_call(impl)
            result[f"{impl} ({name})" if roots else impl] = entry
    return result


def sandbox(impl: str, rounds: int, extra: list[str], timeout: float) -> dict:
    """The sandbox's cost (elmo_conformance/processes/sandbox.py, issue 29's target: at most 5 %): `impl`'s
    suite with its adapter process in the sandbox (the default) and with --no-sandbox, `rounds`
    runs of each, alternating (the order flips every round); the medians of the pytest time, the
    wall time and the CPU time, and their ratios. The CPU time of a sandboxed adapter process is
    counted only partly (ended with its PID namespace, it is not reaped by a parent that adds its
    time): compare pytest and wall time."""
    from elmo_conformance.processes import sandbox as box

    if box.unavailable():
        return {"error": f"no sandbox here: {box.unavailable()}"}
    modes = {"no_sandbox": ["--no-sandbox"], "sandbox": []}
    runs: dict[str, list[dict]] = {mode: [] for mode in modes}
    for round_ in range(rounds):
        for mode in list(modes) if round_ % 2 == 0 else list(reversed(modes)):
            runs[mode].append(run_pytest(["--impl", impl, *modes[mode], *extra], timeout))
    errors = [run["error"] for mode in runs.values() for run in mode if "error" in run]
    if errors:
        return {"error": errors[0]}
    times = {mode: [run["pytest_s"] for run in mode_runs] for mode, mode_runs in runs.items()}
    cpu = {mode: [run["cpu_s"] for run in mode_runs] for mode, mode_runs in runs.items()}
    wall = {mode: [run["wall_s"] for run in mode_runs] for mode, mode_runs in runs.items()}
    median = {mode: statistics.median(t) for mode, t in times.items()}
    return {
        "impl": impl,
        "pytest_s": times,
        "wall_s": wall,
        "cpu_s": cpu,
        "median_s": median,
        "ratio_median": median["sandbox"] / median["no_sandbox"],
        "ratio_min": min(times["sandbox"]) / min(times["no_sandbox"]),
        "wall_ratio_median": statistics.median(wall["sandbox"]) / statistics.median(wall["no_sandbox"]),
        "cpu_ratio_median": statistics.median(cpu["sandbox"]) / statistics.median(cpu["no_sandbox"]),
    }


def _per_call(impl: str) -> dict:
    from . import wire

    try:
        return wire.per_call(impl)
    except Exception as exc:  # reported, never a crashed benchmark
        return {"error": f"{type(exc).__name__}: {exc}"}


def _isolation_entry(runs: dict[str, list[dict]]) -> dict:
    """The pytest times of one adapter's runs in each mode, their medians and ratios."""
    errors = [run["error"] for mode in runs.values() for run in mode if "error" in run]
    if errors:
        return {"error": errors[0]}
    times = {mode: [run["pytest_s"] for run in mode_runs] for mode, mode_runs in runs.items()}
    cpu = {mode: [run["cpu_s"] for run in mode_runs] for mode, mode_runs in runs.items()}
    return {
        "pytest_s": times,
        "cpu_s": cpu,
        "cpu_ratio_median": statistics.median(cpu["child_process"]) / statistics.median(cpu["in_process"]),
        "median_s": {mode: statistics.median(t) for mode, t in times.items()},
        "ratio_median": statistics.median(times["child_process"]) / statistics.median(times["in_process"]),
        "ratio_min": min(times["child_process"]) / min(times["in_process"]),
    }


def main(argv: list[str] | None = None) -> int:
    """`python -m bench.suite --impl numpy --before PATH`: the isolation comparison alone, for
    this checkout and, with --before, another checkout of the project (the harness before a
    change), alternating within each round; prints the JSON."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.suite", description=main.__doc__)
    parser.add_argument("--impl", action="append", default=[], help="a Python adapter; repeatable (default numpy)")
    parser.add_argument("--before", type=Path, help="another checkout, measured side by side as 'before'")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--per-call", action="store_true", help="also time one call each way (bench/wire.py)")
    parser.add_argument("--sandbox", action="store_true", help="the sandbox on and off instead (issue 29)")
    args = parser.parse_args(argv)
    impls = args.impl or ["numpy"]
    if args.sandbox:
        print(json.dumps({impl: sandbox(impl, args.rounds, [], args.timeout) for impl in impls}, indent=1))
        return 0
    roots = {"before": args.before.resolve(), "after": ROOT} if args.before else None
    result: dict = {"isolation": isolation(impls, args.rounds, [], args.timeout, roots)}
    if args.per_call and roots:
        result["per_call"] = {impl: _per_call(impl) for impl in impls}
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
