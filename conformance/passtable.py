"""The pass table: one row per test (with the spec sections it cites), one column per adapter and
dtype, printed at the end of a run and written as JSON with `--pass-table PATH`.

A cell counts the outcomes of that test's cases in that column: `pass`, `FAIL`, `XPASS` (a strict
expected failure that passed, a failure too), `xfail`, `skip`, `n/i` (not implemented: the test
calls a component the adapter does not declare, §11); the count is left out when it is 1
(`pass`, `97 pass`, `94 pass 3 FAIL`), and `-` means the test has no case there. Tests that do not
take an adapter (checks of the suite's own tables) get the column `suite`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from elmo_conformance.adapters.loading import LoadedAdapter
from elmo_conformance.ground.resources import spec_version
from elmo_conformance.ground.version import __version__

KINDS = ("FAIL", "XPASS", "xfail", "skip", "n/i", "pass")  # the order within a cell: worst first
NOT_IMPLEMENTED = "n/i"
SUITE = "suite"


def kind(result: dict) -> str:
    """A Recorder result's outcome as a cell word."""
    if result["outcome"] == "failed":
        return "XPASS" if (result.get("message") or "").startswith("[XPASS(strict)]") else "FAIL"
    if result["outcome"] == "skipped" and result.get("not_implemented"):
        return NOT_IMPLEMENTED
    return {"passed": "pass", "skipped": "skip", "xfailed": "xfail"}[result["outcome"]]


def _section_key(number: str) -> tuple[int, ...]:
    return tuple(int(part) for part in number.split("."))


def columns(adapters: Sequence[LoadedAdapter], dtypes: Sequence[str], results: Iterable[dict]) -> list[dict]:
    """The columns that have results, adapters in --impl order, dtypes in the suite's order."""
    present = {result["case"] for result in results}
    found: list[dict[str, Any]] = [
        {"case": f"{a.name}-{dt}", "adapter": a.name, "impl": a.arg, "dtype": dt, "device": a.device}
        for a in adapters
        for dt in dtypes
        if f"{a.name}-{dt}" in present
    ]
    if None in present:
        found.append({"case": SUITE, "adapter": None, "impl": None, "dtype": None, "device": None})
    return found


def table(adapters: Sequence[LoadedAdapter], dtypes: Sequence[str], results: list[dict]) -> dict:
    """The table as data: columns, rows (ordered by first cited section, then name), totals."""
    cols = columns(adapters, dtypes, results)
    rows: dict[str, dict] = {}
    totals: dict[str, Counter] = {col["case"]: Counter() for col in cols}
    skip_reasons: dict[str, Counter] = {col["case"]: Counter() for col in cols}
    not_implemented: dict[str, Counter] = {col["case"]: Counter() for col in cols}
    for result in results:
        column = result["case"] or SUITE
        if column not in totals:
            continue
        row = rows.setdefault(result["test"], {"test": result["test"], "sections": result["sections"], "cells": {}})
        word = kind(result)
        row["cells"].setdefault(column, Counter())[word] += 1
        totals[column][word] += 1
        if word == "skip":
            skip_reasons[column][(result.get("message") or "").removeprefix("Skipped: ")] += 1
        elif word == NOT_IMPLEMENTED:
            not_implemented[column][", ".join(result["not_implemented"])] += 1
    ordered = sorted(
        rows.values(), key=lambda r: (_section_key(r["sections"][0]) if r["sections"] else (999,), r["test"])
    )
    return {
        "columns": cols,
        "rows": [{**row, "cells": {c: dict(n) for c, n in row["cells"].items()}} for row in ordered],
        "totals": {column: dict(counts) for column, counts in totals.items()},
        "skip_reasons": {column: dict(counts) for column, counts in skip_reasons.items() if counts},
        "not_implemented": {column: dict(counts) for column, counts in not_implemented.items() if counts},
    }


def cell(counts: dict[str, int] | None) -> str:
    if not counts:
        return "-"
    parts = [(word, counts[word]) for word in KINDS if counts.get(word)]
    if len(parts) == 1 and parts[0][1] == 1:
        return parts[0][0]
    return " ".join(f"{n} {word}" for word, n in parts)


def render(data: dict) -> list[str]:
    """The table as aligned text lines."""
    names = [col["case"] for col in data["columns"]]
    header = ["§", "test", *names]
    body = [
        [",".join(row["sections"]), row["test"], *(cell(row["cells"].get(n)) for n in names)] for row in data["rows"]
    ]
    body.append(["", "total", *(cell(data["totals"].get(n)) for n in names)])
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]

    def fmt(line: list[str]) -> str:
        return "  ".join(text.ljust(width) for text, width in zip(line, widths)).rstrip()

    lines = [fmt(header), fmt(["-" * w for w in widths]), *(fmt(line) for line in body[:-1])]
    lines += [fmt(["-" * w for w in widths]), fmt(body[-1])]
    for column, reasons in data["skip_reasons"].items():
        for reason, n in sorted(reasons.items(), key=lambda item: -item[1]):
            lines.append(f"skipped in {column}: {n} x {reason}")
    for column, absent in data.get("not_implemented", {}).items():
        for names, n in sorted(absent.items(), key=lambda item: -item[1]):
            noun = "components" if "," in names else "component"
            lines.append(f"not implemented in {column}: {n} x {noun} {names} not declared (§11)")
    return lines


class PassTable:
    """The plugin object: prints the table in the terminal summary and writes --pass-table."""

    def __init__(self, config: pytest.Config, adapters: Sequence[LoadedAdapter], dtypes: Sequence[str]) -> None:
        self.config = config
        self.adapters = adapters
        self.dtypes = dtypes

    def _data(self) -> dict:
        recorder = self.config.pluginmanager.get_plugin("elmo-conformance-recorder")
        return table(self.adapters, self.dtypes, recorder.results if recorder else [])

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        path = self.config.getoption("pass_table", None)
        if path:
            versions = {"suite_version": __version__, "spec_version": spec_version()}
            data = {"suite": "elmo-conformance", **versions, "exit_status": int(exitstatus), **self._data()}
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        data = self._data()
        if data["rows"] and self.config.get_verbosity() >= 0:
            terminalreporter.write_sep("=", "pass table (spec sections and tests x adapter-dtype)")
            for line in render(data):
                terminalreporter.write_line(line)
        if self.config.getoption("pass_table", None):
            terminalreporter.write_line(f"pass table written to {self.config.getoption('pass_table')}")
