"""elmo-conformance batch SUBMISSIONS... --out DIR [--mutants none|declared|generated]
[--scheduler ADDRESS | --scheduler-file PATH] [--workers N] [--job-timeout S] [--fail-on-fail]
[suite options] [-- suite and pytest options]

Checks many implementations (a course's class, a framework's backends) with the suite, and
optionally their mutants, on Dask workers: an embedded LocalCluster on this machine by default, or
an existing cluster. Writes DIR/submissions/NAME/ (each one's report JSON, its page, its output),
DIR/batch.json and the class dashboard DIR/index.html.

Each submission runs in the sandbox (docs/sandbox.md); where bubblewrap cannot run, the batch
refuses to run submissions unless given --no-sandbox (then they run with the worker's rights).

Exit status: 0 every submission got a verdict (whatever the verdicts); 1 with --fail-on-fail, some
submission did not pass; 2 a job was lost, or the batch could not run (usage, cluster, versions).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

from .executor import Cluster, ExecutorError, Outcome, cores
from .jobs import Job
from .records import (
    LOST,
    PASS,
    judge_suite,
    mutation_summary,
    new_record,
    summary_counts,
    write_batch,
    write_dashboard,
)
from .submissions import SUBMISSIONS, resolve_all

MUTANT_MODES = ("none", "declared", "generated")
# Options of the suite's that the batch sets itself, per submission.
OWN_OPTIONS = ("--impl", "--report", "--pass-table", "--html", "--conformance-html", "--mutant")
# Options that would run a submission in the harness's own process, whose result counts (§11.1):
# never in a batch.
IN_PROCESS_OPTIONS = ("--in-process", "--pdb", "--trace", "--no-sandbox")


def _seconds(text: str) -> float:
    value = float(text)
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds > 0, got {text}")
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
    where = p.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS", help="an existing Dask scheduler, tcp://HOST:PORT")
    where.add_argument("--scheduler-file", metavar="PATH", help="an existing Dask scheduler's --scheduler-file")
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


def mutate_available() -> bool:
    from elmo_conformance.cli import COMMANDS

    return "mutate" in COMMANDS


def shards(size: int) -> list[list[str]]:
    if size <= 0:
        return [[]]
    from elmo_conformance.conformance.spec import mutant_catalog

    ids = [entry["id"] for entry in mutant_catalog()]
    return [ids[i : i + size] for i in range(0, len(ids), size)]


def main(argv: list[str] | None = None) -> int:
    args = parse(list(sys.argv[1:] if argv is None else argv))
    from elmo_conformance import __version__

    if args.mutants == "generated" and not mutate_available():
        print(
            f"error: --mutants generated runs `elmo-conformance mutate`, which elmo-conformance {__version__} "
            "does not have yet; use --mutants declared or none",
            file=sys.stderr,
        )
        return 2
    started = time.monotonic()
    out: Path = args.out
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(f"error: --out {out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    from elmo_conformance import sandbox
    from elmo_conformance.resources import suite_digest

    embedded = args.scheduler is None and args.scheduler_file is None
    if not args.no_sandbox and embedded and sandbox.unavailable():
        print(
            f"error: the sandbox cannot run here: {sandbox.unavailable()}. A batch runs submissions only in the "
            "sandbox (docs/sandbox.md); install bubblewrap, or give --no-sandbox to run them with your rights",
            file=sys.stderr,
        )
        return 2
    if args.no_sandbox:
        print("batch: --no-sandbox: the submissions run with the workers' rights", file=sys.stderr)
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
    }
    first = [
        (
            Job(
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
            ),
            s,
        )
        for s in submissions
        if s.problem is None
    ]
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

    def then(outcome: Outcome) -> list[tuple[Job, Any]]:
        """The mutation jobs that follow a job: a passing suite's mutants, in shards of
        --shard-size (generated mutants: listed by a first job, then run in groups)."""
        submission, kind = outcome.tag, outcome.job.kind
        jobs: list[tuple[Job, Any]] = []
        if kind == "suite" and args.mutants != "none" and records[submission.name]["verdict"] == PASS:
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

    try:
        with Cluster(args.scheduler, args.scheduler_file, args.workers, not args.no_dashboard) as cluster:
            executor = cluster.describe()
            link = executor.get("dashboard")
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
                    judge_suite(record, outcome, directory, out)
                    ok = record["verdict"] == PASS
                    lost += record["verdict"] == LOST
                    if not ok:
                        progress.write(f"{submission.name}: {record['verdict']}: {record['reason']}")
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
    executor["wall_s"] = round(time.monotonic() - started, 3)
    path = write_batch(out, listed, executor, options)
    page = write_dashboard(out, listed, executor, options)
    counts = summary_counts(listed)
    print(
        f"batch: {len(listed)} submission(s) in {executor['wall_s']:.1f} s: "
        + ", ".join(f"{n} {verdict}" for verdict, n in counts.items())
    )
    print(f"records: {path}\nclass dashboard: {page}")
    if lost:
        print(f"error: {lost} job(s) lost: no verdict for them", file=sys.stderr)
        return 2
    if args.fail_on_fail and any(r["verdict"] != PASS for r in listed):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
