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

import os
import shlex
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, settings

from elmo_conformance.adapters.loading import (
    AdapterLoadError,
    LoadedAdapter,
    available_builtins,
    load_adapter,
    load_mutant,
)
from elmo_conformance.adapters.wire.client import set_deadlines
from elmo_conformance.conformance.case import Case
from elmo_conformance.conformance.falsifying import failing_example
from elmo_conformance.conformance.isolation import Guard
from elmo_conformance.conformance.keys import ACTIVE, CASES, DTYPES, FINISHED, RUN_ID, RUN_REPORT
from elmo_conformance.conformance.options import pytest_addoption  # noqa: F401  (the plugin's hook, defined beside the options)
from elmo_conformance.conformance.passtable import PassTable
from elmo_conformance.conformance.reporting import Recorder, refuse, start_reports
from elmo_conformance.conformance.reproduce import reproduce_commands
from elmo_conformance.conformance.xfails import Xfails
from elmo_conformance.fixtures.manifest import verify_manifest
from elmo_conformance.ground.resources import FINISHED_ENV, RUN_ID_ENV, RUN_REPORT_ENV, suite_dir
from elmo_conformance.processes import sandbox
from elmo_conformance.spec import components
from elmo_conformance.spec.catalog import describe, sections

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
    return config.stash.get(ACTIVE, False)


def _in_suite(path: Path) -> bool:
    """A test file of the suite (not a user's test collected in the same run)."""
    return suite_dir() in Path(path).resolve().parents


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from elmo_conformance.conformance import hooks

    pluginmanager.add_hookspecs(hooks)


def pytest_configure(config: pytest.Config) -> None:
    if not targets_suite(config):
        return
    config.stash[ACTIVE] = True
    config.stash[FINISHED] = os.environ.pop(FINISHED_ENV, "")  # not inherited by adapter processes
    # The entry point's run id and its private copy of the report (elmo_conformance.runner.running).
    config.stash[RUN_ID] = os.environ.pop(RUN_ID_ENV, "")
    config.stash[RUN_REPORT] = os.environ.pop(RUN_REPORT_ENV, "")
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
    # Process adapters' deadlines, the first handshake's included, from --call-timeout (§11.1).
    set_deadlines(config.getoption("call_timeout"))
    configure_sandbox(config)
    try:
        loaded = [load_adapter(arg, isolate=not guard.in_process) for arg in impls]
        same_name(loaded)
        mutant = config.getoption("mutant", None)
        if mutant is not None:
            loaded = [load_mutant(adapter, mutant) for adapter in loaded]
    except AdapterLoadError as exc:
        refuse(config, str(exc))
    config.stash[CASES] = loaded
    config.pluginmanager.register(Recorder(config), "elmo-conformance-recorder")
    config.pluginmanager.register(PassTable(config, loaded, DTYPES), "elmo-conformance-pass-table")
    if xfails is not None:
        config.pluginmanager.register(xfails, "elmo-conformance-xfails")


def configure_sandbox(config: pytest.Config) -> None:
    """The sandbox of the adapter processes this run starts (elmo_conformance/processes/sandbox.py), from
    --no-sandbox and --sandbox-limit (the first process started says once when it is off).
    --in-process runs Python adapters in this process, outside any sandbox: for trusted code only."""
    limits = sandbox.Limits()
    for text in config.getoption("sandbox_limit", None) or []:
        try:
            limits = limits.with_option(text)
        except ValueError as exc:
            refuse(config, str(exc))
    sandbox.configure(off=bool(config.getoption("no_sandbox", False)) or None, limits=limits)


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


def pytest_unconfigure(config: pytest.Config) -> None:
    """pytest has finished: tell the console command, which then gives the process a few seconds to
    exit (a thread an adapter left running could keep it alive) before it stops it."""
    finished = config.stash.get(FINISHED, "")
    if finished:
        try:
            Path(finished).write_text("finished\n", encoding="utf-8")
        except OSError:
            pass


def pytest_report_header(config: pytest.Config) -> list[str]:
    return [
        f"adapter {a.name} ({a.arg}): {', '.join(sorted(a.capabilities))}; device {a.device}"
        + (f"; unavailable: {a.unavailable}, every test skipped" if a.unavailable else "")
        for a in config.stash.get(CASES, [])
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
    for impl in config.stash[CASES]:
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
    case = getattr(item, "callspec", None) and item.callspec.params.get("case")  # type: ignore[attr-defined]
    if not isinstance(case, Case) or case.impl.unavailable:
        return
    absent = components.missing(components.of_test(item), case.impl.capabilities)
    if absent:
        item.stash[components.NOT_IMPLEMENTED_KEY] = absent
        item.add_marker(pytest.mark.skip(reason=components.reason(case.impl.name, absent)), append=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    if not _active(item.config):
        return
    report = outcome.get_result()
    report.spec_sections = _marker_args(item, "spec") if isinstance(item, pytest.Function) else ()
    case = getattr(item, "callspec", None) and item.callspec.params.get("case")  # type: ignore[attr-defined]
    report.case_name = str(case) if isinstance(case, Case) else None
    report.not_implemented = list(item.stash.get(components.NOT_IMPLEMENTED_KEY, ())) if report.skipped else []  # type: ignore[arg-type]
    if report.failed and hasattr(report.longrepr, "addsection"):
        example = failing_example(call.excinfo.value if call.excinfo else None)
        if example:  # a property test's draws (§14): pytest.fail(pytrace=False) would drop them
            report.longrepr.addsection("failing example", example)
        report.longrepr.addsection("spec", f"This test checks {describe(report.spec_sections)}")
        report.longrepr.addsection("reproduce", reproduce_commands(item))
