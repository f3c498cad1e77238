"""The pytest plugin: --impl, per-dtype cases, spec markers, capability skips, reports.

It is registered once per pytest run, under its module name `elmo_conformance.conformance.plugin`:
by the `pytest11` entry point of an installed package (a wheel, an editable install), by `-p` with
that name, or, in a checkout without an install, by conformance/conftest.py's `pytest_plugins`;
pytest skips a plugin name it has already registered, so whichever comes first is the only one.
Installed, it is loaded into every pytest run of the environment, and it stays inert (options
only: no fixture check, no adapter, no report, no change to collection) unless the run targets
the suite: `--impl` or `--mutant` given, or a path it collects inside the suite.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import sys
import threading
import time
from pathlib import Path
from typing import NoReturn

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, settings

from elmo_conformance.fixtures.manifest import verify_manifest
from elmo_conformance.resources import FINISHED_ENV, PLUGIN, RUN_ID_ENV, RUN_REPORT_ENV, project_relative, suite_dir

from . import components
from .case import CallAbandoned, Case
from .falsifying import failing_example
from .loading import AdapterLoadError, LoadedAdapter, available_builtins, load_adapter, load_mutant
from .passtable import PassTable
from .report import document, margins
from .spec import describe, sections
from .xfails import Xfails

DTYPES = ("float64", "float32")
_CASES = pytest.StashKey[list]()
_ACTIVE = pytest.StashKey[bool]()
_FINISHED = pytest.StashKey[str]()
_RUN_ID = pytest.StashKey[str]()
_RUN_REPORT = pytest.StashKey[str]()

# The default profile: derandomized (a run is reproducible), and no shrinking: a failing example is
# reported as found, with its labelled draws (strategies.py), so a failing run costs about what a
# passing one does (shrinking a failing biLM example used to take minutes). `--hypothesis-profile=
# shrink` shrinks it fully (to the smallest failing example), `thorough` runs many more examples.
_NO_SHRINKING = (Phase.explicit, Phase.reuse, Phase.generate, Phase.target)
settings.register_profile(
    "conformance",
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=12,
    print_blob=True,
    phases=_NO_SHRINKING,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("shrink", parent=settings.get_profile("conformance"), phases=tuple(Phase))
settings.register_profile("thorough", deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("elmo-conformance")
    group.addoption(
        "--impl",
        action="append",
        default=[],
        help="adapter to check: a built-in name (numpy, torch, ...), an installed adapter's name (entry point group "
        "elmo_conformance.adapters), a .py file with an `adapter`, package.module:attr, or 'cmd:PROGRAM ARGS'; "
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
    group.addoption(
        "--in-process",
        action="store_true",
        help="import and call Python adapters in this process (for pdb; --pdb and --trace imply it); by default "
        "each runs in a child process behind the protocol server, so that a hang or a crash fails one test (§11)",
    )
    html_help = "write the run's self-contained HTML page to PATH (--report PATH.json also writes PATH.html)"
    try:
        if importlib.util.find_spec("pytest_html") is not None:  # installed, it may load after this plugin
            raise ValueError("--html belongs to pytest-html")
        group.addoption("--html", "--conformance-html", dest="conformance_html", metavar="PATH", help=html_help)
    except ValueError:  # another plugin (pytest-html) owns --html
        group.addoption("--conformance-html", dest="conformance_html", metavar="PATH", help=html_help)


def targets_suite(config: pytest.Config) -> bool:
    """Whether this pytest run checks an implementation with the suite: `--impl` or `--mutant`
    given, or a collected path inside the suite (`pytest conformance`, a test id of it, or
    `--pyargs elmo_conformance.conformance...`). Any other run leaves the plugin inert."""
    if config.getoption("impl", None) or config.getoption("mutant", None) is not None:
        return True
    suite = suite_dir()
    for arg in config.args:
        target = str(arg).split("::")[0]
        if config.getoption("pyargs", False) and target.startswith("elmo_conformance.conformance"):
            return True
        path = Path(config.invocation_params.dir, target).resolve()
        if path == suite or suite in path.parents:
            return True
    return False


def _active(config: pytest.Config) -> bool:
    return config.stash.get(_ACTIVE, False)


def _in_suite(path: Path) -> bool:
    """A test file of the suite (not a user's test collected in the same run)."""
    return suite_dir() in Path(path).resolve().parents


def pytest_configure(config: pytest.Config) -> None:
    if not targets_suite(config):
        return
    config.stash[_ACTIVE] = True
    config.stash[_FINISHED] = os.environ.pop(FINISHED_ENV, "")  # not inherited by adapter processes
    # The entry point's run id and its private copy of the report (elmo_conformance.running).
    config.stash[_RUN_ID] = os.environ.pop(RUN_ID_ENV, "")
    config.stash[_RUN_REPORT] = os.environ.pop(RUN_REPORT_ENV, "")
    config.addinivalue_line("markers", "spec(*sections): the spec sections a conformance test checks")
    config.addinivalue_line("markers", "requires(capability): skip unless the adapter declares it (§11)")
    config.addinivalue_line("markers", "dtypes(*names): run only in these dtypes")
    config.addinivalue_line(
        "markers", "components(*names): the components of §11 a conformance test calls (default: all of them)"
    )
    # Hypothesis imports libcst on a failure; some libcst versions warn about mypy_extensions on import.
    config.addinivalue_line("filterwarnings", "ignore:mypy_extensions.TypedDict is deprecated:DeprecationWarning")
    if config.getoption("hypothesis_profile", None) is None:
        settings.load_profile("conformance")
    start_reports(config)
    problems = verify_manifest()
    if problems:
        refuse(config, "fixtures refused, no test was run:\n  " + "\n  ".join(problems))
    xfails = None
    if config.getoption("xfails_file"):  # read before any adapter process starts
        try:
            xfails = Xfails.from_files(config.getoption("xfails_file"))
        except pytest.UsageError as exc:
            refuse(config, str(exc))
    guard = Guard(config)
    config.pluginmanager.register(guard, "elmo-conformance-guard")
    impls = config.getoption("impl") or available_builtins()
    try:
        loaded = [load_adapter(arg, isolate=not guard.in_process) for arg in impls]
        same_name(loaded)
        mutant = config.getoption("mutant", None)
        if mutant is not None:
            loaded = [load_mutant(adapter, mutant) for adapter in loaded]
    except AdapterLoadError as exc:
        refuse(config, str(exc))
    config.stash[_CASES] = loaded
    config.pluginmanager.register(Recorder(config), "elmo-conformance-recorder")
    config.pluginmanager.register(PassTable(config, loaded, DTYPES), "elmo-conformance-pass-table")
    if xfails is not None:
        config.pluginmanager.register(xfails, "elmo-conformance-xfails")


def same_name(loaded: list[LoadedAdapter]) -> None:
    """Refuse two adapters of one name: their test ids, pass-table columns and reproduce commands
    would be one."""
    seen: dict[str, LoadedAdapter] = {}
    for adapter in loaded:
        first = seen.setdefault(adapter.name, adapter)
        if first is not adapter:
            raise AdapterLoadError(
                f"--impl {shlex.quote(first.arg)} and --impl {shlex.quote(adapter.arg)}: both adapters are named "
                f"{adapter.name!r}; test ids and reports need one name per adapter (give one another `name`, §11)"
            )


class Guard:
    """What the harness does about adapters that outlive a call: it runs Python adapters in a
    child process unless --in-process (or --pdb, --trace) is given; it fails a test whose call was
    abandoned (timed out, or its process died) at once, without letting Hypothesis retry it; at
    the end it stops every adapter process, and, in a `pytest` run whose in-process adapter left
    non-daemon threads running, exits without waiting for them (Python would wait forever)."""

    def __init__(self, config: pytest.Config) -> None:
        self.in_process = bool(
            config.getoption("in_process", False)
            or config.getoption("usepdb", False)
            or config.getoption("trace", False)
        )
        self.threads = set(threading.enumerate())
        self.exitstatus = 0

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item):
        try:
            return (yield)
        except CallAbandoned as exc:
            message = str(exc)
        pytest.fail(message, pytrace=False)  # outside the except block: no exception chain

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.exitstatus = int(exitstatus)

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        from .process import stop_all

        stop_all()
        leaked = [t for t in threading.enumerate() if t not in self.threads and t.is_alive() and not t.daemon]
        if not leaked or not _pytest_is_the_program():
            return
        names = ", ".join(repr(t.name) for t in leaked[:5])
        sys.stdout.flush()
        sys.stderr.write(
            f"elmo-conformance: the adapter left {len(leaked)} non-daemon thread(s) running ({names}); "
            f"exiting with status {self.exitstatus} without waiting for them\n"
        )
        sys.stderr.flush()
        os._exit(self.exitstatus)


def _pytest_is_the_program() -> bool:
    """True in `pytest ...` and `python -m pytest ...`, not when a program calls pytest.main."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    program = Path(sys.argv[0]).name if sys.argv else ""
    return getattr(spec, "name", None) in ("pytest", "pytest.__main__") or program in ("pytest", "py.test")


def _report_paths(config: pytest.Config) -> list[tuple[str, Path]]:
    """The reports this run writes: the user's --report and --pass-table, and the entry point's
    private copy of the report ("run_report")."""
    paths = [(option, Path(value)) for option in ("report", "pass_table") if (value := config.getoption(option, None))]
    private = config.stash.get(_RUN_REPORT, "")
    return paths + ([("run_report", Path(private))] if private else [])


def _stamp(config: pytest.Config, record: dict) -> dict:
    """`record` with this run's id (when the entry point gave one): the supervisor judges a run only
    by a report that carries it."""
    run_id = config.stash.get(_RUN_ID, "")
    return {**record, "run_id": run_id} if run_id else record


def start_reports(config: pytest.Config) -> None:
    """Before anything runs: refuse report paths that cannot be written, and replace a previous
    run's reports with one that says this run has not finished, so that a run that stops early
    (refused, interrupted, or its process killed) never leaves an older passing report in place."""
    for option, path in _report_paths(config):
        flag = "--" + option.replace("_", "-")
        placeholder = json.dumps(_stamp(config, {"suite": "elmo-conformance", "complete": False})) + "\n"
        if path.is_dir():
            raise pytest.UsageError(f"{flag} {path}: is a directory; give a file path such as {path / 'report.json'}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(placeholder, encoding="utf-8")
        except OSError as exc:
            raise pytest.UsageError(f"{flag} {path}: cannot be written: {exc.strerror or exc}") from None


def refuse(config: pytest.Config, reason: str) -> NoReturn:
    """Stop before any test with `reason`, recording the refusal in the --report file."""
    for option, path in _report_paths(config):
        if option in ("report", "run_report"):
            record = {"suite": "elmo-conformance", "complete": True, "refused": reason, "exit_status": 4, "tests": []}
            path.write_text(json.dumps(_stamp(config, record), indent=1) + "\n", encoding="utf-8")
        else:
            path.unlink(missing_ok=True)
    raise pytest.UsageError(reason)


def pytest_unconfigure(config: pytest.Config) -> None:
    """pytest has finished: tell the console command, which then gives the process a few seconds to
    exit (a thread an adapter left running could keep it alive) before it stops it."""
    finished = config.stash.get(_FINISHED, "")
    if finished:
        try:
            Path(finished).write_text("finished\n", encoding="utf-8")
        except OSError:
            pass


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
    if "case" not in metafunc.fixturenames or not _active(metafunc.config) or not _in_suite(metafunc.definition.path):
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
    if not _active(config):
        return
    known = sections()
    for item in items:
        if not _in_suite(item.path):
            continue
        cited = _marker_args(item, "spec") if isinstance(item, pytest.Function) else ()
        if not cited:
            raise pytest.UsageError(
                f"{item.nodeid}: every conformance test must cite its spec sections (@pytest.mark.spec)"
            )
        unknown = [n for n in cited if n not in known]
        if unknown:
            raise pytest.UsageError(f"{item.nodeid}: cites unknown spec section(s) {unknown}")
        mark_not_implemented(item)


def mark_not_implemented(item: pytest.Item) -> None:
    """Skip a case whose adapter does not declare a component the test calls (§11), as "not
    implemented"; this reason comes before a dtype or capability skip, never before `unavailable`."""
    wrong = components.unknown(m for marker in item.iter_markers(components.MARKER) for m in marker.args)
    if wrong:
        raise pytest.UsageError(f"{item.nodeid}: names unknown component(s) {wrong} (spec/protocol.json)")
    case = getattr(item, "callspec", None) and item.callspec.params.get("case")
    if not isinstance(case, Case) or case.impl.unavailable:
        return
    absent = components.missing(components.of_test(item), case.impl.capabilities)
    if absent:
        item.stash[components.NOT_IMPLEMENTED_KEY] = absent
        item.add_marker(pytest.mark.skip(reason=components.reason(case.impl.name, absent)), append=False)


def _reproduce(item: pytest.Item) -> str:
    """The commands that rerun this one test, one a line: through nox in a checkout, through the
    console command, and with plain pytest from the user's own directory (where nox would not
    install the packages their adapter needs)."""
    case = getattr(item, "callspec", None) and item.callspec.params.get("case")
    impl = f" --impl {shlex.quote(case.impl.arg)}" if isinstance(case, Case) else ""
    mutant = item.config.getoption("mutant", None)
    impl += f" --mutant {shlex.quote(mutant)}" if mutant else ""
    test = item.nodeid.partition("::")[2]
    try:  # the same test id whatever the rootdir: conformance/test_bilm.py::...
        module = project_relative(item.path)
    except ValueError:
        module = item.nodeid.partition("::")[0]
    nodeid = f"{module}::{test}"
    pyarg = "elmo_conformance." + module.removesuffix(".py").replace("/", ".") + f"::{test}"
    return "\n".join(
        [
            f"nox -s conformance --{impl} {shlex.quote(nodeid)}",
            f"elmo-conformance{impl} {shlex.quote(nodeid)}",
            f"python -m pytest -p {PLUGIN}{impl} --pyargs {shlex.quote(pyarg)}",
        ]
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    if not _active(item.config):
        return
    report = outcome.get_result()
    report.spec_sections = _marker_args(item, "spec") if isinstance(item, pytest.Function) else ()
    case = getattr(item, "callspec", None) and item.callspec.params.get("case")
    report.case_name = str(case) if isinstance(case, Case) else None
    report.not_implemented = list(item.stash.get(components.NOT_IMPLEMENTED_KEY, ())) if report.skipped else []
    if report.failed and hasattr(report.longrepr, "addsection"):
        example = failing_example(call.excinfo.value if call.excinfo else None)
        if example:  # a property test's draws (§14): pytest.fail(pytrace=False) would drop them
            report.longrepr.addsection("failing example", example)
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
    """Collects every test's outcome and its comparisons' tolerance margins (§10), and at the end
    of the session writes the --report JSON (spec/schemas/report.schema.json, version 2) with the
    run's HTML page beside it, and the --html page (conformance/report)."""

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
                "outcome": "xfailed" if hasattr(report, "wasxfail") and report.skipped else report.outcome,
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
        private = self.config.stash.get(_RUN_REPORT, "")
        if not path and not html and not private:
            return
        adapters = [
            {"impl": a.arg, "name": a.name, "capabilities": sorted(a.capabilities), "device": a.device}
            for a in self.config.stash[_CASES]
        ]
        report = document.build(
            adapters,
            self.results,
            exitstatus,
            time.perf_counter() - self.started,
            self.margins.as_json(),
            self.config.invocation_params.args,
        )
        report["collected"] = self.collected
        report = _stamp(self.config, report)
        pages = [document.html_beside(path)] if path else []
        pages += [Path(html)] if html else []
        if pages:  # the page is part of the report: written first, so that a failure shows in the JSON too
            self.page_error = self._write_pages(report, pages)
            if self.page_error:
                report["exit_status"] = max(int(exitstatus), int(pytest.ExitCode.INTERNAL_ERROR))
                report["page_error"] = self.page_error
                session.exitstatus = report["exit_status"]
        if path:
            try:
                self.written.append(str(document.write(report, path)))
            except OSError as exc:
                self.page_error = f"--report {path}: cannot be written: {exc.strerror or exc}"
                session.exitstatus = max(int(exitstatus), int(pytest.ExitCode.INTERNAL_ERROR))
                report["exit_status"] = int(session.exitstatus)
        if private:
            document.write(report, private)

    def _write_pages(self, report: dict, pages: list[Path]) -> str | None:
        """Write the run's HTML page at each of `pages`; why not, or None."""
        try:
            from .report import render

            page = render.run_page(report)
        except ImportError as exc:  # the page needs jinja2 and matplotlib (requirements.txt)
            return f"the HTML page was not written: {exc} (pip install -r requirements.txt)"
        for target in dict.fromkeys(pages):
            try:
                self.written.append(str(render.write(page, target)))
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
