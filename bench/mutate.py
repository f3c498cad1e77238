"""Generated mutants of the C implementation (spec §13.2, issue 19's target): `elmo-conformance
mutate --impl c` on a seeded sample, timed.

The target, as ratios in one run on the bench machine: at least 300 mutants, and a median time per
mutant of at most 0.3x one baseline run of the suite (test selection and fail-fast make a mutant
cheaper than the suite). The figures come from the Stryker JSON that `mutate` writes: its
`performance.initialRun` is the clean baseline (run once, split over the workers, so a wall time
of about 1/workers of a one-process run), each mutant's `duration` is its own run in one worker
(copy, build of the mutated file, its selected tests to the first kill). Besides that baseline,
the suite of the same adapter is run once in one process (`python -m pytest conformance --impl c`),
the "one baseline run of the suite" of the target; the ratio to each is reported.
"""

from __future__ import annotations

import json
import shlex
import statistics
import sys
from collections import Counter
from pathlib import Path

from .mutants import run_for_report
from .suite import run_pytest

RAN = ("Killed", "Survived", "Timeout", "CompileError", "RuntimeError")  # a worker ran a job for it


def mutate_report(args: list[str], timeout: float) -> tuple[dict, dict | None]:
    """`elmo-conformance mutate ARGS` without its cache or page: what `run_for_report` found, and
    the JSON report (None when the run gave none)."""
    shown = shlex.join(["elmo-conformance", "mutate", *args])
    cmd = [sys.executable, "-m", "elmo_conformance", "mutate", *args, "--no-cache", "--no-html"]
    found = run_for_report(cmd, shown, timeout)
    return found, found.pop("report", None)


def run(
    impl: str = "c", n: int = 300, seed: int = 1, workers: int = 2, timeout: float = 7200.0, suite: bool = True
) -> dict:
    """One `mutate` run of `n` sampled mutants (no cache: every mutant is run); a failing or
    crashing run is reported, not raised. `suite`: also time one one-process run of the suite."""
    args = ["--impl", impl, "--max-mutants", str(n), "--seed", str(seed), "--workers", str(workers)]
    found, report = mutate_report(args, timeout)
    if report is None:
        return found
    out = {**found, **summarize(report)}
    if suite:
        one = run_pytest(["--impl", impl], timeout)
        out["suite_one_process_s"] = one.get("wall_s")
        if one.get("wall_s"):
            out["ratio_to_suite"] = out["median_mutant_s"] / one["wall_s"]
            out["ratio_built_to_suite"] = out["median_built_s"] / one["wall_s"]
    return out


def summarize(report: dict) -> dict:
    """The statuses, the score, the baseline, and the median time per mutant over the mutants a
    worker ran (NoCoverage costs nothing; each kind is given apart too)."""
    mutants = [m for entry in report["files"].values() for m in entry["mutants"]]
    counts = Counter(m["status"] for m in mutants)
    detected = counts["Killed"] + counts["Timeout"]
    valid = detected + counts["Survived"] + counts["NoCoverage"]
    durations: dict[str, list[float]] = {}
    for m in mutants:
        if m["status"] in RAN and m.get("duration"):  # a timeout's run is cut: it records no duration
            durations.setdefault(m["status"], []).append(m["duration"] / 1000)
    ran = [d for values in durations.values() for d in values]
    built = [d for status, values in durations.items() if status != "CompileError" for d in values]
    baseline = report["performance"]["initialRun"] / 1000
    median = statistics.median(ran) if ran else 0.0
    return {
        "generated": len(mutants),
        "run": sum(counts[s] for s in RAN),
        "statuses": dict(counts),
        "score": round(100.0 * detected / valid, 1) if valid else 0.0,
        "workers": report["config"]["workers"],
        "baseline_s": baseline,
        "mutation_s": report["performance"]["mutation"] / 1000,
        "median_mutant_s": median,
        "median_by_status_s": {status: statistics.median(values) for status, values in sorted(durations.items())},
        "ratio_to_baseline": median / baseline if baseline else None,
        "median_built_s": statistics.median(built) if built else 0.0,  # compile errors aside: the honest figure
        "ratio_built_to_baseline": statistics.median(built) / baseline if built and baseline else None,
        "mean_cost_s": report["performance"]["mutation"]
        / 1000
        * report["config"]["workers"]
        / max(1, sum(counts[s] for s in RAN))
        if ran
        else 0.0,
    }


def rows(result: dict) -> list[str]:
    """The part's lines in the table."""
    if not result:
        return []
    if "pending" in result:
        return ["", f"Generated mutants: pending ({result['pending']})"]
    if "error" in result:
        return ["", f"Generated mutants: `{result['command']}`: {result['error']}"]
    s = result["statuses"]
    lines = ["", f"Generated mutants: `{result['command']}` (wall {result['wall_s']:.0f} s)", ""]
    lines += [
        "| generated | run | killed | survived | timeout | no coverage | compile error | runtime error | score |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| {result['generated']} | {result['run']} | {s.get('Killed', 0)} | {s.get('Survived', 0)} | "
        f"{s.get('Timeout', 0)} | {s.get('NoCoverage', 0)} | {s.get('CompileError', 0)} | "
        f"{s.get('RuntimeError', 0)} | {result['score']} % |",
        "",
    ]
    by = ", ".join(f"{k} {v:.1f} s" for k, v in result["median_by_status_s"].items())
    line = (
        f"Median time per mutant run {result['median_mutant_s']:.1f} s ({by}); baseline in mutate "
        f"{result['baseline_s']:.1f} s over {result['workers']} workers: ratio {result['ratio_to_baseline']:.2f}x; "
        f"of the mutants that built {result['median_built_s']:.1f} s: {result['ratio_built_to_baseline'] or 0:.2f}x; "
        f"mean cost (mutation time x workers / mutants) {result['mean_cost_s']:.1f} s"
    )
    if result.get("suite_one_process_s"):
        line += (
            f"; one run of the suite in one process {result['suite_one_process_s']:.1f} s: "
            f"ratio {result['ratio_to_suite']:.2f}x, of those that built {result['ratio_built_to_suite']:.2f}x"
        )
    return [*lines, line + " (target: at most 0.3x)"]


if __name__ == "__main__":  # summarize a report written earlier: python -m bench.mutate REPORT.json
    print(
        "\n".join(rows({"command": sys.argv[1], "wall_s": 0.0, **summarize(json.loads(Path(sys.argv[1]).read_text()))}))
    )
