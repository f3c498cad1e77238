"""Verdicts (spec §13.1) and the terminal and markdown reports, on hand-made run results."""

from __future__ import annotations

from elmo_conformance.mutation.model import Baseline, MutantInfo, MutantRun, TestOutcome
from elmo_conformance.mutation.runner import Options, Results, mutant_job
from elmo_conformance.mutation.summary import markdown
from elmo_conformance.mutation.table import terminal
from elmo_conformance.mutation.verdicts import judge, session_failures

CATALOG = [
    {"id": "s01", "title": "raw s as weights", "expected_killers": ["test_mix"]},
    {"id": "s02", "title": "gamma never applied", "expected_killers": ["test_mix", "test_gamma"]},
]


def outcome(name: str, case: str, result: str = "passed", duration: float = 0.5) -> TestOutcome:
    return TestOutcome(f"conformance/test_x.py::{name}[{case}]", name, result, duration, "conformance/test_x.py", 1)


def info(mutant: str, covers: tuple | None = None) -> MutantInfo:
    return MutantInfo(mutant, f"{mutant} title", "adapters/mine/mutants.py", 3, 5, 9, covers)


def baseline(*mutants: str, tests: list[TestOutcome] | None = None, **fields) -> Baseline:
    tests = tests or [
        outcome(n, c) for n in ("test_mix", "test_gamma", "test_other") for c in ("mine-float64", "mine-float32")
    ]
    return Baseline("mine.py", "mine", mutants=[info(m) for m in mutants], tests={t.nodeid: t for t in tests}, **fields)


def run(mutant: str, status: str, killed: tuple[str, ...] = (), base: Baseline | None = None, **fields) -> MutantRun:
    base = base or baseline()
    tests = {}
    for nodeid, t in base.tests.items():
        tests[nodeid] = outcome(t.name, nodeid.split("[")[1][:-1], "failed" if t.name in killed else "passed")
    return MutantRun("mine.py", mutant, status, tests, list(tests), difference="scalar_mix(): values differ", **fields)


def results(base: Baseline, *runs: MutantRun, only: frozenset[str] = frozenset()) -> Results:
    out = Results(Options(("mine.py",), only=only), CATALOG)
    out.baselines["mine.py"] = base
    out.runs = {(r.impl, r.mutant): r for r in runs}
    return out


def test_killed_by_every_expected_killer_passes_and_lists_all_killers() -> None:
    base = baseline("s01", "s02")
    res = results(
        base, run("s01", "Killed", ("test_mix", "test_other")), run("s02", "Killed", ("test_mix", "test_gamma"))
    )
    verdicts = judge(res)
    assert [(v.mutant, v.status, v.failure) for v in verdicts] == [("s01", "Killed", None), ("s02", "Killed", None)]
    assert len(verdicts[0].killers) == 4, "every killing test case is recorded, not only the first"
    assert session_failures(res, verdicts) == []
    table = terminal(res, verdicts)
    assert "s01     raw s as weights" in table and "killed (4)" in table and "FAILED" not in table
    assert markdown(res, verdicts).startswith("## Mutation testing (spec §13): ✅ passed")


def test_an_expected_killer_that_passes_fails_the_session_and_is_named() -> None:
    base = baseline("s01", "s02")
    res = results(base, run("s01", "Killed", ("test_mix",)), run("s02", "Killed", ("test_mix",)))
    verdicts = judge(res)
    s02 = verdicts[1]
    assert s02.status == "Killed"
    assert s02.missed == [
        "conformance/test_x.py::test_gamma[mine-float64] passed",
        "conformance/test_x.py::test_gamma[mine-float32] passed",
    ]
    [problem] = session_failures(res, verdicts)
    assert problem.startswith("mine s02 (gamma never applied) expected killer(s) did not kill it: ")
    table = terminal(res, verdicts)
    assert "killed (2) !" in table
    assert "  mine s02: conformance/test_x.py::test_gamma[mine-float64] passed" in table
    assert "reproduce: nox -s conformance -- --impl mine.py --mutant s02 -k test_gamma" in table
    assert "**killed (2) !**" in markdown(res, verdicts)


def test_a_surviving_catalog_mutant_fails_an_extra_one_does_not() -> None:
    base = baseline("s01", "x-extra")
    res = results(base, run("s01", "Survived"), run("x-extra", "Survived"))
    verdicts = {v.mutant: v for v in judge(res)}
    assert verdicts["s01"].failure == "survived: all 6 tests that reach it passed"
    assert verdicts["x-extra"].failure is None and not verdicts["x-extra"].catalog
    assert verdicts["s02"].status == "NotDeclared" and verdicts["s02"].failure is None
    [problem] = session_failures(res, list(verdicts.values()))
    assert problem.startswith("mine s01 (raw s as weights) survived")
    table = terminal(res, list(verdicts.values()))
    assert "SURVIVED !" in table and "not declared" in table
    assert "(extra) x-extra title" in table and "reproduce: nox -s conformance -- --impl mine.py --mutant s01" in table


def test_possibly_equivalent_and_crashing_catalog_mutants_fail_with_their_reason() -> None:
    base = baseline("s01", "s02")
    equivalent = MutantRun("mine.py", "s01", "Survived", prechecked=True)  # ran, survived, no output change seen
    crashed = MutantRun("mine.py", "s02", "RuntimeError", reason="the worker process was killed by SIGSEGV")
    verdicts = judge(results(base, equivalent, crashed))
    assert [v.failure for v in verdicts] == [
        "survived: all 0 tests that reach it passed (possibly equivalent: the pre-check saw no output change)",
        "could not be judged, the run broke: the worker process was killed by SIGSEGV",
    ]


def test_a_timeout_counts_as_detected_and_unreached_expected_killers_are_only_noted() -> None:
    base = baseline("s02")
    tests = {n: t for n, t in run("s02", "Killed", ("test_mix",)).tests.items() if "test_mix" in n}
    hung = MutantRun("mine.py", "s02", "Timeout", tests, running="conformance/test_x.py::test_gamma[mine-float64]")
    [verdict] = judge(results(base, hung, only=frozenset({"s02"})))
    assert verdict.status == "Timeout" and verdict.failure is None
    assert "conformance/test_x.py::test_gamma[mine-float64] did not run (Timeout)" in verdict.notes


def test_an_adapter_whose_baseline_skips_everything_is_not_testable() -> None:
    skipped = outcome("test_mix", "mine-float64", "skipped")
    skipped.message = "no CUDA device"
    suite_self_check = TestOutcome("conformance/test_v.py::test_rows", "test_rows", "passed", 0.1, "test_v.py", 1)
    base = baseline("s01", tests=[skipped, suite_self_check])
    verdicts = judge(results(base))
    assert [(v.status, v.failure) for v in verdicts] == [("NotTestable", None), ("NotDeclared", None)]
    assert verdicts[0].notes == ["the clean baseline skipped every test: no CUDA device"]
    assert "not testable" in terminal(results(base), verdicts)
    unavailable = baseline("s01", unavailable="no CUDA device here")
    [verdict, _] = judge(results(unavailable))
    assert verdict.status == "NotTestable" and verdict.notes == [
        "the clean baseline skipped every test: no CUDA device here"
    ]


def test_a_failing_baseline_fails_the_session_and_runs_nothing() -> None:
    tests = [outcome("test_mix", "mine-float64", "failed"), outcome("test_gamma", "mine-float64")]
    base = baseline("s01", tests=tests)
    res = results(base)
    verdicts = judge(res)
    assert [(v.mutant, v.status) for v in verdicts] == [("s01", "NotRun"), ("s02", "NotDeclared")]
    [problem] = session_failures(res, verdicts)
    assert (
        "the clean baseline run must pass, but 1 test(s) failed: conformance/test_x.py::test_mix[mine-float64]"
        in problem
    )


def test_an_expected_killer_missing_from_the_suite_is_a_failure() -> None:
    tests = [outcome("test_other", "mine-float64")]
    base = baseline("s01", tests=tests)
    [verdict, _] = judge(results(base, run("s01", "Killed", ("test_other",), base=base)))
    assert verdict.missed == ["test_mix: no test of that name in the suite (spec/mutants.json is out of date)"]
    assert verdict.failure is not None


def test_the_job_runs_expected_killers_first_then_only_the_covering_tests() -> None:
    tests = [
        outcome(n, "mine-float64", duration=d) for n, d in (("test_other", 1.0), ("test_b", 2.0), ("test_mix", 4.0))
    ]
    tests.append(outcome("test_skip", "mine-float64", "skipped"))
    base = baseline("s01", tests=tests)
    base.coverage["s01"] = [tests[1].nodeid]
    job, timeout = mutant_job(base, "s01", ["test_mix"], Options(("mine.py",), timeout_factor=2.0, timeout_min=10.0))
    assert [n.split("::")[1] for n in job.order] == ["test_mix[mine-float64]", "test_b[mine-float64]"]
    assert job.must_run == {tests[2].nodeid}
    assert timeout == 10.0 + 2.0 * (1.0 + 4.0 + 2.0), "min + factor x (session start-up + the tests' baseline time)"
    job, _ = mutant_job(base, "x", [], Options(("mine.py",)))
    assert len(job.order) == 3, "without coverage every test that ran in the baseline is run"
