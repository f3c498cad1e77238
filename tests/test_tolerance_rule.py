"""The rule of spec §10: every tolerance is at least 3 times the worst error measured on every
built-in implementation (numpy, torch, jax, c).

spec/tolerances.json records, beside each value, the measurements scripts/measure_tolerances.py
made: the worst absolute error (where |expected| < split) and relative error (where |expected| >=
split) over the adapters, and each adapter's own under `by_adapter`. A measurement closer than 3
times is a reason to loosen the value in a MINOR version of the spec; a tightening waits for a
MAJOR one. These tests read the recorded measurements only; they measure nothing.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator

import pytest

from elmo_conformance.spec.catalog import SPEC_DIR

RULE = 3.0  # §10
BUILTINS = {"numpy", "torch", "jax", "c"}  # §10: the built-in implementations the rule covers


def tolerance_table() -> dict:
    return json.loads((SPEC_DIR / "tolerances.json").read_text(encoding="utf-8"))


def entries(data: dict) -> Iterator[tuple[str, dict]]:
    """(where, entry) for every tolerance: each dtype's CPU values and each device's overrides."""
    for dtype, quantities in data["dtypes"].items():
        for quantity, entry in quantities.items():
            yield f"{dtype} {quantity}", entry
    for device, dtypes in data.get("devices", {}).items():
        for dtype, quantities in dtypes.items():
            for quantity, entry in quantities.items():
                yield f"{device} {dtype} {quantity}", entry


def violations(data: dict) -> list[str]:
    """Every tolerance below RULE times a recorded measurement: the worst one, and each adapter's."""
    found = []
    for where, entry in entries(data):
        measured = entry["measured"]
        for who, errors in [("worst", measured), *measured.get("by_adapter", {}).items()]:
            for tol, error in (("atol", "max_abs_error"), ("rtol", "max_rel_error")):
                if entry[tol] < RULE * errors[error]:
                    found.append(f"{where}: {tol} {entry[tol]:g} < {RULE:g} x {errors[error]:g} ({error}, {who})")
    return found


def test_every_tolerance_is_at_least_three_times_every_measured_error() -> None:
    """§10: a tolerance closer than 3 times to an error measured on a built-in implementation."""
    assert violations(tolerance_table()) == []


def test_every_builtin_implementation_was_measured() -> None:
    """§10: the rule covers numpy, torch, jax and c, so each one's errors are recorded for every
    quantity of the CPU values, and the worst recorded is the worst over them."""
    data = tolerance_table()
    assert BUILTINS <= set(data["method"]["adapters"])
    assert data["method"]["rule"] == RULE
    for dtype, quantities in data["dtypes"].items():
        for quantity, entry in quantities.items():
            measured = entry["measured"]
            assert BUILTINS <= set(measured["by_adapter"]), (dtype, quantity)
            for errors in measured["by_adapter"].values():
                assert errors["max_abs_error"] <= measured["max_abs_error"], (dtype, quantity)
                assert errors["max_rel_error"] <= measured["max_rel_error"], (dtype, quantity)


@pytest.mark.parametrize(
    "dtype, quantity, error, who",
    [
        ("float32", "probe_weights", "max_rel_error", None),  # the worst over the adapters
        ("float64", "layers_vjp", "max_abs_error", "numpy"),  # one adapter's own
    ],
)
def test_a_tolerance_below_three_times_a_measurement_is_found(
    dtype: str, quantity: str, error: str, who: str | None
) -> None:
    """A modified copy of the table whose measurement comes closer than 3 times to its tolerance:
    the check above must fail on it (and must not at 4 times)."""
    data = copy.deepcopy(tolerance_table())
    entry = data["dtypes"][dtype][quantity]
    tol = "atol" if error == "max_abs_error" else "rtol"
    measured = entry["measured"]
    if who is not None:
        measured = measured.setdefault("by_adapter", {}).setdefault(who, {"max_abs_error": 0.0, "max_rel_error": 0.0})
    measured[error] = entry[tol] / 4.0
    assert violations(data) == []
    measured[error] = entry[tol] / 2.0
    found = violations(data)
    assert len(found) == 1 and found[0].startswith(f"{dtype} {quantity}: {tol} "), found
    assert found[0].endswith(f"({error}, {who or 'worst'})")
