"""The pytest plugin: --impl, per-dtype cases, spec markers, capability skips, reports.

conformance/conftest.py imports these hooks, so `pytest conformance --impl numpy` loads them.
"""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path
from typing import NoReturn

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

from elmo_conformance.fixtures.manifest import verify_manifest

from .case import Case
from .loading import AdapterLoadError, available_builtins, load_adapter, load_mutant
from .passtable import PassTable
from .spec import describe, sections
from .xfails import Xfails

DTYPES = ("float64", "float32")
_CASES = pytest.StashKey[list]()

settings.register_profile(
    "conformance",
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=12,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("thorough", deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("elmo-conformance")
    group.addoption(
        "--impl",
        action="append",
        default=[],
        help="adapter to check: a built-in name (numpy, torch), a .py file with an `adapter`, or package.module:attr; "
        "repeatable; default: every built-in adapter whose dependencies are installed",
    )
    group.addoption("--dtype", action="append", choices=DTYPES, default=[], help="only these dtypes (repeatable)")
    group.addoption("--report", metavar="PATH", help="write a JSON report of every test outcome to PATH")
    group.addoption(
        "--call-timeout", type=float, default=120.0, metavar="SECONDS", help="fail an adapter call that takes longer"
    )
    group.addoption(
        "--xfails-file",
        action="append",
        default=[],
        metavar="PATH",
        help="expected failures: test patterns with '# reason' comments, one a line (conformance/xfails.py); repeatable",
    )
    group.addoption("--pass-table", metavar="PATH", help="write the pass table (tests x adapter-dtype) as JSON to PATH")
    group.addoption(
        "--mutant",
        metavar="ID",
        help="check each --impl adapter's mutant ID (adapter.mutants[ID](), §11, §13) in place of the adapter",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "spec(*sections): the spec sections a conformance test checks")
    config.addinivalue_line("markers", "requires(capability): skip unless the adapter declares it (§11)")
    config.addinivalue_line("markers", "dtypes(*names): run only in these dtypes")
    if config.getoption("hypothesis_profile", None) is None:
        settings.load_profile("conformance")
    start_reports(config)
    problems = verify_manifest()
    if problems:
        refuse(config, "fixtures refused, no test was run:\n  " + "\n  ".join(problems))
    impls = config.getoption("impl") or available_builtins()
    try:
        loaded = [load_adapter(arg) for arg in impls]
        mutant = config.getoption("mutant", None)
        if mutant:
            loaded = [load_mutant(adapter, mutant) for adapter in loaded]
    except AdapterLoadError as exc:
        refuse(config, str(exc))
    config.stash[_CASES] = loaded
    config.pluginmanager.register(Recorder(config), "elmo-conformance-recorder")
    config.pluginmanager.register(PassTable(config, loaded, DTYPES), "elmo-conformance-pass-table")
    if config.getoption("xfails_file"):
        config.pluginmanager.register(Xfails.from_files(config.getoption("xfails_file")), "elmo-conformance-xfails")


def _report_paths(config: pytest.Config) -> list[tuple[str, Path]]:
    return [(option, Path(value)) for option in ("report", "pass_table") if (value := config.getoption(option, None))]


def start_reports(config: pytest.Config) -> None:
    """Before anything runs: refuse report paths that cannot be written, and replace a previous
    run's reports with one that says this run has not finished, so that a run that stops early
    (refused, interrupted, or its process killed) never leaves an older passing report in place."""
    for option, path in _report_paths(config):
        flag = "--" + option.replace("_", "-")
        if path.is_dir():
            raise pytest.UsageError(f"{flag} {path}: is a directory; give a file path such as {path / 'report.json'}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"suite": "elmo-conformance", "complete": False}) + "\n", encoding="utf-8")
        except OSError as exc:
            raise pytest.UsageError(f"{flag} {path}: cannot be written: {exc.strerror or exc}") from None


def refuse(config: pytest.Config, reason: str) -> NoReturn:
    """Stop before any test with `reason`, recording the refusal in the --report file."""
    for option, path in _report_paths(config):
        if option == "report":
            record = {"suite": "elmo-conformance", "complete": True, "refused": reason, "exit_status": 4, "tests": []}
            path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        else:
            path.unlink(missing_ok=True)
    raise pytest.UsageError(reason)


def pytest_report_header(config: pytest.Config) -> list[str]:
    return [
        f"adapter {a.name} ({a.arg}): {', '.join(sorted(a.capabilities))}; device {a.device}"
        + (f"; unavailable: {a.unavailable}, every test skipped" if a.unavailable else "")
        for a in config.stash.get(_CASES, [])
    ]


def _marker_args(node: pytest.Function | pytest.Metafunc, name: str) -> tuple[str, ...]:
    marker = (
        node.definition.get_closest_marker(name) if isinstance(node, pytest.Metafunc) else node.get_closest_marker(name)
    )
    return tuple(marker.args) if marker else ()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "case" not in metafunc.fixturenames:
        return
    config = metafunc.config
    wanted = tuple(config.getoption("dtype")) or DTYPES
    only = _marker_args(metafunc, "dtypes") or DTYPES
    needs = _marker_args(metafunc, "requires")
    usable = [dt for dt in DTYPES if dt in wanted and dt in only]
    timeout = config.getoption("call_timeout")
    params = []
    for impl in config.stash[_CASES]:
        declared = [dt for dt in usable if dt in impl.capabilities]
        if not usable:
            reason = f"runs in {' and '.join(only)} only, which --dtype excludes"
        elif not declared:
            reason = f"needs dtype {' or '.join(usable)}, which {impl.name} does not declare (§11)"
        else:
            missing = [cap for cap in needs if cap not in impl.capabilities]
            reason = f"{impl.name} does not declare the capability {missing[0]!r} (§11)" if missing else ""
        if impl.unavailable:  # e.g. "no CUDA device": nothing of this adapter runs here (§11)
            reason = impl.unavailable
        for dt in declared or [(usable or only)[0]]:
            case = Case(impl, np.dtype(dt), timeout)
            marks = [pytest.mark.skip(reason=reason)] if reason else []
            params.append(pytest.param(case, id=str(case), marks=marks))
    metafunc.parametrize("case", params)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    known = sections()
    for item in items:
        cited = _marker_args(item, "spec") if isinstance(item, pytest.Function) else ()
        if not cited:
            raise pytest.UsageError(
                f"{item.nodeid}: every conformance test must cite its spec sections (@pytest.mark.spec)"
            )
        unknown = [n for n in cited if n not in known]
        if unknown:
            raise pytest.UsageError(f"{item.nodeid}: cites unknown spec section(s) {unknown}")


def _reproduce(item: pytest.Item) -> str:
    case = getattr(item, "callspec", None) and item.callspec.params.get("case")
    impl = f" --impl {shlex.quote(case.impl.arg)}" if isinstance(case, Case) else ""
    mutant = item.config.getoption("mutant", None)
    impl += f" --mutant {shlex.quote(mutant)}" if mutant else ""
    return f"nox -s conformance --{impl} {shlex.quote(item.nodeid)}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    report.spec_sections = _marker_args(item, "spec") if isinstance(item, pytest.Function) else ()
    case = getattr(item, "callspec", None) and item.callspec.params.get("case")
    report.case_name = str(case) if isinstance(case, Case) else None
    if report.failed and hasattr(report.longrepr, "addsection"):
        report.longrepr.addsection("spec", f"This test checks {describe(report.spec_sections)}")
        report.longrepr.addsection("reproduce", _reproduce(item))


def is_final(report: pytest.TestReport) -> bool:
    """The report that decides a test's outcome: its call, or a setup or teardown that broke it."""
    return (
        report.when == "call"
        or (report.when == "setup" and not report.passed)
        or (report.when == "teardown" and report.failed)
    )


class Recorder:
    """Collects every test's outcome and writes the --report JSON at the end of the session."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.results: list[dict] = []
        self.started = time.perf_counter()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not is_final(report):
            return
        self.results.append(
            {
                "nodeid": report.nodeid,
                "test": report.nodeid.split("::")[-1].split("[")[0],
                "case": getattr(report, "case_name", None),
                "sections": list(getattr(report, "spec_sections", ())),
                "outcome": "xfailed" if hasattr(report, "wasxfail") and report.skipped else report.outcome,
                "when": report.when,
                "duration_s": round(report.duration, 6),
                "message": _message(report),
            }
        )

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        path = self.config.getoption("report", None)
        if not path:
            return
        summary: dict[str, int] = {}
        for result in self.results:
            summary[result["outcome"]] = summary.get(result["outcome"], 0) + 1
        report = {
            "suite": "elmo-conformance",
            "complete": True,
            "spec_version": "1.0",
            "adapters": [
                {"impl": a.arg, "name": a.name, "capabilities": sorted(a.capabilities), "device": a.device}
                for a in self.config.stash[_CASES]
            ],
            "exit_status": int(exitstatus),
            "duration_s": round(time.perf_counter() - self.started, 3),
            "summary": summary,
            "tests": self.results,
        }
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


def _message(report: pytest.TestReport) -> str | None:
    if report.passed:
        return None
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])
    return report.longreprtext[-4000:]
