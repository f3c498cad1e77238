"""Which of universalmutator's rules give Rust mutants worth running (issue 31, item 6; spec §13.2).

For every mutant universalmutator makes of a Cargo project's sources (no filter of mutate's:
`generate(..., check=False)`), in a copy of the project: `cargo check` says whether it compiles,
and `cargo build --release` of each one that does gives its program, whose bytes are compared with
the clean build's (an equivalent mutant) and with the other mutants' (a duplicate): trivial
compiler equivalence, as `mutate` applies it (elmo_conformance/mutation/programs.py). Counted per
rule (`lhs ==> rhs`, one family of mutants) and per kind of mutant (generate.rust_kind: a `use` or
`mod` declaration's line, a `break;` after a line outside every loop, ...).

A rule whose every mutant measured here fails to compile or is equivalent or a duplicate, over at
least MIN_MUTANTS mutants, is a candidate to set aside for Rust (generate.SET_ASIDE);
docs/mutation.md, "Rules set aside for Rust", gives the figures.

    python -m bench.rust_rules examples/rust-scalar-mix                   # every mutant
    python -m bench.rust_rules examples/rust-scalar-mix --budget 1200 --json reports/rust-rules.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from elmo_conformance.mutation.generate import Generated, generate, rust_kind, source_files

MIN_MUTANTS = 10  # a rule with fewer mutants measured is never a candidate: too few to say "only"
CARGO = ("cargo", "--offline", "--quiet")


def _run(args: list[str], cwd: Path) -> bool:
    # Incremental, as `mutate` builds (scratch.BUILD_DEFAULTS): the same sources make the same bytes.
    env = {**os.environ, "CARGO_INCREMENTAL": "1"}
    return subprocess.run([*CARGO[:1], *args, *CARGO[1:]], cwd=cwd, env=env, capture_output=True).returncode == 0


def _program(copy: Path) -> bytes | None:
    """The release program's bytes' digest after a build in `copy`, or None when it fails."""
    if not _run(["build", "--release"], copy):
        return None
    folder = copy / "target" / "release"
    programs = [p for p in folder.iterdir() if p.is_file() and os.access(p, os.X_OK) and not p.suffix]
    return hashlib.sha256(programs[0].read_bytes()).digest() if len(programs) == 1 else None


def measure(project: Path, jobs: int = 2, budget: float | None = None, seed: int = 1) -> dict:
    """Every mutant of `project`'s `src/` checked, and each that compiles built and compared, in
    a seeded random order; with a `budget` (seconds), those measured within it: a random sample
    of every rule."""
    sources = source_files([project / "src"])
    every: list[Generated] = [m for path in sources for m in generate(path, check=False)]
    mutants = random.Random(seed).sample(every, len(every))
    work = Path(tempfile.mkdtemp(prefix="rust-rules-"))
    copies: list[Path] = []
    for n in range(jobs):
        copy = work / f"copy{n}"
        shutil.copytree(project, copy, ignore=shutil.ignore_patterns("target", ".*"))
        copies.append(copy)
    free = list(copies)
    lock = threading.Lock()
    clean = _program(copies[0])
    for copy in copies[1:]:
        _program(copy)
    outcome: dict[str, str] = {}
    seen: dict[bytes, str] = {}

    started = time.perf_counter()

    def one(mutant: Generated) -> None:
        if budget is not None and time.perf_counter() - started > budget:
            return
        with lock:
            copy = free.pop()
        relative = Path(mutant.file).relative_to(project.resolve()).as_posix()
        original = Path(mutant.file).read_text(encoding="utf-8")
        try:
            (copy / relative).write_text(mutant.apply(original), encoding="utf-8")
            if not _run(["check", "--release"], copy):
                result = "does not compile"
            else:
                digest = _program(copy)
                with lock:
                    if digest is None:
                        result = "does not build"
                    elif digest == clean:
                        result = "equivalent"
                    elif digest in seen:
                        result = "duplicate"
                    else:
                        seen[digest], result = mutant.id, "distinct"
            outcome[mutant.id] = result
        finally:
            (copy / relative).write_text(original, encoding="utf-8")
            with lock:
                free.append(copy)

    try:
        with ThreadPoolExecutor(jobs) as pool:
            list(pool.map(one, mutants))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    by_rule: dict[str, Counter[str]] = {}
    by_line: dict[str, Counter[str]] = {}
    measured = [m for m in mutants if m.id in outcome]
    texts = {m.file: Path(m.file).read_text(encoding="utf-8") for m in measured}
    for mutant in measured:
        by_rule.setdefault(mutant.rule, Counter())[outcome[mutant.id]] += 1
        kind = rust_kind(mutant, texts[mutant.file]) or "any other"
        by_line.setdefault(kind, Counter())[outcome[mutant.id]] += 1
    return {
        "project": str(project),
        "mutants": len(measured),
        "generated": len(every),
        "seconds": time.perf_counter() - started,
        "outcomes": dict(Counter(outcome.values())),
        "by_rule": {rule: dict(c) for rule, c in sorted(by_rule.items(), key=lambda kv: -sum(kv[1].values()))},
        "by_line": {kind: dict(c) for kind, c in by_line.items()},
        "candidates": candidates(by_rule),
        "each": {m.id: [m.rule, m.file, m.line, outcome[m.id]] for m in measured},
    }


def candidates(by_rule: dict[str, Counter[str]]) -> list[str]:
    """The rules of at least MIN_MUTANTS mutants none of which is a distinct, compiling program."""
    return sorted(rule for rule, c in by_rule.items() if sum(c.values()) >= MIN_MUTANTS and c.get("distinct", 0) == 0)


def rows(result: dict) -> list[str]:
    """A Markdown table: per rule, its mutants and what became of them."""
    kinds = ("does not compile", "does not build", "equivalent", "duplicate", "distinct")
    lines = [
        f"{result['mutants']} of the {result['generated']} mutants of {result['project']} (a seeded random order) "
        f"in {result['seconds']:.0f} s: " + ", ".join(f"{k} {result['outcomes'].get(k, 0)}" for k in kinds),
        "",
        "| rule | mutants | " + " | ".join(kinds) + " |",
        "|---|---|" + "---|" * len(kinds),
    ]
    for code, table in ((True, result["by_rule"]), (False, result["by_line"])):
        for rule, c in table.items():
            shown = f"`{rule}`".replace("|", "\\|") if code else f"kind: {rule}"
            lines.append(f"| {shown} | {sum(c.values())} | " + " | ".join(str(c.get(k, 0)) for k in kinds) + " |")
    lines += ["", "set-aside candidates (no distinct compiling mutant): " + (", ".join(result["candidates"]) or "none")]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.rust_rules", description=__doc__.splitlines()[0])
    parser.add_argument("project", type=Path, help="a Cargo project (its src/ is mutated)")
    parser.add_argument("--jobs", type=int, default=2, help="copies checked and built at once")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--budget", type=float, help="seconds: measure a random sample within this time")
    parser.add_argument("--seed", type=int, default=1, help="the order's seed (default 1)")
    args = parser.parse_args(argv)
    if not (args.project / "Cargo.toml").is_file():
        parser.error(f"project: expected a folder with a Cargo.toml, got {args.project}")
    if args.jobs < 1:
        parser.error(f"--jobs: expected an integer >= 1, got {args.jobs}")
    if shutil.which("cargo") is None:
        print("error: cargo is not on PATH", file=sys.stderr)
        return 2
    if args.budget is not None and args.budget <= 0:
        parser.error(f"--budget: expected seconds > 0, got {args.budget}")
    result = measure(args.project.resolve(), args.jobs, args.budget, args.seed)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print("\n".join(rows(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
