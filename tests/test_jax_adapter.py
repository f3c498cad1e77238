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
from elmo_conformance.conformance.spec import mutant_catalog  # noqa: E402

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
    configs = [random_bilm(3, 5, 2, 1, [steps, 1]) for steps in (2, 3, 4, 5, 6)]
    first = [fresh.bilm_layers(*config) for config in configs]
    assert fresh._layers._cache_size() <= 3  # private, but the very count that matters
    again = [fresh.bilm_layers(*config) for config in configs]  # recompiled where dropped
    for a, b in zip(first, again):
        assert all(np.array_equal(x, y) for x, y in zip(a, b))
