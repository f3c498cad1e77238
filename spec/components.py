"""Components (spec §11): which parts of the protocol an adapter implements, and which parts a
conformance test exercises.

An adapter declares the components it implements among its capabilities (`scalar_mix`, `bilm`,
`probe`, listed in spec/protocol.json); one that declares none implements all of them. A test
says which components it calls with `@pytest.mark.components("bilm", ...)` (a test that calls two
components names both); a test without the marker needs every component. A test that needs a
component its adapter does not declare is not run: it is reported as *not implemented* (a skip
whose reason starts with `NOT_IMPLEMENTED`, recorded as such in the reports), never as passed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from elmo_conformance.spec.protocol import protocol

MARKER = "components"
NOT_IMPLEMENTED = "not implemented"
NOT_IMPLEMENTED_KEY = pytest.StashKey[tuple[str, ...]]()

# The mutant catalog (spec/mutants.json) names the part of ELMo each mutant breaks; §4's loss is
# part of the biLM component (§11).
_CATALOG_PARTS = {"loss": "bilm"}


def of_test(item: pytest.Item) -> tuple[str, ...]:
    """The components a test exercises: its `components` markers (all of them, a parametrized
    case's included), or every component when it has none; `components()` with no name: none (a
    test of the wire protocol itself, conformance/test_wire_process.py)."""
    markers = list(item.iter_markers(MARKER))
    named = [name for marker in markers for name in marker.args]
    return tuple(dict.fromkeys(named)) if markers else protocol().components


def unknown(names: Iterable[str]) -> list[str]:
    """The names that are not components of spec/protocol.json."""
    return [name for name in names if name not in protocol().components]


def missing(needed: Iterable[str], capabilities: frozenset[str]) -> tuple[str, ...]:
    """The needed components that an adapter with these capabilities does not implement."""
    have = protocol().components_of(capabilities)
    return tuple(name for name in needed if name not in have)


def reason(adapter: str, absent: tuple[str, ...]) -> str:
    """The skip reason of a test that needs components the adapter does not declare."""
    sections = {c.name: c.section for c in protocol().capabilities}
    names = ", ".join(f"{name!r} (§{sections[name]})" for name in absent)
    plural = "s" if len(absent) > 1 else ""
    return f"{NOT_IMPLEMENTED}: {adapter} does not declare the component{plural} {names} (§11)"


def catalog_component(entry: Mapping[str, Any]) -> str | None:
    """The protocol component a catalog mutant (spec/mutants.json) breaks, or None if unknown."""
    part = entry.get("component") or ""
    name = _CATALOG_PARTS.get(part, part)
    return name if name in protocol().components else None
