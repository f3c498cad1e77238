"""§5 ScalarMix (and its gradient, §6.3)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from elmo_conformance import reference
from elmo_conformance.conformance.case import Case
from elmo_conformance.conformance.checks import assert_close, fail
from elmo_conformance.conformance.data import scalar_mix_examples, widen
from elmo_conformance.conformance.diagnose import close, mix_hint, mix_sections
from elmo_conformance.conformance.strategies import mix_inputs

pytestmark = pytest.mark.components("scalar_mix")


def measured_weights(case: Case, s: np.ndarray) -> np.ndarray:
    """softmax(s) as the adapter computes it: the mix of unit vectors with γ = 1 (§5.2)."""
    unit_layers = [case.cast(row) for row in np.eye(len(s))]
    return case.scalar_mix(case.cast(s), case.cast(np.ones(1)), unit_layers)


@pytest.mark.spec("5.1", "5.2")
def test_hand_example_scalar_mix(case: Case) -> None:
    """The worked example of §5.2 and the three-layer example of §12.1, from the fixture."""
    for name, example in scalar_mix_examples().items():
        s = np.array(example["s"], dtype=np.float64)
        gamma = np.atleast_1d(np.array(example["gamma"], dtype=np.float64))
        layers = [np.array(layer, dtype=np.float64) for layer in example["layers"]]
        out = case.scalar_mix(case.cast(s), case.cast(gamma), case.cast(layers))
        expected = np.array(example["mix"])
        hint = "" if close(out, expected, case.tol("mix")) else mix_hint(s, gamma, layers, out)
        if "layer-normalized" in hint:  # before the weights: unit vectors normalized are no longer unit vectors
            fail(mix_sections(hint), f"{name}: got {out.tolist()}, expected {expected.tolist()}: {hint}")
        weights = measured_weights(case, s)
        if np.allclose(weights, s, atol=1e-3) and not np.allclose(s, example["weights"], atol=1e-3):
            fail(
                ("5.1",),
                f"{name}: the weights equal the raw s {s.tolist()}; expected softmax(s) = {example['weights']}",
            )
        assert_close(weights, np.array(example["weights"]), case.tol("mix"), f"{name}: softmax(s)", ("5.1",))

        if "raw_scalar_mix" in example and np.allclose(out, example["raw_scalar_mix"], rtol=1e-3):
            fail(
                ("5.1",), f"{name}: got {out.tolist()}, the mix with the raw s as weights; expected {expected.tolist()}"
            )
        if gamma[0] != 1 and np.allclose(out, expected / gamma[0], rtol=1e-4):
            fail(("5.2",), f"{name}: got {out.tolist()}, the mix without γ = {gamma[0]}; expected {expected.tolist()}")
        what = f"{name}: γ Σ w_k R^k" + (f" ({hint})" if hint else "")
        assert_close(out, expected, case.tol("mix"), what, mix_sections(hint))


def central_difference(f, x: np.ndarray, index: tuple[int, ...], eps: float = 1e-6) -> float:
    bumped = x.copy()
    bumped[index] += eps
    up = f(bumped)
    bumped[index] -= 2 * eps
    return (up - f(bumped)) / (2 * eps)


@pytest.mark.spec("5.3", "6.3")
@pytest.mark.dtypes("float64")
@pytest.mark.requires("grad")
def test_scalar_mix_starts_uniform_and_trains(case: Case) -> None:
    """The plain average at s = 0, γ = 1; gradients by central differences; a mix that learns."""
    rng = np.random.default_rng(5)
    layers = [rng.standard_normal((2, 3, 4)) for _ in range(3)]
    s0, gamma0 = np.zeros(3), np.ones(1)
    assert_close(
        case.scalar_mix(s0, gamma0, layers), np.mean(layers, axis=0), case.tol("mix"), "mix at s = 0, γ = 1", ("5.3",)
    )

    s, gamma, g_out = rng.standard_normal(3), np.array([1.3]), rng.standard_normal((2, 3, 4))

    def objective(s_: np.ndarray, gamma_: np.ndarray, layers_: list[np.ndarray]) -> float:
        return float(np.sum(g_out * case.scalar_mix(s_, gamma_, layers_)))

    g_s, g_gamma, g_layers = case.scalar_mix_vjp(s, gamma, layers, g_out)
    tol = case.tol("finite_difference")
    fd_s = [central_difference(lambda x: objective(x, gamma, layers), s, (k,)) for k in range(3)]
    assert_close(g_s, np.array(fd_s), tol, "g_s against central differences", ("6.3",))
    fd_gamma = central_difference(lambda x: objective(s, x, layers), gamma, (0,))
    assert_close(g_gamma, np.array([fd_gamma]), tol, "g_gamma against central differences", ("6.3",))
    for k in range(3):

        def with_layer(x: np.ndarray, k: int = k) -> float:
            return objective(s, gamma, [x if j == k else layer for j, layer in enumerate(layers)])

        fd = np.array([central_difference(with_layer, layers[k], i) for i in np.ndindex(layers[k].shape)])
        assert_close(g_layers[k].ravel(), fd, tol, f"g_layers[{k}] against central differences", ("6.3",))

    # Learn (s, γ) towards a target mix by gradient descent on 0.5 ‖mix − target‖² (§5.3: trained with the task).
    target = reference.scalar_mix(np.array([1.0, -1.0, 0.5]), np.array([1.7]), layers)
    s_t, gamma_t = s0.copy(), gamma0.copy()
    start = 0.5 * np.sum((case.scalar_mix(s_t, gamma_t, layers) - target) ** 2)
    for _ in range(150):
        residual = case.scalar_mix(s_t, gamma_t, layers) - target
        g_s, g_gamma, _ = case.scalar_mix_vjp(s_t, gamma_t, layers, residual)
        s_t, gamma_t = s_t - 0.05 * g_s, gamma_t - 0.05 * g_gamma
    end = 0.5 * np.sum((case.scalar_mix(s_t, gamma_t, layers) - target) ** 2)
    if not end < 0.01 * start:
        fail(("5.3", "6.3"), f"150 gradient steps on (s, γ) took the squared error from {start:.4g} only to {end:.4g}")


@pytest.mark.spec("5.4")
def test_scalar_mix_is_stable_for_large_s(case: Case) -> None:
    """A shifted softmax keeps the weights finite for any finite s. The maximum is put first, last
    and in the middle, so that a shift by any one fixed entry (s[0], say) instead of max(s) leaves
    an exp(1000) or exp(2000) that overflows for one of them."""
    values = (2.0, -1.0, 5.0)
    layers = case.cast([np.full(3, value) for value in values])
    gamma = case.cast(np.array([1.5]))
    for s, largest in (((1000.0, 0.0, -1000.0), 0), ((-1000.0, 0.0, 1000.0), 2), ((0.0, 1000.0, -1000.0), 1)):
        shown = tuple(int(x) for x in s)
        raw = case.call("scalar_mix", ("5.4",), case.cast(np.array(s)), gamma, layers)
        if isinstance(raw, np.ndarray) and raw.dtype.kind == "f" and not np.all(np.isfinite(raw)):
            fail(
                ("5.4", "5.1"),
                f"mix at s = {shown} is {raw.tolist()}, not finite: softmax(s) must subtract max(s) before exp "
                "(§5.1); a shift by s[0] or another fixed entry, or none, leaves an exp(1000) or exp(2000), which "
                "overflows",
            )
        out = case.scalar_mix(case.cast(np.array(s)), gamma, layers)
        what = f"mix at s = {shown} (w = the one-hot of layer {largest})"
        assert_close(out, 1.5 * np.full(3, values[largest]), case.tol("mix"), what, ("5.4",))
    out = case.scalar_mix(case.cast(np.array([-1000.0, -1000.0, -1000.0])), gamma, layers)
    assert_close(out, 1.5 * np.mean(values) * np.ones(3), case.tol("mix"), "mix at s = (-1000, -1000, -1000)", ("5.4",))


@pytest.mark.spec("5.2", "6.3")
def test_scalar_mix_over_any_layer_shape(case: Case) -> None:
    """The mix is elementwise (§5.2): 0-d layers (one number each) and 1-d layers (one token's
    vector) mix like any other, and the result has the shape of one layer, a 0-d array included."""
    s, gamma = np.array([0.0, np.log(3.0)]), np.array([2.0])
    weights = np.array([0.25, 0.75])  # softmax(0, ln 3), the worked example of §5.2
    for layers in ([np.array(1.0), np.array(5.0)], [np.array([1.0, 2.0]), np.array([5.0, 6.0])]):
        shape = list(layers[0].shape)
        expected = 2.0 * (weights[0] * layers[0] + weights[1] * layers[1])
        out = case.scalar_mix(case.cast(s), case.cast(gamma), case.cast(layers))
        assert_close(out, expected, case.tol("mix"), f"γ Σ w_k R^k over layers of shape {shape}", ("5.2",))
        if "grad" not in case.impl.capabilities:
            continue
        g_out = np.full(layers[0].shape, 0.5)
        e_s, e_gamma, e_layers = reference.scalar_mix_vjp(s, gamma, layers, g_out)
        g_s, g_gamma, g_layers = case.scalar_mix_vjp(
            case.cast(s), case.cast(gamma), case.cast(layers), case.cast(g_out)
        )
        assert_close(g_s, e_s, case.tol("mix_vjp"), f"g_s over layers of shape {shape}", ("6.3",))
        assert_close(g_gamma, e_gamma, case.tol("mix_vjp"), f"g_gamma over layers of shape {shape}", ("6.3",))
        for k, (got, want) in enumerate(zip(g_layers, e_layers)):
            assert_close(got, want, case.tol("mix_vjp"), f"g_layers[{k}] over layers of shape {shape}", ("6.3",))


@pytest.mark.spec("5.1", "5.2")
@given(data=st.data())
def test_scalar_mix_matches_reference(case: Case, data: st.DataObject) -> None:
    """Differential: the adapter's mix equals the reference's on random inputs."""
    s, gamma, layers, _ = (case.cast(x) for x in mix_inputs(data))
    expected = reference.scalar_mix(widen(s), widen(gamma), widen(layers))
    out = case.scalar_mix(s, gamma, layers)
    hint = "" if close(out, expected, case.tol("mix")) else mix_hint(s, gamma, layers, out)
    what = (
        f"scalar_mix for s = {s.tolist()}, γ = {gamma.tolist()}, {len(layers)} layers of shape {list(layers[0].shape)}"
    )
    assert_close(out, expected, case.tol("mix"), what + (f" ({hint})" if hint else ""), mix_sections(hint))


@pytest.mark.spec("6.3")
@pytest.mark.requires("grad")
@given(data=st.data())
def test_scalar_mix_vjp_matches_reference(case: Case, data: st.DataObject) -> None:
    """Differential: (g_s, g_gamma, g_layers) equal the closed form of §6.3."""
    s, gamma, layers, g_out = (case.cast(x) for x in mix_inputs(data))
    e_s, e_gamma, e_layers = reference.scalar_mix_vjp(widen(s), widen(gamma), widen(layers), widen(g_out))
    g_s, g_gamma, g_layers = case.scalar_mix_vjp(s, gamma, layers, g_out)
    tol = case.tol("mix_vjp")
    where = f"for s = {s.tolist()}, γ = {gamma.tolist()}, {len(layers)} layers of shape {list(layers[0].shape)}"
    assert_close(g_s, e_s, tol, f"g_s {where}", ("6.3",))
    assert_close(g_gamma, e_gamma, tol, f"g_gamma {where}", ("6.3",))
    for k, (got, want) in enumerate(zip(g_layers, e_layers)):
        assert_close(got, want, tol, f"g_layers[{k}] {where}", ("6.3",))
