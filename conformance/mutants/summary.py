"""The markdown summary, short enough for a CI job summary ($GITHUB_STEP_SUMMARY)."""

from __future__ import annotations

from .runner import Results
from .table import cell, grid, titles, totals
from .verdicts import Verdict, session_failures


def markdown(results: Results, verdicts: list[Verdict]) -> str:
    """A short summary for a CI job summary: verdict, the grid, the problems."""
    rows, columns, cells = grid(verdicts)
    row_titles = titles(verdicts)
    failures = session_failures(results, verdicts)
    verdict = "❌ failed" if failures else "✅ passed"
    lines = [f"## Mutation testing (spec §13): {verdict}", ""]
    lines.append("| mutant | change | " + " | ".join(columns) + " |")
    lines.append("|---|---|" + "---|" * len(columns))
    for row in rows:
        values = []
        for column in columns:
            v = cells.get((row, column))
            text = cell(v)
            values.append(f"**{text}**" if v is not None and v.failure else text)
        title = row_titles[row].replace("|", "\\|")
        lines.append(f"| {row} | {title} | " + " | ".join(values) + " |")
    lines += ["", *totals(results, verdicts)]
    if failures:
        lines += ["", "### Problems", ""] + [f"- {problem}" for problem in failures]
    return "\n".join(lines) + "\n"
