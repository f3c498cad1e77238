"""The built-in adapters' mutants (spec §13): each catalog id declared, each a real, confined change
of the output the catalog names, and the harness's `--mutant` option that runs one."""

from __future__ import annotations

import importlib
import subprocess
from pathlib import Path

import numpy as np
import pytest

import elmo_conformance
import elmo_conformance.reference.bilm  # noqa: F401  (reference.bilm below)
from elmo_conformance import reference
from elmo_conformance.adapters.declared import declared_mutants, describe
from elmo_conformance.adapters.loading import AdapterLoadError, LoadedAdapter, load_adapter, load_mutant
from elmo_conformance.mutation.equivalence import Raised, changed_output, first_difference
from elmo_conformance.spec.catalog import mutant_catalog
from tests.suite_runs import run_args_here

ROOT = Path(__file__).resolve().parent.parent
CATALOG = {entry["id"]: entry for entry in mutant_catalog()}
BUILTINS = [
    "numpy",
    pytest.param(
        "torch", marks=pytest.mark.skipif(not importlib.util.find_spec("torch"), reason="torch is not installed")
    ),
]
# The extra mutants each built-in Python adapter declares: each stops rejecting one kind of bad input (§8).
VALIDATION_ONLY = ["x-integer-s-accepted", "x-lr-unchecked", "x-padded-ids-unchecked"]
# The first protocol call of the equivalence pre-check that each catalog component changes.
FIRST_CHANGED = {
    "scalar_mix": "scalar_mix()",
    "bilm": "bilm_layers()",
    "loss": "bilm_loss()",
    "probe": "fit_linear_probe()",
}


@pytest.mark.parametrize("impl", BUILTINS)
def test_builtin_adapters_declare_every_catalog_mutant_next_to_themselves(impl: str) -> None:
    loaded = load_adapter(impl)
    mutants = declared_mutants(loaded.adapter)
    assert sorted(set(mutants) - set(CATALOG)) == VALIDATION_ONLY, "the catalog, and the validation-only extras"
    for mutant_id, factory in mutants.items():
        info = describe(mutant_id, factory)
        assert info.file == str(ROOT / "adapters" / impl / "mutants.py"), f"{mutant_id} lives in {info.file}"
        if mutant_id in CATALOG:
            assert info.title.startswith(f"{mutant_id} (§{CATALOG[mutant_id]['section']})"), info.title
        else:  # the one-line `description` (§11), naming the row of §8 it stops checking
            assert info.title == factory.description and info.title.startswith("V"), info.title
        assert info.covers, f"{mutant_id} does not say which clean code it replaces"
        assert 1 <= info.start_line < info.end_line
        mutant = load_mutant(loaded, mutant_id)
        assert (mutant.name, mutant.arg) == (loaded.name, loaded.arg), "a mutant keeps the adapter's test ids"
        assert not hasattr(mutant.adapter, "mutants"), "a mutant declares no mutants of its own"
    assert not hasattr(type(loaded.adapter), "mutants"), "the clean adapter class carries no mutant switch"


@pytest.mark.parametrize("impl", BUILTINS)
@pytest.mark.parametrize("mutant_id", sorted(CATALOG))
def test_each_builtin_mutant_changes_the_output_its_catalog_entry_names(impl: str, mutant_id: str) -> None:
    loaded = load_adapter(impl)
    mutant = load_mutant(loaded, mutant_id)
    difference = changed_output(loaded.adapter, mutant.adapter, loaded.capabilities)
    assert difference is not None, f"{impl} {mutant_id} is equivalent on the pre-check's inputs"
    assert difference.startswith(FIRST_CHANGED[CATALOG[mutant_id]["component"]]), difference


def test_numpy_substitutions_last_only_for_the_adapter_call() -> None:
    """The tests' own calls into reference/ (expected values) must never see a mutant's defect."""
    clean = (reference.bilm.reverse_padded, reference.bilm.run_bilm, reference.bilm.BiLMPass.layers)
    params, ids, lengths = _small_bilm()
    expected = reference.bilm_layers(params, ids, lengths)
    mutants = load_adapter("numpy").adapter.mutants
    for mutant_id in ("s03", "s04", "s06"):
        changed = mutants[mutant_id]().bilm_layers(params, ids, lengths)
        assert any(not np.array_equal(a, b) for a, b in zip(changed, expected)), mutant_id
        assert (reference.bilm.reverse_padded, reference.bilm.run_bilm, reference.bilm.BiLMPass.layers) == clean
        for a, b in zip(reference.bilm_layers(params, ids, lengths), expected):
            np.testing.assert_array_equal(a, b)


def _small_bilm() -> tuple[dict, np.ndarray, np.ndarray]:
    from elmo_conformance.conformance.data import random_bilm

    return random_bilm(3, 7, 3, 2, [5, 2, 4])


def test_first_difference_compares_types_dtypes_and_bits() -> None:
    a = np.array([1.0, np.nan])
    assert first_difference(a, a.copy(), "x") is None, "NaN in the same place is no difference"
    assert first_difference(a.astype(np.float32), a, "x") == "x: float32[2] instead of float64[2]"
    assert first_difference(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-15]), "x") == "x: values differ"
    assert first_difference(np.float64(0.5), 0.5, "acc") == "acc: float64 instead of float"
    assert first_difference({"a": a}, {"b": a}, "g") == "g: keys differ"
    assert first_difference([a, a], [a, a + 1], "L") == "L[1]: values differ"
    assert first_difference(Raised("ValueError", "s: m"), Raised("ValueError", "s: m"), "f") is None
    assert (
        first_difference(0.5, Raised("ValueError", "s: m"), "f")
        == "f: returned where the clean adapter raised ValueError"
    )


def test_the_precheck_sees_a_mutant_that_only_modifies_its_input() -> None:
    clean = load_adapter("numpy").adapter

    class Scribbles(type(clean)):
        def scalar_mix(self, s, gamma, layers):
            out = clean.scalar_mix(s, gamma, layers)
            layers[0][...] = 0.0
            return out

    assert (
        changed_output(clean, Scribbles(), frozenset({"float64"}))
        == "scalar_mix's inputs after the call[2][0]: values differ"
    )
    assert changed_output(clean, type(clean)(), frozenset({"float64", "grad"})) is None


def test_the_precheck_sees_a_mutant_broken_in_float32_only() -> None:
    """The pre-check calls every dtype the adapter declares, not float64 alone (§13.1 step 2)."""
    clean = load_adapter("numpy").adapter

    class Float32Off(type(clean)):
        def scalar_mix(self, s, gamma, layers):
            out = clean.scalar_mix(s, gamma, layers)
            return out * np.float32(1.0001) if out.dtype == np.float32 else out

    assert changed_output(clean, Float32Off(), frozenset({"float64"})) is None, "equivalent in float64"
    assert changed_output(clean, Float32Off(), frozenset({"float64", "float32"})) == (
        "scalar_mix() in float32: values differ"
    )


def _pytest(*args: str) -> subprocess.CompletedProcess:
    """The suite with ARGS in this process (the adapter served by its own child process), as a
    finished process would look (its stdout and stderr together in stdout)."""
    code, output = run_args_here(*args)
    return subprocess.CompletedProcess(list(args), code, output, "")


def test_the_mutant_option_runs_a_mutant_and_prints_its_reproduce_command() -> None:
    done = _pytest("--impl", "numpy", "--mutant", "s07", "--dtype", "float64", "-k", "test_bilm_loss_targets")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the value matches the forward direction scored on the current token" in done.stdout
    assert (
        "nox -s conformance -- --impl numpy --mutant s07 'conformance/test_loss.py::test_bilm_loss_targets[numpy-float64]'"
        in done.stdout
    )


def test_the_mutant_option_refuses_an_undeclared_id_in_one_line() -> None:
    done = _pytest("--impl", "numpy", "--mutant", "s99", "--co")
    assert done.returncode == 4
    assert "--mutant s99: adapter 'numpy' (--impl numpy) does not declare it; it declares s01, s02" in done.stdout
    done = _pytest("--impl", str(ROOT / "tests" / "broken" / "skip_softmax.py"), "--mutant", "s01", "--co")
    assert done.returncode == 4
    assert "declares no mutants (an adapter MAY expose `mutants`, §11)" in done.stdout


def test_load_mutant_names_a_factory_that_fails() -> None:
    def broken() -> object:
        raise RuntimeError("cannot build")

    holder = type("Holder", (), {"mutants": {"s01": broken}})()
    loaded = LoadedAdapter("mine.py", holder, "mine", frozenset({"float64"}))
    with pytest.raises(
        AdapterLoadError,
        match=r"^--mutant s01: adapter 'mine' \(--impl mine.py\): creating the mutant raised RuntimeError: cannot build$",
    ):
        load_mutant(loaded, "s01")
