"""§7 The linear probe."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from elmo_conformance import reference
from elmo_conformance.conformance.case import Case
from elmo_conformance.conformance.checks import assert_bitwise, fail
from elmo_conformance.conformance.data import probe_separable, widen
from elmo_conformance.conformance.diagnose import check_probe_weights
from elmo_conformance.conformance.strategies import probe_data

pytestmark = pytest.mark.components("probe")


def separable(case: Case) -> tuple[np.ndarray, np.ndarray, int, dict]:
    data = probe_separable()
    settings = {"l2": float(data["l2"]), "steps": int(data["steps"]), "lr": float(data["lr"])}
    return case.cast(data["features"]), data["labels"], int(data["n_classes"]), settings


@pytest.mark.spec("7.4", "7.5")
def test_probe_separates_separable_data(case: Case) -> None:
    """Accuracy 1 on separable clusters far from the origin; the folded weights work on raw features."""
    X, y, n_classes, settings = separable(case)
    W, b = case.fit_linear_probe(X, y, n_classes, **settings)
    raw = np.argmax(widen(X) @ widen(W) + widen(b), axis=1)
    if not np.all(raw == y):
        mu, sigma = reference.probe.standardize(widen(X))
        on_z = np.argmax((widen(X) - mu) / sigma @ widen(W) + widen(b), axis=1)
        hint = (
            "; they do separate the standardized features, so they were not folded back (§7.4)"
            if np.all(on_z == y)
            else ""
        )
        fail(("7.4",), f"argmax(X W + b) on raw features is right for {int(np.sum(raw == y))} of {len(y)} rows{hint}")
    accuracy = case.probe_accuracy(W, b, X, y)
    if accuracy != 1.0:
        fail(("7.5",), f"probe_accuracy = {accuracy!r} for weights that classify every row correctly")


@pytest.mark.spec("7.1", "7.2", "7.3", "7.4")
def test_probe_matches_golden_weights(case: Case) -> None:
    """(W, b) after the fixture's steps equal the oracle's (PyTorch float64, §12.3)."""
    X, y, n_classes, settings = separable(case)
    W, b = case.fit_linear_probe(X, y, n_classes, **settings)
    data = probe_separable()
    check_probe_weights(
        case, X, y, n_classes, settings, (W, b), (data["W"], data["b"]), "against the oracle", ("12.3",)
    )


@pytest.mark.spec("7.1")
def test_probe_gives_a_constant_column_no_weight(case: Case) -> None:
    """A constant column standardizes to exactly 0, so its row of W stays 0."""
    X, y, n_classes, settings = separable(case)
    constant = np.flatnonzero(np.all(X == X[0], axis=0))
    assert constant.size, "the probe fixture must hold a constant column (§12.3)"
    W, _ = case.fit_linear_probe(X, y, n_classes, **settings)
    if np.any(W[constant] != 0):
        fail(("7.1",), f"W rows {constant.tolist()} (constant columns) are {W[constant].tolist()}, expected exactly 0")
    # A column whose first row is its minimum, and whose first two rows are equal, is not constant:
    # its values are not all equal (§7.1 decides by equality of every row, not by comparing with the
    # first row's value, nor by looking at the first rows only).
    X = case.cast(np.array([[1.0, 1.0], [1.0, 2.0], [3.0, -1.0], [2.0, 0.5]]))
    labels = np.array([0, 1, 1, 0])
    got = case.fit_linear_probe(X, labels, 2, **settings)
    want = reference.fit_linear_probe(widen(X), labels, 2, **settings)
    context = (
        "for the columns (1, 1, 3, 2) and (1, 2, -1, 0.5): neither is constant, though no value of the first is "
        "below its first row's and its first two rows are equal; §7.1 decides by the equality of every row"
    )
    check_probe_weights(case, X, labels, 2, settings, got, want, context)
    # Three rows of 0.1: the computed mean is 0.10000000000000002 in float64 and the computed
    # standard deviation about 1.4e-17, not 0; the column is constant all the same (§7.1).
    X = case.cast(np.array([[0.1, 1.0], [0.1, 2.0], [0.1, -1.0]]))
    W, _ = case.fit_linear_probe(X, np.array([0, 1, 0]), 2, **settings)
    if np.any(W[0] != 0):
        fail(
            ("7.1",),
            f"W row 0, for a column of three 0.1s, is {W[0].tolist()}, expected exactly 0: a column whose values are "
            "all equal is constant (decided by equality), even where its computed mean is not exactly 0.1 and its "
            "computed standard deviation is not exactly 0",
        )


@pytest.mark.spec("7.2", "7.3")
def test_probe_softmax_is_shifted_row_by_row(case: Case) -> None:
    """At lr = 1e4 with l2 = 0 on separable data the logits grow to thousands, of opposite signs
    in different rows: softmax(Z V + a) row by row, each row shifted by its own maximum, stays
    finite (so do W, b and the accuracy); one shift for the whole array leaves some row with every
    exponential 0, and 0 / 0 is NaN."""
    X, y, n_classes, _ = separable(case)
    W, b = case.call("fit_linear_probe", ("7.2",), X, y, n_classes, l2=0.0, steps=20, lr=1e4)
    for name, value in (("W", W), ("b", b)):
        if not np.all(np.isfinite(value)):
            fail(
                ("7.2",),
                f"fit_linear_probe with lr = 1e4, l2 = 0 on separable data returned {name} with NaN or infinity: P = "
                "softmax(Z V + a) is row by row, each row shifted by its own maximum (one shift for the whole "
                "array, or none, overflows or divides 0 by 0 once the logits reach the thousands)",
            )
    case.fit_linear_probe(X, y, n_classes, l2=0.0, steps=20, lr=1e4)  # and its result checked as any other


@pytest.mark.spec("7.3", "7.4")
def test_probe_with_zero_steps_is_the_zero_start(case: Case) -> None:
    X, y, n_classes, _ = separable(case)
    W, b = case.fit_linear_probe(X, y, n_classes, steps=0)
    if np.any(W != 0) or np.any(b != 0):
        fail(("7.3",), "steps = 0 must return W = 0 and b = 0 (the start, folded back)")


@pytest.mark.spec("7.5")
def test_probe_accuracy_breaks_ties_to_the_lowest_index(case: Case) -> None:
    X = case.cast(np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5], [2.0, 2.0]]))
    labels = np.array([0, 1, 2, 0])
    W = case.cast(np.zeros((2, 3)))
    got = case.probe_accuracy(W, case.cast(np.array([1.0, 1.0, 0.0])), X, labels)
    if got != 0.5:
        fail(
            ("7.5",), f"with logits tied between classes 0 and 1, rows labelled 0 are right: expected 0.5, got {got!r}"
        )


@pytest.mark.spec("1.4", "7", "8")
def test_probe_is_deterministic_and_validates(case: Case) -> None:
    """Identical probes from identical data; bad shapes, labels and a single class raise ValueError."""
    X, y, n_classes, settings = separable(case)
    W1, b1 = case.fit_linear_probe(X, y, n_classes, **settings)
    W2, b2 = case.fit_linear_probe(X.copy(), y.copy(), n_classes, **settings)
    assert_bitwise(W2, W1, "W of a second fit on the same data", ("1.4", "7"))
    assert_bitwise(b2, b1, "b of a second fit on the same data", ("1.4", "7"))
    rejected = [
        ("features", "1-D features", (X[:, 0], y, n_classes)),
        ("labels", "labels one shorter than features", (X, y[:-1], n_classes)),
        ("labels", "a label equal to n_classes", (X, np.where(np.arange(len(y)) == 0, n_classes, y), n_classes)),
        ("labels", "a single class", (X, np.zeros_like(y), n_classes)),
        ("n_classes", "n_classes = 1", (X, np.zeros_like(y), 1)),
    ]
    for argument, why, args in rejected:
        case.rejects("fit_linear_probe", argument, why, ("7", "8"), *args, **settings)


@pytest.mark.spec("7.1", "7.2", "7.3", "7.4", "7.5")
@given(data=st.data())
def test_probe_matches_reference(case: Case, data: st.DataObject) -> None:
    """Differential: (W, b) equal the reference's on random small problems, and probe_accuracy on
    weights that may tie two classes equals the reference's."""
    p = probe_data(data)
    X = case.cast(p.features)
    settings: dict[str, Any] = {"l2": p.l2, "steps": p.steps, "lr": p.lr}
    W, b = case.fit_linear_probe(X, p.labels, p.n_classes, **settings)
    want = reference.fit_linear_probe(widen(X), p.labels, p.n_classes, **settings)
    context = f"for features {list(p.features.shape)}, {p.n_classes} classes, {settings}"
    check_probe_weights(case, X, p.labels, p.n_classes, settings, (W, b), want, context)
    # Whole-number features and weights: every logit is exact, so tied classes are tied (§7.5).
    X_round = case.cast(np.round(p.features))
    accuracy = case.probe_accuracy(case.cast(p.W), case.cast(p.b), X_round, p.labels)
    expected = reference.probe_accuracy(p.W, p.b, widen(X_round), p.labels)
    if accuracy != expected:
        tied = (
            "; classes 0 and the last tie on every row, so the lowest index, 0, is predicted"
            if np.array_equal(p.W[:, 0], p.W[:, -1]) and p.b[0] == p.b[-1]
            else ""
        )
        fail(("7.5",), f"probe_accuracy = {accuracy!r}, expected {expected!r} {context}{tied}")
