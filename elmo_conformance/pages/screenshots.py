"""The pictures of the two pages in docs/checking.md, made by the project's own code: `python -m
elmo_conformance.pages.screenshots` runs the suite on the reference and on a broken
adapter (tests/broken/raises.py) and writes docs/report.png, then the dashboard of every built-in
adapter that runs here (numpy, torch, jax, c; or the --reports given) with the broken one, and
writes docs/dashboard.png, each by headless Chromium's --screenshot."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from elmo_conformance.adapters.loading import available_builtins
from elmo_conformance.pages.browser import screenshot
from elmo_conformance.pages.dashboard import read
from elmo_conformance.pages.render import dashboard_page, write
from elmo_conformance.runner.running import run

ROOT = Path(__file__).resolve().parents[2]
BROKEN = ROOT / "tests" / "broken" / "raises.py"


def run_suite(report: Path, *args: str) -> Path:
    """The suite with ARGS through the one entry point, writing REPORT; the report, which it must write."""
    result = run(pytest_args=["-q", "-p", "no:cacheprovider", "--report", str(report), *args], capture=True)
    if not result.complete or not report.is_file():
        raise SystemExit(f"the suite did not write {report}:\n{result.describe()}")
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "docs"), help="folder of report.png and dashboard.png")
    parser.add_argument("--reports", nargs="*", default=None, help="the dashboard's reports (default: run them)")
    parser.add_argument("--mutants", action="append", default=[], help="mutation-report.json for the dashboard")
    parser.add_argument("--pytest-arg", action="append", default=[], help="passed on to the run of the report page")
    args = parser.parse_args(argv)
    out = Path(args.out)
    with tempfile.TemporaryDirectory(prefix="elmo-screenshots-") as tmp:
        work = Path(tmp)
        run_suite(work / "run.json", "--impl", "numpy", "--impl", str(BROKEN), "--dtype", "float64", *args.pytest_arg)
        page = work / "run.html"  # written beside run.json
        print("report page:", screenshot(f"{page.as_uri()}#failures", out / "report.png", 1400, 1250))
        reports = [Path(r) for r in args.reports] if args.reports is not None else []
        if args.reports is None:
            for impl in available_builtins():  # numpy, torch, jax, c: those that run here
                reports.append(run_suite(work / f"{impl}.json", "--impl", impl))
            reports.append(run_suite(work / "raises.json", "--impl", str(BROKEN)))
        board = write(dashboard_page(read(reports, args.mutants)), work / "dashboard.html")
        print("dashboard:", screenshot(board, out / "dashboard.png", 1400, 2900))
    return 0


if __name__ == "__main__":
    sys.exit(main())
