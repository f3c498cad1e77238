"""Assertions whose failure messages say what the spec expected, where and by how much."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NoReturn

import numpy as np
import pytest

from elmo_conformance.conformance import margins
from elmo_conformance.spec.catalog import describe


def fail(sections: Sequence[str], message: str) -> NoReturn:
    """Fail the test with a message that names the spec sections first."""
    __tracebackhide__ = True
    pytest.fail(f"{describe(tuple(sections))}\n{message}", pytrace=False)


def _where(index: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(i) for i in index) + "]"


def assert_close(
    actual: np.ndarray, expected: np.ndarray, tol: dict[str, float], what: str, sections: Sequence[str]
) -> None:
    """|actual - expected| <= atol + rtol |expected| elementwise (§10), with the worst element shown.

    When `tol` is a `margins.Tolerance` (what `Case.tol` returns), the comparison's margin, max
    |a - e| / (atol + rtol |e|), is recorded for the report, whether it passes or fails.
    """
    __tracebackhide__ = True
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    if actual.shape != expected.shape:
        margins.record(actual, expected, tol, what, failed=True)
        fail(sections, f"{what}: expected shape {list(expected.shape)}, got {list(actual.shape)}")
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    with np.errstate(all="ignore"):  # inf - inf or an overflow is a difference to report, not a warning
        excess = np.abs(a - e) - (tol["atol"] + tol["rtol"] * np.abs(e))
    bad = ~(excess <= 0)  # NaN counts as bad
    margins.record(a, e, tol, what, failed=bool(bad.any()))
    if not bad.any():
        return
    worst = np.unravel_index(np.nanargmax(np.where(bad, np.nan_to_num(excess, nan=np.inf), -np.inf)), a.shape)
    with np.errstate(all="ignore"):
        abs_err = np.abs(a - e)
        rel_err = abs_err[e != 0] / np.abs(e[e != 0])  # where the expected value is 0 it has no relative error
    rel = f"max rel error {_largest(rel_err):.3g}" if rel_err.size else "no rel error: every expected value is 0"
    fail(
        sections,
        f"{what}: {int(bad.sum())} of {a.size} values differ beyond rtol={tol['rtol']:g}, atol={tol['atol']:g}; "
        f"worst at {_where(tuple(int(i) for i in worst))}: got {float(a[worst])!r}, expected {float(e[worst])!r} "
        f"(max abs error {_largest(abs_err):.3g}, {rel})",
    )


def _largest(x: np.ndarray) -> float:
    """The largest value that is not NaN (NaN when there is none), without NumPy's warning."""
    x = x[~np.isnan(x)]
    return float(x.max()) if x.size else float("nan")


def assert_bitwise(actual: np.ndarray, expected: np.ndarray, what: str, sections: Sequence[str]) -> None:
    """Exact equality, the rule for §1.4, §3.2 and §3.3 (no tolerance)."""
    __tracebackhide__ = True
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        fail(
            sections, f"{what}: expected {expected.dtype}{list(expected.shape)}, got {actual.dtype}{list(actual.shape)}"
        )
    differs = ~((actual == expected) | (np.isnan(actual) & np.isnan(expected)))
    if differs.any():
        first = tuple(int(i) for i in np.argwhere(differs)[0])
        fail(
            sections,
            f"{what}: {int(differs.sum())} values are not bitwise equal; first at {_where(first)}: "
            f"got {actual[first].item()!r}, expected {expected[first].item()!r}",
        )
