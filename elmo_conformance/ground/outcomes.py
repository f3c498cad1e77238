"""A test's outcome as pytest reports it, by one rule for everything that reads pytest's reports:
the harness's JSON report (spec §11.1, conformance/reporting.py), the runner's in-process results
(``run(..., where="here")``), the mutation collector and the batch's journal.

Only pytest's report objects are read (duck-typed): this module imports nothing.
"""

from __future__ import annotations

from typing import Any


def is_final(report: Any) -> bool:
    """The report that decides a test's outcome: its call, or a setup or teardown that broke it."""
    return (
        report.when == "call"
        or (report.when == "setup" and not report.passed)
        or (report.when == "teardown" and report.failed)
    )


def outcome(report: Any) -> str:
    """The outcome a final report records: pytest's, an expected failure named xfailed."""
    return "xfailed" if hasattr(report, "wasxfail") and report.skipped else str(report.outcome)
