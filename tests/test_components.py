"""Partial implementations (spec §11): an adapter that declares some of the components `scalar_mix`,
`bilm` and `probe` is checked on those, and every other test is reported as not implemented, never
as passed: in the terminal, the pass table, the JSON report and the mutation runner's verdicts."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from elmo_conformance.conformance.passtable import cell, table
from elmo_conformance.mutation.model import Baseline, MutantInfo, MutantRun, TestOutcome
from elmo_conformance.mutation.runner import Options, Results, not_applicable
from elmo_conformance.mutation.verdicts import judge, session_failures
from elmo_conformance.spec.components import catalog_component, missing, unknown
from tests.suite_runs import run_suite_here

ROOT = Path(__file__).resolve().parent.parent
SCALAR_MIX_TESTS = {
    "test_hand_example_scalar_mix",
    "test_scalar_mix_starts_uniform_and_trains",
    "test_scalar_mix_is_stable_for_large_s",
    "test_scalar_mix_over_any_layer_shape",
    "test_scalar_mix_matches_reference",
    "test_scalar_mix_vjp_matches_reference",
}


def run_suite(tmp_path: Path, impl: str, *args: str) -> tuple[int, dict, dict, str]:
    passes = tmp_path / "pass-table.json"
    code, report, output = run_suite_here(tmp_path, impl, "--pass-table", str(passes), *args)
    assert report is not None and passes.exists(), output
    return code, report, json.loads(passes.read_text()), output


VALIDATION_TESTS = {"test_rejects_bad_input", "test_accepts_the_nearest_valid_input"}  # §8, per component
# §15.6, a program's side of the protocol: no component; a Python adapter skips them (its server speaks §15)
WIRE_TESTS = {
    "test_a_body_that_does_not_decode_is_a_protocol_error",
    "test_a_message_without_the_fields_of_a_call_is_a_protocol_error",
    "test_an_unknown_function_or_mutant_is_an_error_other_than_value_error",
    "test_bytes_that_are_not_a_frame_get_a_protocol_error_and_the_process_exits_non_zero",
}


def check_scalar_mix_only(code: int, report: dict, passes: dict, output: str, grad: bool, program: bool) -> None:
    assert code == 0, output
    by_adapter = [t for t in report["tests"] if t["case"] is not None]
    ran = {t["test"] for t in by_adapter if t["outcome"] == "passed"}
    assert ran == (SCALAR_MIX_TESTS | VALIDATION_TESTS | (WIRE_TESTS if program else set())) - (
        set()
        if grad
        else {
            "test_scalar_mix_starts_uniform_and_trains",
            "test_scalar_mix_vjp_matches_reference",
        }
    )
    validation = [t for t in by_adapter if t["test"] == "test_rejects_bad_input" and t["outcome"] == "passed"]
    assert validation and all("-scalar_mix" in t["nodeid"] for t in validation), "only ScalarMix's rows of §8"
    not_implemented = [t for t in by_adapter if t.get("not_implemented")]
    assert not_implemented and all(t["outcome"] == "skipped" for t in not_implemented), "never passed"
    assert {c for t in not_implemented for c in t["not_implemented"]} == {"bilm", "probe"}
    assert not any(t["test"] in SCALAR_MIX_TESTS for t in not_implemented)
    assert all(t["message"].startswith("Skipped: not implemented: ") for t in not_implemented)
    others = [t for t in by_adapter if t["test"] not in SCALAR_MIX_TESTS | VALIDATION_TESTS | WIRE_TESTS]
    assert all(t.get("not_implemented") for t in others), "a test that calls another component never runs"
    rows = {row["test"]: row for row in passes["rows"]}
    column = next(c["case"] for c in passes["columns"] if c["dtype"] == "float64")
    assert rows["test_golden_torch"]["cells"][column] == {"n/i": 1}
    assert rows["test_hand_example_scalar_mix"]["cells"][column] == {"pass": 1}
    assert passes["not_implemented"][column]["bilm"] > 100
    assert "test_golden_torch  " in output and " n/i " in output
    assert "x component bilm not declared (§11)" in output


def test_a_scalar_mix_only_python_adapter_is_checked_on_scalar_mix_only(tmp_path: Path) -> None:
    """Written the way one wraps a library: the component `scalar_mix`, the helper's input checks."""
    code, report, passes, output = run_suite(tmp_path, str(ROOT / "tests" / "examples" / "scalar_mix_only.py"))
    check_scalar_mix_only(code, report, passes, output, grad=True, program=False)


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler, `cc`")
def test_the_c_skeleton_passes_its_scalar_mix_tests_and_the_rest_is_not_implemented(tmp_path: Path) -> None:
    """examples/c-skeleton/skeleton.c: ScalarMix in float64, capabilities ["float64", "scalar_mix"]."""
    program = tmp_path / "skeleton"
    source = ROOT / "examples" / "c-skeleton" / "skeleton.c"
    subprocess.run(["cc", "-std=c11", "-O2", "-o", str(program), str(source), "-lm"], check=True, timeout=120)
    code, report, passes, output = run_suite(tmp_path, f"cmd:{program}")
    check_scalar_mix_only(code, report, passes, output, grad=False, program=True)
    assert {t["case"] for t in report["tests"] if t["case"]} == {"skeleton-float64"}


def test_components_default_to_all_and_names_are_checked() -> None:
    everything = frozenset({"float64", "grad"})
    assert missing(("bilm", "probe"), everything) == ()
    assert missing(("bilm", "scalar_mix"), frozenset({"float64", "scalar_mix"})) == ("bilm",)
    assert unknown(["bilm", "lstm", "probe"]) == ["lstm"]
    assert catalog_component({"component": "loss"}) == "bilm", "§4's loss belongs to the biLM (§11)"
    assert catalog_component({"component": "scalar_mix"}) == "scalar_mix"


def test_the_pass_table_shows_not_implemented_apart_from_skips_and_passes() -> None:
    results = [
        {"test": "test_a", "case": "mine-float64", "sections": ["5.2"], "outcome": "passed", "message": None},
        {
            "test": "test_b",
            "case": "mine-float64",
            "sections": ["3.4"],
            "outcome": "skipped",
            "message": "Skipped: not implemented: mine does not declare the component 'bilm' (§3) (§11)",
            "not_implemented": ["bilm"],
        },
        {"test": "test_c", "case": "mine-float64", "sections": ["6.3"], "outcome": "skipped", "message": "Skipped: x"},
    ]

    class Adapter:
        name, arg, device = "mine", "mine.py", "cpu"

    data = table([Adapter()], ["float64"], results)
    cells = {row["test"]: cell(row["cells"]["mine-float64"]) for row in data["rows"]}
    assert cells == {"test_a": "pass", "test_b": "n/i", "test_c": "skip"}
    assert data["not_implemented"] == {"mine-float64": {"bilm": 1}}
    assert data["skip_reasons"] == {"mine-float64": {"x": 1}}


# -------------------------------------------------------------- the mutation runner (§13.1)

CATALOG = [
    {"id": "s01", "title": "raw s", "expected_killers": ["test_mix"], "component": "scalar_mix"},
    {"id": "s07", "title": "fwd current token", "expected_killers": ["test_loss"], "component": "loss"},
]


def _baseline() -> Baseline:
    tests = [TestOutcome("t.py::test_mix[mine-float64]", "test_mix", "passed", 0.1, "t.py", 1)]
    tests.append(TestOutcome("t.py::test_loss[mine-float64]", "test_loss", "skipped", 0.0, "t.py", 2))
    mutants = [MutantInfo(m, m, "mine.py", 1, 2, 3, None) for m in ("s01", "s07")]
    base = Baseline("mine.py", "mine", mutants=mutants, components=("scalar_mix",))
    base.tests = {t.nodeid: t for t in tests}
    return base


def test_a_catalog_mutant_of_an_undeclared_component_is_not_applicable_and_never_run() -> None:
    base = _baseline()
    assert not_applicable(CATALOG[1], base) == "bilm" and not_applicable(CATALOG[0], base) is None
    assert not_applicable(None, base) is None, "an extra mutant is always run"
    results = Results(Options(("mine.py",)), CATALOG)
    results.baselines["mine.py"] = base
    killed = {
        "t.py::test_mix[mine-float64]": TestOutcome(
            "t.py::test_mix[mine-float64]", "test_mix", "failed", 0.1, "t.py", 1
        )
    }
    results.runs = {("mine.py", "s01"): MutantRun("mine.py", "s01", "Killed", killed)}
    verdicts = {v.mutant: v for v in judge(results)}
    assert (verdicts["s07"].status, verdicts["s07"].failure) == ("NotApplicable", None)
    assert verdicts["s07"].notes == ["mine does not declare the component 'bilm' it breaks (§11)"]
    assert verdicts["s01"].status == "Killed" and session_failures(results, list(verdicts.values())) == []


def test_the_plan_makes_no_job_for_a_mutant_that_is_not_applicable() -> None:
    from elmo_conformance.mutation.runner import Plan

    results = Results(Options(("mine.py",), workers=1), CATALOG)
    plan = Plan(results, progress=lambda line: None)
    plan._baseline_done(_baseline())
    assert [job.mutant for job, _, _ in plan.mutant_jobs] == ["s01"]
