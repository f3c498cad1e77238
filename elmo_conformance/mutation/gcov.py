"""Which lines of a program each test runs (spec §13.2), measured with gcov.

A program behind the wire protocol (§15) is otherwise reached through the protocol functions each
test calls (reach.py): a line of a function that a handler reaches counts as run by every test of
that protocol function, a line the request loop or the wire format reaches by every test. For a
C or C++ program built with GCC's (or clang's) `--coverage`, the baseline measures instead, per
test, the lines and functions the program ran:

1. a *coverage copy* of the project (scratch/coverage-SHARD: the clean copy's files, build
   outputs left out) is built with the coverage build (`--coverage-build`; the built-in c: its
   own build at -O0 with `--coverage`);
2. the baseline's shard runs against the program of that copy; after each test the program's
   process is stopped (its standard input closed: it exits, and the instrumented program writes
   its counts, `*.gcda`, beside its objects) and the counts are set aside for that test; the next
   test's first call starts the program again. `gcov --json-format --stdout` reads the counts
   set aside, BATCH tests at a time (one gcov, in the sandbox, for many tests);
3. a line's tests are those that ran it at least once; a function's, those that entered it.

A mutant's tests (`line_reach`) are then the tests that ran its line, when gcov knows the line
and the line holds no label (a `case`, `default` or `goto` label: a mutated label changes which
values reach the code after it, including values that did not reach it before); else the tests
that entered its function (a declaration, a brace, a function's header); a preprocessor line, or
a line outside every function, is reached as reach.py says (every test, mostly). A line gcov knows
that no test ran is reached by no test: the mutant is NoCoverage.

What the counts cannot decide: a verdict. They only narrow the tests a mutant runs, and a mutant
that runs fewer tests can only be killed less often; a program that writes false counts can lower
its own score (NoCoverage and Survived count against it), never raise it. gcov itself runs in
the sandbox, as a build does: what it reads was written by the code under test. What a fresh
process per test cannot see: a line a test runs only in a process that earlier tests have used
(a cache filled, an arena grown by an earlier request) is counted only for the tests that run it
in a fresh process (§15.1 lets a process keep no state that changes a result); docs/mutation.md
says so.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from elmo_conformance.mutation.scratch import (
    BuildFailed,
    Target,
    build_command,
    contained,
    copy_project,
    program_in,
    program_path,
)

GCOV_TIMEOUT = 300.0  # seconds gcov may take to read one batch of counts
BATCH = 64  # tests whose counts one gcov reads
COUNTS = ".elmo-counts"  # in the coverage copy: each test's counts, set aside until gcov reads them
# A line that holds a label: `case X:`, `default:`, or a `goto` target at the start of the line.
_LABEL = re.compile(r"^\s*(?:case\b|default\s*:|[A-Za-z_]\w*\s*:(?!:))")
_PREPROCESSOR = re.compile(r"^\s*#")


class CoverageFailed(Exception):
    """The coverage build or gcov failed: the run goes on with the protocol functions' reach."""


@dataclass
class ProgramLines:
    """The tracer of one baseline shard (collector.Collector calls `begin` and `end` around each
    test): the program's lines and functions each test ran, by the user's file names."""

    copy_root: Path  # the coverage copy, where the program writes its counts
    root: Path  # the user's project root: files are named as the mutants name them
    gcov: str
    lines: dict[str, dict[int, set[str]]] = field(default_factory=dict)  # file -> line -> tests that ran it
    # file -> (first line, last line) of a function -> the tests that entered it
    functions: dict[str, dict[tuple[int, int], set[str]]] = field(default_factory=dict)
    problem: str | None = None  # why the counts of some test could not be read: the shard's coverage is dropped
    _test: str | None = None
    _tests: list[str] = field(default_factory=list)  # the Nth test whose counts were set aside
    _read: int = 0  # how many of them gcov has read

    def begin(self, nodeid: str) -> None:
        self._test = nodeid

    def end(self) -> None:
        """After a test: stop the program (it writes its counts as it exits) and set its counts
        aside under COUNTS/N, the Nth test's, with their notes files beside them; gcov reads them
        BATCH tests at a time (one sandboxed gcov for many tests)."""
        test, self._test = self._test, None
        if test is None or self.problem is not None:
            return
        stop_programs()
        counts = self._fresh_counts()
        if not counts:
            return  # the test started no program (a test of the suite itself, a skipped one)
        index = len(self._tests)
        self._tests.append(test)
        try:
            for path in counts:
                moved = self.copy_root / COUNTS / str(index) / path.relative_to(self.copy_root)
                moved.parent.mkdir(parents=True, exist_ok=True)
                os.replace(path, moved)
                notes = path.with_suffix(".gcno")
                if notes.is_file():
                    os.link(notes, moved.with_suffix(".gcno"))
        except OSError as exc:
            self.problem = f"{test}: its counts could not be set aside: {exc}"
            return
        if len(self._tests) - self._read >= BATCH:
            self._flush()

    def _fresh_counts(self) -> list[Path]:
        found = []
        for folder, dirs, files in os.walk(self.copy_root):
            if folder == str(self.copy_root):
                dirs[:] = [d for d in dirs if d != COUNTS]
            found += [Path(folder) / name for name in files if name.endswith(".gcda")]
        return sorted(found)

    def _flush(self) -> None:
        """gcov over the counts set aside since the last flush; each document to its test."""
        folder = self.copy_root / COUNTS
        pending = range(self._read, len(self._tests))
        self._read = len(self._tests)
        counts = sorted(p for index in pending for p in (folder / str(index)).rglob("*.gcda"))
        try:
            if counts and self.problem is None:
                for document in read_counts(self.gcov, self.copy_root, counts):
                    parts = Path(document.get("data_file", "")).parts
                    if len(parts) < 2 or parts[0] != COUNTS or not parts[1].isdigit() or int(parts[1]) not in pending:
                        raise CoverageFailed(f"gcov named a counts file that was not given: {parts!r}")
                    self._record(self._tests[int(parts[1])], document)
        except CoverageFailed as exc:
            self.problem = str(exc)
        finally:
            for index in pending:
                shutil.rmtree(folder / str(index), ignore_errors=True)

    def _record(self, test: str, document: dict) -> None:
        folder = os.path.join(self.copy_root, document.get("current_working_directory") or "")
        for entry in document.get("files", []):
            file = self._user_file(os.path.join(folder, entry.get("file", "")))
            if file is None:
                continue
            by_line = self.lines.setdefault(file, {})
            for line in entry.get("lines", []):
                tests = by_line.setdefault(int(line["line_number"]), set())
                if line.get("count", 0) > 0:
                    tests.add(test)
            spans = self.functions.setdefault(file, {})
            for function in entry.get("functions", []):
                tests = spans.setdefault((int(function["start_line"]), int(function["end_line"])), set())
                if function.get("execution_count", 0) > 0:
                    tests.add(test)

    def _user_file(self, path: str) -> str | None:
        """The user's file for a path gcov names in the copy, or None (a system header)."""
        relative = os.path.relpath(os.path.normpath(path), self.copy_root)
        if relative.startswith(os.pardir):
            return None
        return str(self.root / relative)

    def result(self) -> tuple[dict[str, dict[int, list[str]]], dict[str, list[tuple[int, int, list[str]]]]]:
        """The lines (every line gcov knows, with the tests that ran it) and the functions (their
        spans, with the tests that entered them)."""
        self._flush()
        lines = {file: {line: sorted(tests) for line, tests in by_line.items()} for file, by_line in self.lines.items()}
        functions = {
            file: [(first, last, sorted(tests)) for (first, last), tests in sorted(spans.items())]
            for file, spans in self.functions.items()
        }
        return lines, functions


def coverage_copy(target: Target, folder: Path) -> tuple[str, Path]:
    """A coverage copy of the clean copy in `folder` (its sources: build outputs are left out, and
    the program, were it copied, removed), built with the coverage build: the program's `cmd:`
    argument there, and the copy. Raises CoverageFailed."""
    assert target.coverage is not None and target.template is not None
    shutil.rmtree(folder, ignore_errors=True)
    copy_root = folder / "src"
    copy_project(Path(target.template), copy_root)
    program = program_path(target, copy_root)
    if program is not None:
        program.unlink(missing_ok=True)
    try:
        contained(target.coverage.build, copy_root, target.build_timeout, "coverage build")
    except BuildFailed as exc:
        raise CoverageFailed(str(exc)) from None
    if program is not None and not program.exists():
        raise CoverageFailed(f"the coverage build exited 0 but did not produce the program {program.name}")
    return program_in(target, copy_root), copy_root


def stop_programs() -> None:
    """Stop every `cmd:` program the harness keeps (its adapter stays: the next call starts it again)."""
    from elmo_conformance.adapters import loading

    for key, process in list(loading._PROCESSES.items()):
        if isinstance(key, str) and key.startswith("cmd:"):
            process.stop()  # type: ignore[attr-defined]


def read_counts(gcov: str, copy_root: Path, counts: list[Path]) -> list[dict]:
    """gcov's JSON documents (one per counts file) for `counts`, gcov run in the sandbox as a build is."""
    command = f"{gcov} --json-format --stdout " + " ".join(shlex.quote(str(p.relative_to(copy_root))) for p in counts)
    argv, env = build_command(command, copy_root, {})
    try:
        done = subprocess.run(argv, cwd=copy_root, env=env, capture_output=True, timeout=GCOV_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CoverageFailed(f"{gcov} did not run: {exc}") from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip()[-600:]
        raise CoverageFailed(f"{command} exited with code {done.returncode}: {said}")
    documents = []
    for text in done.stdout.decode("utf-8", "replace").splitlines():
        if text.strip():
            try:
                documents.append(json.loads(text))
            except ValueError:
                raise CoverageFailed(f"{gcov} wrote something that is not JSON: {text[:200]!r}") from None
    return documents


@lru_cache(maxsize=64)
def _source_lines(file: str) -> tuple[str, ...]:
    try:
        return tuple(Path(file).read_text(encoding="utf-8", errors="replace").splitlines())
    except OSError:
        return ()


def line_reach(
    file: str,
    line: int,
    lines: dict[str, dict[int, list[str]]],
    functions: dict[str, list[tuple[int, int, list[str]]]],
) -> set[str] | None:
    """The tests that reach line `line` of `file` by the counts (as the module docstring says), or
    None when the counts cannot say (the caller then asks reach.py)."""
    by_line = lines.get(file)
    if by_line is None:
        return None  # not a file of the program's build (or never measured)
    source = _source_lines(file)
    text = source[line - 1] if 0 < line <= len(source) else ""
    if _PREPROCESSOR.match(text):
        return None  # a macro may be used anywhere below it
    if line in by_line and not _LABEL.match(text):
        return set(by_line[line])
    innermost = None
    for first, last, tests in functions.get(file, []):
        if first <= line <= last and (innermost is None or first >= innermost[0]):
            innermost = (first, tests)
    if innermost is not None:
        return set(innermost[1])
    return None
