"""The pages, rendered with Jinja2 (autoescaping on: every message, id and name comes from an
adapter) into one self-contained HTML file each: inline CSS and JS, charts as inline SVG, and a
Content-Security-Policy that lets the page load nothing from anywhere, so it works offline and an
injected script could not run even if it got through."""

from __future__ import annotations

import base64
import datetime
import hashlib
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from elmo_conformance.conformance.record import REPORT_VERSION, version

TEMPLATES = Path(__file__).resolve().parent / "templates"


@cache
def environment() -> Any:
    import jinja2

    from elmo_conformance.pages.runpage import fmt_margin

    # Undefined stays lenient: a report from an older or newer suite may lack a field.
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["margin"] = fmt_margin
    return env


@cache
def static(name: str) -> str:
    return (TEMPLATES / "static" / name).read_text(encoding="utf-8")


def policy(script: str) -> str:
    """The page's Content-Security-Policy: nothing loads from anywhere; the one inline script runs
    (by its hash), inline styles apply."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
    )


def _page(template: str, **context: Any) -> str:
    from markupsafe import Markup

    script = static("report.js")
    return (
        environment()
        .get_template(template)
        .render(
            css=Markup(static("report.css")),
            script=Markup(script),
            csp=policy(script),
            **context,
        )
    )


def run_page(report: dict[str, Any]) -> str:
    """The page of one run, from its JSON report."""
    from markupsafe import Markup

    from elmo_conformance.pages import runpage
    from elmo_conformance.pages.charts import margins_svg

    margins = runpage.margins(report)
    chart = margins_svg(runpage.series(margins["columns"]), margins["quantities"], "run") if margins["columns"] else ""
    return _page(
        "run.html.j2",
        report=report,
        report_version=version(report),
        provenance=report.get("provenance") or {},
        summary=runpage.summary_words(report.get("summary") or {}),
        table=runpage.table(report),
        margins=margins,
        chart=Markup(chart),
    )


def dashboard_page(results: Sequence[Any]) -> str:
    """The dashboard of many runs' results (dashboard.read)."""
    from markupsafe import Markup

    from elmo_conformance.conformance import passtable
    from elmo_conformance.pages import dashboard
    from elmo_conformance.pages.charts import margins_svg

    margins = dashboard.margin_table(results)
    series = [(col["label"], {q: e["max_margin"] for q, e in col["values"].items()}) for col in margins["columns"]]
    chart = margins_svg(series, margins["quantities"], "dashboard") if series else ""
    return _page(
        "dashboard.html.j2",
        results=results,
        sources=sorted({r.source for r in results}),
        sections=dashboard.section_table(results),
        margins=margins,
        chart=Markup(chart),
        mutants=dashboard.mutant_table(results),
        kinds=passtable.KINDS,
        created=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        report_version=REPORT_VERSION,
    )


def write(html: str, path: str | Path) -> Path:
    from elmo_conformance.conformance.record import write_text

    return write_text(path, html)
