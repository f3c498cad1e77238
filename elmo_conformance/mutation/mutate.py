"""elmo-conformance mutate --impl ARG [--source PATH...] [--root DIR] [--build CMD] [--out DIR]
    [--workers N | --scheduler ADDRESS | --scheduler-file PATH]

Mutation-test an implementation without writing its mutants (spec §13.2): universalmutator's
rules generate mutants from the implementation's own source; each is written into a scratch copy
of the project (scratch.py: the user's files are only read), built there when there is a build,
and run through the tests that reach the mutated code until the first kill, on local workers or,
with --scheduler / --scheduler-file, on a Dask cluster's (remote.py; docs/mutation.md).

A mutant is Killed when a test of the suite failed on it that passed on the clean implementation
run the same way (the control run: the clean copy, served or built as every mutant is); Timeout
when it ran past its deadline; Survived when its tests passed; NoCoverage when no test reaches
it; CompileError when its build failed; RuntimeError when it could not be judged (the harness
could not start it, or its run broke before a verdict); Ignored when the user marked it equivalent
(equivalents.py), its compiled program is the clean one's or another mutant's (programs.py), or it
changes only annotations that nothing evaluates or reads (inert.py). The score is killed and timed out of Killed + Timeout + Survived + NoCoverage:
CompileError, RuntimeError and Ignored stay out of it (docs/mutation.md).

Exit status: 0 when the mutants were judged (survivors are reported, not failed) and the score
is at least --fail-under; 1 when the clean baseline or the control run fails, when more than
--max-errors percent of the mutants could not be judged, or when the score is below --fail-under;
2 for a usage error; 130 when interrupted (the report says it is partial). With --rerun ID: 0
when the mutant survives the suite, 1 when a test kills it, 3 when it cannot be judged.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import shlex
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from elmo_conformance.adapters.loading import BUILTINS, PROGRAMS
from elmo_conformance.executor import cluster
from elmo_conformance.ground.version import __version__
from elmo_conformance.mutation.__main__ import FACTOR, SECONDS, _cores
from elmo_conformance.mutation.cache import Cache, OutLocked, digest, from_cache, lock_out, tree_digest
from elmo_conformance.mutation.deadlines import TEST_TIMEOUT_MIN, deadline_of
from elmo_conformance.mutation.equivalents import (
    FILE_NAME,
    Equivalent,
    EquivalentsError,
    default_path,
    entry_text,
    load,
)
from elmo_conformance.mutation.gcov import line_reach
from elmo_conformance.mutation.generate import (
    EngineMissing,
    Generated,
    describe_aside,
    generate,
    language_of,
    require_extra,
    source_files,
)
from elmo_conformance.mutation.html import NpmUnavailable, write_html
from elmo_conformance.mutation.inert import Inert, project_python_files
from elmo_conformance.mutation.model import Baseline, MutantInfo, MutantRun
from elmo_conformance.mutation.nearby import Nearby, file_region, program_region, python_region
from elmo_conformance.mutation.pool import WorkerStartError, run_jobs
from elmo_conformance.mutation.reach import DEFINITIONS, EVERY, ONE, ProgramMap, program_reach, python_reach
from elmo_conformance.mutation.runner import SESSION_OVERHEAD_S, Options, Plan, Results
from elmo_conformance.mutation.sampling import Drawn, draw, interval
from elmo_conformance.mutation.scratch import (
    BuildFailed,
    Copied,
    ProgramCoverage,
    Target,
    UsageError,
    baseline_copy,
    build,
    build_folders,
    check_root,
    copy_project,
    describe_copy,
    find_artifact,
    find_root,
    program_path,
)
from elmo_conformance.mutation.verdicts import Verdict, baseline_problem
from elmo_conformance.mutation.worker import SUITE, BaselineJob, GeneratedJob, MutantJob
from elmo_conformance.processes import sandbox

CACHE = "mutate-cache.json"
DETECTED = ("Killed", "Timeout")
# More RuntimeErrors than this share of the mutants run fails the run (--max-errors). The control
# run proves the environment first; this is the second guard, for an environment that breaks
# mutant processes only (the typing backport made 95-100 % of them RuntimeErrors). A mutant that
# breaks an adapter's declaration or a program's handshake is a RuntimeError too: 3-4 % of the
# built-in C's samples, 8 % of tests/examples/outside_mix.py's whole set, under 1 % of the
# reference's.
MAX_ERRORS = 20.0
VALID = ("Killed", "Timeout", "Survived", "NoCoverage")  # Stryker's: what the score counts
CONTROL = "control"  # the id of the control run's job: the clean copy, run as every mutant is
INTERRUPTED = 130


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="elmo-conformance mutate",
        description="Mutation-test an implementation: mutants generated from its own source (spec §13.2).",
    )
    parser.add_argument(
        "--impl",
        required=True,
        help=f"the implementation, as --impl takes it: a .py file, package.module:attr, cmd:PROGRAM, or a built-in "
        f"({', '.join(BUILTINS)})",
    )
    parser.add_argument(
        "--source",
        action="append",
        default=[],
        type=Path,
        metavar="PATH",
        help="a file or folder to mutate (repeatable); default: the adapter's own file, a built-in's own sources",
    )
    parser.add_argument(
        "--root",
        type=Path,
        metavar="DIR",
        help="the project root, copied for each mutant (default: the nearest folder above the sources with a "
        "project file such as pyproject.toml, Cargo.toml or Makefile; a built-in's own folder)",
    )
    parser.add_argument(
        "--build",
        metavar="CMD",
        help="shell command that rebuilds a program in the scratch copy after each mutation (cwd: the copy)",
    )
    parser.add_argument(
        "--check",
        metavar="CMD",
        help="shell command that checks that a mutant compiles, cheaper than --build and run before it in the copy "
        "({file}: the mutated file); a mutant it refuses is a CompileError without a build (default for the "
        "built-in c: its compiler's -fsyntax-only; '' for none)",
    )
    parser.add_argument(
        "--artifact",
        metavar="PATH",
        help="a file the build makes (relative to the project root) whose bytes decide the program's behaviour; "
        "a mutant that makes the clean one's bytes, or another mutant's, is set aside (default: the cmd: program "
        "when it is a compiled binary; docs/mutation.md)",
    )
    parser.add_argument(
        "--coverage-build",
        metavar="CMD",
        help="shell command that builds the program instrumented for gcov (GCC's or clang's --coverage) in a fresh "
        "copy of the project: the baseline then measures the lines each test runs, and each mutant runs only the "
        "tests that ran its line (default for the built-in c: its build at -O0 with --coverage; docs/mutation.md)",
    )
    parser.add_argument(
        "--gcov",
        metavar="CMD",
        default="gcov",
        help="the gcov that reads the coverage build's counts (default %(default)s; for clang: 'llvm-cov gcov')",
    )
    parser.add_argument(
        "--no-line-coverage",
        action="store_true",
        help="do not measure a program's lines: a mutant runs every test of the protocol functions that reach it",
    )
    parser.add_argument(
        "--build-timeout",
        type=SECONDS,
        default=900.0,
        metavar="SECONDS",
        help="for the clean build (default 900); a mutant's build gets --timeout-min + --timeout-factor x the clean one",
    )
    parser.add_argument(
        "--equivalents",
        type=Path,
        metavar="FILE",
        help=f"the mutants you marked equivalent, each with its reason (TOML; default: {FILE_NAME} in the project "
        "root when it is there; docs/mutation.md): Ignored, not run, out of the score",
    )
    parser.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run the builds and the mutants without the sandbox (bubblewrap, docs/sandbox.md), with your rights",
    )
    parser.add_argument("--out", type=Path, default=Path("reports/mutate"), help="report folder (default %(default)s)")
    parser.add_argument("-k", dest="select", metavar="EXPR", help="only the suite's tests pytest -k EXPR selects")
    parser.add_argument(
        "--workers",
        type=int,
        default=_cores(),
        help="worker processes on this machine (default: cores, %(default)s); with --scheduler, the cluster's threads",
    )
    cluster.add_options(parser, "the mutants (and the baseline and control run)")
    parser.add_argument("--timeout-factor", type=FACTOR, default=3.0, help="x the tests' baseline time (default 3)")
    parser.add_argument("--timeout-min", type=SECONDS, default=20.0, help="seconds added to it (default 20)")
    parser.add_argument(
        "--test-timeout-min",
        type=SECONDS,
        default=TEST_TIMEOUT_MIN,
        metavar="SECONDS",
        help="each test of a warm mutant run times out after these + --timeout-factor x its own baseline time "
        f"(default {TEST_TIMEOUT_MIN:g})",
    )
    parser.add_argument("--baseline-timeout", type=SECONDS, default=900.0, metavar="SECONDS", help="(default 900)")
    parser.add_argument(
        "--max-mutants", type=int, metavar="N", help="run a seeded random sample of N of the generated mutants"
    )
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    parser.add_argument(
        "--max-errors",
        type=float,
        default=MAX_ERRORS,
        metavar="PERCENT",
        help=f"fail the run when more than this percentage of the mutants could not be judged (default {MAX_ERRORS:g}; "
        "docs/mutation.md)",
    )
    parser.add_argument(
        "--fail-under", type=float, metavar="SCORE", help="exit 1 when the mutation score is below SCORE percent"
    )
    parser.add_argument("--mutant", action="append", default=[], metavar="ID", help="only this mutant (repeatable)")
    parser.add_argument(
        "--no-cache", action="store_true", help="re-run every mutant (default: reuse unchanged results)"
    )
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="run each Python mutant in a pytest session and adapter process of its own, not forked from a warm worker",
    )
    parser.add_argument("--no-html", action="store_true", help="do not write the HTML report (it needs npm)")
    parser.add_argument("--list", action="store_true", help="list the generated mutants and exit")
    parser.add_argument(
        "--rerun", metavar="MUTANT_ID", help="run the whole suite on this one mutant, as a survivor's line says"
    )
    parser.add_argument("--show", metavar="MUTANT_ID", help="print the mutant as a diff of its file and exit")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error(f"--workers: expected an integer >= 1, got {args.workers}")
    if args.max_mutants is not None and args.max_mutants < 1:
        parser.error(f"--max-mutants: expected an integer >= 1, got {args.max_mutants}")
    for name in ("max_errors", "fail_under"):
        value = getattr(args, name)
        if value is not None and not 0 <= value <= 100:
            parser.error(f"--{name.replace('_', '-')}: expected a percentage from 0 to 100, got {value:g}")
    return args


# --- what is mutated ----------------------------------------------------------------------------


def _module_file(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        raise UsageError(f"--impl: cannot find the source of the module {module!r}; name it with --source")
    return Path(spec.origin)


def default_check_c() -> str:
    """The built-in c's compile check of one mutated file: its compiler and flags, -fsyntax-only
    (the compiler's front end, about a tenth of -O3's time; what it refuses, the build refuses)."""
    build_module = importlib.import_module(BUILTINS["c"][0])
    flags = [flag for flag in build_module.flags(False) if flag not in ("-Werror", *build_module.OPTIMIZED)]
    return f"{shlex.join(build_module.compiler())} {shlex.join(flags)} -fsyntax-only {{file}}"


def default_build_c(root: Path) -> str:
    """The built-in c's build in a copy: its compiler and flags, without -Werror (a warning is
    not a failed build), into ./elmo-c; incremental, as make would be: a .c file newer than its
    .o is compiled again (in a mutant's copy, only the mutated one), then everything is linked."""
    build_module = importlib.import_module(BUILTINS["c"][0])
    flags = [flag for flag in build_module.flags(False) if flag != "-Werror"]
    cc = f"{shlex.join(build_module.compiler())} {shlex.join(flags)}"
    return (
        f'for f in *.c; do [ "${{f%.c}}.o" -nt "$f" ] || {cc} -c "$f" -o "${{f%.c}}.o" || exit 1; done; '
        f"{cc} -o {build_module.PROGRAM} *.o -lm"
    )


def default_coverage_build_c() -> str:
    """The built-in c's coverage build (gcov.py): its build, unoptimized (-O0: each line's code
    stays on its line) and instrumented with --coverage, compiling every file."""
    build_module = importlib.import_module(BUILTINS["c"][0])
    flags = [f for f in build_module.flags(False) if f not in ("-Werror", *build_module.OPTIMIZED)] + ["-O0"]
    cc = f"{shlex.join(build_module.compiler())} {shlex.join(flags)} --coverage"
    return f'for f in *.c; do {cc} -c "$f" -o "${{f%.c}}.o" || exit 1; done; {cc} -o {build_module.PROGRAM} *.o -lm'


def coverage_option(args: argparse.Namespace, program: str | None, builtin: bool) -> ProgramCoverage | None:
    """How a program's lines are measured (--coverage-build, --gcov), or None: a Python
    implementation, --no-line-coverage, a program with no coverage build, or the built-in c where
    gcov is not found (its default then goes without a word: nothing was asked)."""
    if args.coverage_build and args.no_line_coverage:
        raise UsageError("--coverage-build and --no-line-coverage: give one (measure a program's lines, or do not)")
    if args.no_line_coverage or program is None:
        if args.coverage_build:
            raise UsageError("--coverage-build: a Python implementation's lines are measured by coverage.py already")
        return None
    build = args.coverage_build or (default_coverage_build_c() if builtin else None)
    if build is None:
        return None
    words = shlex.split(args.gcov)
    if not words or shutil.which(words[0]) is None:
        if args.coverage_build or args.gcov != "gcov":
            raise UsageError(
                f"--gcov {args.gcov}: not found on PATH; --coverage-build needs the gcov of the compiler that builds "
                "it (or give --no-line-coverage)"
            )
        return None
    return ProgramCoverage(build, args.gcov)


def served_path() -> tuple[str, ...]:
    """The PYTHONPATH of a clean run's served adapter (adapters/loading.py): a mutant is
    served with the same one, mapped into its copy. Never a site-packages folder: there it would
    come before the standard library, and a backport installed beside the suite (the `typing`
    package that the `mutate` extra pulls in) would shadow it."""
    from elmo_conformance.adapters.loading import _child_environment

    entries = [p for p in _child_environment().get("PYTHONPATH", "").split(os.pathsep) if p]
    return tuple(p for p in entries if os.path.basename(p.rstrip(os.sep)) not in ("site-packages", "dist-packages"))


def resolve(args: argparse.Namespace) -> tuple[Target, list[Path]]:
    impl = args.impl
    given = [Path(os.path.abspath(path)) for path in args.source]
    for path in given:
        if not path.exists():
            raise UsageError(f"--source {path}: no such file or folder")
    program = build_command = None
    check_command: str | None = args.check
    builtin_folder: Path | None = None
    if impl.startswith("cmd:"):
        if not given:
            raise UsageError("--impl cmd:...: name the program's sources with --source (and its build with --build)")
        program, build_command = impl, args.build
        python = False
    elif impl in PROGRAMS:  # the built-in c
        here = Path(importlib.import_module(BUILTINS[impl][0]).HERE)
        # its own sources, less the declared mutants' code (mutants.c, §13.1), which a generated run never reaches
        if not given:
            given, builtin_folder = sorted(p for p in here.glob("*.c") if p.name != "mutants.c"), here
        program = f"cmd:{here / importlib.import_module(BUILTINS[impl][0]).PROGRAM}"
        build_command = args.build or default_build_c(here)
        if not args.build and check_command is None:
            check_command = default_check_c()
        python = False
    else:
        python = True
        if args.build or args.check:
            option = "--build" if args.build else "--check"
            raise UsageError(f"{option}: a Python implementation is imported, not built; {option} is for a program")
        if not given:
            if impl == "numpy":  # the reference, through the numpy adapter (spec §13.2)
                given = sorted(_module_file("elmo_conformance.reference").parent.glob("*.py"))
                builtin_folder = given[0].parent
            elif impl in BUILTINS:
                folder = _module_file(BUILTINS[impl][0]).parent
                given, builtin_folder = sorted(p for p in folder.glob("*.py") if p.name != "mutants.py"), folder
            elif impl.endswith(".py"):
                given = [Path(os.path.abspath(impl))]
            elif ":" in impl:
                given = [Path(os.path.abspath(_module_file(impl.split(":", 1)[0])))]
            else:
                raise UsageError(f"--impl {impl}: name the files to mutate with --source")
    files = source_files(given)
    if not files:
        raise UsageError("no source file of a language universalmutator knows in " + ", ".join(map(str, given)))
    if args.root is not None:
        root = Path(os.path.abspath(args.root))
    elif builtin_folder is not None:
        root = builtin_folder
    else:
        anchors = [*given]
        if python and impl.endswith(".py") and os.path.isfile(impl):
            anchors.append(Path(os.path.abspath(impl)))
        root = find_root(anchors)
    check_root(root, files, args.out)
    target = Target(
        impl,
        python,
        str(root),
        build_command,
        program,
        cwd=os.getcwd(),
        import_path=served_path() if python else (),
        artifact=artifact_option(args.artifact, root, build_command),
        check=check_command or None,
        coverage=coverage_option(args, program, builtin=impl in PROGRAMS and not args.build),
    )
    return target, files


def artifact_option(artifact: str | None, root: Path, build: str | None) -> str | None:
    """--artifact as a path relative to the project root, or a UsageError saying what it must be."""
    if artifact is None:
        return None
    if not build:
        raise UsageError(f"--artifact {artifact}: only a --build makes an artifact; give --build too")
    path = os.path.abspath(artifact)
    if path == str(root) or not Path(path).is_relative_to(root):
        raise UsageError(
            f"--artifact {artifact}: expected a file inside the project root {root}, as the build makes it"
        )
    return Path(os.path.relpath(path, root)).as_posix()


def mutants_of(target: Target, files: list[Path], aside: Counter[str] | None = None) -> list[Generated]:
    found: list[Generated] = []
    for path in files:
        found += generate(path, relative=target.relative(str(path)), aside=aside)
    return found


# --- what a cached status depends on ---------------------------------------------------------


def suite_version() -> str:
    """The suite's version and a hash of its tests, harness and spec files: a cached result is
    valid only for the suite that produced it."""
    parts: list[str | bytes] = [__version__]
    spec = Path(str(importlib.import_module("elmo_conformance.spec").__file__)).parent
    for path in sorted([*SUITE.rglob("*.py"), *spec.glob("*.json")]):
        parts += [path.relative_to(path.parents[1]).as_posix(), path.read_bytes()]
    return digest(*parts)[:16]


def verdict_options(args: argparse.Namespace) -> dict[str, object]:
    """The options that can change a mutant's status (the cache's key holds them)."""
    return {
        "select": args.select,
        "timeout_factor": args.timeout_factor,
        "timeout_min": args.timeout_min,
        "test_timeout_min": args.test_timeout_min,
        "build_timeout": args.build_timeout,
        "root": str(args.root) if args.root else None,
        "artifact": args.artifact,
        "check": args.check,
        "line_coverage": None if args.no_line_coverage else [args.coverage_build, args.gcov],
        "sandbox": sandbox.active(),
    }


# --- the run ------------------------------------------------------------------------------------


class Progress:
    """done / total of the mutants that run, kills, survivors and the time left: one terminal line
    (tqdm) on a terminal, and a plain line every PLAIN_EVERY seconds otherwise (a CI log)."""

    PLAIN_EVERY = 10.0

    def __init__(self, enabled: bool, stream: Any = None) -> None:
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.bar: Any = None
        self.counts: Counter[str] = Counter()
        self.total = self.done_count = 0
        self.started = self.shown = 0.0

    def start(self, total: int) -> None:
        self.total, self.started, self.shown = total, time.monotonic(), time.monotonic()
        if self.enabled and total and self.stream.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="mutant", dynamic_ncols=True, file=self.stream, smoothing=0.1)

    def _counts(self) -> str:
        c = self.counts
        detected = f"detected {c['Killed'] + c['Timeout']} (killed {c['Killed']}, timeout {c['Timeout']})"
        return f"{detected}, survived {c['Survived']}, no coverage {c['NoCoverage']}"

    def done(self, run: MutantRun, ran: bool = True) -> None:
        """One more mutant judged; `ran`: it ran here (not from the cache, not unreached)."""
        self.counts[run.status] += 1
        if not ran:
            return
        self.done_count += 1
        if self.bar is not None:
            self.bar.set_postfix_str(self._counts(), refresh=False)
            self.bar.update(1)
        elif self.enabled and self.total and time.monotonic() - self.shown >= self.PLAIN_EVERY:
            self.shown = time.monotonic()
            elapsed = self.shown - self.started
            left = elapsed / self.done_count * (self.total - self.done_count)
            print(
                f"mutate: {self.done_count}/{self.total} mutants run ({self._counts()}), about {left:.0f} s left",
                file=self.stream,
                flush=True,
            )

    def write(self, line: str) -> None:
        if self.bar is not None:
            self.bar.write(line, file=self.stream)
        else:
            print(line, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class GeneratedPlan(Plan):
    """The runner's scheduler for generated mutants: the control run (the clean copy served or
    built as every mutant is, through every test) beside the baseline (recording what each test
    reaches); then each mutant through the tests that reach it and passed in both, fastest first,
    to the first kill."""

    def __init__(
        self,
        results: Results,
        target: Target,
        mutants: list[Generated],
        select: str | None,
        scratch: Path,
        cache: Cache,
        context: str,
        progress: Progress,
    ) -> None:
        super().__init__(results, progress.write)
        self.target, self.mutants, self.select, self.scratch = target, mutants, select, scratch
        self.cache, self.context, self.bar = cache, context, progress
        self.build_time = 0.0
        self.marked: dict[str, Equivalent] = {}  # mutants the user marked equivalent: Ignored, not run
        self.sources: list[Path] = []  # every source file given (a program's call graph is read from all)
        self.fresh = False  # --fresh: no warm worker (warm.py)
        self.nearby = Nearby(file_region)  # killers of nearby mutants first; by function once the baseline is in
        lines = tuple(sorted({m.file for m in mutants})) if target.python else ()
        n = results.options.workers
        copy, run_as, cwd = baseline_copy(target, scratch / "baseline")
        self.baseline_jobs = [
            BaselineJob(
                target.impl,
                i,
                n,
                select=select,
                lines=lines,
                record_calls=not target.python,
                copy=copy,
                run_as=run_as,
                cwd=cwd,
                target=target if target.coverage is not None else None,
                scratch=str(scratch),
            )
            for i in range(n)
        ]
        self.control_job: GeneratedJob | None = GeneratedJob(
            target.impl, CONTROL, (), frozenset(), False, select, target=target, scratch=str(scratch), control=True
        )
        self.control: MutantRun | None = None
        self.control_problem: str | None = None
        self.baseline: Baseline | None = None
        self.outstanding = len(self.baseline_jobs) + 1
        self.keys: dict[str, str] = {}

    def next_job(self) -> tuple[object, float | None] | None:
        if self.control_job is not None:  # first: it takes a whole suite run, the baseline's shards share one
            job, self.control_job = self.control_job, None
            return job, self.results.options.baseline_timeout
        handed = super().next_job()
        if handed is None:
            return None
        given, timeout = handed
        if not isinstance(given, GeneratedJob) or given.generated is None:
            return handed
        order = self.nearby.first(given.generated, given.order)  # killers of nearby mutants first (nearby.py)
        if order == given.order:
            return handed
        moved = replace(given, order=order, deadlines=self._deadlines(order))
        self.partial[moved] = self.partial.pop(given)
        return moved, timeout

    def on_done(self, job: object, result: object) -> None:
        if isinstance(job, GeneratedJob) and job.control:
            self.outstanding -= 1
            self._control_done(result)  # type: ignore[arg-type]
            return
        super().on_done(job, result)

    def on_event(self, job: object, event: tuple) -> None:
        if not (isinstance(job, GeneratedJob) and job.control):
            super().on_event(job, event)

    def on_lost(self, job: object, status: str, reason: str, running: str | None, elapsed: float) -> None:
        if isinstance(job, GeneratedJob) and job.control:
            self.outstanding -= 1
            self._control_done(MutantRun(job.impl, CONTROL, status, running=running, reason=reason))
            return
        super().on_lost(job, status, reason, running, elapsed)

    def _reach(self, baseline: Baseline) -> Callable[[Generated], set[str] | None]:
        if self.target.python:
            self.nearby = Nearby(python_region)
            return lambda m: python_reach(m.file, m.line, baseline.lines)
        from elmo_conformance.spec.protocol import protocol

        sources = self.sources or sorted({Path(m.file) for m in self.mutants})
        program = ProgramMap([f for f in sources if language_of(f) in DEFINITIONS], protocol().functions)
        self.nearby = Nearby(program_region(program.function_at))
        if not baseline.measured:
            return lambda m: program_reach(program, m.file, m.line, baseline.calls)
        # The lines each test ran (gcov.py), where they say; the protocol functions elsewhere.
        real = os.path.realpath
        lines = {real(file): by_line for file, by_line in baseline.lines.items()}
        functions = {real(file): spans for file, spans in baseline.functions.items()}

        def measured(m: Generated) -> set[str] | None:
            found = line_reach(real(m.file), m.line, lines, functions)
            return found if found is not None else program_reach(program, m.file, m.line, baseline.calls)

        return measured

    def _deadlines(self, order: tuple[str, ...]) -> tuple[float, ...]:
        """Each test's own deadline in a warm run (deadlines.py), in `order`."""
        assert self.baseline is not None
        options, tests = self.results.options, self.baseline.tests
        return tuple(deadline_of(tests[n].duration, options.timeout_factor, options.test_timeout_min) for n in order)

    def _baseline_done(self, baseline: Baseline) -> None:
        self.results.baselines[baseline.impl] = baseline
        if baseline.error:
            self.progress(f"baseline {baseline.impl}: {baseline.error.splitlines()[0]}")
            return
        self.progress(
            f"baseline {baseline.impl}: {len(baseline.ran)} tests of {baseline.name!r} ran, "
            f"{len(baseline.failures)} failed, in {baseline.duration:.1f} s"
        )
        if baseline.measured:
            known = sum(len(by_line) for by_line in baseline.lines.values())
            ran = sum(1 for by_line in baseline.lines.values() for tests in by_line.values() if tests)
            self.progress(
                f"line coverage ({baseline.measured}): {ran} of the {known} lines it knows in {len(baseline.lines)} "
                "files ran in some test; a mutant runs the tests that ran its line"
            )
        elif baseline.coverage_problem:
            self.progress(
                f"line coverage: off, {baseline.coverage_problem.splitlines()[0]}; a mutant runs every test of the "
                "protocol functions that reach it"
            )
        if baseline.failures or not baseline.ran or baseline.unavailable:
            return
        self.baseline = baseline
        self._plan()

    def _control_done(self, control: MutantRun) -> None:
        self.control = control
        if control.status in ("RuntimeError", "Timeout", "CompileError"):
            self.control_problem = (
                "the clean implementation, run from a scratch copy of the project as every mutant is, "
                + ("did not build" if control.status == "CompileError" else "could not be judged")
                + f": {control.reason or control.status}; no mutant was run (the environment is broken, not the mutants)"
            )
            self.progress(f"control: {self.control_problem.splitlines()[0]}")
            return
        passed = [t for t in control.tests.values() if t.outcome == "passed"]
        failed = [t for t in control.tests.values() if t.killed]
        self.progress(
            f"control {self.target.impl}: the clean copy, run as every mutant is: {len(passed)} tests passed, "
            f"{len(failed)} failed, in {control.duration:.1f} s"
        )
        if failed:
            names = ", ".join(t.nodeid for t in failed[:3]) + (" ..." if len(failed) > 3 else "")
            self.progress(
                f"control: {len(failed)} test(s) fail on the clean copy and judge no mutant (a kill must be a test "
                f"that passes on the clean implementation): {names}"
            )
        self._plan()

    def _plan(self) -> None:
        """Once the baseline and the control are in: each mutant's job (or its status at once)."""
        baseline, control = self.baseline, self.control
        if baseline is None or control is None or self.control_problem:
            return
        passing = {t.nodeid for t in control.tests.values() if t.outcome == "passed"}
        if baseline.measured:
            # The baseline ran the coverage build, unoptimized and started again for each test: a
            # test's cost, its deadline and a mutant's are the control run's, the program as built.
            timed = {
                n: replace(t, duration=control.tests[n].duration) if n in control.tests else t
                for n, t in baseline.tests.items()
            }
            baseline.tests = timed
        reach = self._reach(baseline)
        tests = sorted(baseline.ran, key=lambda t: (t.duration, t.index))  # cheap tests first: the first kill sooner
        tests = [t for t in tests if t.nodeid in passing]
        options = self.results.options
        immediate: list[tuple[MutantRun, bool]] = []
        # The user's own files, which nothing run so far can have written (the copies could be).
        inert = Inert(project_python_files(self.target.root)) if self.target.python else None
        for mutant in self.mutants:
            marked = self.marked.get(mutant.id)
            if marked is not None:
                reason = f"marked equivalent: {marked.reason}"
                immediate.append((MutantRun(self.target.impl, mutant.id, "Ignored", reason=reason), False))
                continue
            inert_reason = inert.reason(mutant) if inert is not None else None
            if inert_reason is not None:  # inert.py: an annotation nothing evaluates or reads
                immediate.append((MutantRun(self.target.impl, mutant.id, "Ignored", reason=inert_reason), False))
                continue
            key = self.keys[mutant.id] = Cache.key(mutant.id, mutant.replacement, self.context)
            entry = self.cache.get(key)
            if entry is not None:
                immediate.append((from_cache(self.target.impl, mutant.id, entry), False))
                continue
            reached = reach(mutant)
            if reached == ONE:  # a header of a function no test calls: does it break the import?
                order = tuple(t.nodeid for t in tests[:1])
            else:
                order = tuple(t.nodeid for t in tests if reached is EVERY or t.nodeid in reached)
            if not order and not self.target.build:
                reason = f"no test of the clean run reaches {Path(mutant.file).name}:{mutant.line}"
                immediate.append((MutantRun(self.target.impl, mutant.id, "NoCoverage", reason=reason), False))
                continue
            # A program's mutant that no test reaches is still built: one that does not compile is a
            # CompileError, and one the compiler makes the clean program is set aside, as if reached.
            estimate = SESSION_OVERHEAD_S + sum(baseline.tests[n].duration for n in order) + self.build_time
            timeout = options.timeout_min + options.timeout_factor * estimate
            job = GeneratedJob(
                self.target.impl,
                mutant.id,
                order,
                frozenset(),
                True,
                self.select,
                target=self.target,
                generated=mutant,
                scratch=str(self.scratch),
                fresh=self.fresh,
                deadlines=self._deadlines(order),
                start_timing=(options.test_timeout_min, options.timeout_factor),
            )
            self.mutant_jobs.append((job, timeout, estimate))
            self.outstanding += 1
        # The longest first (its tests' baseline time, what it costs when it survives): the workers
        # finish together rather than one running a long mutant alone at the end.
        self.mutant_jobs.sort(key=lambda entry: -entry[2])
        self.bar.start(len(self.mutant_jobs))
        for run, ran in immediate:
            self._record(run, ran)

    def _mutant_done(self, job: MutantJob, run: MutantRun) -> None:
        self.partial.pop(job, None)
        if run.status == "Killed" and isinstance(job, GeneratedJob) and job.generated is not None:
            self.nearby.killed(job.generated, run.killers)
        self._record(run)

    def _record(self, run: MutantRun, ran: bool = True) -> None:
        if run.status == "Killed" and not run.killers:  # a kill names the test that killed it
            run.status = "RuntimeError"
            run.reason = f"reported killed, but no test failed: {run.reason or 'no reason given'}"
        self.results.runs[(run.impl, run.mutant)] = run
        if not run.cached and run.mutant in self.keys:
            self.cache.put(self.keys[run.mutant], run)
        self.bar.done(run, ran)
        if run.status == "RuntimeError":
            self.bar.write(f"{run.mutant}: could not be judged: {(run.reason or '').splitlines()[0]}")


def verdicts_of(results: Results, target: Target, mutants: list[Generated]) -> list[Verdict]:
    baseline = results.baselines.get(target.impl) or Baseline(target.impl, error="no baseline result")
    verdicts = []
    for mutant in mutants:
        start, end = mutant.columns
        info = MutantInfo(
            mutant.id,
            mutant.label(Path(target.root)),
            mutant.file,
            mutant.line,
            mutant.line,
            end,
            None,
            start_column=start,
            replacement=mutant.changed[1],
            rule=mutant.rule,
            language=mutant.language,
        )
        run = results.runs.get((target.impl, mutant.id))
        status = run.status if run is not None else "NotRun"
        verdict = Verdict(target.impl, baseline.name or target.impl, mutant.id, info.title, False, status, info=info)
        if run is not None:
            verdict.run, verdict.killers = run, run.killers
            if run.cached:
                verdict.notes.append("from the cache of an earlier run (nothing its status depends on changed)")
        verdicts.append(verdict)
    return verdicts


def rerun_command(args: argparse.Namespace, mutant: str, verb: str = "--rerun") -> str:
    parts = ["elmo-conformance", "mutate", "--impl", args.impl]
    for source in args.source:
        parts += ["--source", str(source)]
    if args.root:
        parts += ["--root", str(args.root)]
    if args.build:
        parts += ["--build", args.build]
    if args.check is not None:
        parts += ["--check", args.check]
    if args.select:
        parts += ["-k", args.select]
    return shlex.join([*parts, verb, mutant])


def estimate(verdicts: list[Verdict], drawn: Drawn | None) -> tuple[str, dict[str, object]] | None:
    """For a sample: a line saying how far the whole set's score can be from the sample's, and
    what the report records of it (sampling.py); None when every mutant was run."""
    if drawn is None:
        return None
    counts = Counter(v.status for v in verdicts)
    detected, counted = sum(counts[s] for s in DETECTED), sum(counts[s] for s in VALID)
    bounds = interval(detected, counted, len(verdicts), drawn.population)
    record: dict[str, object] = {**drawn.as_json(), "confidence": 0.95}
    head = (
        f"a sample of {drawn.size} of {drawn.population} mutants (--max-mutants, stratified by file, seed {drawn.seed})"
    )
    if bounds is None:
        return f"{head}: no sampled mutant counts in the score, so it says nothing of the whole set", record
    record["interval"] = [round(bounds.low, 1), round(bounds.high, 1)]
    return (
        f"{head}: the whole set's score lies between {bounds.low:.1f} % and {bounds.high:.1f} % with 95 % confidence "
        f"(±{bounds.half_width:.1f} points; docs/mutation.md, Samples)",
        record,
    )


def figures(verdicts: list[Verdict]) -> dict[str, float]:
    counts = Counter(v.status for v in verdicts)
    detected = sum(counts[s] for s in DETECTED)
    valid = sum(counts[s] for s in VALID)
    out: dict[str, float] = {"generated": len(verdicts), **counts}
    out["score"] = round(100.0 * detected / valid, 1) if valid else 0.0
    return out


def error_share(verdicts: list[Verdict]) -> float:
    """The percentage of the mutants that were run and could not be judged."""
    run = [v for v in verdicts if v.run is not None and not v.run.cached and v.status != "NoCoverage"]
    errors = sum(v.status == "RuntimeError" for v in run)
    return 100.0 * errors / len(run) if run else 0.0


def by_file(verdicts: list[Verdict], root: Path) -> list[tuple[str, Counter[str], float]]:
    """Per source file: its statuses and its score."""
    groups: dict[str, Counter[str]] = {}
    for v in verdicts:
        name = os.path.relpath(v.info.file, root) if v.info and v.info.file else v.impl
        groups.setdefault(Path(name).as_posix(), Counter())[v.status] += 1
    rows = []
    for name, counts in sorted(groups.items()):
        valid = sum(counts[s] for s in VALID)
        rows.append((name, counts, round(100.0 * sum(counts[s] for s in DETECTED) / valid, 1) if valid else 0.0))
    return rows


COLUMNS = ("Killed", "Timeout", "Survived", "NoCoverage", "CompileError", "RuntimeError")


def terminal(verdicts: list[Verdict], args: argparse.Namespace, results: Results, root: Path, partial: bool) -> str:
    f = figures(verdicts)
    lines = [
        f"mutants: {f['generated']:.0f} generated; killed {f.get('Killed', 0):.0f}, timeout {f.get('Timeout', 0):.0f}, "
        f"survived {f.get('Survived', 0):.0f}, no coverage {f.get('NoCoverage', 0):.0f}, "
        f"compile error {f.get('CompileError', 0):.0f}, runtime error {f.get('RuntimeError', 0):.0f}"
        + (f", ignored {f.get('Ignored', 0):.0f} ({set_aside(verdicts)})" if f.get("Ignored") else "")
        + (f", not run {f.get('NotRun', 0):.0f}" if f.get("NotRun") else "")
        + f"; score {f['score']:.1f} % (killed and timed out of those that ran or had no coverage; compile and "
        f"runtime errors are not counted); {results.timings.get('total', 0.0):.0f} s",
    ]
    sampled = estimate(verdicts, getattr(args, "drawn", None))
    if sampled is not None:
        lines.append(sampled[0])
    if partial:
        lines.append("INTERRUPTED: a partial result, of the mutants judged before the run was stopped")
    files = by_file(verdicts, root)
    if len(files) > 1:
        lines += [
            "",
            f"{'file':<40} {'killed':>7} {'timeout':>7} {'survived':>8} {'no cov':>7} {'errors':>7} {'score':>7}",
        ]
        for name, c, score in files:
            lines.append(
                f"{name:<40} {c['Killed']:>7} {c['Timeout']:>7} {c['Survived']:>8} {c['NoCoverage']:>7} "
                f"{c['CompileError'] + c['RuntimeError']:>7} {score:>6.1f}%"
            )
    survivors = [v for v in verdicts if v.status in ("Survived", "NoCoverage")]
    if survivors:
        lines += ["", "survivors (each line: the change; below it, the command that runs the suite on that mutant):"]
        for v in survivors:
            tag = " [no coverage]" if v.status == "NoCoverage" else ""
            lines += [f"  {v.title}{tag}", f"      {rerun_command(args, v.mutant)}"]
    lines += _marked_lines(verdicts, args)
    unjudged = [v for v in verdicts if v.status == "RuntimeError"]
    if unjudged:
        lines += [
            "",
            f"could not be judged (RuntimeError, not in the score; {error_share(verdicts):.1f} % of those run):",
        ]
        for v in unjudged[:20]:
            reason = (v.run.reason if v.run else "") or ""
            lines.append(f"  {v.title}: {reason.splitlines()[0] if reason else 'no reason given'}")
        if len(unjudged) > 20:
            lines.append(f"  ... and {len(unjudged) - 20} more (mutation-report.json has every reason)")
    return "\n".join(lines)


def summary_markdown(verdicts: list[Verdict], args: argparse.Namespace, problems: list[str], partial: bool) -> str:
    f = figures(verdicts)
    verdict = "⏸️ interrupted (partial)" if partial else ("❌ failed" if problems else "✅ judged")
    lines = [f"## Mutation testing of `{args.impl}` (generated mutants, spec §13.2): {verdict}", ""]
    lines += ["| generated | killed | timeout | survived | no coverage | compile error | runtime error | score |"]
    lines += ["|---|---|---|---|---|---|---|---|"]
    lines += [f"| {f['generated']:.0f} | " + " | ".join(f"{f.get(k, 0):.0f}" for k in COLUMNS) + f" | {f['score']} % |"]
    sampled = estimate(verdicts, getattr(args, "drawn", None))
    if sampled is not None:
        lines += ["", f"**Sampled**: {sampled[0]}."]
    if f.get("Ignored"):
        lines += ["", f"**Set aside** (Ignored, not run, out of the score): {set_aside(verdicts)}."]
    if getattr(args, "set_aside", None):
        lines += ["", f"**Not generated**: {describe_aside(args.set_aside)}."]
    files = by_file(verdicts, Path(args.root_used))
    if len(files) > 1:
        lines += ["", "| file | killed | timeout | survived | no coverage | compile error | runtime error | score |"]
        lines += ["|---|---|---|---|---|---|---|---|"]
        for name, c, score in files:
            lines.append(f"| `{name}` | " + " | ".join(str(c[k]) for k in COLUMNS) + f" | {score} % |")
    survivors = [v for v in verdicts if v.status in ("Survived", "NoCoverage")]
    if survivors:
        lines += ["", "### Survivors", ""]
        for v in survivors:
            lines.append(f"- `{v.title}` ({v.status}): `{rerun_command(args, v.mutant)}`")
    marked = _marked_lines(verdicts, args)
    if marked:
        lines += ["", "### Marked equivalent", ""] + [f"- {line.strip()}" for line in marked[2:]]
    if problems:
        lines += ["", "### Problems", ""] + [f"- {p.splitlines()[0]}" for p in problems]
    return "\n".join(lines) + "\n"


def set_aside(verdicts: list[Verdict]) -> str:
    """What the Ignored mutants are: marked equivalent by the user, or set aside because their
    compiled program is the clean one's or another mutant's (programs.py), or because they change
    only inert annotations (inert.py)."""
    kinds: Counter[str] = Counter()
    for v in verdicts:
        if v.status == "Ignored":
            reason = (v.run.reason if v.run else "") or ""
            kinds[reason.split(":", 1)[0].split(" of mutant", 1)[0]] += 1
    names = {
        "marked equivalent": "marked equivalent",
        "equivalent (compiled)": "the clean program, compiled",
        "duplicate (compiled)": "another mutant's program, compiled",
        "equivalent (annotation only)": "annotation only",
        "equivalent (__all__ only)": "__all__ only",
    }
    return ", ".join(f"{names.get(kind, kind)} {n}" for kind, n in sorted(kinds.items()))


def _marked_lines(verdicts: list[Verdict], args: argparse.Namespace) -> list[str]:
    """The mutants marked equivalent (Ignored, not in the score) with their reasons, and the
    entries of the equivalents file that name no mutant any more."""
    ignored = [v for v in verdicts if v.status == "Ignored" and v.run and (v.run.reason or "").startswith("marked")]
    stale = getattr(args, "stale", [])
    if not ignored and not stale:
        return []
    lines = ["", f"marked equivalent ({len(ignored)}; Ignored: not run, not in the score):"]
    for v in ignored:
        lines.append(f"  {v.title}: {(v.run.reason if v.run else '') or 'marked equivalent'}")
    if stale:
        lines.append(f"  stale entries (no generated mutant has these ids; remove them): {', '.join(stale)}")
    return lines


def write_reports(
    results: Results, verdicts: list[Verdict], args: argparse.Namespace, problems: list[str], partial: bool
) -> list[str]:
    from elmo_conformance.mutation.stryker import report

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    data = report(results, verdicts, framework="elmo-conformance mutate", root=Path(args.root_used))
    data["thresholds"] = {"high": 80, "low": 60}
    data["config"]["figures"] = figures(verdicts)
    sampled = estimate(verdicts, getattr(args, "drawn", None))
    data["config"]["sample"] = sampled[1] if sampled is not None else None
    data["config"]["partial"] = partial
    data["config"]["problems"] = problems
    data["config"]["setAside"] = dict(getattr(args, "set_aside", None) or {})
    _write(out / "mutation-report.json", json.dumps(data, indent=1) + "\n")
    summary = summary_markdown(verdicts, args, problems, partial)
    _write(out / "summary.md", summary)
    notes = [f"reports: {out / 'mutation-report.json'}, {out / 'summary.md'}"]
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as handle:
            handle.write(summary)
    if not args.no_html:
        try:
            write_html(data, out / "mutation-report.html")
            notes.append(f"HTML report: {out / 'mutation-report.html'}")
        except NpmUnavailable as exc:
            notes.append(f"no HTML report: {exc}")
    return notes


def _write(path: Path, text: str) -> None:
    """Write a report whole or not at all (a run stopped while writing leaves the last one)."""
    partial = path.with_name(path.name + f".{os.getpid()}.tmp")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


def _child_environment() -> None:
    """The workers, and the programs they start, get the environment of a clean run's children
    (elmo_conformance.ground.resources.child_environment: the checkout on PYTHONPATH in a checkout,
    nothing added when installed), and Hypothesis keeps its files out of the user's folder."""
    from elmo_conformance.ground.resources import child_environment

    os.environ.update(child_environment())


def clean_copy(target: Target, scratch: Path, out: Path, build_timeout: float) -> tuple[Target, float, Copied, str]:
    """Copy the project root once into `scratch/clean` and build it there (the build must work
    before any mutant can be judged, and must make the program); each mutant's copy is made from
    it, build outputs included, so that an incremental build compiles only the mutated file.
    Returns the target that copies from it, the time one build of a mutant takes (the clean build
    run again), what was copied, and the digest of the copied project (before any build)."""
    copy = scratch / "clean"
    copied = copy_project(Path(target.root), copy, skip=(os.path.abspath(out), str(scratch)))
    project = tree_digest(copy)
    if not target.build:
        return replace(target, template=str(copy)), 0.0, copied, project
    program = program_path(target, copy)
    if program is not None and program.exists():
        program.unlink()
    before = {entry.name for entry in copy.iterdir()}
    try:
        build(target, copy, build_timeout)
        if program is not None and not program.exists():
            raise BuildFailed(
                f"the build command exited 0 but did not produce the program {program.name}: {target.build}"
            )
        took = build(target, copy, build_timeout)  # the incremental build a mutant's copy does
        artifact = find_artifact(target, copy)
    except BuildFailed as exc:
        raise UsageError(f"--build fails on a clean copy of the project, so no mutant can be judged: {exc}") from None
    done = replace(
        target,
        template=str(copy),
        build_timeout=build_timeout,
        artifact=artifact,
        build_dirs=build_folders(copy, before),
    )
    return done, took, copied, project


def rerun(target: Target, mutants: list[Generated], mutant_id: str, args: argparse.Namespace) -> int:
    """The whole suite on one mutant, in a scratch copy, with the suite's usual output: 0 when
    it survives, 1 when a test kills it (the killing tests are named), 3 when it cannot be judged."""
    from elmo_conformance.mutation.scratch import prepare
    from elmo_conformance.runner.running import run

    found = [m for m in mutants if m.id == mutant_id]
    if not found:
        print(f"error: --rerun {mutant_id}: no generated mutant has this id (the source changed?)", file=sys.stderr)
        return 2
    mutant = found[0]
    print(f"mutant {mutant.id}: {mutant.label(Path(target.root))}", flush=True)
    folder = Path(tempfile.mkdtemp(prefix="elmo-mutate-rerun-"))
    try:
        try:
            target, build_time, _, _ = clean_copy(target, folder, args.out, args.build_timeout)
            # The suite runs on the mutant even when its program is the clean one's (nothing set aside).
            target = replace(target, build_timeout=args.timeout_min + args.timeout_factor * build_time, artifact=None)
            impl, _ = prepare(target, mutant, folder / "mutant")
        except (BuildFailed, UsageError) as exc:
            print(f"CompileError: {exc}", file=sys.stderr)
            return 3
        result = run(impl, ["-p", "no:cacheprovider", *(["-k", args.select] if args.select else [])])
        for note in result.notes:
            print(f"elmo-conformance: {note}", file=sys.stderr)
        failed = [t.nodeid for t in result.tests if t.outcome in ("failed", "error")]
        if result.exit_status == 1 and failed:
            print(f"the suite kills this mutant: {len(failed)} test(s) failed, the first: {failed[0]}", flush=True)
            return 1
        if result.exit_status == 0:
            print("the suite passes on this mutant: it survives", flush=True)
            return 0
        print(f"this mutant could not be judged: {result.problem or f'exit status {result.exit_status}'}", flush=True)
        return 3
    finally:
        from elmo_conformance.adapters.wire.client import stop_all

        stop_all()
        shutil.rmtree(folder, ignore_errors=True)


def show(target: Target, mutants: list[Generated], mutant_id: str, marked: dict[str, Equivalent], marks: Path) -> int:
    """The mutant as a unified diff of its file, and whether it is marked equivalent (or how to)."""
    import difflib

    found = [m for m in mutants if m.id == mutant_id]
    if not found:
        print(f"error: --show {mutant_id}: no generated mutant has this id (see --list)", file=sys.stderr)
        return 2
    mutant = found[0]
    source = Path(mutant.file).read_text(encoding="utf-8")
    name = target.relative(mutant.file)
    diff = difflib.unified_diff(
        source.splitlines(keepends=True), mutant.apply(source).splitlines(keepends=True), f"a/{name}", f"b/{name}"
    )
    label = mutant.label(Path(target.root))
    print(f"mutant {mutant.id} ({mutant.rule}): {label}")
    sys.stdout.writelines(diff)
    found_mark = marked.get(mutant.id)
    if found_mark is not None:
        print(f"\nmarked equivalent in {marks}: {found_mark.reason}")
    else:
        print(f"\nif it computes what the original does, mark it equivalent in {marks}:\n")
        print(entry_text(mutant.id, label), end="")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    if args.no_sandbox:  # the builds here and every suite run's served mutants (the plugin reads it)
        os.environ[sandbox.OFF_ENV] = "1"
    try:
        require_extra()
        target, files = resolve(args)
        _child_environment()
        args.set_aside = Counter()  # the mutants of rules and lines set aside for their language (generate.py)
        every = mutants_of(target, files, args.set_aside)
    except (UsageError, EngineMissing) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args.root_used = target.root
    try:
        marks = args.equivalents or default_path(target.root)
        args.marked = load(marks, given=args.equivalents is not None)
    except EquivalentsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args.stale = stale_entries(args.marked, every, files, target)
    if args.stale:
        print(
            f"mutate: {marks}: {len(args.stale)} entries name no generated mutant (the mutated line changed; "
            f"remove them): {', '.join(args.stale)}",
            file=sys.stderr,
        )
    if args.show:
        return show(target, every, args.show, args.marked, marks)
    if args.rerun:
        hypothesis = tempfile.mkdtemp(prefix="elmo-mutate-hypothesis-")
        os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = hypothesis  # not the user's folder
        try:
            return rerun(target, every, args.rerun, args)
        finally:
            shutil.rmtree(hypothesis, ignore_errors=True)
    if args.mutant:
        unknown = sorted(set(args.mutant) - {m.id for m in every})
        if unknown:
            print(
                f"error: --mutant {', '.join(unknown)}: no generated mutant has this id (see --list)", file=sys.stderr
            )
            return 2
        every = [m for m in every if m.id in set(args.mutant)]
    mutants, args.drawn = draw(every, args.max_mutants, args.seed)
    if args.list:
        for m in mutants:
            print(f"{m.id}  {m.label(Path(target.root))}")
        return 0
    try:
        lock = lock_out(args.out)
    except OutLocked as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    previous = terminate_as_interrupt()
    try:
        if args.scheduler is None and args.scheduler_file is None:
            return _run(args, target, files, every, mutants)
        try:  # the cluster's threads are the workers: the baseline is split among them
            with cluster.Cluster(args.scheduler, args.scheduler_file, dashboard=False) as dask:
                args.workers = max(1, sum(dask.threads().values()))
                args.where = f"on the Dask cluster {dask.address}"
                return _run(args, target, files, every, mutants, dask)
        except cluster.ExecutorError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    finally:
        lock.close()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def stale_entries(
    marked: dict[str, Equivalent], every: list[Generated], files: list[Path], target: Target
) -> list[str]:
    """The marked ids that no generated mutant has (its line changed), among the entries of the
    files mutated in this run: an entry whose `change` names another file (a run with --source
    on some of the files) is out of this run, not stale."""
    mutated = {target.relative(str(file)) for file in files}
    generated = {m.id for m in every}

    def in_this_run(entry: Equivalent) -> bool:
        return entry.change is None or entry.change.split(":", 1)[0] in mutated

    return sorted(key for key, entry in marked.items() if key not in generated and in_this_run(entry))


def terminate_as_interrupt() -> Any:
    """SIGTERM (a CI job cancelled, `timeout`, `kill`) ends the run as Ctrl-C does: the workers
    and every process they started are stopped, and the mutants judged so far are reported as a
    partial run. (Its default would end this process at once and leave the workers to end with
    their current mutant: executor/local.py.) A runner started in the background by a shell
    ignores SIGINT (POSIX), so SIGTERM is how it is stopped. Returns the handler it replaced,
    None when none was set (signal handlers are set from the main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def interrupted(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, interrupted)


def _run(
    args: argparse.Namespace,
    target: Target,
    files: list[Path],
    every: list[Generated],
    mutants: list[Generated],
    dask: cluster.Cluster | None = None,
) -> int:
    options = Options(
        impls=(target.impl,),
        fail_fast=True,
        workers=args.workers,
        timeout_factor=args.timeout_factor,
        timeout_min=args.timeout_min,
        test_timeout_min=args.test_timeout_min,
        baseline_timeout=args.baseline_timeout,
    )
    results = Results(options, catalog=[])
    cache = Cache(args.out / CACHE, enabled=not args.no_cache)
    progress = Progress(enabled=True)
    scratch = Path(tempfile.mkdtemp(prefix="elmo-mutate-"))
    os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = str(scratch / "hypothesis")  # not the user's folder
    started = time.perf_counter()
    partial = False
    try:
        try:
            target, build_time, copied, project = clean_copy(target, scratch, args.out, args.build_timeout)
        except UsageError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        target = replace(target, build_timeout=args.timeout_min + args.timeout_factor * build_time)
        print(
            f"mutate: {target.impl}: {len(every)} mutants generated by universalmutator from {len(files)} file(s)"
            + (f", {len(mutants)} sampled (--max-mutants, seed {args.seed})" if len(mutants) < len(every) else "")
            + f"; {args.workers} workers {getattr(args, 'where', 'on this machine')}\n"
            + describe_copy(Path(target.root), copied)
            + (f"\n{describe_aside(args.set_aside)}" if getattr(args, "set_aside", None) else ""),
            flush=True,
        )
        if cache.rejected:
            what = (
                "an unreadable cache" if cache.rejected < 0 else f"{cache.rejected} cache entries that were not valid"
            )
            print(f"mutate: {what} in {args.out / CACHE}: those mutants are run again", flush=True)
        context = Cache.context(project, suite_version(), target.impl, target.build, verdict_options(args))
        plan = GeneratedPlan(results, target, mutants, args.select, scratch, cache, context, progress)
        plan.build_time, plan.marked, plan.fresh = build_time, args.marked, args.fresh
        plan.sources = [Path(f) for f in files]
        try:
            if dask is not None:  # the scratch folder and the sources are shipped to the cluster's machines
                from elmo_conformance.mutation import remote

                env = {"HYPOTHESIS_STORAGE_DIRECTORY": str(scratch / "hypothesis")}
                env.update({sandbox.OFF_ENV: "1"} if args.no_sandbox else {})
                remote.run_jobs(plan, dask.client, scratch, files, progress.write, env)
            else:
                with tempfile.TemporaryDirectory(prefix="elmo-mutate-logs-") as logs:
                    run_jobs(plan, options.workers, Path(logs), progress.write)
        except WorkerStartError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            partial = True
    finally:
        progress.close()
        shutil.rmtree(scratch, ignore_errors=True)
        cache.save()
    total = time.perf_counter() - started
    baseline = results.baselines.get(target.impl)
    results.timings = {
        "total": total,
        "baseline": baseline.duration if baseline else 0.0,
        "mutants": max(0.0, total - (baseline.duration if baseline else 0.0)),
    }
    verdicts = verdicts_of(results, target, mutants)
    problems = [] if partial else problems_of(baseline, plan, verdicts, mutants, args)
    print()
    print(terminal(verdicts, args, results, Path(target.root), partial))
    for note in write_reports(results, verdicts, args, problems, partial):
        print(note)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if partial:
        print("mutate: interrupted; the report holds the mutants judged so far and says it is partial", file=sys.stderr)
        return INTERRUPTED
    return 1 if problems else 0


def problems_of(
    baseline: Baseline | None,
    plan: GeneratedPlan,
    verdicts: list[Verdict],
    mutants: list[Generated],
    args: argparse.Namespace,
) -> list[str]:
    """What makes the run fail (exit status 1), each in a line that says what to do."""
    problems = [p for p in [baseline_problem(baseline)] if p] if baseline else ["no baseline result"]
    if problems and baseline is not None and (baseline.failures or baseline.error):
        problems.append(
            f"the baseline ran the implementation from a scratch copy of the project root ({args.root_used}), as "
            "every mutant runs: an implementation that depends on where its files are fails there (--root sets the "
            "folder copied)"
        )
    if plan.control_problem and not problems:
        problems.append(plan.control_problem)
    elif plan.control is not None and baseline is not None and not problems:
        passed_here = {t.nodeid for t in baseline.ran if t.outcome == "passed"}
        differ = [t.nodeid for t in plan.control.tests.values() if t.killed and t.nodeid in passed_here]
        if differ:
            problems.append(
                f"{len(differ)} test(s) fail on the clean implementation served from its copy as every mutant is, "
                "but pass in the baseline run "
                f"({', '.join(differ[:3])}{' ...' if len(differ) > 3 else ''}): every mutant runs from a copy of the "
                "project, so these tests judged no mutant; an implementation must not depend on where its files are"
            )
    if not mutants:
        problems.append("no mutant was generated, so nothing was checked")
    share = error_share(verdicts)
    if share > args.max_errors:
        first = next((v.run.reason for v in verdicts if v.status == "RuntimeError" and v.run and v.run.reason), "")
        problems.append(
            f"{share:.1f} % of the mutants run could not be judged (RuntimeError), more than --max-errors "
            f"{args.max_errors:g} %: the environment is likely broken rather than the mutants; the first said: "
            + (first.splitlines()[0] if first else "nothing")
        )
    score = figures(verdicts)["score"]
    if args.fail_under is not None and not problems and score < args.fail_under:
        problems.append(f"the mutation score {score:.1f} % is below --fail-under {args.fail_under:g} %")
    return problems


if __name__ == "__main__":
    sys.exit(main())
