"""scripts/measure_tolerances.py: how measured errors become the tolerances of spec §10."""

from __future__ import annotations

import importlib.util
from pathlib import Path

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
