"""The tolerances of spec §10 by dtype, device and quantity, from spec/tolerances.json.

`dtypes` holds each dtype's values, measured on the CPU; `devices` may override some of them for
one device (by the part of the device name before any `:`, so `cuda:1` reads `cuda`). A device
without an override uses the dtype's values.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from elmo_conformance.spec.catalog import SPEC_DIR, checked


def quantities(data: dict[str, Any]) -> tuple[str, ...]:
    """The quantities a tolerances table gives CPU values for, in the order it first names them.

    spec/tolerances.json is their one source: QUANTITIES below is read from it, and the enum of
    quantity names in spec/schemas/tolerances.schema.json is rendered from it by
    scripts/render_docs.py (tests/test_rendered_docs.py checks it is)."""
    found: dict[str, None] = {}
    for by_quantity in data["dtypes"].values():
        found.update(dict.fromkeys(by_quantity))
    return tuple(found)


QUANTITIES = quantities(json.loads((SPEC_DIR / "tolerances.json").read_text(encoding="utf-8")))


@cache
def table() -> dict[str, Any]:
    """spec/tolerances.json, checked against spec/schemas/tolerances.schema.json."""
    return checked("tolerances")  # the schema itself: tests/test_fixtures_integrity.py


def tolerance(dtype: str, device: str, quantity: str) -> dict[str, float]:
    """{'rtol', 'atol'} for `quantity` computed in `dtype` on `device` (§10)."""
    data = table()
    if dtype not in data["dtypes"]:
        raise KeyError(f"spec/tolerances.json has no dtype {dtype!r}; it has {sorted(data['dtypes'])}")
    override = data.get("devices", {}).get(device.split(":")[0], {}).get(dtype, {})
    entry = override.get(quantity) or data["dtypes"][dtype].get(quantity)
    if entry is None:
        raise KeyError(f"spec/tolerances.json has no {dtype} tolerance for {quantity!r}")
    return {"rtol": entry["rtol"], "atol": entry["atol"]}
