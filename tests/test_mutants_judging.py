"""The mutation runner judges every mutant it runs (issue 19 item 4, issue 21 items 2 and 10):
fail-fast stops a killed mutant without making it "could not be judged"; a mutant the
equivalence pre-check cannot tell apart is still run (and here killed); a run in which a mutant
could not be judged never passes; the deadlines' options refuse values they cannot honour."""

from __future__ import annotations

from pathlib import Path

import pytest

from elmo_conformance.mutation.__main__ import parse
from elmo_conformance.mutation.model import Baseline, MutantInfo, MutantRun, TestOutcome
from elmo_conformance.mutation.runner import Options, Results
from elmo_conformance.mutation.verdicts import judge, session_failures
from elmo_conformance.mutation.worker import MutantJob, _register_profile, run_mutant

ROOT = Path(__file__).resolve().parent.parent
DECLARES = str(ROOT / "tests" / "examples" / "declares_mutants.py")
BLIND = str(ROOT / "tests" / "examples" / "large_s_blind.py")
SCALAR_MIX = "conformance/test_scalar_mix.py::"


@pytest.fixture(scope="module", autouse=True)
def profile() -> None:
    _register_profile()


def test_fail_fast_judges_a_killed_mutant_killed() -> None:
    order = (
        f"{SCALAR_MIX}test_hand_example_scalar_mix[mine-float64]",
        f"{SCALAR_MIX}test_scalar_mix_starts_uniform_and_trains[mine-float64]",
    )
    run = run_mutant(MutantJob(DECLARES, "s01", order, frozenset(order[:1]), True), lambda event: None)
    assert run.status == "Killed", run.reason
    assert list(run.tests) == [order[0]], "stopped at the first kill, once the expected killers ran"


def test_a_mutant_the_pre_check_cannot_tell_apart_is_run_and_killed() -> None:
    order = (f"{SCALAR_MIX}test_scalar_mix_is_stable_for_large_s[blind-float64]",)
    run = run_mutant(MutantJob(BLIND, "x-unshifted", order, frozenset(), True), lambda event: None)
    assert run.difference is None, "the pre-check's inputs do not show it"
    assert run.status == "Killed", run.reason
    assert run.possibly_equivalent is False, "a killed mutant is not possibly equivalent"


def test_a_survivor_the_pre_check_saw_no_difference_in_is_flagged_possibly_equivalent() -> None:
    order = (f"{SCALAR_MIX}test_hand_example_scalar_mix[blind-float64]",)
    run = run_mutant(MutantJob(BLIND, "x-unshifted", order, frozenset(), True), lambda event: None)
    assert run.status == "Survived" and run.possibly_equivalent


def _results(status: str, mutant: str = "x-extra") -> Results:
    info = MutantInfo(mutant, "an extra", None, 1, 1, 1, None)
    test = TestOutcome("t.py::test_a[mine-float64]", "test_a", "passed", 0.1, "t.py", 1, adapter="mine")
    baseline = Baseline("mine.py", "mine", mutants=[info], tests={test.nodeid: test})
    results = Results(Options(("mine.py",), only=frozenset({mutant})), catalog=[])
    results.baselines["mine.py"] = baseline
    results.runs[("mine.py", mutant)] = MutantRun("mine.py", mutant, status, reason="pytest exited with code 3")
    return results


def test_a_run_with_a_mutant_that_could_not_be_judged_never_passes() -> None:
    results = _results("RuntimeError")
    problems = session_failures(results, judge(results))
    assert problems and "could not be judged" in problems[0]
    assert session_failures(_results("Killed"), judge(_results("Killed"))) == []


@pytest.mark.parametrize(
    "option, value",
    [
        ("--timeout-factor", "1e300"),
        ("--timeout-factor", "0"),
        ("--timeout-min", "1e12"),
        ("--baseline-timeout", "inf"),
    ],
)
def test_deadline_options_out_of_range_are_refused(option: str, value: str, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exit_:
        parse(["--impl", "numpy", option, value])
    assert exit_.value.code == 2
    assert option in capsys.readouterr().err
