"""Mutants of a compiled program, and of Rust (spec §13.2; docs/mutation.md, "A compiled
program: the build folders" and "Rules set aside for Rust").

The fast tests (no cargo) check the build folders each worker keeps between mutants with a
make-like build written in sh, and the rules and lines set aside for Rust; the integration test
builds examples/rust-scalar-mix with cargo, runs the suite on it and `mutate` on a seeded sample.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from elmo_conformance.ground.resources import child_environment, package_dir
from elmo_conformance.mutation import generate as generating
from elmo_conformance.mutation.generate import Generated, generate, rust_declaration, rust_kind
from elmo_conformance.mutation.scratch import (
    KEPT,
    BuildFailed,
    BuildTimedOut,
    Target,
    build_folders,
    copy_project,
    prepare,
)
from elmo_conformance.processes import sandbox
from tests.suite_runs import run_suite

ROOT = Path(package_dir("conformance")).parent
EXAMPLE = ROOT / "examples" / "rust-scalar-mix"

# A make-like build: out/prog is the concatenation of a.txt and b.txt, each "compiled" into
# out/X.o only when the source is newer than its object (as make and cargo decide, by times);
# every compilation is logged in out/log, so a test sees what was rebuilt.
BUILD = (
    "mkdir -p out && for f in a b; do "
    "if [ ! -f out/$f.o ] || [ $f.txt -nt out/$f.o ]; then grep -q BROKEN $f.txt && exit 1; "
    "cp $f.txt out/$f.o && echo $f >> out/log; fi; done && cat out/a.o out/b.o > out/prog && chmod +x out/prog"
)


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "Makefile").write_text("# the project file that makes this folder a project root\n", encoding="utf-8")
    (root / "a.txt").write_text("#!/bin/sh\necho a\n", encoding="utf-8")
    (root / "b.txt").write_text("echo b\n", encoding="utf-8")
    return root


def _target(tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch) -> Target:
    """The project copied and built as `mutate` does (mutate.clean_copy), without the sandbox."""
    monkeypatch.setenv(sandbox.OFF_ENV, "1")
    target = Target("cmd:out/prog", False, str(root), BUILD, "cmd:out/prog", cwd=str(root), build_timeout=30.0)
    clean = tmp_path / "scratch" / "clean"
    copy_project(root, clean)
    before = {entry.name for entry in clean.iterdir()}
    subprocess.run(["sh", "-c", BUILD], cwd=clean, check=True)
    return replace(target, template=str(clean), build_dirs=build_folders(clean, before))


@pytest.fixture
def built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Target]:
    """The project, and its target copied and built as `mutate` does."""
    root = _project(tmp_path)
    return root, _target(tmp_path, root, monkeypatch)


def _program(mutant_folder: Path) -> str:
    """The program a mutant's copy holds after its build."""
    return (mutant_folder / "src" / "out" / "prog").read_text(encoding="utf-8")


def _mutant(root: Path, name: str, text: str) -> Generated:
    line = (root / name).read_text(encoding="utf-8").splitlines()[-1]
    return Generated(f"id-{name}-{text}", str(root / name), 2 if name == "a.txt" else 1, line, text, "test", "c")


def _log(target: Target) -> list[str]:
    kept = Path(target.template or "").parent / KEPT / str(os.getpid()) / "out" / "log"
    return kept.read_text(encoding="utf-8").split()


def test_the_clean_builds_folders_are_the_ones_it_made(built: tuple[Path, Target]) -> None:
    _, target = built
    assert target.build_dirs == ("out",)
    folder = Path(target.template or "")
    assert build_folders(folder, {e.name for e in folder.iterdir()}) == ()  # nothing new: none


def test_each_worker_keeps_its_build_folders_and_rebuilds_only_what_changed(
    tmp_path: Path, built: tuple[Path, Target]
) -> None:
    root, target = built
    first = _mutant(root, "a.txt", "echo A")
    prepare(target, first, tmp_path / "m1")
    # The first mutant of a worker starts from the clean build: only a.txt is compiled again.
    assert _log(target) == ["a", "b", "a"]
    assert _program(tmp_path / "m1").endswith("echo A\necho b\n")
    # The copy holds the program, not the build folder: the next mutant does not see what this one's run writes.
    assert sorted(p.name for p in (tmp_path / "m1" / "src" / "out").iterdir()) == ["a.o", "b.o", "log", "prog"]
    (tmp_path / "m1" / "src" / "out" / "a.o").write_text("written by the mutant's run\n", encoding="utf-8")
    second = _mutant(root, "b.txt", "echo B")
    prepare(target, second, tmp_path / "m2")
    # a.txt is the clean one again (restored, stamped newer than the last build), b.txt the mutant's.
    assert _log(target) == ["a", "b", "a", "a", "b"]
    program = _program(tmp_path / "m2")
    assert program == "#!/bin/sh\necho a\necho B\n"
    # The clean implementation, run as every mutant is, after the worker's mutants: b.txt rebuilt, a.o kept.
    prepare(target, None, tmp_path / "m3")
    assert _log(target) == ["a", "b", "a", "a", "b", "b"]
    assert _program(tmp_path / "m3") == "#!/bin/sh\necho a\necho b\n"


def test_a_failed_build_is_a_compile_error_and_the_next_mutant_is_built_right(
    tmp_path: Path, built: tuple[Path, Target]
) -> None:
    root, target = built
    with pytest.raises(BuildFailed, match="exited with code 1"):
        prepare(target, _mutant(root, "a.txt", "BROKEN"), tmp_path / "m1")
    prepare(target, _mutant(root, "b.txt", "echo B"), tmp_path / "m2")
    assert _program(tmp_path / "m2") == "#!/bin/sh\necho a\necho B\n"


def test_a_build_stopped_at_its_deadline_leaves_nothing_to_reuse(tmp_path: Path, built: tuple[Path, Target]) -> None:
    root, target = built
    prepare(target, _mutant(root, "a.txt", "echo A"), tmp_path / "m1")
    slow = replace(target, build="echo half > out/half; sleep 30", build_timeout=0.5)
    with pytest.raises(BuildTimedOut):
        prepare(slow, _mutant(root, "b.txt", "echo B"), tmp_path / "m2")
    kept = Path(target.template or "").parent / KEPT / str(os.getpid())
    assert not (kept / "out").exists()
    prepare(target, _mutant(root, "b.txt", "echo B"), tmp_path / "m3")  # from the clean build again
    assert _log(target) == ["a", "b", "b"]
    assert not (tmp_path / "m3" / "src" / "out" / "half").exists()


def _rust_source(tmp_path: Path) -> Path:
    path = tmp_path / "lib.rs"
    path.write_text(
        "use std::io::{self, Read, Write};\n"
        "mod wire;\n"
        "#[derive(Debug, Clone)]\n"
        "pub struct Mix { n: usize }\n"
        "pub fn total(xs: &[f64]) -> f64 {\n"
        "    let mut sum = 0.0;\n"
        "    for &x in xs {\n"
        "        sum += x;\n"
        "    }\n"
        "    sum\n"
        "}\n",
        encoding="utf-8",
    )
    return path


def test_rust_declarations_are_told_apart_from_code() -> None:
    assert rust_declaration("use std::io::{self, Read};") == "a `use` declaration"
    assert rust_declaration("pub(crate) use crate::wire::Out;") == "a `use` declaration"
    assert rust_declaration("mod wire;") == "a `mod` declaration"
    assert rust_declaration("#[derive(Debug, Clone)]") == "an attribute"
    assert rust_declaration("#![allow(dead_code)]") == "an attribute"
    for code in ("let user = 1;", "mod_count += 1;", "fn used() {", "    x.use_it();", "mod tests {"):
        assert rust_declaration(code) is None, code


def test_rust_rules_and_kinds_set_aside_are_counted_not_generated(tmp_path: Path) -> None:
    path = _rust_source(tmp_path)
    text = path.read_text(encoding="utf-8")
    every = generate(path, check=False)
    aside: Counter[str] = Counter()
    kept = generate(path, aside=aside)
    rules, kinds = generating.SET_ASIDE["rust"], generating.SET_ASIDE_KINDS["rust"]
    dropped = [m for m in every if m.rule in rules or rust_kind(m, text) in kinds]
    assert dropped, "the sample source has mutants of a set-aside rule or kind"
    assert {m.id for m in kept} == {m.id for m in every} - {m.id for m in dropped}
    assert sum(aside.values()) == len(dropped)
    assert set(aside) == {generating.aside_key(m, text) for m in dropped}
    # Without the filter (the measurement's view) nothing is set aside; another language is untouched.
    c_file = tmp_path / "total.c"
    c_file.write_text("int total(int a, int b) {\n    return a + b;\n}\n", encoding="utf-8")
    c_aside: Counter[str] = Counter()
    assert len(generate(c_file, aside=c_aside)) == len(generate(c_file, check=False)) and not c_aside


def test_which_rust_lines_end_outside_every_loop() -> None:
    text = (
        "fn f(xs: &[u8]) -> u8 {\n"  # 1
        '    let s = "for { while {";\n'  # 2: braces in a string
        "    'outer: loop {\n"  # 3
        "        for x in xs {\n"  # 4
        "            let g = |y: u8| {\n"  # 5: a closure: a loop outside it does not count
        "                y + 1\n"  # 6
        "            };\n"  # 7
        "            fn inner() {\n"  # 8: nor around a nested function
        "                let z = 1;\n"  # 9
        "            }\n"  # 10
        "            match g(*x) {\n"  # 11: a match inside a loop is inside it
        "                0 => {}\n"  # 12
        "                _ => {}\n"  # 13
        "            }\n"  # 14
        "        }\n"  # 15
        "        while let Some(v) = it.next() {\n"  # 16
        "        }\n"  # 17
        "    }\n"  # 18
        "    0\n"  # 19
        "}\n"  # 20
    )
    outside = generating.rust_outside_loops(text)
    assert sorted(set(range(1, 21)) - outside) == [3, 4, 7, 10, 11, 12, 13, 14, 15, 16, 17]


def test_the_kind_of_a_rust_mutant() -> None:
    text = "fn f(x: u8) -> u8 {\n    match x {\n        0 => 1,\n        _ => x > 2,\n    }\n}\n"

    def mutant(line: int, replacement: str, rule: str) -> Generated:
        return Generated("id", "f.rs", line, text.splitlines()[line - 1], replacement, rule, "rust")

    arrow = "([^-])> ==> \\1<"
    assert rust_kind(mutant(3, "        0 =< 1,", arrow), text) == generating.MATCH_ARROW
    assert rust_kind(mutant(4, "        _ => x < 2,", arrow), text) is None  # a comparison
    jump = "(^\\s*)(\\S+.*)\\n ==> \\1\\2\\n\\1break;\\n"
    assert rust_kind(mutant(1, "fn f(x: u8) -> u8 {\nbreak;", jump), text) == generating.OUTSIDE_LOOPS
    assert rust_kind(Generated("i", "f.rs", 1, "use std::io;", "", "x", "rust"), text) == "a `use` declaration"


def test_every_set_aside_rule_is_one_of_the_engines_rules() -> None:
    import universalmutator

    static = Path(universalmutator.__file__).resolve().parent / "static"
    known = set()
    for name in ("universal.rules", "rust.rules", "c_like.rules"):
        for line in (static / name).read_text(encoding="utf-8").splitlines():
            if " ==> " in line:
                known.add(line.strip())
    assert set(generating.SET_ASIDE["rust"]) <= known


@pytest.mark.integration
def test_the_rust_example_passes_the_suite_and_its_mutants_are_judged(tmp_path: Path) -> None:
    if shutil.which("cargo") is None:
        pytest.skip("cargo is not on PATH: the Rust example cannot be built")
    project = tmp_path / "rust-scalar-mix"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("target"))
    subprocess.run(["cargo", "build", "--release", "--offline", "--quiet"], cwd=project, check=True)
    program = project / "target" / "release" / "rust-scalar-mix"
    status, report, output = run_suite(tmp_path, f"cmd:{program}", timeout=600)
    assert status == 0 and report is not None, output[-3000:]
    tests = report["tests"]
    outcomes = Counter(t["outcome"] for t in tests)
    implemented = [t for t in tests if not t.get("not_implemented")]
    # Every ScalarMix test passes, in both dtypes; the biLM's and the probe's are not implemented.
    assert outcomes["failed"] == 0 and outcomes["error"] == 0
    assert implemented and all(t["outcome"] == "passed" for t in implemented)
    missing = Counter(c for t in tests for c in t.get("not_implemented") or ())
    assert missing["bilm"] > 0 and missing["probe"] > 0 and "scalar_mix" not in missing
    assert any("float32" in t["nodeid"] for t in implemented) and any(
        "scalar_mix_vjp" in t["nodeid"] for t in implemented
    )

    out = tmp_path / "mutate"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "elmo_conformance",
            "mutate",
            "--impl",
            f"cmd:{program}",
            "--source",
            str(project / "src"),
            "--build",
            "cargo build --release --offline",
            *("--max-mutants", "12", "--seed", "4", "--workers", "2", "--no-html", "--no-cache", "--out", str(out)),
        ],
        cwd=tmp_path,
        env=child_environment(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "set aside" in run.stdout and "not run" in run.stdout
    mutants = [
        m for f in json.loads((out / "mutation-report.json").read_text())["files"].values() for m in f["mutants"]
    ]
    assert len(mutants) == 12
    statuses = Counter(m["status"] for m in mutants)
    assert set(statuses) <= {"Killed", "Survived", "NoCoverage", "CompileError", "Ignored", "Timeout", "RuntimeError"}
    assert statuses["Killed"] >= 1 and statuses["CompileError"] >= 1, statuses
    for m in mutants:
        if m["status"] == "Killed":
            assert m["killedBy"] and all(name.startswith("conformance/") for name in m["killedBy"]), m
        if m["status"] == "CompileError":
            assert "error" in m["statusReason"], m
        if m["status"] == "RuntimeError":  # a mutant of the wire code that breaks the handshake (§15.4)
            assert "could not start the implementation" in m["statusReason"], m
    # The sample holds no mutant of a set-aside kind: each was counted instead.
    set_aside = json.loads((out / "mutation-report.json").read_text())["config"]["setAside"]
    assert set_aside.get(generating.OUTSIDE_LOOPS, 0) > 0 and set_aside.get(generating.MATCH_ARROW, 0) > 0


def test_the_rule_measurements_candidates_and_table() -> None:
    from bench import rust_rules

    by_rule = {
        "\\+= ==> =+": Counter({"does not compile": 12}),
        "(^\\s*)(\\S+.*)\\n ==> \\1\\2\\n\\1break;\\n": Counter({"does not compile": 30, "equivalent": 5}),
        "< ==> <=": Counter({"does not compile": 3, "distinct": 9}),
        "% ==> +": Counter({"does not compile": 4}),  # too few to say "only"
    }
    assert rust_rules.candidates(by_rule) == ["(^\\s*)(\\S+.*)\\n ==> \\1\\2\\n\\1break;\\n", "\\+= ==> =+"]
    result = {
        "project": "p",
        "mutants": 58,
        "generated": 100,
        "seconds": 12.0,
        "outcomes": {"does not compile": 49, "equivalent": 5, "distinct": 9},
        "by_rule": {rule: dict(c) for rule, c in by_rule.items()},
        "by_line": {"a `use` declaration": {"does not compile": 4}},
        "candidates": rust_rules.candidates(by_rule),
    }
    text = "\n".join(rust_rules.rows(result))
    assert "58 of the 100 mutants" in text and "does not compile 49" in text
    assert "| `< ==> <=` | 12 | 3 | 0 | 0 | 0 | 9 |" in text
    assert "| kind: a `use` declaration | 4 | 4 |" in text


def test_the_rust_bench_parts_rows() -> None:
    from bench import mutate_rust

    way = {"built": 0.5, "failed": 0.2, "n_built": 4, "n_failed": 12}
    result = {
        "command": "elmo-conformance mutate ...",
        "wall_s": 100.0,
        "load": (2.0, 2.5, 3.0),
        "clean_build_s": 2.0,
        "suite_s": 8.0,
        "built_mutants": 10,
        "mean_built_s": 3.0,
        "mean_compile_error_s": 0.4,
        "ratio_built": 0.3,
        "statuses": {"Killed": 8, "CompileError": 40, "Survived": 2},
        "levers": {"mutants": 8, "rounds": 2, "ways": {"kept target/, incremental (now)": way}},
    }
    text = "\n".join(mutate_rust.rows(result))
    assert "Clean build 2.00 s, one run of the suite 8.00 s" in text and "mean cost 3.00 s: 0.30x" in text
    assert "target: at most 0.5x" in text and "load average 2.0, 2.5, 3.0" in text
    assert "| kept target/, incremental (now) | 0.50 s (4) | 0.20 s (12) |" in text
    assert mutate_rust.rows({}) == [] and "cargo" in mutate_rust.rows({"error": "cargo is not on PATH"})[1]
