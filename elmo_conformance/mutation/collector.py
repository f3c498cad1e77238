"""The pytest plugin a worker passes to pytest.main: it orders and selects the tests, streams each
outcome to the runner as it happens, stops early under --fail-fast, and (in the baseline run)
records which tests reach each mutant's replaced code."""

from __future__ import annotations

import cProfile
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

import pytest

from elmo_conformance.adapters.declared import CodeKey
from elmo_conformance.ground.outcomes import is_final
from elmo_conformance.mutation.model import TestOutcome

Send = Callable[[tuple], None]


class Coverage:
    """Which test calls which of the given functions. Each test runs under cProfile (in C, so
    far cheaper than a Python profile hook), and the functions it saw are looked up afterwards."""

    def __init__(self, keys: Iterable[CodeKey]) -> None:
        self.hits: dict[CodeKey, set[str]] = {key: set() for key in keys}
        self._profile: cProfile.Profile | None = None
        self._test: str | None = None

    def begin(self, nodeid: str) -> None:
        if self.hits:
            self._test = nodeid
            self._profile = cProfile.Profile(builtins=False)
            self._profile.enable()

    def end(self) -> None:
        if self._profile is None:
            return
        self._profile.disable()
        for entry in self._profile.getstats():
            code = entry.code
            if not isinstance(code, str):
                key = (code.co_filename, code.co_firstlineno, code.co_name)
                if key in self.hits:
                    self.hits[key].add(self._test)  # type: ignore[arg-type]  # set by begin()
        self._profile = self._test = None


class Calls:
    """The harness's calls into the implementation during the baseline: `Case._invoke`, the one way
    it reaches an implementation during a test, wrapped once while any watcher is registered. A
    watcher's `entered(method)` runs before each call and `left()` after it."""

    _watchers: ClassVar[list[Any]] = []
    _original: ClassVar[Callable | None] = None

    @classmethod
    def watch(cls, watcher: Any) -> None:
        from elmo_conformance.conformance.case import Case

        cls._watchers.append(watcher)
        if cls._original is not None:
            return
        original = cls._original = Case._invoke
        watchers = cls._watchers

        def _invoke(case, method, args, kwargs):  # noqa: ANN001, ANN202
            for watcher in watchers:
                watcher.entered(method)
            try:
                return original(case, method, args, kwargs)
            finally:
                for watcher in watchers:
                    watcher.left()

        Case._invoke = _invoke  # type: ignore[method-assign]

    @classmethod
    def unwatch(cls, watcher: Any) -> None:
        if watcher in cls._watchers:
            cls._watchers.remove(watcher)
        if not cls._watchers and cls._original is not None:
            from elmo_conformance.conformance.case import Case

            Case._invoke = cls._original  # type: ignore[method-assign]
            cls._original = None


class LineCoverage:
    """Which lines of the given Python files each test runs *inside its calls to the
    implementation* (spec §13.2, `Calls`): coverage.py's C tracer with one dynamic context per
    call, limited to those files.

    Lines the harness runs itself are in no test's set: the expected values it computes with the
    reference (`reference.bilm_layers(...)` in a test) and its inputs (`init_params` in
    conformance/data.py). A generated mutant runs in a served process of its own, which only the
    calls reach, so a mutant of such a line cannot change what any test observes; counted as
    reached, it ran the tests of every caller and survived them all. Lines run outside any test
    (while importing) are in no test's set either; the runner treats a module-level line as
    reached by every test."""

    def __init__(self, files: Iterable[str]) -> None:
        import coverage

        self.files = [str(f) for f in files]
        self._coverage = coverage.Coverage(data_file=None, include=self.files, config_file=False)
        self._started = False
        self._test: str | None = None

    def begin(self, nodeid: str) -> None:
        if not self._started:
            Calls.watch(self)
            self._coverage.start()
            self._started = True
        self._test = nodeid

    def end(self) -> None:
        self._test = None

    def entered(self, method: str) -> None:
        if self._test is not None:
            self._coverage.switch_context(self._test)

    def left(self) -> None:
        if self._test is not None:
            self._coverage.switch_context("")

    def result(self) -> dict[str, dict[int, list[str]]]:
        Calls.unwatch(self)
        if not self._started:
            return {}
        self._coverage.stop()
        data = self._coverage.get_data()
        out: dict[str, dict[int, list[str]]] = {}
        for file in data.measured_files():
            by_line = data.contexts_by_lineno(file)
            out[file] = {line: sorted(c for c in contexts if c) for line, contexts in by_line.items()}
        return out


class CallRecorder:
    """Which protocol functions each test calls on a process (`cmd:`, §15; `Calls`): the map from
    a compiled program's code to the tests that can reach it (spec §13.2)."""

    def __init__(self) -> None:
        self.calls: dict[str, set[str]] = {}
        self._test: str | None = None
        self._watching = False

    def begin(self, nodeid: str) -> None:
        if not self._watching:
            Calls.watch(self)
            self._watching = True
        self._test = nodeid

    def end(self) -> None:
        self._test = None

    def entered(self, method: str) -> None:
        if self._test is not None:
            self.calls.setdefault(method, set()).add(self._test)

    def left(self) -> None:
        pass

    def result(self) -> dict[str, list[str]]:
        Calls.unwatch(self)
        self._watching = False
        return {name: sorted(tests) for name, tests in self.calls.items()}


class Collector:
    def __init__(
        self,
        send: Send,
        order: list[str] | None = None,
        must_run: set[str] | frozenset[str] = frozenset(),
        fail_fast: bool = False,
        coverage: Coverage | None = None,
        shard: tuple[int, int] = (0, 1),
        lines: LineCoverage | None = None,
        calls: CallRecorder | None = None,
        program_lines: Any = None,  # gcov.ProgramLines: a program's lines each test ran
    ) -> None:
        self.send = send
        self.order = order
        self.shard = shard  # (i, n): keep every n-th collected test from the i-th
        self.must_run = set(must_run)
        self.fail_fast = fail_fast
        self.coverage = coverage
        self.tracers = [t for t in (coverage, lines, calls, program_lines) if t is not None]
        self.outcomes: dict[str, TestOutcome] = {}
        self.locations: dict[str, tuple[str, int]] = {}
        self.collect_errors: list[str] = []
        self.indices: dict[str, int] = {}
        self.adapters: dict[str, str] = {}  # nodeid -> the name of the adapter its case checks
        self.session: pytest.Session | None = None
        self.stopped = False  # --fail-fast stopped the session (pytest then exits with code 2)
        self.specs: dict[str, tuple[str, ...]] = {}  # nodeid -> spec sections

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collect_errors.append(f"{report.nodeid}: {report.longreprtext[-2000:]}")

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        self.indices = {item.nodeid: i for i, item in enumerate(items)}
        for item in items:
            marker = item.get_closest_marker("spec") if hasattr(item, "get_closest_marker") else None
            if marker is not None:
                self.specs[item.nodeid] = tuple(str(section) for section in marker.args)
            case = getattr(getattr(item, "callspec", None), "params", {}).get("case")
            name = getattr(getattr(case, "impl", None), "name", None)
            if isinstance(name, str):
                self.adapters[item.nodeid] = name
        first, every = self.shard
        keep = items[first::every]
        if self.order is not None:
            position = {nodeid: i for i, nodeid in enumerate(self.order)}
            keep = sorted((item for item in keep if item.nodeid in position), key=lambda item: position[item.nodeid])
        kept = {id(item) for item in keep}
        dropped = [item for item in items if id(item) not in kept]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = keep
        for item in items:
            path, line, _ = item.location
            self.locations[item.nodeid] = (str(item.path), (line or 0) + 1)

    def pytest_runtest_logstart(self, nodeid: str, location: tuple) -> None:
        self.send(("start", nodeid))
        for tracer in self.tracers:
            tracer.begin(nodeid)

    def pytest_runtest_logfinish(self, nodeid: str, location: tuple) -> None:
        for tracer in self.tracers:
            tracer.end()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not is_final(report):
            return
        outcome: str = report.outcome
        if hasattr(report, "wasxfail"):
            outcome = "xfailed" if report.skipped else "xpassed"
        elif report.failed and report.when != "call":
            outcome = "error"
        previous = self.outcomes.get(report.nodeid)
        if previous is not None and previous.killed:
            return  # a teardown report does not overwrite the call's failure
        file, line = self.locations.get(report.nodeid, (report.location[0], (report.location[1] or 0) + 1))
        result = TestOutcome(
            nodeid=report.nodeid,
            name=report.nodeid.split("::")[-1].split("[")[0],
            outcome=outcome,
            duration=round(report.duration, 6),
            file=file,
            line=line,
            message=None if report.passed else _message(report),
            index=self.indices.get(report.nodeid, 0),
            adapter=self.adapters.get(report.nodeid),
            spec=self.specs.get(report.nodeid, ()),
        )
        self.outcomes[report.nodeid] = result
        self.send(("test", result))
        if self.fail_fast and self.session is not None and self._stop_now():
            self.session.shouldstop = "--fail-fast: the mutant is killed and its expected killers have run"
            self.stopped = True

    def _stop_now(self) -> bool:
        killed = any(t.killed for t in self.outcomes.values())
        return killed and self.must_run <= set(self.outcomes)


MESSAGE_CHARS = 4000


def _message(report: pytest.TestReport) -> str:
    """What a failed test said: the exception's own text (the harness's message, which says
    what the spec expected and what came back), from its start; the whole report when there is
    no such text. The reproduce lines after it would name a mutant's deleted scratch folder."""
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])
    crash = getattr(report.longrepr, "reprcrash", None)
    text = getattr(crash, "message", None) or report.longreprtext
    return text[:MESSAGE_CHARS] + (" [...]" if len(text) > MESSAGE_CHARS else "")
