"""§6 Gradients of the biLM (§6.3, ScalarMix's, is checked in test_scalar_mix.py)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from elmo_conformance import reference
from elmo_conformance.conformance.case import Case
from elmo_conformance.conformance.checks import assert_close, fail
from elmo_conformance.conformance.data import random_bilm, real_mask, widen
from elmo_conformance.conformance.strategies import bilm_config

pytestmark = [pytest.mark.requires("grad"), pytest.mark.components("bilm")]


def sampled_indices(shape: tuple[int, ...], rng: np.random.Generator, count: int = 4) -> list[tuple[int, ...]]:
    """A few coordinates of an array, always including the first and the last."""
    size = int(np.prod(shape))
    flat = {0, size - 1, *rng.choice(size, size=min(count, size), replace=False).tolist()}
    return [tuple(int(i) for i in np.unravel_index(k, shape)) for k in sorted(flat)]


def check_against_central_differences(
    case: Case, objective: Callable[[dict], float], params: dict, grads: dict, what: str, section: str
) -> None:
    rng = np.random.default_rng(0)
    eps = 1e-6
    for name, value in params.items():
        indices = sampled_indices(value.shape, rng)
        estimates = []
        for index in indices:
            bumped = {**params, name: value.copy()}
            bumped[name][index] += eps
            up = objective(bumped)
            bumped[name][index] -= 2 * eps
            estimates.append((up - objective(bumped)) / (2 * eps))
        got = np.array([grads[name][index] for index in indices])
        assert_close(
            got, np.array(estimates), case.tol("finite_difference"), f"{what}[{name!r}] at {indices}", (section,)
        )


@pytest.mark.spec("6.1")
@pytest.mark.dtypes("float64")
def test_loss_grad_against_central_differences(case: Case) -> None:
    params, ids, lengths = random_bilm(6, 6, 3, 2, [5, 3, 1, 5])
    grads = case.bilm_loss_grad(params, ids, lengths)
    check_against_central_differences(
        case, lambda p: case.bilm_loss(p, ids, lengths), params, grads, "bilm_loss_grad", "6.1"
    )


@pytest.mark.spec("6.2")
@pytest.mark.dtypes("float64")
def test_layers_vjp_against_central_differences(case: Case) -> None:
    params, ids, lengths = random_bilm(7, 6, 3, 2, [5, 3, 1, 5])
    rng = np.random.default_rng(7)
    g_layers = [rng.standard_normal((*ids.shape, 6)) for _ in range(3)]

    def objective(p: dict) -> float:
        return float(sum(np.sum(g * layer) for g, layer in zip(g_layers, case.bilm_layers(p, ids, lengths))))

    grads = case.bilm_layers_vjp(params, ids, lengths, g_layers)
    check_against_central_differences(case, objective, params, grads, "bilm_layers_vjp", "6.2")


@pytest.mark.spec("6.2")
def test_layers_vjp_ignores_padding_and_output_layer(case: Case) -> None:
    """g_layers at padded positions changes nothing; out.weight and out.bias get zeros."""
    params, ids, lengths = random_bilm(8, 6, 3, 2, [5, 3, 1, 5])
    params = case.cast(params)
    rng = np.random.default_rng(8)
    g_layers = case.cast([rng.standard_normal((*ids.shape, 6)) for _ in range(3)])
    padded = ~real_mask(lengths, ids.shape[1])[:, :, None]
    noisy = [np.where(padded, case.cast(100.0 * rng.standard_normal(g.shape)), g) for g in g_layers]
    clean = case.bilm_layers_vjp(params, ids, lengths, g_layers)
    for name, value in case.bilm_layers_vjp(params, ids, lengths, noisy).items():
        assert_close(
            value, clean[name], case.tol("layers_vjp"), f"gradient of {name!r} with padded g_layers changed", ("6.2",)
        )
    for name in ("out.weight", "out.bias"):
        if np.any(clean[name] != 0):
            fail(("6.2",), f"bilm_layers_vjp[{name!r}] must be zeros (the output layer does not reach R^k)")


@pytest.mark.spec("6.1", "6.2")
@given(data=st.data())
def test_gradients_match_reference(case: Case, data: st.DataObject) -> None:
    """Differential: both gradients equal the reference's on random configurations."""
    config = bilm_config(data, min_length=2)
    params, ids, lengths = config.build()
    params = case.cast(params)
    rng = np.random.default_rng(config.seed)
    g_layers = case.cast([rng.standard_normal((*ids.shape, 2 * config.d)) for _ in range(config.n_layers + 1)])
    want_loss = reference.bilm_loss_grad(widen(params), ids, lengths)
    want_vjp = reference.bilm_layers_vjp(widen(params), ids, lengths, widen(g_layers))
    got_loss = case.bilm_loss_grad(params, ids, lengths)
    got_vjp = case.bilm_layers_vjp(params, ids, lengths, g_layers)
    for name in params:
        assert_close(
            got_loss[name], want_loss[name], case.tol("loss_grad"), f"bilm_loss_grad[{name!r}] for {config}", ("6.1",)
        )
        assert_close(
            got_vjp[name], want_vjp[name], case.tol("layers_vjp"), f"bilm_layers_vjp[{name!r}] for {config}", ("6.2",)
        )
