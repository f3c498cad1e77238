"""Tolerance margins (spec §10, conformance/margins.py): max |a - e| / (atol + rtol |e|),
computed right on hand-made examples, and recorded by assert_close whether it passes or fails."""

from __future__ import annotations

import math
import pickle
from collections.abc import Callable

import numpy as np
import pytest

from elmo_conformance.adapters.loading import LoadedAdapter
from elmo_conformance.conformance import margins
from elmo_conformance.conformance.case import Case
from elmo_conformance.conformance.checks import assert_close
from elmo_conformance.conformance.margins import MarginCollector, Tolerance, margin

Margin = Callable[[np.ndarray, np.ndarray, float, float], float]


def check_hand_examples(compute: Margin) -> None:
    """The margins of §10's rule worked out by hand; raises AssertionError when `compute` is wrong."""
    # |a - e| = (0, 0.1, 0.2); atol + rtol |e| = (0.2, 0.3, 1.1): ratios (0, 1/3, 2/11), max 1/3
    a, e = np.array([1.0, 2.1, 9.8]), np.array([1.0, 2.0, 10.0])
    assert math.isclose(compute(a, e, 0.1, 0.1), 1 / 3, rel_tol=1e-12)
    # the same errors at atol = 0: (0, 0.1 / 0.2, 0.2 / 1.0) = (0, 0.5, 0.2)
    assert math.isclose(compute(a, e, 0.1, 0.0), 0.5, rel_tol=1e-12)
    # a failing one: |a - e| = 3 against 1e-3 + 1e-3 * 1
    assert math.isclose(compute(np.array([4.0]), np.array([1.0]), 1e-3, 1e-3), 1500.0, rel_tol=1e-12)
    # all-zero differences, even where the bound is 0 (e = 0, atol = 0): margin 0
    assert compute(np.zeros(3), np.zeros(3), 0.1, 0.0) == 0.0
    assert compute(np.array([]), np.array([]), 0.1, 0.1) == 0.0
    # a NaN, or a difference where the bound is 0, is not finite
    assert compute(np.array([np.nan, 1.0]), np.array([1.0, 1.0]), 0.1, 0.1) == math.inf
    assert compute(np.array([1e-30]), np.array([0.0]), 0.1, 0.0) == math.inf


def relative_only(a: np.ndarray, e: np.ndarray, rtol: float, atol: float) -> float:
    """A plausible mistake: the largest error over the largest bound, not the largest ratio."""
    a, e = np.asarray(a, float), np.asarray(e, float)
    if a.size == 0:
        return 0.0
    return float(np.max(np.abs(a - e)) / (atol + rtol * np.max(np.abs(e))))


def test_the_hand_examples_catch_a_wrong_margin_then_pass_the_real_one() -> None:
    with pytest.raises(AssertionError):
        check_hand_examples(relative_only)
    check_hand_examples(margin)


def test_a_shape_mismatch_has_no_finite_margin() -> None:
    assert margin(np.zeros(3), np.zeros(4), 0.1, 0.1) == math.inf


def case(name: str = "mine", dtype: str = "float64", device: str = "cpu") -> Case:
    impl = LoadedAdapter(f"{name}.py", object(), name, frozenset({"float64", "float32"}), device)
    return Case(impl, np.dtype(dtype))


def test_case_tol_is_the_tolerance_dict_naming_its_quantity() -> None:
    tol = case("mine", "float32").tol("layers")
    assert isinstance(tol, Tolerance) and isinstance(tol, dict)
    assert set(tol) == {"rtol", "atol"} and tol == {"rtol": tol["rtol"], "atol": tol["atol"]}
    assert (tol.quantity, tol.adapter, tol.dtype, tol.device) == ("layers", "mine", "float32", "cpu")
    again = pickle.loads(pickle.dumps(tol))
    assert again == tol and again.quantity == "layers" and again.adapter == "mine"


@pytest.fixture
def collector() -> MarginCollector:
    collected = MarginCollector()
    previous = margins.active()
    margins.activate(collected)
    yield collected
    margins.activate(previous)


def test_assert_close_records_passing_and_failing_comparisons(collector: MarginCollector) -> None:
    tol = Tolerance({"rtol": 0.1, "atol": 0.1}, "mix", "mine", "float64")
    collector.current_test = "t.py::test_one[mine-float64]"
    assert_close(np.array([1.0, 2.1, 9.5]), np.array([1.0, 2.0, 10.0]), tol, "first", ("5.2",))
    collector.current_test = "t.py::test_two[mine-float64]"
    with pytest.raises(pytest.fail.Exception) as failed:
        assert_close(np.array([4.0, 1.0]), np.array([1.0, 1.0]), tol, "second", ("5.2",))
    # the failure message is the one assert_close always gave
    assert str(failed.value).endswith(
        "second: 1 of 2 values differ beyond rtol=0.1, atol=0.1; worst at [0]: got 4.0, expected 1.0 "
        "(max abs error 3, max rel error 3)"
    )
    assert_close(np.zeros(2), np.zeros(2), Tolerance({"rtol": 0.1, "atol": 0.1}, "layers", "mine", "float64"), "z", ())
    got = collector.as_json()
    mix = got["mine"]["float64"]["mix"]
    assert math.isclose(mix["max_margin"], 3 / 0.2) and mix["worst"] == "second"
    assert mix["worst_test"] == "t.py::test_two[mine-float64]"
    assert (mix["comparisons"], mix["values"], mix["failed"]) == (2, 5, 1)
    assert (mix["rtol"], mix["atol"], mix["device"]) == (0.1, 0.1, "cpu")
    assert got["mine"]["float64"]["layers"]["max_margin"] == 0.0


def test_a_comparison_with_no_finite_margin_is_written_as_null(collector: MarginCollector) -> None:
    tol = Tolerance({"rtol": 0.1, "atol": 0.1}, "loss", "mine", "float32")
    with pytest.raises(pytest.fail.Exception, match="expected shape"):
        assert_close(np.zeros(2), np.zeros(3), tol, "shapes", ("4",))
    entry = collector.as_json()["mine"]["float32"]["loss"]
    assert entry["max_margin"] is None and entry["failed"] == 1


def test_without_a_collector_or_a_tolerance_nothing_is_recorded(collector: MarginCollector) -> None:
    assert_close(np.ones(2), np.ones(2), {"rtol": 0.1, "atol": 0.1}, "a plain dict", ())
    assert collector.as_json() == {}
    margins.activate(None)
    tol = Tolerance({"rtol": 0.1, "atol": 0.1}, "mix", "mine", "float64")
    assert margins.record(np.ones(2), np.ones(2), tol, "nothing active") is None
