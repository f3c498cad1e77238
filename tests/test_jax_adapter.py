"""The JAX adapter beyond what the conformance suite checks: its boundary and its mutants.

The suite itself (`pytest conformance --impl jax`) checks the implementation; these tests check
what the suite cannot see: writable fresh outputs, x64, and mutants that stay apart from the clean
adapter inside one process (jit caches are per instance).
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

pytest.importorskip("jax", reason="jax is optional: pip install jax (nox -s conformance -- --impl jax does)")

import jax  # noqa: E402

from elmo_conformance.adapters.jax import MUTANTS, JaxAdapter, adapter  # noqa: E402
from elmo_conformance.conformance.data import random_bilm  # noqa: E402
from elmo_conformance.spec.catalog import mutant_catalog  # noqa: E402

VALIDATION_ONLY = ["x-integer-s-accepted", "x-lr-unchecked", "x-padded-ids-unchecked"]


def test_x64_is_on_and_dtypes_follow_the_inputs() -> None:
    assert jax.config.read("jax_enable_x64")
    params, ids, lengths = random_bilm(0, 5, 2, 1, [3, 2])
    for dtype in (np.float64, np.float32):
        layers = adapter.bilm_layers({k: v.astype(dtype) for k, v in params.items()}, ids, lengths)
        assert {layer.dtype for layer in layers} == {np.dtype(dtype)}


def test_outputs_are_fresh_writable_arrays() -> None:
    params, ids, lengths = random_bilm(1, 5, 2, 1, [3, 2])
    first = adapter.bilm_layers(params, ids, lengths)
    assert all(layer.flags.writeable for layer in first)
    first[1][...] = 7.0  # a caller that edits a result must not change the next call's
    assert not np.any(adapter.bilm_layers(params, ids, lengths)[1] == 7.0)


def test_every_catalog_mutant_is_declared_once() -> None:
    catalog = sorted(entry["id"] for entry in mutant_catalog())
    assert sorted(m for m in MUTANTS if not m.startswith("x-")) == catalog
    # The extras (§13): each stops rejecting one kind of bad input of §8, as numpy's and torch's do.
    assert sorted(m for m in MUTANTS if m.startswith("x-")) == VALIDATION_ONLY
    assert adapter.mutants is MUTANTS
    for mutant_id, factory in MUTANTS.items():
        assert issubclass(factory, JaxAdapter)
        assert factory.__doc__.startswith(f"{mutant_id} (§")
        # jit traces a method once per shape, so call coverage cannot tell which tests reach it.
        assert not hasattr(factory, "replaces")


def test_a_mutant_and_the_clean_adapter_do_not_share_compiled_code() -> None:
    params, ids, lengths = random_bilm(2, 6, 3, 2, [4, 3])
    clean = adapter.bilm_layers(params, ids, lengths)
    broken = MUTANTS["s03"]().bilm_layers(params, ids, lengths)  # same shapes: a shared cache would hide it
    assert np.array_equal(broken[1], clean[1])  # layer 1 reads e in both
    assert not np.allclose(broken[2][..., :3], clean[2][..., :3])  # f^2 reads f^1 + b^1 in s03
    again = adapter.bilm_layers(params, ids, lengths)
    assert all(np.array_equal(a, b) for a, b in zip(again, clean))


def test_compiled_programs_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every program holds memory mappings; a long session must not pile up thousands of them."""
    module = importlib.import_module("elmo_conformance.adapters.jax.adapter")  # the package's `adapter` is the instance
    monkeypatch.setattr(module, "MAX_PROGRAMS", 3)
    fresh = JaxAdapter()
    configs = [random_bilm(3, 5, 2, 1, [steps, 1]) for steps in (2, 9, 17, 33, 65)]  # five buckets of T
    first = [fresh.bilm_layers(*config) for config in configs]
    assert fresh._forward._cache_size() <= 3  # private, but the very count that matters
    again = [fresh.bilm_layers(*config) for config in configs]  # recompiled where dropped
    for a, b in zip(first, again):
        assert all(np.array_equal(x, y) for x, y in zip(a, b))


def test_bucket_sizes() -> None:
    module = importlib.import_module("elmo_conformance.adapters.jax.adapter")
    assert [module.bucket(n, 8) for n in (1, 7, 8, 9, 16, 17, 100)] == [8, 8, 8, 16, 16, 32, 128]


def test_one_compilation_serves_every_shape_in_a_bucket() -> None:
    """The suite's differential configurations (§14) differ in every size; padded to buckets, one
    program per function and dtype (and number of mixed layers, and C) serves them."""
    fresh = JaxAdapter()
    configs = [(2, 1, 1, [1], 1), (9, 5, 3, [6, 2, 3, 1], 6), (5, 3, 2, [2, 2], 4)]
    for seed, (vocab, d, n_layers, lengths, steps) in enumerate(configs):
        params, ids, given = random_bilm(seed, vocab, d, n_layers, lengths, steps)
        fresh.bilm_layers(params, ids, given)
        fresh.bilm_logits(params, ids, None)
        if max(lengths) >= 2:
            fresh.bilm_loss_grad(params, ids, given)
            fresh.bilm_loss(params, ids, given)
        fresh.bilm_layers_vjp(params, ids, given, [np.ones((len(lengths), steps, 2 * d))] * (n_layers + 1))
    rng = np.random.default_rng(0)
    for shape in [(), (4,), (2, 3, 4), (4, 4, 4)]:
        layers = [rng.standard_normal(shape) for _ in range(2)]
        fresh.scalar_mix(np.zeros(2), np.ones(1), layers)
        fresh.scalar_mix_vjp(np.zeros(2), np.ones(1), layers, rng.standard_normal(shape))
    for n, dims in [(2, 1), (24, 5), (7, 3)]:
        X, y = rng.standard_normal((n, dims)), np.arange(n) % 2
        W, b = fresh.fit_linear_probe(X, y, 2, steps=3)
        fresh.probe_accuracy(W, b, X, y)
    programs = [fresh._forward, fresh._loss, fresh._layers_vjp, fresh._mix, fresh._mix_vjp, fresh._fit, fresh._correct]
    assert [program._cache_size() for program in programs] == [1] * len(programs)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_padding_changes_no_result(dtype: type) -> None:
    """Padded and sliced back, every result is elmo.py's on the unpadded arrays, up to the order of
    a sum (§10's float64 tolerances are 5e-14 and more; float32's 2e-6 and more)."""
    elmo = importlib.import_module("elmo_conformance.adapters.jax.elmo")
    tol = {"rtol": 1e-13, "atol": 1e-13} if dtype == np.float64 else {"rtol": 1e-6, "atol": 1e-6}
    bilm, fresh = elmo.BiLM(), JaxAdapter()
    check_bilm_padding(bilm, fresh, 1, dtype, tol)  # padded to 3 layers: the logits must read R^1
    rng = np.random.default_rng(1)
    X = (rng.standard_normal((11, 3)) + np.array([0.0, 5.0, 0.0])).astype(dtype)
    X[:, 2] = 0.1  # a constant column among the padded zero ones
    y = rng.integers(0, 3, 11)
    y[:3] = [0, 1, 2]
    probe = elmo.LinearProbe()
    settings = (dtype(1e-3), 20, dtype(0.5))

    @jax.jit  # one compilation rather than one per operation
    def unpadded_fit(X: jax.Array, y: jax.Array) -> tuple:
        Z, mu, sigma = probe.standardize(X, jax.numpy.ones(len(X), bool))
        Y = jax.nn.one_hot(y, 3, dtype=dtype)
        V, a = jax.numpy.zeros((3, 3), dtype), jax.numpy.zeros(3, dtype)
        for _ in range(settings[1]):
            V, a = probe.step(V, a, Z, Y, settings[0], settings[2])
        return probe.fold_back(V, a, mu, sigma)

    want_W, want_b = unpadded_fit(X, y)
    W, b = fresh.fit_linear_probe(X, y, 3, l2=1e-3, steps=20, lr=0.5)
    np.testing.assert_allclose(W, np.asarray(want_W), **tol)
    np.testing.assert_allclose(b, np.asarray(want_b), **tol)
    assert fresh.probe_accuracy(W, b, X, y) == np.mean(np.argmax(X @ W + b, axis=1) == y)


def check_bilm_padding(bilm: object, fresh: JaxAdapter, n_layers: int, dtype: type, tol: dict) -> None:
    params, ids, lengths = random_bilm(5, 7, 3, n_layers, [5, 2, 4], 5)
    params = {name: value.astype(dtype) for name, value in params.items()}
    want = [np.asarray(r) for r in jax.jit(bilm.layers)(params, ids, lengths)]
    for got, expected in zip(fresh.bilm_layers(params, ids, lengths), want):
        np.testing.assert_allclose(got, expected, **tol)
        assert got.dtype == dtype and got.flags.c_contiguous and got.flags.writeable
    for got, expected in zip(fresh.bilm_logits(params, ids, lengths), jax.jit(bilm.logits)(params, ids, lengths)):
        np.testing.assert_allclose(got, np.asarray(expected), **tol)
    want_loss, want_grad = jax.jit(jax.value_and_grad(bilm.loss))(params, ids, lengths)
    np.testing.assert_allclose(fresh.bilm_loss(params, ids, lengths), float(want_loss), **tol)
    got_grad = fresh.bilm_loss_grad(params, ids, lengths)
    assert sorted(got_grad) == sorted(params)
    for name in params:
        assert got_grad[name].shape == params[name].shape
        np.testing.assert_allclose(got_grad[name], np.asarray(want_grad[name]), **tol, err_msg=name)
    g_layers = [np.random.default_rng(k).standard_normal(w.shape).astype(dtype) for k, w in enumerate(want)]
    want_vjp = jax.jit(lambda p, g: jax.vjp(lambda q: bilm.layers(q, ids, lengths), p)[1](g)[0])(params, g_layers)
    got_vjp = fresh.bilm_layers_vjp(params, ids, lengths, g_layers)
    for name in params:
        np.testing.assert_allclose(got_vjp[name], np.asarray(want_vjp[name]), **tol, err_msg=name)
