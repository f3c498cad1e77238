"""The markdown summary, short enough for a CI job summary ($GITHUB_STEP_SUMMARY)."""

from __future__ import annotations

import html
import re

from elmo_conformance.mutation.runner import Results
from elmo_conformance.mutation.table import cell, grid, titles, totals
from elmo_conformance.mutation.verdicts import Verdict, session_failures

_SPECIAL = re.compile(r"[\\`*\[\]|~]|(?<!\w)_|_(?!\w)")  # markdown's, in a table cell; `_` inside a word is text


def escape(text: str) -> str:
    """Text from ids, titles and messages, shown as written: HTML as text, markdown's
    punctuation escaped, pipes kept inside their cell, one line."""
    text = html.escape(" ".join(str(text).split()), quote=False)
    return _SPECIAL.sub(lambda match: "\\" + match.group(0), text)


def markdown(results: Results, verdicts: list[Verdict]) -> str:
    """A short summary for a CI job summary: verdict, the grid, the problems."""
    rows, columns, cells = grid(verdicts)
    row_titles = titles(verdicts)
    failures = session_failures(results, verdicts)
    verdict = "❌ failed" if failures else "✅ passed"
    lines = [f"## Mutation testing (spec §13): {verdict}", ""]
    lines.append("| mutant | change | " + " | ".join(map(escape, columns)) + " |")
    lines.append("|---|---|" + "---|" * len(columns))
    for row in rows:
        values = []
        for column in columns:
            v = cells.get((row, column))
            text = cell(v)
            values.append(f"**{text}**" if v is not None and v.failure else text)
        lines.append(f"| {escape(row)} | {escape(row_titles[row])} | " + " | ".join(values) + " |")
    lines += ["", *(escape(line) for line in totals(results, verdicts))]
    if failures:
        lines += ["", "### Problems", ""] + [f"- {escape(problem)}" for problem in failures]
    return "\n".join(lines) + "\n"
