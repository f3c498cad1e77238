"""Validation-only mutants (spec §13, §13.1): a mutant that only stops rejecting one kind of bad
input of §8 changes an output of the equivalence pre-check, which calls every bad input of the
validation table, so the runner runs it and the suite kills it; and mutant descriptions."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from elmo_conformance.adapters.declared import describe
from elmo_conformance.adapters.loading import load_adapter, load_mutant
from elmo_conformance.conformance.bad_inputs import CALLS
from elmo_conformance.mutation.equivalence import changed_output

ROOT = Path(__file__).resolve().parent.parent
VALIDATION_ONLY = {
    "x-padded-ids-unchecked": "bilm_layers() in {dtype} given an id of V at a padded position (V03)",
    "x-integer-s-accepted": "scalar_mix() in {dtype} given integer s (V13): returned where the clean adapter raised",
    "x-lr-unchecked": "fit_linear_probe() in {dtype} given lr = 0 (V22): returned where the clean adapter raised",
}
BUILTINS = [
    "numpy",
    *(
        pytest.param(name, marks=pytest.mark.skipif(not importlib.util.find_spec(name), reason=f"needs {name}"))
        for name in ("torch", "jax")
    ),
]


def share_compiled_programs(clean: object, mutant: object) -> None:
    """JAX compiles per instance (jit caches are per instance, adapters/jax/adapter.py), which made
    each mutant here compile the whole biLM again. A validation-only mutant keeps the clean
    adapter's model classes and __init__, which build its programs, and only swaps an input check
    around the clean methods: so it is given the clean instance's programs, already compiled, and
    its outputs still go through its own input checks, paddings and conversions."""
    for attribute in ("__init__", "bilm_class", "mix_class", "probe_class"):
        assert getattr(type(mutant), attribute) is getattr(type(clean), attribute), f"the mutant changes {attribute}"
    vars(mutant).update(vars(clean))


@pytest.mark.parametrize("impl", BUILTINS)
@pytest.mark.parametrize("mutant_id", sorted(VALIDATION_ONLY))
def test_a_validation_only_mutant_changes_an_output_only_on_bad_input(impl: str, mutant_id: str) -> None:
    """On the valid inputs alone (all the pre-check called before) the mutant is equivalent; on the
    bad inputs of §8 it is not."""
    loaded = load_adapter(impl)
    mutant = load_mutant(loaded, mutant_id)
    if impl == "jax":
        share_compiled_programs(loaded.adapter, mutant.adapter)
    difference = changed_output(loaded.adapter, mutant.adapter, loaded.capabilities)
    assert difference is not None, f"{impl} {mutant_id} taken for equivalent"
    assert difference.startswith(VALIDATION_ONLY[mutant_id].format(dtype="float64")), difference


def test_the_precheck_calls_every_bad_input_of_the_validation_table() -> None:
    from elmo_conformance.mutation import equivalence

    calls = [what for what, _ in equivalence._calls(np.dtype("float64"), frozenset({"float64"}))]
    bad = [what for what in calls if " given " in what]
    assert len(bad) == len([1 for _, function in CALLS if not function.endswith(("_grad", "_vjp"))])


def test_a_validation_only_mutant_is_reported_killed_by_the_runner(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "elmo_conformance.mutation", "--impl", "numpy"]
    command += ["--mutant", "x-lr-unchecked", "--no-html", "--out", str(tmp_path)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "mutation-report.json").read_text(encoding="utf-8"))
    [mutant] = [
        m for entry in report["files"].values() for m in entry["mutants"] if m["mutatorName"] == "x-lr-unchecked"
    ]
    assert mutant["status"] == "Killed", mutant
    assert all("V22" in test or "lr" in test for test in mutant["killedBy"]), mutant["killedBy"]
    title = "V22 is not checked: a learning rate of 0, below 0 or NaN is accepted"  # its `description`
    assert mutant["description"] == f"(extra) {title}"
    assert f"| x-lr-unchecked | (extra) {title} | killed (" in (tmp_path / "summary.md").read_text(encoding="utf-8")


def test_a_mutant_is_described_by_its_description_then_its_docstring_then_its_name() -> None:
    class Documented:
        """A defect, said in its docstring.

        More detail that is not the title."""

    described = lambda: Documented()  # noqa: E731  (a lambda is what the issue saw)
    described.description = "the one-line description"
    bare = lambda: Documented()  # noqa: E731
    assert describe("x-a", described).title == "the one-line description"
    assert describe("x-b", Documented).title == "A defect, said in its docstring."
    assert describe("x-c", bare).title.endswith("<lambda>"), "the qualified name, the last resort"
