"""The records the workers send back and the runner judges; plain, picklable dataclasses."""

from __future__ import annotations

from dataclasses import dataclass, field

from elmo_conformance.adapters.declared import MutantInfo

FAILED = ("failed", "error")  # outcomes that kill a mutant


@dataclass
class TestOutcome:
    __test__ = False  # not a pytest test class

    nodeid: str
    name: str  # the test function, e.g. test_padding_never_leaks
    outcome: str  # passed, failed, error, skipped, xfailed
    duration: float
    file: str
    line: int  # 1-based
    message: str | None = None
    index: int = 0  # position in the collection order
    adapter: str | None = None  # the name of the adapter its case checks; None: the suite checking itself
    spec: tuple[str, ...] = ()  # the spec sections the test checks (@pytest.mark.spec)

    @property
    def killed(self) -> bool:
        return self.outcome in FAILED


@dataclass
class Baseline:
    """The clean adapter's run: every test's outcome, and which tests reach each mutant's code."""

    impl: str
    name: str = ""
    error: str | None = None  # the adapter could not be loaded or the run broke
    unavailable: str | None = None  # why the adapter cannot run here (§11): its tests all skip
    components: tuple[str, ...] = ()  # the components it implements (§11); empty: not known, all
    mutants: list[MutantInfo] = field(default_factory=list)
    tests: dict[str, TestOutcome] = field(default_factory=dict)
    coverage: dict[str, list[str]] = field(default_factory=dict)  # mutant id -> nodeids
    lines: dict[str, dict[int, list[str]]] = field(default_factory=dict)  # file -> line -> nodeids that ran it
    calls: dict[str, list[str]] = field(default_factory=dict)  # protocol function -> nodeids that called it
    # A program's lines measured with gcov (gcov.py): `lines` then holds every line gcov knows (a line
    # no test ran with no nodeids), and `functions` each function's span with the tests that entered it.
    functions: dict[str, list[tuple[int, int, list[str]]]] = field(default_factory=dict)
    measured: str = ""  # "gcov" when a program's lines were measured; empty otherwise
    coverage_problem: str | None = None  # why they were not, when they were to be
    duration: float = 0.0
    exit_code: int = 0

    @property
    def failures(self) -> list[TestOutcome]:
        return [t for t in self.tests.values() if t.killed]

    @property
    def cases(self) -> list[TestOutcome]:
        """The tests that check this adapter: a case of it, as the collector recorded (pytest
        escapes non-ASCII names in node ids, so the name is not looked for there), or, for an
        outcome that does not say, its case in the id. A test with no adapter case (the suite
        checking itself) cannot tell a mutant apart."""
        case = f"[{self.name}-"
        return [t for t in self.tests.values() if (t.adapter == self.name if t.adapter else case in t.nodeid)]

    @property
    def ran(self) -> list[TestOutcome]:
        """The tests of this adapter that were not skipped."""
        return [t for t in self.cases if t.outcome != "skipped"]


@dataclass
class MutantRun:
    """One mutant through the suite. status is Stryker's: Killed, Survived, Timeout,
    RuntimeError, NoCoverage, CompileError, or Ignored (only what the user excluded). Every mutant
    is run: the equivalence pre-check only records what it saw change (`difference`); a survivor
    in whose outputs it saw none is flagged `possibly_equivalent`."""

    impl: str
    mutant: str
    status: str = "Survived"
    tests: dict[str, TestOutcome] = field(default_factory=dict)
    selected: list[str] = field(default_factory=list)  # the nodeids it was to run, in order
    running: str | None = None  # the test in progress when it timed out or crashed
    reason: str | None = None
    difference: str | None = None  # what the equivalence pre-check saw change
    duration: float = 0.0
    prechecked: bool = False  # the equivalence pre-check ran on it
    cached: bool = False  # the result comes from an earlier run's cache (incremental mode)
    warm: bool = False  # judged in a fork of a warm worker's session (warm.py), not a fresh one

    @property
    def possibly_equivalent(self) -> bool:
        """A survivor whose outputs the pre-check saw no difference in (§13.1)."""
        return self.status == "Survived" and self.prechecked and self.difference is None

    @property
    def killers(self) -> list[str]:
        return [nodeid for nodeid, t in self.tests.items() if t.killed]
