"""adapters/mutant_table.py: a built-in adapter's MUTANTS is derived from the mutant classes its
module defines, each naming its id once (the first word of its docstring), not kept as a list."""

from __future__ import annotations

import importlib

import pytest

from elmo_conformance.adapters.mutant_table import mutant_id, mutants_in
from elmo_conformance.spec.catalog import mutant_catalog


class Base:
    pass


def namespace(*classes: type) -> dict[str, object]:
    for cls in classes:
        cls.__module__ = "fake.mutants"
    return {"__name__": "fake.mutants", "Base": Base, **{cls.__name__: cls for cls in classes}}


def test_ids_come_from_the_classes_docstrings() -> None:
    class Helper(Base):
        """A helper class, no mutant."""

    class First(Base):
        """s01 (§5.1): ScalarMix uses the raw s."""

    class Extra(Base):
        """x-lr-unchecked (§8 V22): lr is not checked."""

    class Stranger:
        """s02 (§5.2): not an adapter."""

    class Inherits(First):
        pass

    found = mutants_in(namespace(Helper, First, Extra, Stranger, Inherits), Base)
    assert dict(found) == {"s01": First, "x-lr-unchecked": Extra}
    assert mutant_id(Inherits) is None, "a docstring is not inherited"


def test_an_id_declared_twice_is_refused() -> None:
    class One(Base):
        """s03 (§3.2): one."""

    class Two(Base):
        """s03 (§3.2): the same id."""

    with pytest.raises(ValueError, match="fake.mutants: two classes declare mutant s03"):
        mutants_in(namespace(One, Two), Base)


@pytest.mark.parametrize("impl", ["numpy", "torch", "jax"])
def test_every_builtin_adapter_declares_the_catalog(impl: str) -> None:
    pytest.importorskip(impl)
    module = importlib.import_module(f"elmo_conformance.adapters.{impl}.mutants")
    catalog = [entry["id"] for entry in mutant_catalog()]
    assert [key for key in module.MUTANTS if not key.startswith("x-")] == catalog
