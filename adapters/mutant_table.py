"""A built-in adapter's `MUTANTS` (spec §11, §13), read from the mutant classes its module defines.

Each mutant class names its id once, as the first word of its docstring: `s01 (§5.1): ...` for the
catalog mutant s01 of spec/mutants.json, `x-lr-unchecked (§8 V22): ...` for an extra one. The
mapping from id to class (a zero-argument factory, §11) is derived from those, so adding a mutant
is writing its class, and no list of ids is kept by hand in each adapter.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TypeVar

A = TypeVar("A")

_ID = re.compile(r"\s*(s\d{2}|x-[a-z0-9]+(?:-[a-z0-9]+)*) \(§")


def mutant_id(cls: type) -> str | None:
    """The id a class's docstring opens with, or None when it is not a mutant's."""
    match = _ID.match(cls.__dict__.get("__doc__") or "")
    return match.group(1) if match else None


def mutants_in(namespace: Mapping[str, object], base: type[A]) -> Mapping[str, Callable[[], A]]:
    """Every subclass of `base` defined in the module whose globals are `namespace` and whose
    docstring opens with a mutant id, by id, in the order they are defined."""
    found: dict[str, Callable[[], A]] = {}
    for value in list(namespace.values()):
        if not (isinstance(value, type) and issubclass(value, base) and value.__module__ == namespace["__name__"]):
            continue
        key = mutant_id(value)
        if key is None:
            continue
        if key in found:
            raise ValueError(f"{namespace['__name__']}: two classes declare mutant {key}")
        found[key] = value
    return MappingProxyType(found)
