"""Judge the same generated mutants through the warm workers and through a fresh process per mutant
(`mutate --fresh`), with one clean copy and one test order for both, and print each mutant's
status and killing test in each mode as JSON (tests/test_mutate_warm.py, bench/warm.py).

    python tests/mutate_modes.py IMPL -k EXPR --sample N --seed S [--timeout S] [--workers N] [--forced]
        [--test-deadline S] [--modes fresh,warm]
        [--mutate-arg=--source --mutate-arg=FILE --mutate-arg=--build --mutate-arg=CMD ...]

The order is the tests the control run passed, in collection order, for every mutant: the run's
own order (cheap tests first, by the baseline's timings) would change between two runs, and with
it which of two failing tests is the first killer. `--forced` adds two mutants made here: one that
changes nothing (every mutant off: it must survive) and one whose `return e / total` raises (it
must be seen failing), the two checks mutmut makes of its switched mutants.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from elmo_conformance.mutation import mutate
from elmo_conformance.mutation.generate import Generated
from elmo_conformance.mutation.model import MutantRun
from elmo_conformance.mutation.pool import run_jobs
from elmo_conformance.mutation.worker import GeneratedJob


class Jobs:
    """The pool's scheduler for a fixed list of jobs, each with the same deadline."""

    def __init__(self, jobs: list[GeneratedJob], timeout: float) -> None:
        self.queue, self.timeout, self.count = list(jobs), timeout, len(jobs)
        self.results: dict[str, MutantRun] = {}

    def next_job(self) -> tuple[GeneratedJob, float] | None:
        return (self.queue.pop(0), self.timeout) if self.queue else None

    def on_event(self, job: object, event: tuple) -> None:
        pass

    def on_done(self, job: GeneratedJob, result: MutantRun) -> None:
        self.results[job.mutant] = result

    def on_lost(self, job: GeneratedJob, status: str, reason: str, running: str | None, elapsed: float) -> None:
        self.results[job.mutant] = MutantRun(job.impl, job.mutant, status, running=running, reason=reason)

    def finished(self) -> bool:
        return len(self.results) == self.count


def forced(source: Path) -> list[Generated]:
    """Every mutant off (the line as it is) and one forced to fail (its return raises)."""
    lines = source.read_text(encoding="utf-8").splitlines()
    line = next(i for i, text in enumerate(lines, 1) if text.strip() == "return e / total")
    text = lines[line - 1]
    indent = text[: len(text) - len(text.lstrip())]
    same = Generated("forced-off", str(source), line, text, text, "(none)", "python")
    fails = Generated(
        "forced-fail", str(source), line, text, indent + 'raise RuntimeError("forced")', "raise", "python"
    )
    return [same, fails]


def run(jobs: list[GeneratedJob], workers: int, timeout: float, logs: Path) -> tuple[dict[str, MutantRun], float]:
    scheduler = Jobs(jobs, timeout)
    started = time.perf_counter()
    run_jobs(scheduler, workers, logs, lambda line: print(line, file=sys.stderr))
    return scheduler.results, time.perf_counter() - started


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("impl")
    parser.add_argument("-k", dest="select")
    parser.add_argument("--sample", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=15.0)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--mutant", action="append", default=[])
    parser.add_argument("--forced", action="store_true")
    parser.add_argument("--test-deadline", type=float, help="each test's own deadline in a warm run (deadlines.py)")
    parser.add_argument("--modes", default="fresh,warm", help="the paths to judge through (default fresh,warm)")
    parser.add_argument("--mutate-arg", action="append", default=[], help="an argument of mutate's (--source, --build)")
    args = parser.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="elmo-mutate-modes-"))
    os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = str(scratch / "hypothesis")
    try:
        options = mutate.parse(["--impl", args.impl, "--out", str(scratch / "out"), *args.mutate_arg])
        target, files = mutate.resolve(options)
        mutate._child_environment()
        every = mutate.mutants_of(target, files)
        chosen = [m for m in every if m.id in set(args.mutant)]
        rest = [m for m in every if m not in chosen]
        mutants = random.Random(args.seed).sample(rest, min(args.sample, len(rest))) + chosen
        if args.forced:
            mutants += forced(Path(files[0]))
        target, _, _, _ = mutate.clean_copy(target, scratch, scratch / "out", 900.0)
        control = GeneratedJob(target.impl, "control", (), frozenset(), False, args.select, target=target, control=True)
        done, _ = run([replace(control, scratch=str(scratch))], 1, 300.0, scratch / "logs")
        passed = sorted((t for t in done["control"].tests.values() if t.outcome == "passed"), key=lambda t: t.index)
        order = tuple(t.nodeid for t in passed)
        out: dict[str, object] = {"order": order, "mutants": {m.id: m.label() for m in mutants}}
        for mode in args.modes.split(","):
            jobs = [
                GeneratedJob(
                    target.impl,
                    m.id,
                    order,
                    frozenset(),
                    True,
                    args.select,
                    target=target,
                    generated=m,
                    scratch=str(scratch),
                    fresh=mode == "fresh",
                    deadlines=(args.test_deadline,) * len(order) if args.test_deadline else (),
                )
                for m in mutants
            ]
            results, took = run(jobs, args.workers, args.timeout, scratch / f"logs-{mode}")
            out[mode] = {
                key: {
                    "status": r.status,
                    "killers": r.killers[:1],
                    "reason": r.reason,
                    "duration": r.duration,
                    "warm": r.warm,
                }
                for key, r in results.items()
            }
            out[f"{mode}_s"] = took
        print(json.dumps(out, indent=1))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
