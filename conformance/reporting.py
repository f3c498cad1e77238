"""The run's reports (spec §11.1, spec/schemas/report.schema.json): before anything runs, every
report path is checked and replaced by one that says the run has not finished; a refusal is
recorded; at the end the Recorder writes the JSON report, its HTML page, and the entry point's
private copy, each stamped with the run's id."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import NoReturn

import pytest

from elmo_conformance.conformance import margins, record
from elmo_conformance.conformance.keys import CASES, RUN_ID, RUN_REPORT
from elmo_conformance.ground.outcomes import is_final, outcome
from elmo_conformance.ground.resources import PAGES_PLUGIN


def report_paths(config: pytest.Config) -> list[tuple[str, Path]]:
    """The reports this run writes: the user's --report and --pass-table, and the entry point's
    private copy of the report ("run_report")."""
    paths = [(option, Path(value)) for option in ("report", "pass_table") if (value := config.getoption(option, None))]
    private = config.stash.get(RUN_REPORT, "")
    return paths + ([("run_report", Path(private))] if private else [])


def stamp(config: pytest.Config, record: dict) -> dict:
    """`record` with this run's id (when the entry point gave one): the supervisor judges a run only
    by a report that carries it."""
    run_id = config.stash.get(RUN_ID, "")
    return {**record, "run_id": run_id} if run_id else record


def start_reports(config: pytest.Config) -> None:
    """Before anything runs: refuse report paths that cannot be written, and replace a previous
    run's reports with one that says this run has not finished, so that a run that stops early
    (refused, interrupted, or its process killed) never leaves an older passing report in place."""
    for option, path in report_paths(config):
        flag = "--" + option.replace("_", "-")
        placeholder = json.dumps(stamp(config, {"suite": "elmo-conformance", "complete": False})) + "\n"
        if path.is_dir():
            raise pytest.UsageError(f"{flag} {path}: is a directory; give a file path such as {path / 'report.json'}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(placeholder, encoding="utf-8")
        except OSError as exc:
            raise pytest.UsageError(f"{flag} {path}: cannot be written: {exc.strerror or exc}") from None


def refuse(config: pytest.Config, reason: str) -> NoReturn:
    """Stop before any test with `reason`, recording the refusal in the --report file."""
    for option, path in report_paths(config):
        if option in ("report", "run_report"):
            record = {"suite": "elmo-conformance", "complete": True, "refused": reason, "exit_status": 4, "tests": []}
            path.write_text(json.dumps(stamp(config, record), indent=1) + "\n", encoding="utf-8")
        else:
            path.unlink(missing_ok=True)
    raise pytest.UsageError(reason)


class Recorder:
    """Collects every test's outcome and its comparisons' tolerance margins (§10), and at the end
    of the session writes the --report JSON (spec/schemas/report.schema.json, version 2) with the
    run's HTML page beside it, and the --html page (elmo_conformance/pages)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.results: list[dict] = []
        self.started = time.perf_counter()
        self.margins = margins.MarginCollector()
        self.written: list[str] = []
        self.page_error: str | None = None
        self.collected: int | None = None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self.config.getoption("report", None) or self.config.getoption("conformance_html", None):
            margins.activate(self.margins)  # only when written for a user: a mutation worker's runs skip the cost

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """The number of tests this run is to run, recorded in the report as `collected`: the
        console command checks that the report has an outcome for each."""
        self.collected = 0 if self.config.getoption("collectonly", False) else len(session.items)

    def pytest_runtest_logstart(self, nodeid: str, location: tuple) -> None:
        self.margins.current_test = nodeid

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not is_final(report):
            return
        self.results.append(
            {
                "nodeid": report.nodeid,
                "test": report.nodeid.split("::")[-1].split("[")[0],
                "case": getattr(report, "case_name", None),
                "sections": list(getattr(report, "spec_sections", ())),
                "outcome": outcome(report),
                "when": report.when,
                "duration_s": round(report.duration, 6),
                "message": _message(report),
                "reproduce": _longrepr_section(report, "reproduce"),
                **({"not_implemented": report.not_implemented} if getattr(report, "not_implemented", None) else {}),
            }
        )

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if margins.active() is self.margins:
            margins.activate(None)
        path = self.config.getoption("report", None)
        html = self.config.getoption("conformance_html", None)
        private = self.config.stash.get(RUN_REPORT, "")
        if not path and not html and not private:
            return
        adapters = [
            {"impl": a.arg, "name": a.name, "capabilities": sorted(a.capabilities), "device": a.device}
            for a in self.config.stash[CASES]
        ]
        report = record.build(
            adapters,
            self.results,
            exitstatus,
            time.perf_counter() - self.started,
            self.margins.as_json(),
            self.config.invocation_params.args,
        )
        report["collected"] = self.collected
        report = stamp(self.config, report)
        pages = [record.html_beside(path)] if path else []
        pages += [Path(html)] if html else []
        if pages:  # the page is part of the report: written first, so that a failure shows in the JSON too
            self.page_error = self._write_pages(report, pages)
            if self.page_error:
                report["exit_status"] = max(int(exitstatus), int(pytest.ExitCode.INTERNAL_ERROR))
                report["page_error"] = self.page_error
                session.exitstatus = report["exit_status"]
        if path:
            try:
                self.written.insert(0, str(record.write(report, path)))  # the JSON first, then its pages
            except OSError as exc:
                self.page_error = f"--report {path}: cannot be written: {exc.strerror or exc}"
                session.exitstatus = max(int(exitstatus), int(pytest.ExitCode.INTERNAL_ERROR))
                report["exit_status"] = int(session.exitstatus)
        if private:
            record.write(report, private)

    def _write_pages(self, report: dict, pages: list[Path]) -> str | None:
        """Write the run's HTML page (conformance/hooks.py) at each of `pages`; why not, or None."""
        try:
            page = self.config.hook.pytest_conformance_run_page(report=report)
        except ImportError as exc:  # the page needs jinja2 and matplotlib (requirements.txt)
            return f"the HTML page was not written: {exc} (pip install -r requirements.txt)"
        if page is None:
            return (
                f"the HTML page was not written: no plugin writes it (pytest did not load {PAGES_PLUGIN}; "
                f"add -p {PAGES_PLUGIN})"
            )
        for target in dict.fromkeys(pages):
            try:
                self.written.append(str(record.write_text(target, page)))
            except OSError as exc:
                return f"the HTML page {target} cannot be written: {exc.strerror or exc}"
        return None

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.written:
            terminalreporter.write_line("report written to " + ", ".join(self.written))
        if self.page_error:
            terminalreporter.write_line(self.page_error, yellow=True)


def _longrepr_section(report: pytest.TestReport, title: str) -> str | None:
    """A section the plugin added to a failure's report (`spec`, `reproduce`), or None."""
    for name, content, *_ in getattr(report.longrepr, "sections", None) or ():
        if name == title:
            return content.strip()
    return None


def _message(report: pytest.TestReport) -> str | None:
    if report.passed:
        return None
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])
    return report.longreprtext[-4000:]
