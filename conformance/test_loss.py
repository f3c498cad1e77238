"""§4 The biLM loss."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from elmo_conformance import reference
from elmo_conformance.conformance.case import Case
from elmo_conformance.conformance.checks import assert_close, fail
from elmo_conformance.conformance.data import random_bilm, widen
from elmo_conformance.conformance.strategies import bilm_config

pytestmark = pytest.mark.components("bilm")


def cross_entropy(logits: np.ndarray, target: int) -> float:
    z = logits - logits.max()
    return float(np.log(np.exp(z).sum()) - z[target])


def forward_mean(fwd: np.ndarray, ids: np.ndarray, lengths: np.ndarray, shift: int) -> float:
    """§4.1-§4.2 position by position: fwd at t (t <= ℓ-2) scored on x_{t+shift}, over all rows.

    shift = 1 is the spec; shift = 0 is the current-token pitfall, computed to name it in a hint.
    """
    return float(
        np.mean([cross_entropy(fwd[b, t], ids[b, t + shift]) for b, n in enumerate(lengths) for t in range(n - 1)])
    )


def backward_mean(bwd: np.ndarray, ids: np.ndarray, lengths: np.ndarray, shift: int) -> float:
    """bwd at t (1 <= t <= ℓ-1) scored on x_{t-shift}, over all rows."""
    return float(
        np.mean([cross_entropy(bwd[b, t], ids[b, t - shift]) for b, n in enumerate(lengths) for t in range(1, n)])
    )


@pytest.mark.spec("4.1", "4.2", "4.3")
def test_bilm_loss_targets(case: Case) -> None:
    """The loss recomputed from the adapter's own logits with explicit targets; length-1 rows only raise."""
    lengths_list = [6, 4, 2, 7, 1]
    params, ids, lengths = random_bilm(4, 9, 4, 2, lengths_list, scale=2.0)
    params = case.cast(params)
    fwd, bwd = (widen(x) for x in case.bilm_logits(params, ids, lengths))
    got = case.bilm_loss(params, ids, lengths)
    want = 0.5 * (forward_mean(fwd, ids, lengths, 1) + backward_mean(bwd, ids, lengths, 1))
    if not np.isclose(got, want, rtol=case.tol("loss")["rtol"], atol=case.tol("loss")["atol"]):
        hints = {
            "the forward direction scored on the current token": 0.5
            * (forward_mean(fwd, ids, lengths, 0) + backward_mean(bwd, ids, lengths, 1)),
            "the backward direction scored on the current token": 0.5
            * (forward_mean(fwd, ids, lengths, 1) + backward_mean(bwd, ids, lengths, 0)),
        }
        hint = [name for name, value in hints.items() if np.isclose(got, value, rtol=1e-5)]
        fail(
            ("4.1", "4.2"),
            f"bilm_loss = {got!r}, but the mean CE of fwd at t against x_(t+1) (t <= ℓ-2) and of bwd at t "
            f"against x_(t-1) (t >= 1), averaged, is {want!r} (lengths {lengths_list})"
            + (f"; the value matches {hint[0]}" if hint else ""),
        )

    functions = ["bilm_loss", "bilm_loss_grad"] if "grad" in case.impl.capabilities else ["bilm_loss"]
    ones = np.ones(len(lengths), dtype=np.int64)
    for function in functions:
        case.rejects(function, "lengths", "every length 1 (no targets)", ("4.3",), params, ids, ones)
        case.rejects(function, "ids", "T = 1 and no lengths (no targets)", ("4.3",), params, ids[:, :1], None)


@pytest.mark.spec("4.1", "4.2", "4.3")
@given(data=st.data())
def test_loss_matches_reference(case: Case, data: st.DataObject) -> None:
    """Differential: the adapter's loss equals the reference's on random configurations."""
    # Logits in the thousands overflow exp unless the log-sum-exp is shifted (§4.2). Only in float64: in
    # float32 such logits carry absolute rounding errors beyond the loss tolerance of §10.
    config = bilm_config(data, min_length=2, logit_scales=(1.0, 5000.0) if case.dtype == np.float64 else (1.0,))
    params, ids, lengths = config.build()
    params = case.cast(params)
    want = reference.bilm_loss(widen(params), ids, lengths)
    assert_close(
        np.array(case.bilm_loss(params, ids, lengths)),
        np.array(want),
        case.tol("loss"),
        f"bilm_loss for {config}",
        ("4.2",),
    )
