"""scripts/measure_tolerances.py: how measured errors become the tolerances of spec §10."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("measure_tolerances", ROOT / "scripts" / "measure_tolerances.py")
measure = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(measure)


@pytest.mark.parametrize(
    "x, rounded",
    [(1e-6, 1e-6), (1.01e-6, 2e-6), (2e-6, 2e-6), (2.2e-6, 5e-6), (5.3e-13, 1e-12), (7.9e-14, 1e-13), (0.3, 0.5)],
)
def test_up_rounds_to_1_2_5_times_a_power_of_ten(x: float, rounded: float) -> None:
    assert measure.up(x) == pytest.approx(rounded)


def test_errors_are_absolute_below_the_split_and_relative_above() -> None:
    recorder = measure.Recorder()
    recorder.current = ("mine", "cpu", "float32", "test_x[mine-float32]")
    expected = np.array([0.5, -0.25, 4.0, -10.0])
    actual = expected + np.array([3e-7, -1e-7, 8e-7, 5e-6])
    recorder.add("layers", actual, expected, "R^1")
    entry = recorder.stats["mine|cpu|float32|layers"]
    assert entry["max_abs_error"] == pytest.approx(3e-7)  # only |e| < 1 count as absolute
    assert entry["max_rel_error"] == pytest.approx(5e-7)  # max(8e-7 / 4, 5e-6 / 10)
    assert entry["abs_worst"] == entry["rel_worst"] == "mine test_x[mine-float32]: R^1"
    assert (entry["comparisons"], entry["values"]) == (1, 4)
    with pytest.raises(AssertionError, match="non-finite"):
        recorder.add("layers", np.array([np.nan]), np.array([1.0]), "R^2")


def test_the_worst_adapter_sets_the_value_with_the_dtypes_margin() -> None:
    def stats(abs_error: float, rel_error: float, where: str) -> dict:
        return {**measure.EMPTY, "max_abs_error": abs_error, "max_rel_error": rel_error,
                "abs_worst": where, "rel_worst": where, "comparisons": 2, "values": 10}  # fmt: skip

    merged = measure.merge(
        {
            "numpy|cpu|float32|mix": stats(1e-7, 3e-7, "numpy"),
            "jax|cpu|float32|mix": stats(1.3e-6, 2e-7, "jax"),
            "cuda|cuda:0|float32|mix": stats(9e-6, 9e-6, "cuda"),
        }
    )
    cpu = merged[("cpu", "float32", "mix")]
    assert (cpu["max_abs_error"], cpu["abs_worst"], cpu["max_rel_error"], cpu["rel_worst"]) == (
        1.3e-6,
        "jax",
        3e-7,
        "numpy",
    )
    assert (cpu["comparisons"], cpu["values"]) == (4, 20)
    assert ("cuda", "float32", "mix") in merged  # a device is keyed by its family
    proposed = measure.proposal("float32", cpu)
    assert (proposed["atol"], proposed["rtol"]) == (2e-5, 5e-6)  # up(10 x 1.3e-6), up(10 x 3e-7)
    tiny = measure.proposal("float64", {**measure.EMPTY, "max_abs_error": 0.0, "max_rel_error": 1e-17})
    assert (tiny["atol"], tiny["rtol"]) == (5e-14, 5e-14)  # below eps counts as eps: up(100 x 2.2e-16)


def test_each_adapters_own_errors_are_kept_beside_the_worst() -> None:
    def stats(abs_error: float, rel_error: float) -> dict:
        return {**measure.EMPTY, "max_abs_error": abs_error, "max_rel_error": rel_error,
                "abs_worst": "x", "rel_worst": "x", "comparisons": 1, "values": 1}  # fmt: skip

    merged = measure.merge({"c|cpu|float64|loss": stats(1.23456e-16, 0.0), "numpy|cpu|float64|loss": stats(2e-16, 0.0)})
    recorded = measure.rounded(merged[("cpu", "float64", "loss")])
    assert recorded["by_adapter"] == {
        "c": {"max_abs_error": 1.23e-16, "max_rel_error": 0.0},
        "numpy": {"max_abs_error": 2e-16, "max_rel_error": 0.0},
    }
    assert recorded["max_abs_error"] == 2e-16


def test_a_minor_version_keeps_each_value_unless_a_measurement_breaks_the_rule() -> None:
    """§10: every value is at least 3 times every measured error; one closer is loosened (to the
    margin's value), none is tightened unless --reset (a MAJOR version)."""
    current = {"rtol": 5e-5, "atol": 1e-4, "measured": {}}
    measured = {**measure.EMPTY, "max_abs_error": 7e-6, "max_rel_error": 1.25e-5}
    kept, why = measure.kept_or_loosened("float32", current, measured, reset=False)
    assert (kept["atol"], kept["rtol"], why) == (1e-4, 5e-5, [])  # 1e-4 >= 3 x 7e-6, 5e-5 >= 3 x 1.25e-5
    closer = {**measured, "max_rel_error": 2e-5}  # 5e-5 < 3 x 2e-5
    loosened, why = measure.kept_or_loosened("float32", current, closer, reset=False)
    assert (loosened["atol"], loosened["rtol"]) == (1e-4, 2e-4)  # rtol: up(10 x 2e-5); atol kept
    assert why == ["rtol 5e-05 < 3 x 2e-05"]
    assert loosened["measured"]["max_rel_error"] == 2e-5
    tiny = {**measure.EMPTY, "max_abs_error": 1e-7, "max_rel_error": 1e-7}
    assert measure.kept_or_loosened("float32", current, tiny, reset=False)[0]["rtol"] == 5e-5  # never tightened
    reset, _ = measure.kept_or_loosened("float32", current, tiny, reset=True)
    assert (reset["atol"], reset["rtol"]) == (2e-6, 2e-6)  # up(10 x max(1e-7, eps))


def test_write_records_measurements_and_reports_what_it_loosened(tmp_path, monkeypatch) -> None:
    path = tmp_path / "tolerances.json"
    path.write_text(measure.TOLERANCES.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(measure, "TOLERANCES", path)
    before = json.loads(path.read_text(encoding="utf-8"))
    rtol = before["dtypes"]["float32"]["mix"]["rtol"]

    def stats(abs_error: float, rel_error: float) -> dict:
        return {**measure.EMPTY, "max_abs_error": abs_error, "max_rel_error": rel_error,
                "abs_worst": "w", "rel_worst": "w", "comparisons": 1, "values": 1}  # fmt: skip

    merged = measure.merge(
        {"jax|cpu|float32|mix": stats(1e-8, rtol / 2), "numpy|cpu|float32|layers": stats(1e-8, 1e-8)}
    )
    how = {**before["method"], "adapters": ["jax", "numpy"], "rule": 3.0}
    loosened = measure.write(merged, how, reset=False)
    after = json.loads(path.read_text(encoding="utf-8"))
    assert len(loosened) == 1 and loosened[0].startswith("cpu float32 mix: rtol")
    assert after["dtypes"]["float32"]["mix"]["rtol"] > rtol
    layers = after["dtypes"]["float32"]["layers"]
    assert (layers["atol"], layers["rtol"]) == (
        before["dtypes"]["float32"]["layers"]["atol"],
        before["dtypes"]["float32"]["layers"]["rtol"],
    )
    assert layers["measured"]["by_adapter"] == {"numpy": {"max_abs_error": 1e-8, "max_rel_error": 1e-8}}
    assert after["method"]["rule"] == 3.0
    schema = json.loads((measure.ROOT / "spec" / "schemas" / "tolerances.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(after, schema)
