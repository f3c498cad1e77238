"""The terminal table: mutants as rows, adapters as columns, failures highlighted."""

from __future__ import annotations

import re
from collections import Counter

from elmo_conformance.mutation.runner import Results
from elmo_conformance.mutation.verdicts import Verdict, session_failures

_WORDS = {
    "Survived": "SURVIVED",
    "Timeout": "timeout",
    "RuntimeError": "error",
    "CompileError": "compile error",
    "NoCoverage": "no coverage",
    "NotDeclared": "not declared",
    "NotTestable": "not testable",
    "NotApplicable": "not applicable",
    "NotRun": "not run",
}
RED, GREEN, BOLD, RESET = "\033[31m", "\033[32m", "\033[1m", "\033[0m"


def cell(verdict: Verdict | None) -> str:
    if verdict is None:
        return ""
    if verdict.status == "Killed":
        text = f"killed ({len(verdict.killers)})"
    else:
        text = _WORDS.get(verdict.status, verdict.status)
    if verdict.run is not None and verdict.run.possibly_equivalent:
        text += " (possibly equivalent)"
    return text + (" !" if verdict.failure else "")


def grid(verdicts: list[Verdict]) -> tuple[list[str], list[str], dict[tuple[str, str], Verdict]]:
    """(row ids in order, adapter columns in order, (mutant, adapter) -> verdict)."""
    rows: list[str] = []
    columns: list[str] = []
    cells = {}
    for v in verdicts:
        if v.mutant not in rows:
            rows.append(v.mutant)
        if v.adapter not in columns:
            columns.append(v.adapter)
        cells[(v.mutant, v.adapter)] = v
    return rows, columns, cells


def titles(verdicts: list[Verdict]) -> dict[str, str]:
    found: dict[str, str] = {}
    for v in verdicts:
        found.setdefault(v.mutant, ("" if v.catalog else "(extra) ") + v.title)
    return found


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _color(text: str, verdict: Verdict | None, color: bool) -> str:
    if not color or verdict is None:
        return text
    if verdict.failure:
        return f"{RED}{BOLD}{text}{RESET}"
    return f"{GREEN}{text}{RESET}" if verdict.status in ("Killed", "Timeout") else text


def terminal(results: Results, verdicts: list[Verdict], color: bool = False) -> str:
    rows, columns, cells = grid(verdicts)
    row_titles = titles(verdicts)
    width = max([len(cell(v)) for v in verdicts] + [len(c) for c in columns] + [6])
    id_width = max([len(row) for row in rows] + [6]) + 2
    header = f"{'mutant':<{id_width}}{'change':<48}" + "".join(f"{c:<{width + 2}}" for c in columns)
    lines = ["Mutants (spec §13): killed (n) = killed by n test cases; ! = fails the session", header]
    lines.append("-" * len(header.rstrip()))
    for row in rows:
        line = f"{row:<{id_width}}{_short(row_titles[row], 46):<48}"
        for column in columns:
            v = cells.get((row, column))
            line += _color(f"{cell(v):<{width + 2}}", v, color)
        lines.append(line.rstrip())
    missed = [v for v in verdicts if v.missed]
    if missed:
        lines += ["", _red("Expected killers that missed:", color)]
        for v in missed:
            lines += [_red(f"  {v.adapter} {v.mutant}: {miss}", color) for miss in v.missed]
            lines.append(f"    reproduce: {v.reproduce(_test_name(v.missed[0]))}")
    failures = session_failures(results, verdicts)
    if failures:
        lines += ["", _red(f"FAILED: {len(failures)} problem(s)", color)]
        lines += [f"  {problem}" for problem in failures]
        lines += [f"    reproduce: {v.reproduce()}" for v in verdicts if v.failure and not v.missed]
    lines += ["", *totals(results, verdicts)]
    return "\n".join(lines)


def _red(text: str, color: bool) -> str:
    return f"{RED}{BOLD}{text}{RESET}" if color else text


def _test_name(miss: str) -> str | None:
    """The test function in "path::test_x[case] passed" or "test_x: no test of that name"."""
    match = re.search(r"::(\w+)", miss) or re.match(r"(\w+)", miss)
    return match.group(1) if match else None


def _count(verdicts: list[Verdict], noun: str) -> str:
    counts = Counter(v.status for v in verdicts)
    text = f"{counts['Killed']}/{len(verdicts)} {noun} killed"
    return text + (f", {counts['Timeout']} timed out" if counts["Timeout"] else "")


def totals(results: Results, verdicts: list[Verdict]) -> list[str]:
    lines = []
    for impl in results.options.impls:
        mine = [v for v in verdicts if v.impl == impl]
        if not mine:
            continue
        catalog = [v for v in mine if v.catalog]
        declared = sum(v.info is not None for v in catalog)
        judged = sum(v.failure is None and v.status in ("Killed", "Timeout") for v in catalog)
        extras = [v for v in mine if not v.catalog]
        lines.append(
            f"{mine[0].adapter} (--impl {impl}): {_count(catalog, 'catalog mutants')} "
            f"({declared} declared, {judged} detected by every expected killer)"
            + (f"; {_count(extras, 'extra mutants')}" if extras else "")
        )
    t = results.timings
    if t:
        lines.append(
            f"wall time {t['total']:.1f} s (baseline {t['baseline']:.1f} s), {results.options.workers} workers"
        )
    return lines
