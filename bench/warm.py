"""The reference's generated mutants through warm workers and through a fresh process per mutant
(issue 31's first target): `elmo-conformance mutate --impl numpy` and the same with `--fresh`,
each in units of one numpy suite run, measured side by side in one run.

The target is the whole set in at most 60x one suite run (about 320x before warm workers). The
whole set (about 3,000 mutants) takes long on a shared 2-core machine, so by default a seeded
sample (`--warm-mutants N`, stratified by file as `--max-mutants` is) is run, and the whole set's
ratio is estimated from it: the runs' fixed part (the baseline and the control run, before the
first mutant) plus their mutation time scaled by generated / sampled. `--warm-mutants 0` runs the
whole set. Each mode's statuses are compared mutant by mutant; the order of a mutant's tests comes
from each run's own baseline timings, so which test kills first may differ between any two runs,
but not the status (tests/test_mutate_warm.py compares killers too, with one order for both).
"""

from __future__ import annotations

import resource
import shlex
import sys
from collections import Counter

from .mutants import run_for_report
from .suite import run_pytest


def run(impl: str = "numpy", n: int = 300, seed: int = 1, workers: int = 2, timeout: float = 7200.0) -> dict:
    """One numpy suite run in one process, then `mutate` warm and `--fresh` on the same sample."""
    suite = run_pytest(["--impl", impl], timeout)
    out: dict = {"suite_s": suite.get("wall_s"), "suite_cpu_s": suite.get("cpu_s"), "sample": n, "seed": seed}
    out["workers"] = workers
    if not suite.get("wall_s"):
        return {**out, "error": f"the suite run failed: {suite.get('error')}"}
    statuses: dict[str, dict[str, str]] = {}
    for mode in ("warm", "fresh"):
        args = ["--impl", impl, "--workers", str(workers), "--no-cache", "--no-html"]
        args += ["--max-mutants", str(n), "--seed", str(seed)] if n else []
        args += ["--fresh"] if mode == "fresh" else []
        shown = shlex.join(["elmo-conformance", "mutate", *args])
        cpu = _children_cpu()
        found = run_for_report([sys.executable, "-m", "elmo_conformance", "mutate", *args], shown, timeout)
        found["cpu_s"] = _children_cpu() - cpu
        report = found.pop("report", None)
        if report is None:
            out[mode] = found
            continue
        mutants = {m["id"]: m["status"] for entry in report["files"].values() for m in entry["mutants"]}
        statuses[mode] = mutants
        performance = report["performance"]
        sampled = report["config"].get("sample") or {}
        generated = int(sampled.get("population") or len(mutants)) if n else len(mutants)
        fixed = (performance["setup"] + performance["initialRun"]) / 1000
        mutation = max(0.0, found["wall_s"] - fixed)
        whole = fixed + mutation * generated / max(1, len(mutants))
        out[mode] = {
            **found,
            "mutants": len(mutants),
            "generated": generated,
            "statuses": dict(Counter(mutants.values())),
            "ratio": found["wall_s"] / suite["wall_s"],
            "cpu_ratio": found["cpu_s"] / suite["cpu_s"] if suite.get("cpu_s") else None,
            "whole_s": whole,
            "whole_ratio": whole / suite["wall_s"],
        }
    if len(statuses) == 2:
        warm, fresh = statuses["warm"], statuses["fresh"]
        out["differ"] = sorted(key for key in warm if fresh.get(key) != warm[key])
    if out.get("warm", {}).get("ratio") and out.get("fresh", {}).get("ratio"):
        out["speedup"] = out["fresh"]["wall_s"] / out["warm"]["wall_s"]
        out["cpu_speedup"] = out["fresh"]["cpu_s"] / out["warm"]["cpu_s"] if out["warm"]["cpu_s"] else None
    return out


def _children_cpu() -> float:
    """User and system CPU seconds of the finished child processes and theirs (the workers, the
    served mutants): less changed by the machine's other tenants than wall time."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def rows(result: dict) -> list[str]:
    """The part's lines in the table."""
    if not result:
        return []
    if "error" in result:
        return ["", f"Warm workers: {result['error']}"]
    lines = [
        "",
        f"Warm workers: the reference's generated mutants (`mutate --impl numpy`, {result['workers']} workers"
        + (f", a sample of {result['sample']}, seed {result['seed']}" if result["sample"] else ", the whole set")
        + f"), in units of one numpy suite run ({result['suite_s']:.1f} s, one process)",
        "",
        "| mode | mutants | wall | x suite | CPU, x the suite's | whole set (estimated) | x suite | statuses |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for mode in ("warm", "fresh"):
        r = result.get(mode) or {}
        if "error" in r or not r:
            lines.append(f"| {mode} | | | | | | | {r.get('error', 'not run')} |")
            continue
        counts = ", ".join(f"{k} {v}" for k, v in sorted(r["statuses"].items()))
        cpu = f"{r['cpu_s']:.0f} s, {r['cpu_ratio']:.1f}x" if r.get("cpu_ratio") else ""
        lines.append(
            f"| {mode} | {r['mutants']} of {r['generated']} | {r['wall_s']:.0f} s | {r['ratio']:.1f}x | {cpu} | "
            f"{r['whole_s']:.0f} s | {r['whole_ratio']:.0f}x | {counts} |"
        )
    if "differ" in result:
        lines.append("")
        lines.append(
            f"Warm against fresh: {result.get('speedup', 0):.2f}x faster in wall time, "
            f"{result.get('cpu_speedup') or 0:.2f}x in CPU time; statuses that differ: "
            f"{len(result['differ'])} ({', '.join(result['differ'][:5]) or 'none'}). Target: the whole set in at most 60x."
        )
    return lines
