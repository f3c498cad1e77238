"""The JSON report of a run (version 2, spec/schemas/report.schema.json): built at the end of a
run by the plugin's Recorder, read back (and checked) by the pages and the dashboard."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from elmo_conformance.conformance.provenance import provenance, spec_version
from elmo_conformance.spec.catalog import SPEC_DIR, sections

REPORT_VERSION = 2  # spec/schemas/report.schema.json
SCHEMA_PATH = SPEC_DIR / "schemas" / "report.schema.json"
_SECTION_RULE = re.compile(r"^-+ (spec|reproduce) -+$", re.M)


class ReportError(ValueError):
    """A report that cannot be read or does not match its schema; the message names the file."""


@cache
def schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def problems(report: Any) -> list[str]:
    """What makes `report` not match spec/schemas/report.schema.json, as 'where: what' lines."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(report), key=lambda e: list(e.absolute_path))
    return [f"{'/'.join(str(p) for p in e.absolute_path) or '(top level)'}: {e.message}" for e in errors]


def check(report: Any, source: str) -> dict[str, Any]:
    """`report` if it is a finished run's report that matches the schema; else ReportError."""
    if isinstance(report, dict) and report.get("refused"):
        raise ReportError(f"{source}: the run was refused before any test ran: {report['refused']}")
    if isinstance(report, dict) and report.get("complete") is False:
        raise ReportError(f"{source}: the run that writes this report did not finish (it stopped or is still running)")
    found = problems(report)
    if found:
        more = f" (and {len(found) - 3} more)" if len(found) > 3 else ""
        raise ReportError(
            f"{source}: not a conformance report (spec/schemas/report.schema.json): " + "; ".join(found[:3]) + more
        )
    return report


def load(path: str | Path) -> dict[str, Any]:
    """Read and check a --report JSON file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ReportError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    try:
        report = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}: not JSON: {exc}") from None
    return check(report, str(path))


def version(report: dict[str, Any]) -> int:
    return int(report.get("report_version", 1))


def split_message(message: str | None) -> tuple[str, dict[str, str]]:
    """A failure message's body and its trailing sections ('spec', 'reproduce'), as the plugin
    adds them."""
    if not message:
        return "", {}
    parts = _SECTION_RULE.split(message)
    body, extra = parts[0].rstrip("\n"), {}
    for title, content in zip(parts[1::2], parts[2::2]):
        extra[title] = content.strip("\n")
    return body, extra


def reproduce(result: dict[str, Any]) -> str | None:
    """The command that reproduces a failure: the result's own (version 2), or its message's."""
    return result.get("reproduce") or split_message(result.get("message"))[1].get("reproduce")


def section_titles(numbers: Iterable[str]) -> dict[str, str]:
    titles = sections()
    return {n: titles.get(n, "(unknown section)") for n in sorted(set(numbers), key=section_key)}


def section_key(number: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in number.split("."))
    except ValueError:
        return (999,)


def build(
    adapters: Sequence[dict[str, Any]],
    results: list[dict[str, Any]],
    exit_status: int,
    duration_s: float,
    margins: dict[str, Any],
    args: Iterable[str] = (),
) -> dict[str, Any]:
    """The report as the Recorder writes it (spec/schemas/report.schema.json, version 2)."""
    summary: dict[str, int] = {}
    for result in results:
        summary[result["outcome"]] = summary.get(result["outcome"], 0) + 1
    return {
        "suite": "elmo-conformance",
        "report_version": REPORT_VERSION,
        "complete": True,
        "spec_version": spec_version(),
        "adapters": list(adapters),
        "exit_status": int(exit_status),
        "duration_s": round(duration_s, 3),
        "summary": summary,
        "tests": results,
        "section_titles": section_titles(m for r in results for n in r["sections"] for m in (n, n.split(".")[0])),
        "margins": margins,
        "provenance": provenance(adapters, args),
    }


def write(report: dict[str, Any], path: str | Path) -> Path:
    return write_text(path, json.dumps(report, indent=1) + "\n")


def write_text(path: str | Path, text: str) -> Path:
    """Write `text` at `path` atomically: into a new file beside it, then renamed over it, so that
    a reader (or a run stopped midway) sees the old file or the new one, never a part of one."""
    import os
    import tempfile

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def html_beside(path: str | Path) -> Path:
    """Where the page of a --report PATH goes: PATH with the suffix .html (never PATH itself)."""
    path = Path(path)
    return path.with_name(path.name + ".html") if path.suffix == ".html" else path.with_suffix(".html")
