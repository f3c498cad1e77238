"""A program's lines each test runs, measured with gcov (spec §13.2; elmo_conformance/mutation/gcov.py).

The baseline of the built-in c builds a coverage copy (-O0 --coverage), stops the program after
each test and reads its counts with gcov: a mutant then runs only the tests that ran its line,
and a mutant of a line no test runs is NoCoverage (after its build: one that does not compile is
still a CompileError). These tests run the real compiler and the real gcov.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from elmo_conformance.mutation.gcov import line_reach

ROOT = Path(__file__).resolve().parent.parent
MIX = ROOT / "adapters" / "c" / "scalar_mix.c"
MAIN = ROOT / "adapters" / "c" / "main.c"

needs_gcov = pytest.mark.skipif(shutil.which("gcov") is None or shutil.which("cc") is None, reason="needs cc and gcov")

SCRIPT = """
import json, sys, tempfile
from dataclasses import replace
from pathlib import Path
from elmo_conformance.mutation import mutate
from elmo_conformance.mutation.scratch import ProgramCoverage, baseline_copy
from elmo_conformance.mutation.worker import BaselineJob, _register_profile, run_baseline

select, build, gcov = sys.argv[1], sys.argv[2], sys.argv[3]
target, files = mutate.resolve(mutate.parse(["--impl", "c"]))
if build:
    target = replace(target, coverage=ProgramCoverage(build, gcov))
mutate._child_environment()
scratch = Path(tempfile.mkdtemp())
target, *_ = mutate.clean_copy(target, scratch, scratch / "out", 900.0)
_, run_as, cwd = baseline_copy(target, scratch / "baseline")
_register_profile()
job = BaselineJob("c", select=select, record_calls=True, run_as=run_as, cwd=cwd, target=target, scratch=str(scratch))
b = run_baseline(job, lambda event: None)
print(json.dumps({"error": b.error, "tests": sorted(b.tests), "failed": [t.nodeid for t in b.failures],
                  "measured": b.measured, "problem": b.coverage_problem, "lines": b.lines,
                  "functions": b.functions, "calls": b.calls, "left": sorted(p.name for p in scratch.iterdir())}))
"""

SELECT = "hand_example_scalar_mix or scalar_mix_vjp_matches_reference"


def baseline(select: str = SELECT, build: str = "", gcov: str = "gcov") -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, select, build, gcov], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def line_of(text: str, after: str = "") -> int:
    """The number of the first line of scalar_mix.c that holds `text` (after the line holding `after`)."""
    lines = MIX.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if after in line) if after else 0
    return next(i for i, line in enumerate(lines) if i >= start and text in line) + 1


@needs_gcov
def test_a_programs_baseline_measures_the_lines_each_test_ran() -> None:
    """§13.2: the built-in c's baseline knows, per test, the lines of its sources it ran: the mix's
    inner sum only in the tests of scalar_mix, the vector-Jacobian product's only in those of
    scalar_mix_vjp, the softmax both share in all of them; by the user's file names."""
    found = baseline()
    assert found["error"] is None and not found["failed"] and len(found["tests"]) == 4, found
    assert found["measured"] == "gcov" and found["problem"] is None, found["problem"]
    hand = sorted(t for t in found["tests"] if "hand_example" in t)
    vjp = sorted(t for t in found["tests"] if "vjp" in t)
    lines = found["lines"][str(MIX)]
    assert lines[str(line_of("total = fl(ctx, total + fl(ctx, w[k] * in->layers[k][i]));"))] == hand
    assert lines[str(line_of("g_layers[k][i] = fl(ctx, scale * g_out[i]);"))] == vjp
    assert lines[str(line_of("w[k] = fl(ctx, exp(fl(ctx, s[k] - largest)));"))] == sorted(hand + vjp)
    # A declaration holds no code: gcov does not know its line, and the mutant's function decides.
    declaration = line_of("double derivative;")
    assert str(declaration) not in lines
    spans = {(first, last): tests for first, last, tests in found["functions"][str(MIX)]}
    (span,) = [span for span in spans if span[0] <= declaration <= span[1]]
    assert spans[span] == hand
    # The coverage copy is removed with its counts when the shard is done.
    assert not [name for name in found["left"] if name.startswith("coverage-")], found["left"]


@needs_gcov
@pytest.mark.parametrize(
    "build, gcov, said",
    [("exit 3", "gcov", "the coverage build failed"), ("", "false", "gcov could not read a test's counts")],
)
def test_a_coverage_that_cannot_be_measured_leaves_the_protocol_functions_reach(
    build: str, gcov: str, said: str
) -> None:
    """A coverage build that fails, or a gcov that cannot read the counts, costs the run its
    measured lines, not its baseline: the shard runs as any program's does and says why."""
    from elmo_conformance.mutation.mutate import default_coverage_build_c

    found = baseline(build=build or default_coverage_build_c(), gcov=gcov)
    assert found["error"] is None and not found["failed"] and len(found["tests"]) == 4, found
    assert found["measured"] == "" and found["lines"] == {} and said in (found["problem"] or ""), found["problem"]
    assert sorted(found["calls"]) == ["scalar_mix", "scalar_mix_vjp"]  # the reach the run falls back on


def test_which_tests_reach_a_line_by_its_counts(tmp_path: Path) -> None:
    """gcov.line_reach: a line gcov knows is reached by the tests that ran it (none: NoCoverage);
    a label's line (a mutated `case` changes which values reach the code after it) and a line gcov
    does not know, by the tests that entered its function; a preprocessor line or a file the
    counts do not cover cannot be decided by them (None: reach.py decides)."""
    source = tmp_path / "f.c"
    source.write_text(
        "#define TWO 2\n"  # 1
        "int f(int x)\n"  # 2
        "{\n"  # 3
        "    int y;\n"  # 4
        "    switch (x) {\n"  # 5
        "    case 1:\n"  # 6
        "        return TWO;\n"  # 7
        "    }\n"  # 8
        "    y = x;\n"  # 9
        "    return y;\n"  # 10
        "}\n",  # 11
        encoding="utf-8",
    )
    file = str(source)
    lines = {file: {5: ["a", "b"], 6: ["a"], 7: ["a"], 9: ["b"], 10: []}}
    functions = {file: [(2, 11, ["a", "b"])]}
    assert line_reach(file, 9, lines, functions) == {"b"}
    assert line_reach(file, 10, lines, functions) == set()
    assert line_reach(file, 6, lines, functions) == {"a", "b"}  # a label
    assert line_reach(file, 4, lines, functions) == {"a", "b"}  # a declaration: its function
    assert line_reach(file, 1, lines, functions) is None  # a macro: used anywhere below
    assert line_reach(str(tmp_path / "other.c"), 9, lines, functions) is None


def report(out: Path) -> dict[str, dict]:
    data = json.loads((out / "mutation-report.json").read_text(encoding="utf-8"))
    return {m["id"]: m for entry in data["files"].values() for m in entry["mutants"]}


@needs_gcov
@pytest.mark.integration
def test_measured_lines_change_no_verdict_and_run_fewer_tests(tmp_path: Path) -> None:
    """The same seeded sample of the built-in c's request loop (main.c, reached by every test
    through the protocol functions) with the measured lines and with the protocol functions'
    reach (--no-line-coverage): every status is the same but a survivor that no test ran (an
    error no selected test provokes), which is NoCoverage; each mutant's tests are a subset of
    those the protocol reach gave it, some strictly; and the measured run runs fewer tests."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    runs = {}
    for mode in ("measured", "protocol"):
        out = tmp_path / mode
        command = [sys.executable, "-m", "elmo_conformance", "mutate", "--impl", "c", "--source", str(MAIN)]
        command += ["-k", "scalar_mix and float64", "--max-mutants", "24", "--seed", "2", "--workers", "2"]
        command += ["--no-cache", "--no-html", "--out", str(out)]
        command += ["--no-line-coverage"] if mode == "protocol" else []
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
        assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
        assert ("line coverage (gcov)" in done.stdout + done.stderr) == (mode == "measured")
        runs[mode] = report(out)
    measured, protocol = runs["measured"], runs["protocol"]
    assert sorted(measured) == sorted(protocol) and len(measured) == 24
    statuses = {m: (protocol[m]["status"], measured[m]["status"]) for m in measured}
    changed = {m: pair for m, pair in statuses.items() if pair[0] != pair[1]}
    assert all(pair == ("Survived", "NoCoverage") for pair in changed.values()), changed
    assert any(pair == ("Killed", "Killed") for pair in statuses.values()), statuses
    assert any(pair == ("Survived", "NoCoverage") for pair in statuses.values()), statuses
    # The counts only narrow a mutant's tests: each runs a subset of what the protocol reach ran.
    narrowed = [m for m in measured if set(measured[m]["coveredBy"]) < set(protocol[m]["coveredBy"])]
    assert all(set(measured[m]["coveredBy"]) <= set(protocol[m]["coveredBy"]) for m in measured)
    assert narrowed, "no mutant ran fewer tests"
    ran = {mode: sum(m.get("testsCompleted") or 0 for m in run.values()) for mode, run in runs.items()}
    assert ran["measured"] < ran["protocol"], ran


@pytest.mark.parametrize(
    "argv, said",
    [
        (["--impl", "numpy", "--coverage-build", "make"], "--coverage-build: a Python implementation"),
        (["--impl", "c", "--coverage-build", "make", "--no-line-coverage"], "give one"),
        (
            ["--impl", "c", "--coverage-build", "make", "--gcov", "no-such-gcov-here"],
            "--gcov no-such-gcov-here: not found",
        ),
    ],
)
def test_the_coverage_options_refuse_what_cannot_be_measured(argv: list[str], said: str) -> None:
    """Bad input gets a clear error naming the option, before anything runs (exit status 2)."""
    from elmo_conformance.mutation import mutate
    from elmo_conformance.mutation.scratch import UsageError

    with pytest.raises(UsageError, match=said.replace("-", r"\-")):
        mutate.resolve(mutate.parse(argv))


@needs_gcov
def test_the_built_in_c_measures_its_lines_by_default() -> None:
    from elmo_conformance.mutation import mutate

    target, _ = mutate.resolve(mutate.parse(["--impl", "c"]))
    assert target.coverage is not None and target.coverage.gcov == "gcov"
    assert "--coverage" in target.coverage.build and "-O0" in target.coverage.build
    off, _ = mutate.resolve(mutate.parse(["--impl", "c", "--no-line-coverage"]))
    assert off.coverage is None
    own, _ = mutate.resolve(mutate.parse(["--impl", "c", "--build", "make"]))
    assert own.coverage is None  # a build of one's own: its coverage build is one's own too (--coverage-build)
