"""Read the machine-readable parts of the spec: section titles and catalogs (tolerances: tolerances.py)."""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

from elmo_conformance.ground.resources import package_dir

SPEC_DIR = package_dir("spec")  # spec/ in a checkout, package data when installed
_HEADING = re.compile(r"^#{2,3} (\d+(?:\.\d+)?)\.? (.+)$")


def checked(name: str) -> Any:
    """spec/NAME.json, validated against spec/schemas/NAME.schema.json (a ValueError naming the file
    when it does not match). The schema itself is taken as valid: tests/test_fixtures_integrity.py
    checks every schema of spec/schemas."""
    import jsonschema

    data = json.loads((SPEC_DIR / f"{name}.json").read_text(encoding="utf-8"))
    schema = json.loads((SPEC_DIR / "schemas" / f"{name}.schema.json").read_text(encoding="utf-8"))
    try:
        jsonschema.validators.validator_for(schema)(schema).validate(data)
    except jsonschema.ValidationError as exc:
        raise ValueError(f"spec/{name}.json does not match its schema: {exc.message}") from None
    return data


@cache
def sections() -> dict[str, str]:
    """Section number -> title, from the headings of spec/elmo.md."""
    found = {}
    for line in (SPEC_DIR / "elmo.md").read_text(encoding="utf-8").splitlines():
        match = _HEADING.match(line)
        if match:
            found[match.group(1)] = match.group(2).strip()
    return found


def describe(numbers: tuple[str, ...]) -> str:
    """'§3.2 The forward stack; §3.3 The backward stack'."""
    titles = sections()
    return "; ".join(f"§{n} {titles.get(n, '(unknown section)')}" for n in numbers)


@cache
def mutant_catalog() -> list[dict]:
    return json.loads((SPEC_DIR / "mutants.json").read_text(encoding="utf-8"))["mutants"]


@cache
def validation_rows() -> list[dict]:
    return json.loads((SPEC_DIR / "validation.json").read_text(encoding="utf-8"))["rows"]
