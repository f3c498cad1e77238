"""elmo-conformance mutate --impl ARG [--source PATH...] [--build CMD] [--out DIR]

Mutation-test an implementation without writing its mutants (spec §13.2): universalmutator's
rules generate mutants from the implementation's own source, each is written into a scratch copy
(the user's files are only read), built there when there is a build, and run through the tests
that reach the mutated code until the first kill.

Exit status: 0 when every mutant was judged (survivors are reported, not failed), 1 when the
clean baseline fails or a mutant could not be judged, 2 for a usage error. With --rerun ID: the
suite's own exit status on that mutant (0: it survives, 1: a test kills it).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.util
import json
import os
import random
import shlex
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from elmo_conformance import __version__
from elmo_conformance.conformance.loading import BUILTINS, PROGRAMS

from .__main__ import FACTOR, SECONDS, _cores
from .generate import EngineMissing, Generated, generate, language_of, require_extra, source_files
from .html import NpmUnavailable, write_html
from .model import Baseline, MutantInfo, MutantRun, TestOutcome
from .pool import WorkerStartError, run_jobs
from .reach import EVERY, ProgramMap, program_reach, python_reach, scope_text
from .runner import SESSION_OVERHEAD_S, Options, Plan, Results
from .scratch import BuildFailed, Target, build, import_path, prepare
from .verdicts import Verdict, baseline_problem
from .worker import SUITE, BaselineJob, GeneratedJob

CACHE = "mutate-cache.json"
DETECTED = ("Killed", "Timeout")
VALID = ("Killed", "Timeout", "Survived", "NoCoverage")  # Stryker's: what the score counts


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
        "--build",
        metavar="CMD",
        help="shell command that rebuilds a program in the scratch copy after each mutation (cwd: the copy)",
    )
    parser.add_argument("--out", type=Path, default=Path("reports/mutate"), help="report folder (default %(default)s)")
    parser.add_argument("-k", dest="select", metavar="EXPR", help="only the suite's tests pytest -k EXPR selects")
    parser.add_argument("--workers", type=int, default=_cores(), help="worker processes (default: cores, %(default)s)")
    parser.add_argument("--timeout-factor", type=FACTOR, default=3.0, help="x the tests' baseline time (default 3)")
    parser.add_argument("--timeout-min", type=SECONDS, default=20.0, help="seconds added to it (default 20)")
    parser.add_argument("--baseline-timeout", type=SECONDS, default=900.0, metavar="SECONDS", help="(default 900)")
    parser.add_argument(
        "--max-mutants", type=int, metavar="N", help="run a seeded random sample of N of the generated mutants"
    )
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    parser.add_argument("--mutant", action="append", default=[], metavar="ID", help="only this mutant (repeatable)")
    parser.add_argument(
        "--no-cache", action="store_true", help="re-run every mutant (default: reuse unchanged results)"
    )
    parser.add_argument("--no-html", action="store_true", help="do not write the HTML report (it needs npm)")
    parser.add_argument("--list", action="store_true", help="list the generated mutants and exit")
    parser.add_argument(
        "--rerun", metavar="MUTANT_ID", help="run the whole suite on this one mutant, as a survivor's line says"
    )
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error(f"--workers: expected an integer >= 1, got {args.workers}")
    if args.max_mutants is not None and args.max_mutants < 1:
        parser.error(f"--max-mutants: expected an integer >= 1, got {args.max_mutants}")
    return args


# --- what is mutated ----------------------------------------------------------------------------


class UsageError(Exception):
    pass


def _module_file(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        raise UsageError(f"--impl: cannot find the source of the module {module!r}; name it with --source")
    return Path(spec.origin)


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


def resolve(args: argparse.Namespace) -> tuple[Target, list[Path]]:
    impl = args.impl
    given = [path.resolve() for path in args.source]
    for path in given:
        if not path.exists():
            raise UsageError(f"--source {path}: no such file or folder")
    program = build_command = None
    if impl.startswith("cmd:"):
        if not given:
            raise UsageError("--impl cmd:...: name the program's sources with --source (and its build with --build)")
        program, build_command = impl, args.build
        python = False
    elif impl in PROGRAMS:  # the built-in c
        here = Path(importlib.import_module(BUILTINS[impl][0]).HERE)
        # its own sources, less the declared mutants' code (mutants.c, §13.1), which a generated run never reaches
        given = given or sorted(p for p in here.glob("*.c") if p.name != "mutants.c")
        program = f"cmd:{here / importlib.import_module(BUILTINS[impl][0]).PROGRAM}"
        build_command = args.build or default_build_c(here)
        python = False
    else:
        python = True
        if args.build:
            raise UsageError("--build: a Python implementation is imported, not built; --build is for a program")
        if not given:
            if impl == "numpy":  # the reference, through the numpy adapter (spec §13.2)
                given = sorted(_module_file("elmo_conformance.reference").parent.glob("*.py"))
            elif impl in BUILTINS:
                folder = _module_file(BUILTINS[impl][0]).parent
                given = sorted(p for p in folder.glob("*.py") if p.name != "mutants.py")
            elif impl.endswith(".py"):
                given = [Path(impl).resolve()]
            elif ":" in impl:
                given = [_module_file(impl.split(":", 1)[0]).resolve()]
            else:
                raise UsageError(f"--impl {impl}: name the files to mutate with --source")
    files = source_files(given)
    if not files:
        raise UsageError("no source file of a language universalmutator knows in " + ", ".join(map(str, given)))
    folders = [p if p.is_dir() else p.parent for p in given]
    root = Path(os.path.commonpath([str(f) for f in folders]))
    if not python and build_command is None and program is not None:
        build_command = None  # an interpreted program: run from the copy as it is
    target = Target(impl, python, str(root), build_command, program, import_path() if python else ())
    return target, files


def mutants_of(target: Target, files: list[Path]) -> list[Generated]:
    found: list[Generated] = []
    for path in files:
        found += generate(path, relative=target.relative(str(path)))
    return found


def sample(mutants: list[Generated], n: int | None, seed: int) -> list[Generated]:
    if n is None or n >= len(mutants):
        return mutants
    keep = set(random.Random(seed).sample(range(len(mutants)), n))
    return [m for i, m in enumerate(mutants) if i in keep]


# --- the incremental cache ----------------------------------------------------------------------


def _digest(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part if isinstance(part, bytes) else part.encode())
        h.update(b"\0")
    return h.hexdigest()


def suite_version() -> str:
    """The suite's version and a hash of its tests, harness and spec files: a cached result is
    valid only for the suite that produced it."""
    parts: list[str | bytes] = [__version__]
    spec = Path(str(importlib.import_module("elmo_conformance.spec").__file__)).parent
    for path in sorted([*SUITE.glob("*.py"), *spec.glob("*.json")]):
        parts += [path.name, path.read_bytes()]
    return _digest(*parts)[:16]


class Cache:
    """Results of earlier runs (Stryker's incremental mode). A kill (or timeout) is keyed by the
    mutant (its id: file, line text before and after), the function around it, the suite version
    and the command line that matters (impl, build, -k): it is re-tested when that function or the
    suite changes. A survivor's, an unreached mutant's and a compile error's key also holds every
    source file's text: a change anywhere may change them."""

    def __init__(self, path: Path, enabled: bool) -> None:
        self.path, self.enabled = path, enabled
        self.entries: dict[str, dict] = {}
        if enabled and path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                if data.get("version") == 1:
                    self.entries = dict(data["entries"])
            except (OSError, ValueError, KeyError, TypeError):
                self.entries = {}

    @staticmethod
    def keys(target: Target, mutant: Generated, suite: str, sources: str, select: str | None) -> tuple[str, str]:
        scope = scope_text(mutant.file, mutant.line)
        base = _digest(mutant.id, scope, suite, target.impl, target.build or "", select or "")
        return base, _digest(base, sources)

    def get(self, keys: tuple[str, str]) -> dict | None:
        if not self.enabled:
            return None
        kill_key, any_key = keys
        entry = self.entries.get(kill_key)
        if entry is not None and entry["status"] in DETECTED:
            return entry
        return self.entries.get(any_key)

    def put(self, keys: tuple[str, str], run: MutantRun) -> None:
        key = keys[0] if run.status in DETECTED else keys[1]
        if run.status in (*VALID, "CompileError"):
            self.entries[key] = {
                "status": run.status,
                "reason": run.reason,
                "killers": run.killers,
                "tests": {n: asdict(t) for n, t in run.tests.items() if t.killed},
                "tested": len(run.tests),
                "selected": run.selected,
                "duration": run.duration,
            }

    def save(self) -> None:
        if self.enabled:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps({"version": 1, "entries": self.entries}) + "\n", encoding="utf-8")


def _from_cache(impl: str, mutant: str, entry: dict) -> MutantRun:
    tests = {n: TestOutcome(**t) for n, t in entry.get("tests", {}).items()}
    run = MutantRun(impl, mutant, entry["status"], tests, list(entry.get("selected", [])), reason=entry.get("reason"))
    run.duration, run.cached = float(entry.get("duration", 0.0)), True
    return run


# --- the run ------------------------------------------------------------------------------------


class Progress:
    """done / total, kills, survivors and the time left, on one terminal line (tqdm)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.bar = None
        self.counts: Counter[str] = Counter()

    def start(self, total: int) -> None:
        if self.enabled and total:
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="mutant", dynamic_ncols=True, file=sys.stderr, smoothing=0.1)

    def done(self, run: MutantRun) -> None:
        self.counts[run.status] += 1
        if self.bar is not None:
            c = self.counts
            self.bar.set_postfix_str(
                f"killed {c['Killed'] + c['Timeout']}, survived {c['Survived']}, no coverage {c['NoCoverage']}",
                refresh=False,
            )
            self.bar.update(1)

    def write(self, line: str) -> None:
        if self.bar is not None:
            self.bar.write(line, file=sys.stderr)
        else:
            print(line, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class GeneratedPlan(Plan):
    """The runner's scheduler for generated mutants: the baseline (recording what each test
    reaches), then each mutant through the tests that reach it, fastest first, to the first kill."""

    def __init__(
        self,
        results: Results,
        target: Target,
        mutants: list[Generated],
        select: str | None,
        scratch: Path,
        cache: Cache,
        progress: Progress,
    ) -> None:
        super().__init__(results, progress.write)
        self.target, self.mutants, self.select, self.scratch = target, mutants, select, scratch
        self.cache, self.bar = cache, progress
        self.build_time = 0.0
        lines = tuple(sorted({m.file for m in mutants})) if target.python else ()
        n = results.options.workers
        self.baseline_jobs = [
            BaselineJob(target.impl, i, n, select=select, lines=lines, record_calls=not target.python) for i in range(n)
        ]
        self.outstanding = len(self.baseline_jobs)
        self.suite = suite_version()
        self.sources = _digest(*sorted(_digest(m.file, Path(m.file).read_bytes()) for m in mutants))
        self.keys: dict[str, tuple[str, str]] = {}

    def _reach(self, baseline: Baseline) -> Callable[[Generated], set[str] | None]:
        if self.target.python:
            return lambda m: python_reach(m.file, m.line, baseline.lines)
        from elmo_conformance.conformance.protocol import protocol

        program = ProgramMap(
            [Path(f) for f in sorted({m.file for m in self.mutants}) if language_of(Path(f)) in ("c", "cpp")],
            protocol().functions,
        )
        return lambda m: program_reach(program, m.file, m.line, baseline.calls)

    def _baseline_done(self, baseline: Baseline) -> None:
        self.results.baselines[baseline.impl] = baseline
        if baseline.error:
            self.progress(f"baseline {baseline.impl}: {baseline.error.splitlines()[0]}")
            return
        self.progress(
            f"baseline {baseline.impl}: {len(baseline.ran)} tests of {baseline.name!r} ran, "
            f"{len(baseline.failures)} failed, in {baseline.duration:.1f} s"
        )
        if baseline.failures or not baseline.ran or baseline.unavailable:
            return
        reach = self._reach(baseline)
        tests = sorted(baseline.ran, key=lambda t: (t.duration, t.index))  # cheap tests first: the first kill sooner
        options = self.results.options
        immediate: list[MutantRun] = []
        for mutant in self.mutants:
            keys = self.keys[mutant.id] = Cache.keys(self.target, mutant, self.suite, self.sources, self.select)
            entry = self.cache.get(keys)
            if entry is not None:
                immediate.append(_from_cache(self.target.impl, mutant.id, entry))
                continue
            reached = reach(mutant)
            order = tuple(t.nodeid for t in tests if reached is EVERY or t.nodeid in reached)
            if not order:
                reason = f"no test of the clean run reaches {Path(mutant.file).name}:{mutant.line}"
                immediate.append(MutantRun(self.target.impl, mutant.id, "NoCoverage", reason=reason))
                continue
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
            )
            self.mutant_jobs.append((job, timeout, estimate))
            self.outstanding += 1
        self.bar.start(len(self.mutants))
        for run in immediate:
            self._record(run)

    def _record(self, run: MutantRun) -> None:
        self.results.runs[(run.impl, run.mutant)] = run
        if not run.cached and run.mutant in self.keys:
            self.cache.put(self.keys[run.mutant], run)
        self.bar.done(run)
        if run.status == "RuntimeError":
            self.bar.write(f"{run.mutant}: could not be judged: {(run.reason or '').splitlines()[0]}")


def verdicts_of(results: Results, target: Target, mutants: list[Generated]) -> list[Verdict]:
    baseline = results.baselines.get(target.impl) or Baseline(target.impl, error="no baseline result")
    verdicts = []
    for mutant in mutants:
        start, end = mutant.columns
        last = mutant.original
        info = MutantInfo(
            mutant.id,
            mutant.label(Path(target.root)),
            mutant.file,
            mutant.line,
            mutant.line,
            min(end, len(last) + 1),
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
                verdict.notes.append(
                    "from the cache of an earlier run (the mutant, its file and the suite are unchanged)"
                )
            if run.status == "RuntimeError":
                verdict.failure = f"could not be judged: {run.reason}"
        verdicts.append(verdict)
    return verdicts


def rerun_command(args: argparse.Namespace, mutant: str) -> str:
    parts = ["elmo-conformance", "mutate", "--impl", args.impl]
    for source in args.source:
        parts += ["--source", str(source)]
    if args.build:
        parts += ["--build", args.build]
    if args.select:
        parts += ["-k", args.select]
    return shlex.join([*parts, "--rerun", mutant])


def figures(verdicts: list[Verdict]) -> dict[str, float]:
    counts = Counter(v.status for v in verdicts)
    detected = sum(counts[s] for s in DETECTED)
    valid = sum(counts[s] for s in VALID)
    out: dict[str, float] = {"generated": len(verdicts), **counts}
    out["score"] = round(100.0 * detected / valid, 1) if valid else 0.0
    return out


def terminal(verdicts: list[Verdict], args: argparse.Namespace, results: Results, root: Path) -> str:
    f = figures(verdicts)
    lines = [
        f"mutants: {f['generated']:.0f} generated; killed {f.get('Killed', 0):.0f}, timeout {f.get('Timeout', 0):.0f}, "
        f"survived {f.get('Survived', 0):.0f}, no coverage {f.get('NoCoverage', 0):.0f}, "
        f"compile error {f.get('CompileError', 0):.0f}, runtime error {f.get('RuntimeError', 0):.0f}; "
        f"score {f['score']:.1f} % (killed and timed out of those that ran or had no coverage); "
        f"{results.timings.get('total', 0.0):.0f} s",
    ]
    survivors = [v for v in verdicts if v.status in ("Survived", "NoCoverage")]
    if survivors:
        lines += ["", "survivors (each line: the change; below it, the command that runs the suite on that mutant):"]
        for v in survivors:
            label = v.title
            tag = " [no coverage]" if v.status == "NoCoverage" else ""
            lines += [f"  {label}{tag}", f"      {rerun_command(args, v.mutant)}"]
    problems = [f"{v.mutant}: {v.failure}" for v in verdicts if v.failure]
    if problems:
        lines += ["", "could not be judged:", *(f"  {p.splitlines()[0]}" for p in problems)]
    return "\n".join(lines)


def summary_markdown(verdicts: list[Verdict], args: argparse.Namespace, problems: list[str]) -> str:
    f = figures(verdicts)
    verdict = "❌ failed" if problems else "✅ judged"
    lines = [f"## Mutation testing of `{args.impl}` (generated mutants, spec §13.2): {verdict}", ""]
    lines += ["| generated | killed | timeout | survived | no coverage | compile error | runtime error | score |"]
    lines += ["|---|---|---|---|---|---|---|---|"]
    keys = ("Killed", "Timeout", "Survived", "NoCoverage", "CompileError", "RuntimeError")
    lines += [f"| {f['generated']:.0f} | " + " | ".join(f"{f.get(k, 0):.0f}" for k in keys) + f" | {f['score']} % |"]
    survivors = [v for v in verdicts if v.status in ("Survived", "NoCoverage")]
    if survivors:
        lines += ["", "### Survivors", ""]
        for v in survivors:
            lines.append(f"- `{v.title}` ({v.status}): `{rerun_command(args, v.mutant)}`")
    if problems:
        lines += ["", "### Problems", ""] + [f"- {p.splitlines()[0]}" for p in problems]
    return "\n".join(lines) + "\n"


def write_reports(
    results: Results, verdicts: list[Verdict], args: argparse.Namespace, problems: list[str]
) -> list[str]:
    from .stryker import report

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    data = report(results, verdicts, framework="elmo-conformance mutate")
    data["thresholds"] = {"high": 80, "low": 60}
    data["config"]["figures"] = figures(verdicts)
    (out / "mutation-report.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    summary = summary_markdown(verdicts, args, problems)
    (out / "summary.md").write_text(summary, encoding="utf-8")
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


def _child_path(target: Target) -> None:
    """A served mutant, a `cmd:` program written in Python and the workers import what this
    process imports: the checkout (or the installed package) on PYTHONPATH."""
    given = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys([*import_path(), *given]))


def _template(target: Target, scratch: Path) -> tuple[Target, float]:
    """Build a clean copy once (the build must work before any mutant can be judged); each
    mutant's copy is then made from it, build outputs included, so that an incremental build
    (make, or the built-in c's) compiles only the mutated file. Returns the target that copies
    from it, and the time one build of a mutant takes (the clean build run again)."""
    copy = scratch / "clean"
    shutil.copytree(target.root, copy, ignore=shutil.ignore_patterns(".*", "__pycache__", "build"), symlinks=True)
    try:
        build(target, copy)
    except BuildFailed as exc:
        raise UsageError(f"--build fails on the clean sources, so no mutant can be judged: {exc}") from None
    from dataclasses import replace

    return replace(target, template=str(copy)), build(target, copy)


def rerun(target: Target, mutants: list[Generated], mutant_id: str, select: str | None) -> int:
    """The whole suite on one mutant, in a scratch copy, with the suite's usual output."""
    from elmo_conformance.running import run

    found = [m for m in mutants if m.id == mutant_id]
    if not found:
        print(f"error: --rerun {mutant_id}: no generated mutant has this id (the source changed?)", file=sys.stderr)
        return 2
    mutant = found[0]
    print(f"mutant {mutant.id}: {mutant.label(Path(target.root))}", flush=True)
    folder = Path(tempfile.mkdtemp(prefix="elmo-mutate-rerun-"))
    try:
        try:
            impl, _ = prepare(target, mutant, folder)
        except BuildFailed as exc:
            print(f"CompileError: {exc}", file=sys.stderr)
            return 1
        result = run(impl, ["-p", "no:cacheprovider", *(["-k", select] if select else [])])
        for note in result.notes:
            print(f"elmo-conformance: {note}", file=sys.stderr)
        code = result.exit_status
        verdict = {0: "the suite passes on this mutant: it survives", 1: "the suite kills this mutant"}
        print(verdict.get(code, f"pytest exited with code {code}"), flush=True)
        return code
    finally:
        from elmo_conformance.conformance.process import stop_all

        stop_all()
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    try:
        require_extra()
        target, files = resolve(args)
        _child_path(target)
        every = mutants_of(target, files)
    except (UsageError, EngineMissing) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.rerun:
        return rerun(target, every, args.rerun, args.select)
    if args.mutant:
        unknown = sorted(set(args.mutant) - {m.id for m in every})
        if unknown:
            print(
                f"error: --mutant {', '.join(unknown)}: no generated mutant has this id (see --list)", file=sys.stderr
            )
            return 2
        every = [m for m in every if m.id in set(args.mutant)]
    mutants = sample(every, args.max_mutants, args.seed)
    if args.list:
        for m in mutants:
            print(f"{m.id}  {m.label(Path(target.root))}")
        return 0
    print(
        f"mutate: {target.impl}: {len(every)} mutants generated by universalmutator from {len(files)} file(s)"
        + (f", {len(mutants)} sampled (--max-mutants, seed {args.seed})" if len(mutants) < len(every) else "")
        + f"; {args.workers} workers",
        flush=True,
    )
    options = Options(
        impls=(target.impl,),
        fail_fast=True,
        workers=args.workers,
        timeout_factor=args.timeout_factor,
        timeout_min=args.timeout_min,
        baseline_timeout=args.baseline_timeout,
    )
    results = Results(options, catalog=[])
    cache = Cache(args.out / CACHE, enabled=not args.no_cache)
    progress = Progress(enabled=True)
    scratch = Path(tempfile.mkdtemp(prefix="elmo-mutate-"))
    started = time.perf_counter()
    build_time = 0.0
    if target.build:  # the clean sources, built once: each mutant's copy starts from this build
        try:
            target, build_time = _template(target, scratch)
        except UsageError as exc:
            shutil.rmtree(scratch, ignore_errors=True)
            print(f"error: {exc}", file=sys.stderr)
            return 2
    plan = GeneratedPlan(results, target, mutants, args.select, scratch, cache, progress)
    plan.build_time = build_time
    try:
        with tempfile.TemporaryDirectory(prefix="elmo-mutate-logs-") as logs:
            run_jobs(plan, options.workers, Path(logs), progress.write)
    except WorkerStartError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
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
    problems = [p for p in [baseline_problem(baseline)] if p] if baseline else ["no baseline result"]
    problems += [f"{v.mutant}: {v.failure}" for v in verdicts if v.failure]
    if not mutants:
        problems.append("no mutant was generated, so nothing was checked")
    print()
    print(terminal(verdicts, args, results, Path(target.root)))
    for note in write_reports(results, verdicts, args, problems):
        print(note)
    for problem in problems[:1] if problems and baseline_problem(baseline or Baseline("")) else []:
        print(f"error: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
