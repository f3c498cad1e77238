"""The plan of a mutation run: a clean baseline per adapter, then every declared mutant through
the tests that can reach it, expected killers first, on a pool of spawned workers."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from elmo_conformance.mutation.deadlines import TEST_TIMEOUT_MIN
from elmo_conformance.mutation.model import Baseline, MutantRun, TestOutcome
from elmo_conformance.mutation.pool import run_jobs
from elmo_conformance.mutation.worker import BaselineJob, MutantJob
from elmo_conformance.spec.components import catalog_component

SESSION_OVERHEAD_S = 1.0  # a pytest session's own start-up, on top of its tests' durations


@dataclass(frozen=True)
class Options:
    impls: tuple[str, ...]
    only: frozenset[str] = frozenset()  # run only these mutant ids (empty: all)
    fail_fast: bool = False
    workers: int = 2
    timeout_factor: float = 3.0
    timeout_min: float = 20.0
    test_timeout_min: float = TEST_TIMEOUT_MIN  # each test's own deadline in a warm mutant run (deadlines.py)
    baseline_timeout: float = 900.0  # seconds for each worker's share of a clean baseline run


@dataclass
class Results:
    options: Options
    catalog: list[dict]
    baselines: dict[str, Baseline] = field(default_factory=dict)
    runs: dict[tuple[str, str], MutantRun] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)  # setup, baseline, mutants, total (s)


def expected_killers(catalog: list[dict]) -> dict[str, list[str]]:
    return {entry["id"]: list(entry["expected_killers"]) for entry in catalog}


def mutant_job(baseline: Baseline, mutant: str, expected: list[str], options: Options) -> tuple[MutantJob, float]:
    """The job for one mutant and its deadline: the expected killers' cases first, then every
    other test that ran in the baseline and reaches the mutant's replaced code."""
    ran = baseline.ran
    must = [t.nodeid for t in ran if t.name in expected]
    covered = baseline.coverage.get(mutant)
    reach = None if covered is None else set(covered)
    rest = [t.nodeid for t in ran if t.name not in expected and (reach is None or t.nodeid in reach)]
    order = (*must, *rest)
    estimate = SESSION_OVERHEAD_S + sum(baseline.tests[nodeid].duration for nodeid in order)
    timeout = options.timeout_min + options.timeout_factor * estimate
    return MutantJob(baseline.impl, mutant, order, frozenset(must), options.fail_fast), timeout


def not_applicable(entry: dict | None, baseline: Baseline) -> str | None:
    """The component a catalog mutant breaks when the adapter does not implement it (§11, §13.1);
    None for an extra mutant or an applicable one."""
    component = catalog_component(entry) if entry else None
    if component is None or not baseline.components or component in baseline.components:
        return None
    return component


def merge(shards: list[Baseline]) -> Baseline:
    """One adapter's baseline from the shards the workers ran, tests back in collection order."""
    first = next((shard for shard in shards if shard.name), shards[0])  # a lost shard knows no name
    merged = Baseline(
        first.impl, first.name, mutants=first.mutants, unavailable=first.unavailable, components=first.components
    )
    errors = [shard.error for shard in shards if shard.error]
    merged.error = errors[0] if errors else None
    tests = sorted((t for shard in shards for t in shard.tests.values()), key=lambda t: t.index)
    merged.tests = {t.nodeid: t for t in tests}
    for mutant in {key for shard in shards for key in shard.coverage}:
        reached = {nodeid for shard in shards for nodeid in shard.coverage.get(mutant, [])}
        merged.coverage[mutant] = [nodeid for nodeid in merged.tests if nodeid in reached]
    for shard in shards:  # generated mutants: the lines each test ran, the protocol functions it called
        for file, by_line in shard.lines.items():
            target = merged.lines.setdefault(file, {})
            for line, nodeids in by_line.items():
                target[line] = sorted({*target.get(line, ()), *nodeids})
        for function, nodeids in shard.calls.items():
            merged.calls[function] = sorted({*merged.calls.get(function, ()), *nodeids})
        for file, spans in shard.functions.items():
            into = {(start, end): set(tests) for start, end, tests in merged.functions.get(file, [])}
            for start, end, nodeids in spans:
                into.setdefault((start, end), set()).update(nodeids)
            merged.functions[file] = [(start, end, sorted(tests)) for (start, end), tests in sorted(into.items())]
    # A program's measured lines count only when every shard measured its tests' lines.
    problems = [shard.coverage_problem for shard in shards if shard.coverage_problem]
    merged.coverage_problem = problems[0] if problems else None
    if all(shard.measured for shard in shards) and not problems:
        merged.measured = first.measured
    elif any(shard.measured for shard in shards):
        merged.lines, merged.functions = {}, {}
    merged.duration = max(shard.duration for shard in shards)
    merged.exit_code = max(shard.exit_code for shard in shards)
    return merged


class Plan:
    """The runner's scheduler: each adapter's baseline, shared out among the workers, then its
    mutants, longest first."""

    def __init__(self, results: Results, progress: Callable[[str], None]) -> None:
        self.results = results
        self.progress = progress
        self.expected = expected_killers(results.catalog)
        self.catalog = {entry["id"]: entry for entry in results.catalog}
        n = results.options.workers
        self.baseline_jobs = [BaselineJob(impl, i, n) for impl in results.options.impls for i in range(n)]
        self.shards: dict[str, list[Baseline]] = {impl: [] for impl in results.options.impls}
        self.mutant_jobs: list[tuple[MutantJob, float, float]] = []  # job, timeout, estimate
        self.partial: dict[MutantJob, dict[str, TestOutcome]] = {}
        self.outstanding = len(self.baseline_jobs)

    def next_job(self) -> tuple[object, float | None] | None:
        if self.baseline_jobs:
            return self.baseline_jobs.pop(0), self.results.options.baseline_timeout
        if self.mutant_jobs:
            job, timeout, _ = self.mutant_jobs.pop(0)
            self.partial[job] = {}
            return job, timeout
        return None

    def finished(self) -> bool:
        return self.outstanding == 0

    def on_event(self, job: object, event: tuple) -> None:
        if isinstance(job, MutantJob):
            outcome: TestOutcome = event[1]
            self.partial[job][outcome.nodeid] = outcome

    def on_done(self, job: object, result: object) -> None:
        self.outstanding -= 1
        if isinstance(job, BaselineJob):
            shards = self.shards[job.impl]
            shards.append(result)  # type: ignore[arg-type]
            if len(shards) == job.shards:
                self._baseline_done(merge(shards))
        else:
            self._mutant_done(job, result)  # type: ignore[arg-type]

    def on_lost(self, job: object, status: str, reason: str, running: str | None, elapsed: float) -> None:
        if isinstance(job, BaselineJob):  # one shard lost: the baseline fails, and no mutant of it runs
            if status == "Timeout":
                error = f"the clean baseline run hung and its worker was stopped: it {reason} (--baseline-timeout)"
            else:
                error = f"the baseline run failed: {reason}"
            self.on_done(job, Baseline(job.impl, error=error))
            return
        assert isinstance(job, MutantJob)
        run = MutantRun(job.impl, job.mutant, status, dict(self.partial.pop(job, {})), list(job.order), running, reason)
        run.duration = elapsed  # a Timeout's duration is the time it was given before it was stopped
        self.outstanding -= 1
        self._record(run)

    def _baseline_done(self, baseline: Baseline) -> None:
        results = self.results
        results.baselines[baseline.impl] = baseline
        ran, failed = len(baseline.ran), len(baseline.failures)
        if baseline.error:
            self.progress(f"baseline {baseline.impl}: {baseline.error.splitlines()[0]}")
            return
        self.progress(
            f"baseline {baseline.impl}: {len(baseline.tests)} tests, {ran} of them on the adapter and not skipped, "
            f"{failed} failed, in {baseline.duration:.1f} s; {len(baseline.mutants)} mutants declared"
            + (f"; unavailable: {baseline.unavailable}" if baseline.unavailable else "")
        )
        if failed or not ran or baseline.unavailable:
            return
        for info in baseline.mutants:
            if results.options.only and info.id not in results.options.only:
                continue
            if not_applicable(self.catalog.get(info.id), baseline):
                continue  # a catalog mutant of a component the adapter does not implement (§11, §13.1)
            job, timeout = mutant_job(baseline, info.id, self.expected.get(info.id, []), results.options)
            estimate = (timeout - results.options.timeout_min) / results.options.timeout_factor
            self.mutant_jobs.append((job, timeout, estimate))
            self.outstanding += 1
        self.mutant_jobs.sort(key=lambda entry: -entry[2])  # longest first: the pool finishes sooner

    def _mutant_done(self, job: MutantJob, run: MutantRun) -> None:
        self.partial.pop(job, None)
        self._record(run)

    def _record(self, run: MutantRun) -> None:
        self.results.runs[(run.impl, run.mutant)] = run
        killers = len(run.killers)
        detail = f" by {killers} test(s)" if killers else (f": {run.reason.splitlines()[0]}" if run.reason else "")
        baseline = self.results.baselines.get(run.impl)
        self.progress(f"{baseline.name if baseline else run.impl} {run.mutant}: {run.status}{detail}")


def run(options: Options, catalog: list[dict], log_dir: Path, progress: Callable[[str], None]) -> Results:
    results = Results(options, catalog)
    started = time.perf_counter()
    plan = Plan(results, progress)
    run_jobs(plan, options.workers, log_dir, progress)
    total = time.perf_counter() - started
    baseline = max((b.duration for b in results.baselines.values()), default=0.0)
    results.timings = {"total": total, "baseline": baseline, "mutants": max(0.0, total - baseline)}
    return results
