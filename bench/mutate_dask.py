"""One implementation's generated mutants on a Dask cluster against the local workers (issue 31,
item 5): `elmo-conformance mutate --scheduler-file F` with two `dask worker`s (one thread each,
started beforehand with Dask's own tools on 127.0.0.1, bench.batch.dask_cluster) against the same
command with `--workers 2`, on the same seeded sample, timed side by side.

The target: the cluster's wall time at most 1.1x the local pool's. The rounds alternate the two
(the order flips every round); the medians and the minimums are reported, their ratios, the load
average before each run, and whether each mutant got the same status in every run (which test
kills first may differ: the order of a mutant's tests follows each run's baseline timings).
The cluster is started once, before the rounds, as a user's cluster is up before the command.
"""

from __future__ import annotations

import os
import shlex
import statistics
import sys
import tempfile
from pathlib import Path

from .batch import dask_cluster
from .mutants import run_for_report

IMPL = "tests/examples/outside_mix.py"
SELECTION = ["-k", "hand_example or stable_for_large_s"]


def run(n: int = 60, seed: int = 3, rounds: int = 2, timeout: float = 1800.0) -> dict:
    """`rounds` alternating pairs of runs of `n` sampled mutants (no cache: every mutant runs)."""
    args = ["--impl", IMPL, *SELECTION, "--max-mutants", str(n), "--seed", str(seed)]
    args += ["--max-errors", "100"]  # the default deadlines: a tight one turns a stall under load into Timeouts
    local = [*args, "--workers", "2"]
    shown = {
        "local": shlex.join(["elmo-conformance", "mutate", *local]),
        "dask": shlex.join(["elmo-conformance", "mutate", *args, "--scheduler-file", "F"])
        + "  # F: dask scheduler --scheduler-file F; two dask worker --scheduler-file F --nthreads 1",
    }
    walls: dict[str, list[float]] = {"local": [], "dask": []}
    loads: dict[str, list[float]] = {"local": [], "dask": []}
    statuses: dict[str, list[str]] = {}  # mutant -> "mode: status" of each run
    counts: dict[str, list[dict[str, int]]] = {"local": [], "dask": []}  # each run's statuses
    with tempfile.TemporaryDirectory(prefix="bench-mutate-dask-") as folder, dask_cluster(Path(folder)) as file:
        modes = {"local": local, "dask": [*args, "--scheduler-file", str(file)]}
        for index in range(rounds):
            for mode in ("local", "dask") if index % 2 == 0 else ("dask", "local"):
                loads[mode].append(os.getloadavg()[0])
                cmd = [sys.executable, "-m", "elmo_conformance", "mutate", *modes[mode], "--no-cache", "--no-html"]
                found = run_for_report(cmd, shown[mode], timeout)
                if "report" not in found:
                    return {"command": shown[mode], "error": found.get("error") or f"exit {found.get('exit_status')}"}
                walls[mode].append(found["wall_s"])
                counts[mode].append({})
                for entry in found["report"]["files"].values():
                    for m in entry["mutants"]:
                        statuses.setdefault(m["id"], []).append(f"{mode}: {m['status']}")
                        counts[mode][-1][m["status"]] = counts[mode][-1].get(m["status"], 0) + 1
    median = {mode: statistics.median(values) for mode, values in walls.items()}
    fastest = {mode: min(values) for mode, values in walls.items()}
    return {
        "commands": shown,
        "sample": n,
        "rounds": rounds,
        "wall_s": walls,
        "load_1min": loads,
        "median_s": median,
        "ratio_median": median["dask"] / median["local"],
        "ratio_min": fastest["dask"] / fastest["local"],
        "mutants": len(statuses),
        "statuses": counts,
        "differing_statuses": {
            mutant: seen for mutant, seen in sorted(statuses.items()) if len({s.split(": ")[1] for s in seen}) > 1
        },
    }


def rows(result: dict) -> list[str]:
    """The part's lines in the table."""
    if not result:
        return []
    if "error" in result:
        return ["", f"Mutants on a Dask cluster: `{result['command']}`: {result['error']}"]
    walls = ", ".join(
        f"{mode} {' / '.join(f'{w:.1f}' for w in result['wall_s'][mode])} s" for mode in ("local", "dask")
    )
    loads = ", ".join(f"{x:.1f}" for mode in ("local", "dask") for x in result["load_1min"][mode])
    return [
        "",
        f"Mutants on a Dask cluster (two `dask worker`s) against two local workers, {result['sample']} mutants, "
        f"{result['rounds']} alternating rounds: `{result['commands']['local']}` and `--scheduler-file`",
        "",
        f"Wall time {walls}; cluster / local: {result['ratio_median']:.2f}x of the medians, "
        f"{result['ratio_min']:.2f}x of the minimums (target: at most 1.1x); load average before the runs: {loads}; "
        f"statuses that differ between runs: {len(result['differing_statuses'])} of {result['mutants']}",
    ]


if __name__ == "__main__":  # python -m bench.mutate_dask [N [ROUNDS]]
    import json

    numbers = [int(a) for a in sys.argv[1:3]]
    found = run(*numbers[:1], rounds=numbers[1] if len(numbers) > 1 else 2)
    print(json.dumps(found, indent=1))
    print("\n".join(rows(found)))
