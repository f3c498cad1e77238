"""The parts of ``elmo-conformance fixtures``: drift comparison (§10), the learning bar's derivation
(§12.4), provenance (§12) and the suite checks 6 and 7 (§13)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from elmo_conformance.fixtures.drift import compare_value, quantity_of, tolerance, values
from elmo_conformance.fixtures.manifest import fixture_files
from elmo_conformance.fixtures.provenance import code_files, code_hashes, stale_code, third_party_imports
from elmo_conformance.fixtures.store import FIXTURES_DIR, MANIFEST_NAME, REPO_ROOT, SPEC_DIR, load_json
from elmo_conformance.fixtures.thresholds import describe, threshold_rows
from elmo_conformance.fixtures.validate import FAIL, PASS, WARN, check_provenance
from elmo_conformance.maintain.fixture_suite import ReferenceRun, check_mutant, judge_reference
from tests.suite_runs import NUMPY_REFERENCE_RUN

# ---------------------------------------------------------------------------------------- drift


def test_float_values_match_within_their_tolerance_not_bit_for_bit() -> None:
    rtol, atol = tolerance("layers")
    expected = np.array([1.0, -2.0, 0.0])
    close = compare_value("golden_bilm.npz", "layers", expected, expected * (1 + rtol / 2))
    assert close.ok and close.quantity == "layers"
    # float64 tolerances are a few hundred ulps, so 1 + rtol/2 is itself rounded by up to 1%
    assert close.max_abs == pytest.approx(2.0 * rtol / 2, rel=0.01)
    assert close.max_rel == pytest.approx(rtol / 2, rel=0.01)
    assert close.used == pytest.approx((2.0 * rtol / 2) / (atol + rtol * 2.0), rel=0.01)
    far = compare_value("golden_bilm.npz", "layers", expected, expected * (1 + 2 * rtol))
    assert far.verdict == "drift" and far.used > 1


def test_the_tolerance_of_a_value_comes_from_spec_tolerances() -> None:
    table = json.loads((SPEC_DIR / "tolerances.json").read_text(encoding="utf-8"))["dtypes"]["float64"]
    assert tolerance("loss_grad") == (table["loss_grad"]["rtol"], table["loss_grad"]["atol"])
    assert quantity_of("golden_bilm.npz", "grad_loss.fwd.0.weight_ih") == "loss_grad"
    assert quantity_of("golden_bilm.npz", "grad_mix.out.bias") == "layers_vjp"
    assert quantity_of("probe_separable.npz", "W") == "probe_weights"
    # inputs (drawn parameters, features, settings) get the strictest entry of the table
    assert quantity_of("golden_bilm.npz", "params.embedding") == "inputs"
    assert tolerance("inputs") == (min(t["rtol"] for t in table.values()), min(t["atol"] for t in table.values()))


def test_every_computed_golden_array_has_its_own_tolerance() -> None:
    inputs = {"ids", "lengths", "mix_s", "mix_gamma", "mix_g"}
    for key in values(FIXTURES_DIR / "golden_bilm.npz"):
        computed = not key.startswith("params.") and key not in inputs
        assert (quantity_of("golden_bilm.npz", key) != "inputs") == computed, key


def test_integers_text_and_structure_must_be_equal() -> None:
    ids = np.array([[1, 2], [3, 4]])
    assert compare_value("x.npz", "ids", ids, ids.copy()).ok
    changed = compare_value("x.npz", "ids", ids, ids + np.array([[0, 0], [0, 1]]))
    assert changed.verdict == "changed" and changed.quantity == "exact" and changed.max_abs == 1.0
    reshaped = compare_value("x.npz", "ids", ids, ids.reshape(4))
    assert reshaped.verdict == "changed" and reshaped.detail == "int64[2, 2] -> int64[4]"
    assert compare_value("x.npz", "ids", ids, ids.astype(np.int32)).verdict == "changed"
    assert compare_value("x.json", "$.name", '"a"', '"b"').verdict == "changed"
    assert compare_value("x.json", "$.name", '"a"', np.asarray(1.0)).verdict == "changed"
    assert compare_value("x.npz", "new", None, ids).verdict == "new"
    assert compare_value("x.npz", "old", ids, None).verdict == "gone"


def test_nan_matches_only_nan_and_infinity_only_itself() -> None:
    odd = np.array([np.nan, np.inf, 1.0])
    assert compare_value("x.npz", "v", odd, odd.copy()).ok
    for other in ([0.0, np.inf, 1.0], [np.nan, 1.0, 1.0], [np.nan, -np.inf, 1.0]):
        off = compare_value("x.npz", "v", odd, np.array(other))
        assert off.verdict == "drift" and math.isinf(off.max_abs) and math.isinf(off.used), other


def test_json_and_tsv_fixtures_become_named_values(tmp_path: Path) -> None:
    doc = {"a": [1.5, 2.0], "b": {"c": "x", "d": 3}, "e": [{"f": 0.5}], "ids": [[1, 2], [3, 4]], "w": ["x", "y"]}
    (tmp_path / "doc.json").write_text(json.dumps(doc), encoding="utf-8")
    found = values(tmp_path / "doc.json")
    assert sorted(found) == ["$.a", "$.b", "$.e[0].f", "$.ids", "$.w"]
    assert found["$.a"].dtype == np.float64 and found["$.ids"].dtype.kind == "i"
    assert found["$.b"] == '{"c": "x", "d": 3}' and found["$.w"] == '["x", "y"]'
    (tmp_path / "t.tsv").write_text("metric\tbar\tn\tsource\nloss\t0.5\t5\tref\n", encoding="utf-8")
    cells = values(tmp_path / "t.tsv")
    assert sorted(cells) == ["loss.bar", "loss.n", "loss.source"]
    assert cells["loss.bar"].dtype == np.float64 and cells["loss.n"].dtype.kind == "i" and cells["loss.source"] == "ref"


# ----------------------------------------------------------------------------------- thresholds


def runs(losses: list[float], acc_r1: float = 1.0) -> list[dict[str, float]]:
    return [{"final_loss": x, "acc_r0": 0.625, "acc_r1": acc_r1, "majority": 0.625} for x in losses]


def test_the_loss_band_is_the_extreme_losses_with_three_sample_std() -> None:
    rows = threshold_rows(runs([1.0, 1.1, 1.2, 1.3, 1.4]), 0.625, (0, 1, 2, 3, 4))
    std = math.sqrt((0.2**2 + 0.1**2 + 0 + 0.1**2 + 0.2**2) / 4)  # sample std, by hand
    assert rows[0][:2] == ["final_loss", "<="]
    assert rows[0][2:7] == pytest.approx([1.4 + 3 * std, 1.2, std, 5, 3 * std])
    assert rows[0][7] == "reference:seeds=0,1,2,3,4"
    assert rows[1][:2] == ["final_loss_floor", ">="], "the band's lower end (§9.3 item 1)"
    assert rows[1][2:7] == pytest.approx([1.0 - 3 * std, 1.2, std, 5, 3 * std])
    assert rows[2][:3] == ["probe_r0_accuracy", "==", 0.625] and rows[3][:3] == ["probe_r1_accuracy", ">=", 0.95]


def test_a_small_spread_gets_the_margin_floor() -> None:
    rows = threshold_rows(runs([0.60, 0.61, 0.60]), 0.625, (0, 1, 2))
    assert rows[0][2] == pytest.approx(0.61 + 0.05) and rows[0][6] == 0.05
    assert rows[1][2] == pytest.approx(0.60 - 0.05) and rows[1][6] == 0.05


def test_a_reference_that_misses_the_r1_bar_stops_the_derivation() -> None:
    with pytest.raises(AssertionError, match="below 0.95"):
        threshold_rows(runs([0.6, 0.61], acc_r1=0.9), 0.625, (0, 1))


def test_describe_prints_mean_spread_and_margin() -> None:
    row = {"metric": "final_loss", "comparison": "<=", "bar": "0.7", "mean": "0.6", "std": "0.01", "n_runs": "5"}
    [line] = describe([row | {"margin": "0.05", "source": "reference:seeds=0,1"}])
    assert line == "final_loss <= 0.7: mean 0.6, std 0.01 over 5 runs, margin 0.05 (reference:seeds=0,1)"


# ----------------------------------------------------------------------------------- provenance


def relative(paths: list[Path]) -> set[str]:
    return {p.relative_to(REPO_ROOT).as_posix() for p in paths}


def test_code_hashes_cover_what_a_generator_runs() -> None:
    learning = relative(code_files("fixtures/generate/learning.py"))
    assert {"reference/bilm.py", "reference/lstm.py", "fixtures/experiment.py", "fixtures/thresholds.py"} <= learning
    assert {"fixtures/store.py", "fixtures/generate/__init__.py", "fixtures/__init__.py"} <= learning
    # the oracle is independent of the reference, and its manifest entry says so
    assert not any(p.startswith("reference/") for p in relative(code_files("fixtures/generate/golden_bilm.py")))


def test_third_party_imports_are_the_libraries_to_record() -> None:
    assert third_party_imports("fixtures/generate/golden_bilm.py") == ["numpy", "torch"]
    assert third_party_imports("fixtures/generate/scalar_mix.py") == []


def committed_entry(name: str) -> dict:
    return next(e for e in load_json(FIXTURES_DIR / MANIFEST_NAME)["fixtures"] if e["path"] == name)


def test_stale_code_names_each_changed_file() -> None:
    entry = committed_entry("learning_thresholds.tsv")
    current = code_hashes(entry["generator"])
    entry["code"] = dict(current, **{"reference/bilm.py": "0" * 64, "reference/gone.py": "1" * 64})
    del entry["code"]["fixtures/experiment.py"]
    assert stale_code(entry) == [
        "reference/bilm.py changed",
        "reference/gone.py is no longer imported",
        "fixtures/experiment.py is newly imported",
    ]
    result = check_provenance(entry)
    assert result.status == WARN and "reference/bilm.py changed" in result.detail


def test_provenance_fails_when_a_library_version_is_not_recorded() -> None:
    entry = committed_entry("golden_bilm.npz")
    entry["libraries"] = {"numpy": entry["libraries"]["numpy"]}
    result = check_provenance(entry)
    assert result.status == FAIL
    assert (
        result.detail
        == "golden_bilm.npz: fixtures/generate/golden_bilm.py imports torch, whose version is not recorded"
    )


def test_provenance_reports_what_was_recorded() -> None:
    result = check_provenance(committed_entry("probe_separable.npz"))
    assert result.status in (PASS, WARN)
    assert result.detail.startswith("fixtures/generate/probe.py, seed 7031, numpy ")


# ----------------------------------------------------------------------------- checks 6 and 7


@NUMPY_REFERENCE_RUN
def test_check_6_reports_the_tests_that_read_each_fixture(numpy_reference_run: ReferenceRun) -> None:
    names = fixture_files(FIXTURES_DIR)
    results = {r.subject: r for r in judge_reference(numpy_reference_run, names)}
    assert {name: results[name].status for name in names} == {name: PASS for name in names}
    assert "(test_golden.py)" in results["golden_bilm.npz"].detail
    assert "(test_learning.py)" in results["learning_thresholds.tsv"].detail
    assert results["(whole suite)"].status == PASS


def test_check_7_fails_a_mutant_that_an_expected_killer_lets_live() -> None:
    mutant = {
        "id": "s01",
        "title": "raw s",
        "expected_killers": ["test_hand_example_scalar_mix", "test_padding_never_leaks"],
    }
    result = check_mutant(mutant, FIXTURES_DIR)
    assert result.status == FAIL
    assert result.detail == "not killed by test_padding_never_leaks (passed) (raw s)"


def test_check_7_fails_an_unknown_mutant_with_the_harness_message() -> None:
    result = check_mutant(
        {"id": "s99", "title": "none", "expected_killers": ["test_padding_never_leaks"]}, FIXTURES_DIR
    )
    assert result.status == FAIL and "s99" in result.detail and "does not declare it" in result.detail
