"""The mutation matrix (spec §13): `elmo-conformance mutants --impl X` timed per adapter.

The runner writes a Stryker-format report whose `performance` block splits the time into the clean
baseline run and the mutant runs, and which gives each mutant run's duration. A mutant run is the
matrix's unit of work, so the share of the slowest five is taken over mutant runs.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from .suite import ROOT

RUNNER = "elmo_conformance.mutation"


def available() -> bool:
    return importlib.util.find_spec(RUNNER) is not None


def matrix(impl: str, timeout: float, top: int = 5) -> dict:
    """One adapter's full matrix; a failing or crashing run is reported, not raised."""
    shown = shlex.join(["python", "-m", RUNNER, "--impl", impl])
    found = run_for_report([sys.executable, "-m", RUNNER, "--impl", impl, "--no-html"], shown, timeout)
    report = found.pop("report", None)
    return {**found, **summarize(report, top)} if report is not None else found


def run_for_report(cmd: list[str], shown: str, timeout: float) -> dict:
    """Run a mutation command with `--out` a fresh folder; its exit status, wall time and the
    mutation report it wrote ("report"), or why there is none ("error")."""
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        try:
            done = subprocess.run([*cmd, "--out", tmp], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"command": shown, "error": f"did not finish within {timeout:g} s"}
        wall = time.perf_counter() - start
        path = Path(tmp) / "mutation-report.json"
        if not path.is_file():
            tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
            return {"command": shown, "exit_status": done.returncode, "error": " | ".join(tail)}
        report = json.loads(path.read_text(encoding="utf-8"))
    return {"command": shown, "exit_status": done.returncode, "wall_s": wall, "report": report}


def summarize(report: dict, top: int = 5) -> dict:
    """Baseline and mutation time, the statuses, and the slowest `top` mutant runs' share."""
    mutants = [m for entry in report["files"].values() for m in entry["mutants"]]
    timed = sorted((m for m in mutants if "duration" in m), key=lambda m: m["duration"], reverse=True)
    total = sum(m["duration"] for m in timed)
    slowest = [{"mutant": m["id"], "duration_s": m["duration"] / 1000, "tests": m.get("testsCompleted")} for m in timed]
    share = sum(m["duration"] for m in timed[:top]) / total if total > 0 else 0.0
    return {
        "baseline_s": report["performance"]["initialRun"] / 1000,
        "mutation_s": report["performance"]["mutation"] / 1000,
        "workers": report["config"]["workers"],
        "statuses": dict(Counter(m["status"] for m in mutants)),
        "slowest": slowest[:top],
        "slowest_share": share,
    }


def per_adapter(impls: list[str], timeout: float) -> dict:
    if not available():
        return {"pending": f"the mutation matrix runner (python -m {RUNNER}) is not in this checkout"}
    return {impl: matrix(impl, timeout) for impl in impls}
