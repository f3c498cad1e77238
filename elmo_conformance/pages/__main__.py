"""`python -m elmo_conformance.pages dashboard REPORT.json ... [--mutants M.json ...] --out PAGE.html`
writes the dashboard across runs; `... page REPORT.json --out PAGE.html` writes one run's page
from its JSON report. A report that is not a finished run's (spec/schemas/report.schema.json) is
refused, naming the file and the problem."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from elmo_conformance.conformance.record import ReportError, load


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m elmo_conformance.pages", description=__doc__.split("\n")[0])
    commands = top.add_subparsers(dest="command", required=True)
    dash = commands.add_parser("dashboard", help="one page of many runs' --report JSON files")
    dash.add_argument("reports", nargs="+", metavar="REPORT.json", help="--report files of conformance runs")
    dash.add_argument(
        "--mutants",
        action="append",
        default=[],
        metavar="PATH",
        help="a mutation runner's mutation-report.json (repeatable); its mutants are matched to results by adapter name",
    )
    dash.add_argument("--out", default="reports/dashboard.html", metavar="PAGE.html", help="default: %(default)s")
    page = commands.add_parser("page", help="one run's page from its --report JSON")
    page.add_argument("report", metavar="REPORT.json")
    page.add_argument("--out", required=True, metavar="PAGE.html")
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from elmo_conformance.pages import render

    try:
        if args.command == "dashboard":
            from elmo_conformance.pages.dashboard import read

            results = read(args.reports, args.mutants)
            path = render.write(render.dashboard_page(results), args.out)
            print(f"dashboard of {len(results)} results from {len(args.reports)} report(s) written to {path}")
        else:
            path = render.write(render.run_page(load(args.report)), args.out)
            print(f"page written to {path}")
    except ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
