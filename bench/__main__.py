"""`python -m bench`: run the benchmarks, write one JSON file and print a short table.

python -m bench                          # everything, at the sizes of the benchmark issue
python -m bench --parts bilm,probe       # some parts only
python -m bench --smoke                  # tiny sizes: proves the code runs, measures nothing
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from elmo_conformance.adapters.loading import AdapterLoadError, available_builtins, load_adapter

from . import batch, bilm, mutants, mutate_dask, mutate_rust, probe, scaling, suite, warm, wire
from . import mutate as generated
from .peak import matmul_peak
from .report import table
from .threads import limit_threads, thread_report

PARTS = (
    "suite",
    "sandbox",
    "bilm",
    "probe",
    "scaling",
    "wire",
    "batch",
    "mutate",
    "mutate-dask",
    "mutate-rust",
    "warm",
)
DTYPES = ("float64", "float32")
LOSS_RTOL = {"float64": 1e-9, "float32": 1e-4}  # the same loss up to each dtype's rounding


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated subset of {','.join(PARTS)}")
    parser.add_argument("--impl", action="append", default=[], help="adapter (as for --impl of the suite); repeatable")
    parser.add_argument("--out", type=Path, default=Path("reports/bench.json"), help="the JSON file to write")
    parser.add_argument("--table", type=Path, default=Path("reports/bench.md"), help="the table, also printed")
    parser.add_argument("--repeats", type=int, default=7, help="timed repeats of each biLM contender")
    parser.add_argument("--probe-repeats", type=int, default=3, help="timed repeats of each probe contender")
    parser.add_argument("--scaling-dtype", choices=DTYPES, default="float32")
    parser.add_argument("--workers", default="1,2,4", help="pytest-xdist worker counts for the suite")
    parser.add_argument("--workers-impl", default="numpy", help="the adapter whose suite is run with workers")
    parser.add_argument(
        "--isolation-rounds", type=int, default=3, help="alternating runs of the suite in and out of process"
    )
    parser.add_argument("--suite-timeout", type=float, default=1800.0, help="seconds before a suite run is abandoned")
    parser.add_argument("--threads", type=int, help="at most this many threads per library (default: theirs)")
    parser.add_argument("--batch-submissions", type=int, default=20, help="the batch part's class size")
    parser.add_argument("--batch-workers", type=int, default=2, help="the batch part's worker processes")
    parser.add_argument(
        "--warm-mutants",
        type=int,
        default=300,
        metavar="N",
        help="the warm part's seeded sample of the reference's generated mutants (0: the whole set)",
    )
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one repeat: checks the code, not speed")
    args = parser.parse_args(argv)
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = [p for p in parts if p not in PARTS]
    if unknown or not parts:
        parser.error(f"--parts: expected a comma-separated subset of {', '.join(PARTS)}, got {args.parts!r}")
    args.parts = parts
    try:
        args.workers = [int(n) for n in args.workers.split(",")]
    except ValueError:
        parser.error(f"--workers: expected comma-separated integers, got {args.workers!r}")
    if any(n < 1 for n in args.workers):
        parser.error(f"--workers: expected worker counts >= 1, got {args.workers}")
    for name in ("repeats", "probe_repeats", "threads", "isolation_rounds"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')}: expected an integer >= 1, got {getattr(args, name)}")
    return args


def environment() -> dict:
    import torch

    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = None
    versions = {"python": platform.python_version(), "numpy": np.__version__, "torch": torch.__version__}
    try:
        import sklearn

        versions["scikit-learn"] = sklearn.__version__
    except ImportError:
        pass
    return {
        "commit": commit,
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "threads": thread_report(),
        "versions": versions,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def log(message: str) -> None:
    """Progress on stderr: a full run takes minutes."""
    print(f"bench: {message}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    impls = args.impl or available_builtins()
    try:
        if args.threads is not None:
            limit_threads(args.threads)
        adapters = [load_adapter(arg) for arg in impls]
    except (AdapterLoadError, ValueError) as exc:
        print(f"python -m bench: {exc}", file=sys.stderr)
        return 2
    bilm_size, probe_size = bilm.BiLMSize(), probe.ProbeSize()
    repeats, probe_repeats, peak_n, isolation_rounds = args.repeats, args.probe_repeats, 2048, args.isolation_rounds
    t_values, b_values = [10, 20, 40, 80], [8, 32, 128]
    if args.smoke:
        bilm_size = bilm.BiLMSize(batch=3, steps=6, d=4, n_layers=1, vocab=11)
        probe_size = probe.ProbeSize(n=120, dim=6, n_classes=3, steps=5, held_out=40)
        repeats = probe_repeats = isolation_rounds = 1
        peak_n, t_values, b_values = 64, [4, 8], [2, 4]

    result: dict = {"environment": environment(), "impls": impls, "parts": args.parts}
    log("matmul peak")
    result["peak"] = {dt: matmul_peak(dt, n=peak_n, repeats=repeats) for dt in DTYPES}
    if "suite" in args.parts:
        log(f"the conformance suite of {', '.join(impls)}")
        extra = ["-k", "test_hand_example_scalar_mix"] if args.smoke else []
        result["suite"] = {"per_adapter": suite.per_adapter(impls, extra, args.suite_timeout)}
        log(f"the suite in a child process against in-process ({isolation_rounds} rounds)")
        result["suite"]["isolation"] = suite.isolation(impls, isolation_rounds, extra, args.suite_timeout)
        log(f"{args.workers_impl}'s suite with {args.workers} workers")
        result["suite"]["workers"] = suite.workers(args.workers_impl, args.workers, extra, args.suite_timeout)
        if args.smoke:
            result["suite"]["mutants"] = {"pending": "not run with --smoke"}
        else:
            log(f"the mutation matrix of {', '.join(impls)}")
            result["suite"]["mutants"] = mutants.per_adapter(impls, args.suite_timeout)
    if "sandbox" in args.parts:
        log(f"numpy's suite in the sandbox and with --no-sandbox ({isolation_rounds} rounds)")
        extra = ["-k", "test_hand_example_scalar_mix"] if args.smoke else []
        result["sandbox"] = suite.sandbox("numpy", isolation_rounds, extra, args.suite_timeout)
    if "bilm" in args.parts:
        log(f"biLM loss+grad against {bilm.BASELINE}")
        result["bilm"] = [
            bilm.compare(adapters, bilm_size, dt, repeats, result["peak"][dt]["flops_per_s"], LOSS_RTOL[dt])
            for dt in DTYPES
        ]
    if "probe" in args.parts:
        log(f"probe against {probe.SKLEARN}")
        result["probe"] = [
            probe.compare(adapters, probe_size, dt, probe_repeats, result["peak"][dt]["flops_per_s"]) for dt in DTYPES
        ]
    if "wire" in args.parts:
        log("the wire encoding (§15.8) against JSON, on one bilm_loss_grad call")
        result["wire"] = [wire.compare(bilm_size, dt, repeats) for dt in DTYPES]
    if "scaling" in args.parts:
        dt = args.scaling_dtype
        log(f"biLM scaling in T {t_values} and B {b_values}")
        result["scaling"] = [
            scaling.sweep(adapters, bilm_size, "steps", t_values, dt, repeats, LOSS_RTOL[dt]),
            scaling.sweep(adapters, bilm_size, "batch", b_values, dt, repeats, LOSS_RTOL[dt]),
        ]
    if "batch" in args.parts:
        n = 3 if args.smoke else args.batch_submissions
        log(f"a batch of {n} submissions: single runs, embedded, a dask cluster ({args.batch_workers} workers)")
        result["batch"] = batch.compare(n, args.batch_workers, timeout=args.suite_timeout)
    if "mutate" in args.parts:
        log("generated mutants of c: elmo-conformance mutate --impl c --max-mutants 300 --seed 1 --workers 2")
        result["mutate"] = {"pending": "not run with --smoke"} if args.smoke else generated.run()
    if "mutate-dask" in args.parts:
        log("generated mutants of tests/examples/outside_mix.py on two dask workers and on two local workers")
        result["mutate_dask"] = mutate_dask.run(n=12, rounds=1) if args.smoke else mutate_dask.run()
    if "mutate-rust" in args.parts:
        log("generated mutants of examples/rust-scalar-mix: clean build, suite, mutate --max-mutants 60 --seed 1")
        result["mutate_rust"] = {"error": "not run with --smoke"} if args.smoke else mutate_rust.run()
    if "warm" in args.parts:
        n = 12 if args.smoke else args.warm_mutants
        log(f"the reference's generated mutants, warm and --fresh (sample {n or 'none: the whole set'}, 2 workers)")
        result["warm"] = warm.run(n=n)
    result["environment"]["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    text = "\n".join(
        [
            table(result),
            *batch.rows(result.get("batch") or {}),
            *generated.rows(result.get("mutate") or {}),
            *mutate_dask.rows(result.get("mutate_dask") or {}),
            *mutate_rust.rows(result.get("mutate_rust") or {}),
            *warm.rows(result.get("warm") or {}),
        ]
    )
    for path, content in ((args.out, json.dumps(result, indent=1) + "\n"), (args.table, text + "\n")):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    print(text)
    print(f"\nwrote {args.out} and {args.table}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
