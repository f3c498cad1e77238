"""The data of one run's page: the pass table by spec section, test and adapter-dtype (as the
terminal's, conformance/passtable.py), every cell's cases that did not pass with their messages,
the filters' choices and the margins (§10) by quantity and adapter-dtype."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from elmo_conformance.conformance import passtable
from elmo_conformance.conformance.record import reproduce, section_key, split_message
from elmo_conformance.spec.catalog import sections
from elmo_conformance.spec.tolerances import QUANTITIES

DTYPES = ("float64", "float32")
LEVELS = ((0.0, "exact"), (0.1, "room"), (0.5, "some"), (1.0, "tight"))  # (upper bound, class)


def level(value: float | None) -> str:
    """The margin's class: exact (0), room (< 0.1), some (< 0.5), tight (<= 1), over."""
    if value is None:
        return "over"
    for bound, name in LEVELS:
        if value <= bound:
            return name
    return "over"


def fmt_margin(value: float | None) -> str:
    if value is None:
        return "not finite"
    if value == 0:
        return "0"
    return f"{value:.2g}" if 1e-3 <= value < 1e3 else f"{value:.1e}"


def dtypes_of(results: Sequence[dict[str, Any]], names: Sequence[str]) -> list[str]:
    """The suite's dtypes, then any other a report's cases use, in the order seen."""
    found = list(DTYPES)
    for result in results:
        case = result.get("case")
        if case and "-" in case and case.rsplit("-", 1)[0] in names:
            dtype = case.rsplit("-", 1)[1]
            if dtype not in found:
                found.append(dtype)
    return found


def chapter(section: str) -> str:
    return section.split(".")[0]


def detail(result: dict[str, Any], titles: dict[str, str]) -> dict[str, Any]:
    """One case of a cell that did not pass, as the page shows it."""
    body = split_message(result.get("message"))[0]
    nodeid = result["nodeid"]
    return {
        "nodeid": nodeid,
        "param": nodeid[nodeid.index("[") + 1 : -1] if nodeid.endswith("]") and "[" in nodeid else nodeid,
        "kind": passtable.kind(result),
        "message": body,
        "spec": "; ".join(f"§{n} {titles.get(n, '')}".rstrip() for n in result.get("sections", [])),
        "reproduce": reproduce(result),
    }


def table(report: dict[str, Any]) -> dict[str, Any]:
    """The pass table with cells ready to draw, and the choices of the filters."""
    adapters: list[Any] = [
        SimpleNamespace(name=a["name"], arg=a["impl"], device=a["device"]) for a in report["adapters"]
    ]
    results = report["tests"]
    data = passtable.table(adapters, dtypes_of(results, [a.name for a in adapters]), results)
    titles = {**sections(), **(report.get("section_titles") or {})}  # the report's own first
    by_cell: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for result in results:
        by_cell[(result["test"], result["case"] or passtable.SUITE)].append(result)
    names = [col["case"] for col in data["columns"]]
    rows = []
    for row in data["rows"]:
        cells = []
        for name in names:
            counts = row["cells"].get(name)
            kinds = [k for k in passtable.KINDS if counts and counts.get(k)]
            shown = [r for r in by_cell[(row["test"], name)] if passtable.kind(r) != "pass"]
            shown.sort(key=lambda r: (passtable.KINDS.index(passtable.kind(r)), r["nodeid"]))
            cells.append(
                {
                    "column": name,
                    "text": passtable.cell(counts),
                    "worst": kinds[0] if kinds else "none",
                    "kinds": kinds,
                    "details": [detail(r, titles) for r in shown],
                }
            )
        row_kinds = sorted({k for c in cells for k in c["kinds"]}, key=passtable.KINDS.index)
        rows.append(
            {
                "test": row["test"],
                "sections": row["sections"],
                "titles": [titles.get(n, "") for n in row["sections"]],
                "chapters": sorted({chapter(n) for n in row["sections"]}, key=section_key),
                "cells": cells,
                "kinds": row_kinds,
            }
        )
    chapters = sorted({c for row in rows for c in row["chapters"]}, key=section_key)
    return {
        "columns": data["columns"],
        "rows": rows,
        "totals": [passtable.cell(data["totals"].get(n)) for n in names],
        "total_kinds": [next((k for k in passtable.KINDS if data["totals"].get(n, {}).get(k)), "none") for n in names],
        "skip_reasons": data["skip_reasons"],
        "not_implemented": data.get("not_implemented", {}),
        "chapters": [(c, titles.get(c, "")) for c in chapters],
        "kinds": [k for k in passtable.KINDS if any(k in row["kinds"] for row in rows)],
    }


def quantities_of(margins: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """§10's quantities in its order, then any other a report names."""
    seen = {q for dtypes in margins.values() for quantities in dtypes.values() for q in quantities}
    return [q for q in QUANTITIES if q in seen] + sorted(seen - set(QUANTITIES))


def margin_columns(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One column per adapter-dtype with margins: {'label', 'adapter', 'dtype', 'values': {quantity: entry}}."""
    margins = report.get("margins") or {}
    out = []
    for adapter, dtypes in margins.items():
        for dtype in sorted(dtypes, key=lambda d: (DTYPES.index(d) if d in DTYPES else len(DTYPES), d)):
            out.append({"label": f"{adapter}-{dtype}", "adapter": adapter, "dtype": dtype, "values": dtypes[dtype]})
    return out


def margins(report: dict[str, Any]) -> dict[str, Any]:
    """The margins table: quantities by adapter-dtype, each cell with its value, class and worst comparison."""
    columns = margin_columns(report)
    quantities = quantities_of(report.get("margins") or {})
    rows = []
    for quantity in quantities:
        cells: list[dict | None] = []
        for col in columns:
            entry = col["values"].get(quantity)
            if entry is None:
                cells.append(None)
                continue
            value = entry["max_margin"]
            cells.append({**entry, "text": fmt_margin(value), "level": level(value)})
        rows.append({"quantity": quantity, "cells": cells})
    return {"columns": columns, "quantities": quantities, "rows": rows}


def series(columns: Sequence[dict[str, Any]]) -> list[tuple[str, dict[str, float | None]]]:
    """The chart's series: (adapter-dtype, {quantity: largest margin})."""
    return [(col["label"], {q: e["max_margin"] for q, e in col["values"].items()}) for col in columns]


def summary_words(summary: dict[str, int]) -> list[tuple[str, int, str]]:
    """(word, count, class) for the header's totals."""
    words = (("passed", "pass"), ("failed", "FAIL"), ("xfailed", "xfail"), ("skipped", "skip"))
    return [(word, summary.get(word, 0), cls) for word, cls in words if summary.get(word)]
