"""Generated mutants of a compiled program (issue 31): examples/rust-scalar-mix under `mutate`.

The target: a mutant that builds costs at most 0.5x one clean build plus one run of the suite.
Three figures side by side in one run, on a copy of the example: the clean build (`cargo build
--release --offline` from an empty `target/`, as `mutate` builds: CARGO_INCREMENTAL=1), one run of
the suite on the program in one process, alternated over `rounds`; then one `mutate` run on a
seeded sample, whose Stryker report gives each mutant's own duration in its worker (its copy, its
build, its tests to the first kill), and so the mean cost of a mutant that built.

`levers` says what each change moved: the same seeded mutants prepared (copied, checked, built,
as a worker does, elmo_conformance/mutation/scratch.prepare) four ways, alternated: the copy's
`target/` copied from the clean build and a non-incremental build (before), the worker's kept
`target/` with a non-incremental build, with cargo's incremental build (now), and with `cargo
check` first (`--check`).

    python -m bench --parts mutate-rust
    python -m bench.mutate_rust                    # the same part alone, printed
"""

from __future__ import annotations

import os
import random
import shlex
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from elmo_conformance.mutation.generate import generate, source_files
from elmo_conformance.mutation.scratch import (
    BuildFailed,
    Target,
    build,
    build_folders,
    copy_project,
    prepare,
)

from .mutate import mutate_report, summarize
from .suite import ROOT, run_pytest

EXAMPLE = ROOT / "examples" / "rust-scalar-mix"
BUILD = "cargo build --release --offline"
CHECK = "cargo check --release --offline"
PROGRAM = "target/release/rust-scalar-mix"
BUILT = ("Killed", "Survived", "Timeout", "Ignored", "RuntimeError")  # its build made a program
TARGET_RATIO = 0.5


def _copy(into: Path) -> Path:
    project = into / "rust-scalar-mix"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("target"))
    return project


def _clean_build(project: Path) -> float:
    shutil.rmtree(project / "target", ignore_errors=True)
    env = {**os.environ, "CARGO_INCREMENTAL": os.environ.get("CARGO_INCREMENTAL", "1")}
    started = time.perf_counter()
    subprocess.run(shlex.split(BUILD), cwd=project, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def run(n: int = 60, seed: int = 1, workers: int = 2, rounds: int = 3, timeout: float = 3600.0) -> dict:
    """The three figures and the levers; a failing run is reported, not raised."""
    if shutil.which("cargo") is None:
        return {"error": "cargo is not on PATH"}
    with tempfile.TemporaryDirectory(prefix="bench-rust-") as tmp:
        project = _copy(Path(tmp))
        program = project / PROGRAM
        _clean_build(project)  # warm-up: the toolchain's files in the page cache
        run_pytest(["--impl", f"cmd:{program}"], timeout)
        builds, suites = [], []
        for r in range(rounds):  # alternating, the order flipped every round
            for what in ("build", "suite") if r % 2 == 0 else ("suite", "build"):
                if what == "build":
                    builds.append(_clean_build(project))
                else:
                    one = run_pytest(["--impl", f"cmd:{program}"], timeout)
                    if "error" in one:
                        return {"error": f"the suite on the example: {one['error']}"}
                    suites.append(one["wall_s"])
        source = project / "src"
        args = ["--impl", f"cmd:{program}", "--source", str(source), "--build", BUILD]
        args += ["--max-mutants", str(n), "--seed", str(seed), "--workers", str(workers)]
        found, report = mutate_report(args, timeout)
        if report is None:
            return found
        mutants = [m for entry in report["files"].values() for m in entry["mutants"]]
        built = [m["duration"] / 1000 for m in mutants if m["status"] in BUILT and m.get("duration")]
        failed = [m["duration"] / 1000 for m in mutants if m["status"] == "CompileError" and m.get("duration")]
        clean_build, suite = statistics.median(builds), statistics.median(suites)
        out = {**found, **summarize(report)}
        out |= {
            "load": os.getloadavg(),
            "clean_build_s": clean_build,
            "clean_builds_s": builds,
            "suite_s": suite,
            "suites_s": suites,
            "built_mutants": len(built),
            "mean_built_s": statistics.mean(built) if built else None,
            "mean_compile_error_s": statistics.mean(failed) if failed else None,
            "ratio_built": statistics.mean(built) / (clean_build + suite) if built else None,
        }
        out["levers"] = levers(project, seed=seed)
    return out


def levers(project: Path, k: int = 8, seed: int = 1, rounds: int = 2) -> dict:
    """The mean time to prepare (copy, check, build) each of `k` seeded mutants, per way."""
    mutants = [m for path in source_files([project / "src"]) for m in generate(path)]
    chosen = random.Random(seed).sample(mutants, min(k, len(mutants)))
    work = Path(tempfile.mkdtemp(prefix="bench-rust-levers-"))
    base = Target(f"cmd:{PROGRAM}", False, str(project), BUILD, f"cmd:{PROGRAM}", cwd=str(project))
    templates: dict[str, Target] = {}
    for incremental in ("0", "1"):
        clean = work / f"incremental-{incremental}" / "clean"
        copy_project(project, clean)
        before = {entry.name for entry in clean.iterdir()}
        os.environ["CARGO_INCREMENTAL"] = incremental
        build(base, clean, 900.0)
        templates[incremental] = replace(base, template=str(clean), build_dirs=build_folders(clean, before))
    ways = {
        "copied target/, not incremental (before)": ("0", replace(templates["0"], build_dirs=())),
        "kept target/, not incremental": ("0", templates["0"]),
        "kept target/, incremental (now)": ("1", templates["1"]),
        "kept target/, incremental, cargo check first": ("1", replace(templates["1"], check=CHECK)),
    }
    times: dict[str, dict[str, list[float]]] = {name: {"built": [], "failed": []} for name in ways}
    saved = os.environ.get("CARGO_INCREMENTAL")
    try:
        for r in range(rounds):
            for name in list(ways) if r % 2 == 0 else list(ways)[::-1]:
                incremental, target = ways[name]
                os.environ["CARGO_INCREMENTAL"] = incremental
                for mutant in chosen:
                    # A worker's mutants are built at one path (its warm slot): rustc's
                    # incremental cache is reused only by a build in the folder that made it.
                    folder = work / f"slot-{list(ways).index(name)}"
                    started = time.perf_counter()
                    try:
                        prepare(target, mutant, folder)
                        kind = "built"
                    except BuildFailed:
                        kind = "failed"
                    times[name][kind].append(time.perf_counter() - started)
                    shutil.rmtree(folder, ignore_errors=True)
    finally:
        if saved is None:
            os.environ.pop("CARGO_INCREMENTAL", None)
        else:
            os.environ["CARGO_INCREMENTAL"] = saved
        shutil.rmtree(work, ignore_errors=True)
    return {
        "mutants": len(chosen),
        "rounds": rounds,
        "ways": {
            name: {kind: (statistics.mean(values) if values else None) for kind, values in by.items()}
            | {"n_built": len(by["built"]), "n_failed": len(by["failed"])}
            for name, by in times.items()
        },
    }


def rows(result: dict) -> list[str]:
    """The part's lines in the table."""
    if not result:
        return []
    if "error" in result:
        return ["", f"Rust mutants: {result.get('command', 'examples/rust-scalar-mix')}: {result['error']}"]
    s = result["statuses"]
    load = ", ".join(f"{x:.1f}" for x in result["load"])
    lines = [
        "",
        f"Rust mutants: `{result['command']}` (wall {result['wall_s']:.0f} s; load average {load})",
        "",
        f"Clean build {result['clean_build_s']:.2f} s, one run of the suite {result['suite_s']:.2f} s (medians, "
        f"alternated); {result['built_mutants']} mutants built, mean cost {result['mean_built_s'] or 0:.2f} s: "
        f"{result['ratio_built'] or 0:.2f}x (target: at most {TARGET_RATIO}x); a compile error "
        f"{result['mean_compile_error_s'] or 0:.2f} s; statuses " + ", ".join(f"{k} {v}" for k, v in sorted(s.items())),
        "",
        "| preparing a mutant (copy, check, build) | mean, built | mean, compile error |",
        "|---|---|---|",
    ]
    for name, way in result["levers"]["ways"].items():
        built = f"{way['built']:.2f} s" if way["built"] is not None else "-"
        failed = f"{way['failed']:.2f} s" if way["failed"] is not None else "-"
        lines.append(f"| {name} | {built} ({way['n_built']}) | {failed} ({way['n_failed']}) |")
    return lines


if __name__ == "__main__":
    print("\n".join(rows(run())))
