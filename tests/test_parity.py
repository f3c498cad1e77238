"""The wire protocol end to end (spec §11, §15): the whole suite and the whole mutation matrix give
the same verdicts through the protocol server (adapters/wire/server.py) as in-process, for the numpy
and torch adapters: the same outcome for every test, and every mutant the same status with the
same killing tests.

These runs take minutes. numpy's full pass of the suite runs with the project's tests (`nox -s
tests`). The mutation matrices and torch's full pass are marked `full_parity` and run in `nox -s
parity`; `nox -s tests` keeps cheaper checks of the same properties:
- torch: the suite's results and error answers (§3, §5, §8) through the protocol against
  in-process (`test_torch_results_and_errors_are_the_same_through_the_protocol`);
- mutants through the protocol: numpy's §13.1 gate in-process and the C implementation's, whose
  every mutant runs through the protocol (tests/test_builtins.py), and a numpy mutant served by
  the protocol server failing its expected test with its message (`--mutant s07`,
  tests/test_mutants_declared.py)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import elmo_conformance
from tests.suite_runs import NUMPY_REFERENCE_RUN

ROOT = Path(__file__).resolve().parent.parent
FULL = pytest.mark.full_parity
IMPLS = ["numpy", pytest.param("torch", marks=FULL)]
pytestmark = pytest.mark.parity


def served(impl: str) -> str:
    """The --impl argument that runs `impl` behind the protocol server, in a child process."""
    return "cmd:" + shlex.join([sys.executable, "-m", "elmo_conformance.adapters.wire.server", impl])


def suite_outcomes(impl: str, tmp_path: Path, tag: str, *options: str) -> dict[str, str]:
    """nodeid -> outcome of the suite on `impl`, through the one entry point."""
    result = elmo_conformance.run(impl, ["-q", "-p", "no:cacheprovider", *options], capture=True, deadline_s=1800)
    assert result.complete and result.tests, result.describe()
    return result.outcomes


def mutation_verdicts(
    impl: str, tmp_path: Path, tag: str, *options: str
) -> tuple[int, dict[str, tuple[str, list[str]]], str]:
    out = tmp_path / tag
    command = [
        sys.executable,
        "-m",
        "elmo_conformance.mutation",
        "--impl",
        impl,
        "--out",
        str(out),
        *options,
    ]
    done = subprocess.run([*command, "--no-html"], cwd=ROOT, capture_output=True, text=True, timeout=3600)
    report = json.loads((out / "mutation-report.json").read_text())
    verdicts = {
        mutant["mutatorName"]: (mutant["status"], sorted(mutant.get("killedBy", [])))
        for entry in report["files"].values()
        for mutant in entry["mutants"]
    }
    return done.returncode, verdicts, done.stdout + done.stderr


PROCESS_ONLY = "test_a_process_exits_0_at_the_end_of_its_input"


@NUMPY_REFERENCE_RUN
@pytest.mark.parametrize("impl", IMPLS)
def test_the_suite_gives_the_same_verdicts_through_the_protocol(
    impl: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # --in-process: a Python adapter otherwise runs behind the protocol server too (§11.1).
    direct = suite_outcomes(impl, tmp_path, "in-process", "--in-process")
    if impl == "numpy":  # `--impl numpy` is served by a child process: the run fixtures check 6 reads too
        run = request.getfixturevalue("numpy_reference_run")
        assert run.code == 0 and run.outcomes, f"exit {run.code}: {run.output}"
        through = run.outcomes
    else:
        through = suite_outcomes(served(impl), tmp_path, "served")
    assert set(direct.values()) <= {"passed", "skipped"}, "the built-in adapters pass everything"
    # §15.1's exit status is a process's: skipped in-process, checked (and passed) through the protocol
    direct, through = dict(direct), dict(through)  # the fixture's run is shared
    for nodeid in [n for n in direct if PROCESS_ONLY in n]:
        assert (direct.pop(nodeid), through.pop(nodeid, None)) == ("skipped", "passed"), nodeid
    differ = [
        f"{nodeid}: {outcome} in-process, {through.get(nodeid)} through the protocol"
        for nodeid, outcome in direct.items()
        if through.get(nodeid) != outcome
    ]
    assert not differ and len(through) == len(direct), "\n".join(differ)


def test_torch_results_and_errors_are_the_same_through_the_protocol(tmp_path: Path) -> None:
    """The cheaper check of the full torch pass (`nox -s parity`): every ScalarMix and validation
    test (results §5, refusals of bad input §8) gives the same outcome through the protocol."""
    selection = ("-k", "test_scalar_mix.py or test_validation.py")
    direct = suite_outcomes("torch", tmp_path, "in-process", "--in-process", *selection)
    through = suite_outcomes(served("torch"), tmp_path, "served", *selection)
    assert set(direct.values()) <= {"passed", "skipped"} and len(direct) > 50, direct
    differ = [nodeid for nodeid, outcome in direct.items() if through.get(nodeid) != outcome]
    assert not differ and len(through) == len(direct), differ


# Every killer of every mutant, in-process and through the protocol, in `nox -s parity`.
MATRICES = [
    pytest.param("numpy", (), id="numpy", marks=FULL),
    pytest.param("torch", (), id="torch", marks=FULL),
]


@pytest.mark.parametrize("impl, options", MATRICES)
def test_the_mutation_matrix_gives_the_same_verdicts_through_the_protocol(
    impl: str, options: tuple[str, ...], tmp_path: Path
) -> None:
    code, direct, output = mutation_verdicts(impl, tmp_path, "in-process", *options)
    assert code == 0, output[-4000:]  # the gate of §13.1, in-process
    code, through, output = mutation_verdicts(served(impl), tmp_path, "served", *options)
    assert code == 0, output[-4000:]
    assert sorted(through) == sorted(direct)
    differ = [
        f"{key}: {direct[key][0]} in-process, {through[key][0]} through the protocol; killed only in-process by "
        f"{sorted(set(direct[key][1]) - set(through[key][1]))}, only through the protocol by "
        f"{sorted(set(through[key][1]) - set(direct[key][1]))}"
        for key in direct
        if direct[key] != through[key]
    ]
    assert not differ, "\n".join(differ)
