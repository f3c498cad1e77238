"""elmo-conformance batch SUBMISSIONS... --out DIR [--mutants none|declared|generated]
[--scheduler ADDRESS | --scheduler-file PATH] [--workers N] [--job-timeout S] [--fail-on-fail]
[--grading FILE] [--export gradescope] [--time-factor F] [--regrade]
[suite options] [-- suite and pytest options]

Checks many implementations (a course's class, a framework's backends) with the suite, and
optionally their mutants, on Dask workers: an embedded LocalCluster on this machine by default, or
an existing cluster. Writes DIR/submissions/NAME/ (each one's report JSON, its page, its output),
DIR/batch.json, the class dashboard DIR/index.html and the grade sheet DIR/grades.csv
(docs/grading.md); with --export gradescope, each submission's Gradescope results.json.

Each submission runs in the sandbox (docs/sandbox.md); where bubblewrap cannot run, the batch
refuses to run submissions unless given --no-sandbox (then they run with the worker's rights).

Exit status: 0 every submission got a verdict (whatever the verdicts); 1 with --fail-on-fail, some
submission did not pass; 2 a job was lost, or the batch could not run (usage, cluster, versions).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

from elmo_conformance.batch import grading as grading_
from elmo_conformance.batch.executor import Cluster, ExecutorError, Outcome, cores
from elmo_conformance.batch.jobs import Job
from elmo_conformance.batch.records import (
    KILLED_WORKER,
    LOST,
    PASS,
    attempts,
    judge_suite,
    mutation_summary,
    new_record,
    observed_tests,
    summary_counts,
    write_batch,
    write_dashboard,
)
from elmo_conformance.batch.regrade import Cache
from elmo_conformance.batch.regrade import key as cache_key
from elmo_conformance.batch.submissions import SUBMISSIONS, resolve_all
from elmo_conformance.executor import cluster

MUTANT_MODES = ("none", "declared", "generated")
# Options of the suite's that the batch sets itself, per submission.
OWN_OPTIONS = ("--impl", "--report", "--pass-table", "--html", "--conformance-html", "--mutant")
# Options that would run a submission in the harness's own process, whose result counts (§11.1):
# never in a batch.
IN_PROCESS_OPTIONS = ("--in-process", "--pdb", "--trace", "--no-sandbox")
EXPORTS = ("gradescope",)
# Each test's CPU-time limit: TIME_FACTOR times the reference's on the same worker, and at least
# TIME_FLOOR_S CPU seconds (docs/grading.md, "Time limits").
TIME_FACTOR = 20.0
TIME_FLOOR_S = 10.0


def _seconds(text: str) -> float:
    value = float(text)
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds > 0, got {text}")
    return value


def _factor(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0 (0: no CPU-time limits), got {text}")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="elmo-conformance batch",
        description="Check many implementations with the suite (and their mutants) on Dask workers.",
        epilog="Suite options not listed here go after `--`: elmo-conformance batch a b --out r -- -x "
        "--hypothesis-profile=thorough. Exit status: 0 every submission got a verdict; 1 --fail-on-fail and "
        "one did not pass; 2 a job was lost or the batch could not run.",
    )
    p.add_argument(
        "submissions",
        nargs="+",
        metavar="SUBMISSION",
        help="an --impl argument (numpy, mine.py, package.module:attr, 'cmd:PROGRAM ARGS') or a folder holding "
        "adapter.py or an elmo-submission.json manifest (spec/schemas/submission.schema.json)",
    )
    p.add_argument("--out", required=True, type=Path, metavar="DIR", help="where the reports go")
    p.add_argument(
        "--mutants", choices=MUTANT_MODES, default="none", help="the mutation run for each passing submission"
    )
    p.add_argument(
        "--shard-size",
        type=int,
        default=0,
        metavar="N",
        help="N mutants per mutation job, each job with its own baseline (declared: the catalog's ids; generated: "
        "listed by a first job); default 0: one mutation job per submission",
    )
    p.add_argument(
        "--max-mutants",
        type=int,
        default=None,
        metavar="N",
        help="--mutants generated: a seeded sample of N of each submission's generated mutants (mutate --max-mutants)",
    )
    p.add_argument(
        "--mutant-workers",
        type=int,
        default=1,
        metavar="N",
        help="worker processes of the mutation runner's own pool inside each mutation job (default 1: the "
        "cluster's workers are the parallelism)",
    )
    cluster.add_options(p, "the batch")  # the executor's, as `mutate` takes them
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        help=f"worker processes of the embedded cluster (default: cores, {cores()})",
    )
    p.add_argument(
        "--job-timeout",
        type=_seconds,
        default=1800.0,
        metavar="S",
        help="a job (build and suite) still running after S seconds is stopped: the submission hung (default %(default)g)",
    )
    p.add_argument(
        "--mutants-timeout",
        type=_seconds,
        default=7200.0,
        metavar="S",
        help="the same for a mutation job (default %(default)g)",
    )
    p.add_argument("--fail-on-fail", action="store_true", help="exit 1 when any submission does not pass (for CI)")
    grades = p.add_argument_group("grades (docs/grading.md)")
    grades.add_argument(
        "--grading",
        type=Path,
        metavar="FILE",
        help="points and visibility per spec section or per test (TOML or JSON); default: 1 point per test, visible",
    )
    grades.add_argument(
        "--export",
        action="append",
        choices=EXPORTS,
        default=[],
        help="also write each submission's results in this format: gradescope, DIR/submissions/NAME/results.json",
    )
    grades.add_argument(
        "--time-factor",
        type=_factor,
        default=TIME_FACTOR,
        metavar="F",
        help="each test's CPU-time limit: F times the reference's CPU time for it on the same worker, and at least "
        "--time-floor; a submission that hits one is re-run alone before it counts (default %(default)g; 0: none)",
    )
    grades.add_argument(
        "--time-floor",
        type=_seconds,
        default=TIME_FLOOR_S,
        metavar="S",
        help="the least CPU-time limit of a test, in CPU seconds (default %(default)g)",
    )
    grades.add_argument(
        "--regrade",
        action="store_true",
        help="run every submission again, even those whose result is kept under DIR/cache/ for the same content, "
        "suite and options",
    )
    p.add_argument(
        "--margins",
        action="store_true",
        help="record the tolerance margins of §10 (each job renders a page it discards)",
    )
    p.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run the submissions without the sandbox (bubblewrap, docs/sandbox.md), with the workers' rights: "
        "only for code you trust; without it, a batch refuses to run where the sandbox cannot",
    )
    p.add_argument("--no-dashboard", action="store_true", help="the embedded cluster without Dask's dashboard")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    suite = p.add_argument_group("suite options, passed to every run")
    suite.add_argument("--call-timeout", metavar="S", help="the suite's --call-timeout")
    suite.add_argument("--dtype", help="the suite's --dtype (float64, float32)")
    suite.add_argument("-k", dest="keyword", metavar="EXPR", help="pytest's -k: only the tests it selects")
    suite.add_argument("-m", dest="marker", metavar="EXPR", help="pytest's -m")
    suite.add_argument("--hypothesis-profile", metavar="NAME")
    return p


def parse(argv: list[str]) -> argparse.Namespace:
    own, rest = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    p = parser()
    args = p.parse_args(own)
    suite_args = ["-q"]
    for option, value in (
        ("--call-timeout", args.call_timeout),
        ("--dtype", args.dtype),
        ("-k", args.keyword),
        ("-m", args.marker),
        ("--hypothesis-profile", args.hypothesis_profile),
    ):
        if value is not None:
            suite_args += [option, value]
    for arg in rest:
        if arg in OWN_OPTIONS or arg.startswith(tuple(o + "=" for o in OWN_OPTIONS)):
            p.error(f"{arg}: the batch sets it for each submission; give submissions as arguments")
        if arg in IN_PROCESS_OPTIONS:
            p.error(
                f"{arg}: a batch never runs a submission in the harness's process or outside the sandbox "
                "(give --no-sandbox before `--` for a class you trust)"
            )
    args.suite_args = suite_args + rest
    if args.workers is not None and args.workers < 1:
        p.error(f"--workers: expected an integer >= 1, got {args.workers}")
    if args.max_mutants is not None and args.max_mutants < 1:
        p.error("--max-mutants: expected an integer >= 1")
    if args.mutant_workers < 1:
        p.error("--mutant-workers: expected an integer >= 1")
    if args.shard_size < 0:
        p.error("--shard-size: expected an integer >= 0")
    return args


class Progress:
    """The terminal's progress bar (tqdm): jobs done of all, running, failed, time left."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.bar: Any = None
        self.failed = 0
        if enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="job", desc="batch", file=sys.stderr, dynamic_ncols=True, smoothing=0.1)

    def event(self, event: str, running: int, queued: int) -> None:
        if self.bar is not None:
            self.bar.set_postfix(running=running, queued=queued, failed=self.failed, refresh=False)
            self.bar.refresh()

    def done(self, ok: bool) -> None:
        self.failed += 0 if ok else 1
        if self.bar is not None:
            self.bar.update(1)

    def add(self, n: int) -> None:
        if self.bar is not None and n:
            self.bar.total += n
            self.bar.refresh()

    def write(self, line: str) -> None:
        if self.bar is not None:
            self.bar.write(line, file=sys.stderr)
        else:
            print(line, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def shards(size: int) -> list[list[str]]:
    if size <= 0:
        return [[]]
    from elmo_conformance.spec.catalog import mutant_catalog

    ids = [entry["id"] for entry in mutant_catalog()]
    return [ids[i : i + size] for i in range(0, len(ids), size)]


def main(argv: list[str] | None = None) -> int:
    args = parse(list(sys.argv[1:] if argv is None else argv))
    from elmo_conformance.ground.version import __version__

    started = time.monotonic()
    out: Path = args.out
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(f"error: --out {out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    from elmo_conformance.ground.resources import suite_digest
    from elmo_conformance.processes import sandbox

    embedded = args.scheduler is None and args.scheduler_file is None
    if args.mutants == "generated" and embedded:  # the workers are this machine: its packages are theirs
        from elmo_conformance.mutation.generate import EngineMissing, require_extra

        try:
            require_extra()
        except EngineMissing as exc:
            print(f"error: --mutants generated runs `elmo-conformance mutate`: {exc}", file=sys.stderr)
            return 2
    if not args.no_sandbox and embedded and sandbox.unavailable():
        print(
            f"error: the sandbox cannot run here: {sandbox.unavailable()}. A batch runs submissions only in the "
            "sandbox (docs/sandbox.md); install bubblewrap, or give --no-sandbox to run them with your rights",
            file=sys.stderr,
        )
        return 2
    if args.no_sandbox:
        print("batch: --no-sandbox: the submissions run with the workers' rights", file=sys.stderr)
    try:
        grading = grading_.load(args.grading) if args.grading is not None else grading_.Grading()
    except grading_.GradingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    digest = suite_digest()
    submissions = resolve_all(args.submissions)
    records = {s.name: new_record(s) for s in submissions}
    options = {
        "suite_args": args.suite_args,
        "job_timeout_s": args.job_timeout,
        "mutants": args.mutants,
        "shard_size": args.shard_size,
        "max_mutants": args.max_mutants,
        "mutant_workers": args.mutant_workers,
        "fail_on_fail": args.fail_on_fail,
        "sandbox": not args.no_sandbox,
        "suite_digest": digest,
        "time_factor": args.time_factor,
        "time_floor_s": args.time_floor,
        "grading": grading.describe(),
        "export": args.export,
        "regrade": args.regrade,
    }
    # What a suite job's result depends on (regrade.key): a result kept under DIR/cache/ with the
    # same key is re-used, unless --regrade.
    keyed = {
        "suite_args": args.suite_args,
        "job_timeout_s": args.job_timeout,
        "time_factor": args.time_factor,
        "time_floor_s": args.time_floor,
        "sandbox": not args.no_sandbox,
        "margins": args.margins,
        "suite_digest": digest,
    }
    cache = Cache(out)

    def suite_job(s: Any) -> Job:
        return Job(
            s.name,
            s.impl or "",
            "suite",
            s.files,
            s.build,
            list(args.suite_args),
            args.job_timeout,
            margins=args.margins,
            version=__version__,
            sandboxed=not args.no_sandbox,
            suite_digest=digest,
            time_factor=args.time_factor,
            time_floor_s=args.time_floor,
        )

    keys = {s.name: cache_key(s, keyed) for s in submissions if s.problem is None}
    # A mutation run's result depends on the same, and on the mutation options.
    mutation_keyed = {
        **keyed,
        "mutants": args.mutants,
        "shard_size": args.shard_size,
        "max_mutants": args.max_mutants,
        "mutant_workers": args.mutant_workers,
        "mutants_timeout_s": args.mutants_timeout,
    }
    mutation_keys = {name: cache_key(s, mutation_keyed) for s in submissions if (name := s.name) in keys}
    reused_mutations: list[str] = []
    kept = {} if args.regrade else {name: entry for name, k in keys.items() if (entry := cache.get(k)) is not None}
    first = [(suite_job(s), s) for s in submissions if s.problem is None and s.name not in kept]
    results: dict[str, dict[str, Any] | None] = {}  # each submission's counted suite result
    first_attempts: dict[str, list[dict[str, Any]]] = {}  # the tries of a first run that hit a time limit
    mutation_outcomes: dict[str, list[Outcome]] = {}
    mutation_jobs: dict[str, int] = {}
    executor: dict[str, Any] = {}
    lost = 0
    progress = Progress(len(first), enabled=not args.no_progress)
    for s in submissions:
        if s.problem:
            progress.write(f"{s.name}: did not load: {s.problem}")

    select = ["-k", args.keyword] if args.keyword else []

    def mutation_job(submission: Any, kind: str, mutants: list[str]) -> tuple[Job, Any]:
        extra = select if kind.startswith("generated") else []
        if kind.startswith("generated") and args.max_mutants and not mutants:
            extra = [*extra, "--max-mutants", str(args.max_mutants)]
        job = Job(
            submission.name,
            submission.impl or "",
            kind,
            submission.files,
            submission.build,
            list(extra),
            args.mutants_timeout,
            mutants=mutants,
            version=__version__,
            pool=args.mutant_workers,
            sandboxed=not args.no_sandbox,
            suite_digest=digest,
        )
        return job, submission

    def reuse_mutation(submission: Any) -> bool:
        """A passing submission's mutation result kept from an earlier batch: restored, no job."""
        entry = None if args.regrade else cache.get(mutation_keys[submission.name])
        summary = (entry or {}).get("result", {}).get("summary")
        if not isinstance(summary, dict):
            return False
        report = entry["result"].get("report") if entry else None
        if summary.get("report") and isinstance(report, str):
            from elmo_conformance.conformance.record import write_text

            write_text(out / summary["report"], report)
        records[submission.name]["mutation"] = {**summary, "reused": True}
        reused_mutations.append(submission.name)
        return True

    def keep_mutation(submission: Any, outcomes: list[Outcome]) -> None:
        """Keep a mutation result under DIR/cache/ when every one of its jobs came back."""
        summary = records[submission.name]["mutation"]
        if not isinstance(summary, dict) or any(o.result is None for o in outcomes):
            return
        report = None
        if summary.get("report"):
            try:
                report = (out / summary["report"]).read_text(encoding="utf-8")
            except OSError:
                return
        cache.put(
            mutation_keys[submission.name], {"name": submission.name, "result": {"summary": summary, "report": report}}
        )

    def then(outcome: Outcome) -> list[tuple[Job, Any]]:
        """The jobs that follow a job: a suite that hit a time limit, run again alone; a passing
        suite's mutants, in shards of --shard-size (generated mutants: listed by a first job, then
        run in groups)."""
        submission, kind = outcome.tag, outcome.job.kind
        jobs: list[tuple[Job, Any]] = []
        if rerun_alone(outcome):
            progress.add(1)
            return [(dataclasses.replace(outcome.job, alone=True), submission)]
        if kind == "suite" and args.mutants != "none" and records[submission.name]["verdict"] == PASS:
            if reuse_mutation(submission):
                return []
            if args.mutants == "declared":
                jobs = [mutation_job(submission, "declared", shard) for shard in shards(args.shard_size)]
            elif args.shard_size > 0:
                jobs = [mutation_job(submission, "generated-list", [])]
            else:
                jobs = [mutation_job(submission, "generated", [])]
        elif kind == "generated-list" and outcome.result and outcome.result.get("mutant_ids"):
            ids = outcome.result["mutant_ids"]
            groups = [ids[i : i + args.shard_size] for i in range(0, len(ids), args.shard_size)]
            jobs = [mutation_job(submission, "generated", group) for group in groups]
        if jobs and jobs[0][0].kind != "generated-list":
            mutation_jobs[submission.name] = len(jobs)
        progress.add(len(jobs))
        return jobs

    def judge(outcome: Outcome) -> None:
        """A suite job's outcome: the submission's verdict, or a first run that hit a time limit."""
        submission = outcome.tag
        record = records[submission.name]
        result = outcome.result or {}
        if rerun_alone(outcome):
            record["time_limits"] = {"first_run": limit_summary(result), "rerun_alone": True}
            first_attempts[submission.name] = [
                {**attempt, "outcome": "hit a time limit: run again alone"}
                if attempt.get("outcome") == "result"
                else attempt
                for attempt in attempts(outcome)
            ]
            progress.write(f"{submission.name}: hit a time limit; running it again alone before the limit counts")
            return
        judge_suite(record, outcome, out / SUBMISSIONS / submission.name, out)
        record["attempts"] = first_attempts.pop(submission.name, []) + record["attempts"]
        results[submission.name] = outcome.result
        limits = record.get("time_limits") or {"rerun_alone": False}
        if outcome.result is not None:
            limits.update(
                factor=args.time_factor,
                floor_s=args.time_floor,
                counted="the run alone" if outcome.job.alone else "the first run",
                **({"rerun": limit_summary(result)} if outcome.job.alone else {"first_run": limit_summary(result)}),
            )
            if outcome.job.alone:
                hit = bool(result.get("time_limit_hits") or result.get("timed_out"))
                limits["limit_counts"] = hit
        record["time_limits"] = limits
        if record["verdict"] not in (LOST, KILLED_WORKER) and outcome.result is not None and not record.get("reused"):
            cache.put(
                keys[submission.name],
                {
                    "name": submission.name,
                    "result": outcome.result,
                    "seconds": outcome.seconds,
                    "ids": outcome.ids,
                    "died": outcome.died,
                    "alone": outcome.job.alone,
                    "time_limits": record["time_limits"],
                },
            )
        if record["verdict"] != PASS:
            progress.write(f"{submission.name}: {record['verdict']}: {record['reason']}")

    for submission in submissions:  # the results kept from an earlier batch
        entry = kept.get(submission.name)
        if entry is None:
            continue
        job = dataclasses.replace(suite_job(submission), alone=bool(entry.get("alone")))
        outcome = Outcome(
            submission, job, entry["result"], list(entry.get("died") or []), None, entry.get("seconds") or 0.0,
            list(entry.get("ids") or []),
        )  # fmt: skip
        records[submission.name]["reused"] = {
            "key": keys[submission.name],
            "from": f"cache/{keys[submission.name]}.json",
        }
        records[submission.name]["time_limits"] = entry.get("time_limits")
        judge(outcome)
        first += then(outcome)
    if kept:
        progress.write(
            f"batch: {len(kept)} of {len(keys)} submission(s) re-used from {out / 'cache'} (the same content, suite "
            "and options; --regrade runs them again)"
            + (f", and {len(reused_mutations)} mutation result(s)" if reused_mutations else "")
        )
    try:
        with (
            Cluster(args.scheduler, args.scheduler_file, args.workers, not args.no_dashboard)
            if first
            else _NoCluster() as cluster
        ):
            executor = cluster.describe()
            link = executor.get("dashboard")
            if first:
                progress.write(
                    f"batch: {len(submissions)} submission(s) on {executor['kind']} {executor['scheduler']}, "
                    f"{executor['workers']} workers, {executor['threads']} threads"
                    + (f"; Dask dashboard: {link}" if link else "")
                )
            for outcome in cluster.run(first, then, progress.event):
                submission = outcome.tag
                record = records[submission.name]
                directory = out / SUBMISSIONS / submission.name
                if outcome.job.kind == "suite":
                    judge(outcome)
                    ok = record["verdict"] == PASS or rerun_alone(outcome)
                    lost += record["verdict"] == LOST
                elif outcome.job.kind == "generated-list":
                    ok = bool(outcome.result and outcome.result.get("mutant_ids"))
                    lost += outcome.result is None and outcome.lost is not None
                    if not ok:
                        tail = (outcome.result or {}).get("output") or outcome.lost or "its worker died"
                        record["mutation"] = {
                            "mode": args.mutants,
                            "score": None,
                            "problem": "its generated mutants could not be listed: " + tail.strip()[-500:],
                        }
                else:
                    mutation_outcomes.setdefault(submission.name, []).append(outcome)
                    ok = outcome.result is not None
                    lost += outcome.result is None and outcome.lost is not None
                    if len(mutation_outcomes[submission.name]) == mutation_jobs.get(submission.name):
                        record["mutation"] = mutation_summary(
                            args.mutants, mutation_outcomes[submission.name], directory / "mutants", out
                        )
                        keep_mutation(submission, mutation_outcomes[submission.name])
                progress.done(ok)
    except ExecutorError as exc:
        progress.close()
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        progress.close()
        print("interrupted: the reports of the jobs that finished are written", file=sys.stderr)
        lost += 1
    finally:
        progress.close()
    for record in records.values():
        if record["verdict"] is None:
            record.update(verdict=LOST, reason="no result: the batch ended before this job finished")
            lost += 1
        if args.mutants != "none" and record["mutation"] is None:
            record["mutation"] = {"mode": args.mutants, "problem": "not run: the suite did not pass", "score": None}
    listed = list(records.values())
    sheet = write_grades(out, listed, results, grading, args.export)
    executor["wall_s"] = round(time.monotonic() - started, 3)
    executor["reused"] = len(kept)
    executor["reused_mutations"] = len(reused_mutations)
    path = write_batch(out, listed, executor, options)
    page = write_dashboard(out, listed, executor, options)
    counts = summary_counts(listed)
    print(
        f"batch: {len(listed)} submission(s) in {executor['wall_s']:.1f} s: "
        + ", ".join(f"{n} {verdict}" for verdict, n in counts.items())
        + f"; {len(kept)} result(s) re-used, {len(keys) - len(kept)} run"
        + (f"; {len(reused_mutations)} mutation result(s) re-used" if reused_mutations else "")
    )
    print(f"records: {path}\ngrade sheet: {sheet}\nclass dashboard: {page}")
    if lost:
        print(f"error: {lost} job(s) lost: no verdict for them", file=sys.stderr)
        return 2
    if args.fail_on_fail and any(r["verdict"] != PASS for r in listed):
        return 1
    return 0


def rerun_alone(outcome: Outcome) -> bool:
    """A suite job that hit a time limit (a test's CPU-time limit or --call-timeout, or the job's
    deadline) on its first run: it runs again alone before the limit counts."""
    result = outcome.result or {}
    return (
        outcome.job.kind == "suite"
        and not outcome.job.alone
        and result.get("stage") == "suite"
        and bool(result.get("time_limit_hits") or result.get("timed_out"))
    )


def limit_summary(result: dict[str, Any]) -> dict[str, Any]:
    """What a run's record says about time limits: the tests that hit one, the job's deadline,
    where its limits were calibrated."""
    calibration = result.get("calibration") or {}
    return {
        "hits": result.get("time_limit_hits") or [],
        "deadline_hit": bool(result.get("timed_out")),
        "worker": (result.get("where") or {}).get("worker") or (result.get("where") or {}).get("host"),
        "calibrated_on": (calibration.get("where") or {}).get("worker") or (calibration.get("where") or {}).get("host"),
        "calibration_reused": bool(calibration.get("reused")),
        "reference_cpu_s": calibration.get("cpu_s") or {},
        "limits_s": (result.get("limits") or {}).get("per_test") or {},
    }


class _NoCluster:
    """Where every job's result was re-used: no cluster is started."""

    def __enter__(self) -> _NoCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def describe(self) -> dict[str, Any]:
        return {
            "engine": "none",
            "kind": "no cluster (every result re-used)",
            "scheduler": "-",
            "workers": 0,
            "threads": 0,
        }

    def run(self, first: Any, then: Any, progress: Any) -> list[Outcome]:
        return []


def write_grades(
    out: Path,
    records: list[dict[str, Any]],
    results: dict[str, dict[str, Any] | None],
    grading: grading_.Grading,
    exports: list[str],
) -> Path:
    """Each record's grade, from what its harness observed; DIR/grades.csv; with --export
    gradescope, DIR/submissions/NAME/results.json."""
    from elmo_conformance.conformance.record import write_text

    expected: dict[str, dict[str, Any]] = {}
    for result in results.values():  # the class's tests: the reference's run on a worker
        calibration = (result or {}).get("calibration") or {}
        if calibration.get("items") and not calibration.get("problem"):
            expected = grading_.expected_tests(calibration, [])
            break
    if not expected:  # no calibration came back: every test some submission ran, at its most cases
        for result in results.values():
            for name, info in grading_.expected_tests(None, observed_tests(result)[0]).items():
                if info["cases"] > expected.get(name, {"cases": -1})["cases"]:
                    expected[name] = info
    for record in records:
        counted = record["name"] in results and record["verdict"] not in (LOST, KILLED_WORKER)
        observed = observed_tests(results.get(record["name"]))[0] if counted else []
        record["grade"] = grading_.grade(grading, expected, observed, why_missing=record.get("reason"))
    sheet = write_text(out / grading_.GRADES_FILE, grading_.grades_csv(records, grading))
    if "gradescope" in exports:
        for record in records:
            target = out / SUBMISSIONS / record["name"] / grading_.RESULTS_FILE
            target.parent.mkdir(parents=True, exist_ok=True)
            write_text(target, json.dumps(grading_.gradescope_results(record, grading.visibility), indent=1) + "\n")
            record["reports"]["gradescope"] = target.relative_to(out).as_posix()
    return sheet


if __name__ == "__main__":
    sys.exit(main())
