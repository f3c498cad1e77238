"""elmo-conformance mutants --impl numpy [--impl torch ...] [--fail-fast] [--out DIR]

Exit status: 0 when every catalog mutant of every adapter is killed by its expected killers,
1 when a verdict fails (the reasons are printed), 2 for a usage error.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from elmo_conformance.adapters.loading import BUILTINS, missing_packages
from elmo_conformance.mutation.html import NpmUnavailable, write_html
from elmo_conformance.mutation.pool import WorkerStartError
from elmo_conformance.mutation.runner import Options, Results, run
from elmo_conformance.mutation.stryker import report
from elmo_conformance.mutation.summary import markdown
from elmo_conformance.mutation.table import terminal
from elmo_conformance.mutation.verdicts import Verdict, judge, session_failures
from elmo_conformance.spec.catalog import mutant_catalog


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _bounded(largest: float, unit: str) -> Callable[[str], float]:
    """A number in (0, largest]: a deadline of inf or nan is no deadline, and one beyond `largest`
    (1e300 x a test's time) overflows the clock arithmetic it enters."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not (value > 0 and math.isfinite(value)) or value > largest:
            raise argparse.ArgumentTypeError(f"expected a number > 0 and <= {largest:g}{unit}, got {text}")
        return value

    return parse


FACTOR = _bounded(1000.0, "")  # x the baseline time of a mutant's tests
SECONDS = _bounded(7 * 24 * 3600.0, " seconds (a week)")


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="elmo-conformance mutants",
        description="Run the conformance suite against every declared mutant of each adapter (spec §13).",
    )
    parser.add_argument(
        "--impl",
        action="append",
        default=[],
        help=f"adapter: a built-in name ({', '.join(BUILTINS)}), a .py file or package.module:attr; repeatable; "
        "default: every built-in adapter whose packages are installed (one whose device is missing is 'not testable')",
    )
    parser.add_argument("--mutant", action="append", default=[], metavar="ID", help="only this mutant id (repeatable)")
    parser.add_argument(
        "--fail-fast", action="store_true", help="stop each mutant at its first kill, once its expected killers ran"
    )
    parser.add_argument("--out", type=Path, default=Path("reports/mutants"), help="report folder (default %(default)s)")
    parser.add_argument("--workers", type=int, default=_cores(), help="worker processes (default: cores, %(default)s)")
    parser.add_argument(
        "--timeout-factor",
        type=FACTOR,
        default=3.0,
        help="a mutant's run times out after timeout-min + factor x its tests' baseline time (default %(default)s)",
    )
    parser.add_argument("--timeout-min", type=SECONDS, default=20.0, help="seconds (default %(default)s)")
    parser.add_argument(
        "--baseline-timeout",
        type=SECONDS,
        default=900.0,
        metavar="SECONDS",
        help="a worker's share of a clean baseline run that takes longer is stopped and the run fails "
        "(default %(default)s)",
    )
    parser.add_argument("--no-html", action="store_true", help="do not write the HTML report (it needs npm)")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error(f"--workers: expected an integer >= 1, got {args.workers}")
    if any(not mutant.strip() for mutant in args.mutant):
        parser.error("--mutant: expected a mutant id such as s01, got an empty one")
    args.impl = list(dict.fromkeys(args.impl))  # the same --impl twice is one adapter
    if not args.impl:
        # Not available_builtins(): that would import a device-bound adapter's backend here, in the
        # parent, only to leave it out; its baseline reports it as not testable instead.
        args.impl = [name for name in BUILTINS if not missing_packages(name)]
    return args


def write_reports(results: Results, verdicts: list[Verdict], out: Path, html: bool) -> list[str]:
    """Write the JSON, HTML and markdown reports; returns what was written, or why not."""
    out.mkdir(parents=True, exist_ok=True)
    data = report(results, verdicts)
    (out / "mutation-report.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    (out / "summary.md").write_text(markdown(results, verdicts), encoding="utf-8")
    notes = [f"reports: {out / 'mutation-report.json'}, {out / 'summary.md'}"]
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:  # a CI job summary, where the CI offers one
        with open(step_summary, "a", encoding="utf-8") as handle:
            handle.write(markdown(results, verdicts))
    if html:
        try:
            write_html(data, out / "mutation-report.html")
            notes.append(f"HTML report: {out / 'mutation-report.html'}")
        except NpmUnavailable as exc:
            notes.append(f"no HTML report: {exc}")
    return notes


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    catalog = mutant_catalog()
    options = Options(
        impls=tuple(args.impl),
        only=frozenset(args.mutant),
        fail_fast=args.fail_fast,
        workers=args.workers,
        timeout_factor=args.timeout_factor,
        timeout_min=args.timeout_min,
        baseline_timeout=args.baseline_timeout,
    )
    print(f"mutants: {', '.join(options.impls)} on {options.workers} workers", flush=True)
    with tempfile.TemporaryDirectory(prefix="elmo-mutants-") as logs:
        try:
            results = run(options, catalog, Path(logs), lambda line: print(f"  {line}", flush=True))
        except WorkerStartError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    unknown = sorted(
        options.only - {e["id"] for e in catalog} - {m.id for b in results.baselines.values() for m in b.mutants}
    )
    if unknown:
        print(f"error: --mutant {', '.join(unknown)}: not in the catalog and declared by no adapter", file=sys.stderr)
        return 2
    verdicts = judge(results)
    print()
    print(terminal(results, verdicts, color=sys.stdout.isatty()))
    for note in write_reports(results, verdicts, args.out, html=not args.no_html):
        print(note)
    return 1 if session_failures(results, verdicts) else 0


if __name__ == "__main__":
    sys.exit(main())
