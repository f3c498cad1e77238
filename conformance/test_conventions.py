"""§1 Conventions: the same call twice gives the same bits (§1.4).

Dtypes (§1.2) and unmodified inputs (§1.4) are checked on every call the suite makes (case.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from elmo_conformance.conformance.case import Case
from elmo_conformance.conformance.checks import assert_bitwise, fail
from elmo_conformance.conformance.data import random_bilm


@pytest.mark.spec("1.4")
def test_calls_are_deterministic(case: Case) -> None:
    params, ids, lengths = random_bilm(12, 7, 3, 2, [5, 2, 4])
    params = case.cast(params)
    first, second = case.bilm_layers(params, ids, lengths), case.bilm_layers(params, ids, lengths)
    for k, (a, b) in enumerate(zip(first, second)):
        assert_bitwise(b, a, f"R^{k} of a second identical call", ("1.4",))
    for name, a, b in zip(
        ("fwd", "bwd"), case.bilm_logits(params, ids, lengths), case.bilm_logits(params, ids, lengths)
    ):
        assert_bitwise(b, a, f"{name} logits of a second identical call", ("1.4",))
    if case.bilm_loss(params, ids, lengths) != case.bilm_loss(params, ids, lengths):
        fail(("1.4",), "bilm_loss differs between two identical calls")
    if "grad" in case.impl.capabilities:
        first_grad, second_grad = case.bilm_loss_grad(params, ids, lengths), case.bilm_loss_grad(params, ids, lengths)
        for name in params:
            assert_bitwise(
                second_grad[name], first_grad[name], f"bilm_loss_grad[{name!r}] of a second identical call", ("1.4",)
            )
    s, gamma = case.cast(np.array([0.3, -0.2, 1.0])), case.cast(np.array([0.7]))
    layers = case.bilm_layers(params, ids, lengths)
    assert_bitwise(
        case.scalar_mix(s, gamma, layers),
        case.scalar_mix(s, gamma, layers),
        "scalar_mix of a second identical call",
        ("1.4",),
    )
