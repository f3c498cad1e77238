"""Measure the error behind every tolerance of spec §10, and (with --write) record it in spec/tolerances.json.

    python scripts/measure_tolerances.py                      # every built-in CPU adapter installed here
    python scripts/measure_tolerances.py --examples 100 --write
    python scripts/measure_tolerances.py --impl c --out c.json          # one adapter now ...
    python scripts/measure_tolerances.py --merge c.json --merge rest.json --write   # ... merged later
    python scripts/measure_tolerances.py --impl cuda          # on a GPU machine: the cuda overrides

Each adapter runs the conformance suite in its own process with every tolerance set to infinity
and `assert_close` replaced by a recorder, so every comparison the suite makes is measured, on the
fixtures and on the differential configurations (Hypothesis, derandomized, --examples each), in
every declared dtype. Per dtype, device and quantity the recorder keeps the largest absolute
error where |expected| < SPLIT and the largest relative error where |expected| >= SPLIT.

The rule of §10: every tolerance is at least RULE (3) times the worst error measured on every
built-in implementation (atol against the absolute error, rtol against the relative one). `--write`
records the measurements (the worst, where it was seen, and each adapter's) and keeps every
tolerance as it is, except one that breaks the rule: that one is loosened (a MINOR change of the
spec) to the value the margin gives,

    atol = up(margin * max(largest absolute error, eps * SPLIT))
    rtol = up(margin * max(largest relative error, eps))

where eps is the dtype's machine epsilon, `up` rounds up to 1, 2 or 5 times a power of ten and
the margin is MARGIN[dtype]. A tightening waits for a MAJOR version: `--write --reset` sets every
value from the margin anew. CPU measurements set `dtypes`; any other device's set
`devices.<device>` (only where they need more than the CPU's values). A run with a failing test
writes nothing: errors of a broken implementation are not a tolerance.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
TOLERANCES = ROOT / "spec" / "tolerances.json"
SPLIT = 1.0
MARGIN = {"float64": 100.0, "float32": 10.0}
RULE = 3.0  # §10: every tolerance is at least this times every measured error
BUILTINS = ("numpy", "torch", "jax", "c")  # the built-in CPU implementations the rule covers
EPS = {"float64": float(np.finfo(np.float64).eps), "float32": float(np.finfo(np.float32).eps)}
# Tests that compare nothing with a tolerance: leaving them out only saves time.
NOT_MEASURED = "not test_rejects_bad_input and not test_contextual_layers_disambiguate"
EMPTY = {
    "max_abs_error": 0.0,
    "max_rel_error": 0.0,
    "abs_worst": None,
    "rel_worst": None,
    "comparisons": 0,
    "values": 0,
}


# -- the worker: one adapter, in its own process ------------------------------------------------


class Recorder:
    """A pytest plugin: infinite tolerances, and every assert_close recorded instead of checked."""

    def __init__(self) -> None:
        self.current: tuple[str, str, str, str] | None = None  # (adapter, device, dtype, test)
        self.stats: dict[str, dict[str, Any]] = {}

    def pytest_configure(self, config: Any) -> None:
        from elmo_conformance.conformance import case, checks

        def tol(case_: case.Case, quantity: str) -> dict[str, Any]:
            return {"rtol": 1e300, "atol": 1e300, "quantity": quantity}  # never fails, stays finite

        def record(actual: Any, expected: Any, tol: dict, what: str, sections: Any) -> None:
            a, e = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
            if a.shape != e.shape or "quantity" not in tol or self.current is None:
                return original(actual, expected, tol, what, sections)
            self.add(tol["quantity"], a, e, what)

        original = checks.assert_close
        case.Case.tol = tol  # type: ignore[method-assign]
        checks.assert_close = record  # the test modules import it after this, at collection

    def pytest_runtest_setup(self, item: Any) -> None:
        case = getattr(item, "callspec", None) and item.callspec.params.get("case")
        impl = getattr(case, "impl", None)
        self.current = (impl.name, impl.device, case.dtype.name, item.name) if impl else None

    def add(self, quantity: str, a: np.ndarray, e: np.ndarray, what: str) -> None:
        adapter, device, dtype, test = self.current  # type: ignore[misc]
        key = f"{adapter}|{device}|{dtype}|{quantity}"
        entry = self.stats.setdefault(key, dict(EMPTY))
        entry["comparisons"] += 1
        entry["values"] += int(a.size)
        error = np.abs(a - e)
        small = np.abs(e) < SPLIT
        if not np.all(np.isfinite(error)):
            raise AssertionError(f"{test}: {what}: a non-finite error cannot set a tolerance")
        where = f"{adapter} {test}: {what}"
        if small.any() and error[small].max() > entry["max_abs_error"]:
            entry["max_abs_error"], entry["abs_worst"] = float(error[small].max()), where
        if (~small).any():
            relative = float((error[~small] / np.abs(e[~small])).max())
            if relative > entry["max_rel_error"]:
                entry["max_rel_error"], entry["rel_worst"] = relative, where


def worker(impl: str, examples: int, out: Path) -> int:
    from hypothesis import HealthCheck, settings

    from elmo_conformance.runner.running import run

    settings.register_profile(
        "measure-tolerances",
        derandomize=True,
        database=None,
        deadline=None,
        max_examples=examples,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    recorder = Recorder()
    args = ["-q", "-p", "no:cacheprovider", "-k", NOT_MEASURED, "--hypothesis-profile", "measure-tolerances"]
    status = run(
        impl, args, where="here", plugins=[recorder]
    ).exit_status  # the entry point's command line, in this worker
    out.write_text(json.dumps({"exit_status": int(status), "stats": recorder.stats}), encoding="utf-8")
    return int(status)


# -- the parent: run the workers, merge, propose, write -----------------------------------------


def up(x: float) -> float:
    """The smallest of 1, 2 or 5 times a power of ten that is >= x."""
    exponent = math.floor(math.log10(x))
    for step in (1, 2, 5, 10):
        value = float(f"{step}e{exponent}")
        if value >= x * (1 - 1e-12):
            return value
    raise AssertionError("unreachable")


def merge(stats: dict[str, dict]) -> dict[tuple[str, str, str], dict]:
    """adapter|device|dtype|quantity -> (device, dtype, quantity) with the worst over adapters, and
    each adapter's own largest errors under `by_adapter`."""
    merged: dict[tuple[str, str, str], dict] = {}
    for key, entry in sorted(stats.items()):
        adapter, device, dtype, quantity = key.split("|")
        into = merged.setdefault((device.split(":")[0], dtype, quantity), {**EMPTY, "by_adapter": {}})
        for kind in ("abs", "rel"):
            if entry[f"{kind}_worst"] is not None and entry[f"max_{kind}_error"] >= into[f"max_{kind}_error"]:
                into[f"max_{kind}_error"], into[f"{kind}_worst"] = entry[f"max_{kind}_error"], entry[f"{kind}_worst"]
        into["comparisons"] += entry["comparisons"]
        into["values"] += entry["values"]
        into["by_adapter"][adapter] = {kind: entry[kind] for kind in ("max_abs_error", "max_rel_error")}
    return merged


def rounded(measured: dict) -> dict:
    """The measurements as recorded: 3 significant digits, each adapter's too."""

    def three(value: Any) -> Any:
        return float(f"{value:.3g}") if isinstance(value, float) else value

    recorded = {k: three(v) for k, v in measured.items() if k != "by_adapter"}
    if "by_adapter" in measured:
        recorded["by_adapter"] = {
            adapter: {k: three(v) for k, v in errors.items()}
            for adapter, errors in sorted(measured["by_adapter"].items())
        }
    return recorded


def proposal(dtype: str, measured: dict) -> dict:
    """The tolerances the margin gives for these measurements (§10)."""
    margin, eps = MARGIN[dtype], EPS[dtype]
    return {
        "rtol": up(margin * max(measured["max_rel_error"], eps)),
        "atol": up(margin * max(measured["max_abs_error"], eps * SPLIT)),
        "measured": rounded(measured),
    }


def breaks_rule(tolerance: dict, measured: dict) -> list[str]:
    """How `tolerance` ({'atol', 'rtol'}) is below RULE times an error of `measured` (§10); [] if it is not."""
    found = []
    for tol, error in (("atol", "max_abs_error"), ("rtol", "max_rel_error")):
        if tolerance[tol] < RULE * measured[error]:
            found.append(f"{tol} {tolerance[tol]:.0e} < {RULE:g} x {measured[error]:.3g}")
    return found


def kept_or_loosened(dtype: str, current: dict | None, measured: dict, reset: bool) -> tuple[dict, list[str]]:
    """(the entry to write, why it was loosened): the current values with the new measurements,
    loosened to the margin's values where they break the rule; the margin's values if `reset`."""
    new = proposal(dtype, measured)
    if reset or current is None:
        return new, []
    why = breaks_rule(current, measured)
    if not why:
        return {"rtol": current["rtol"], "atol": current["atol"], "measured": new["measured"]}, []
    loosened = {"rtol": max(current["rtol"], new["rtol"]), "atol": max(current["atol"], new["atol"])}
    return {**loosened, "measured": new["measured"]}, why


def versions() -> dict[str, str]:
    found = {"python": sys.version.split()[0]}
    for package in ("numpy", "torch", "jax", "jaxlib"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--impl",
        action="append",
        default=[],
        help=f"adapter (repeatable); default: {', '.join(BUILTINS)} where available",
    )
    parser.add_argument("--examples", type=int, default=100, help="Hypothesis examples per property (default 100)")
    parser.add_argument("--jobs", type=int, default=2, help="adapters measured at once (default 2)")
    parser.add_argument("--write", action="store_true", help="record the measurements in spec/tolerances.json")
    parser.add_argument("--reset", action="store_true", help="with --write: every value from the margin anew (MAJOR)")
    parser.add_argument("--out", type=Path, help="also write the raw measurements as JSON to this path")
    parser.add_argument(
        "--merge", type=Path, action="append", default=[], help="measurements an earlier --out wrote (repeatable)"
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args.worker, args.examples, args.out)

    sys.path.insert(0, str(ROOT))
    from elmo_conformance.adapters.loading import available_builtins

    earlier = [json.loads(path.read_text(encoding="utf-8")) for path in args.merge]
    impls = args.impl or ([] if earlier else [name for name in BUILTINS if name in available_builtins()])
    for data in earlier:
        if data.get("examples", args.examples) != args.examples:
            print(f"--merge: measured with --examples {data['examples']}, not {args.examples}", file=sys.stderr)
            return 2
    stats, failed = measure(impls, args.examples, args.jobs)
    commands = [command for data in earlier for command in data.get("commands", [])]
    commands.append(this_command(args, impls))
    for data in earlier:
        stats.update(data["per_adapter"])
    adapters = list(dict.fromkeys(key.split("|")[0] for key in stats))
    merged = merge(stats)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        raw = {"per_adapter": stats, "examples": args.examples, "commands": commands, "library_versions": versions()}
        args.out.write_text(json.dumps(raw, indent=1) + "\n", encoding="utf-8")
    report(stats, merged)
    if failed:
        print(f"not written: the suite failed for {', '.join(failed)}; fix that first", file=sys.stderr)
        return 1
    if args.write:
        loosened = write(merged, method(adapters, args.examples, commands), args.reset)
        for line in loosened:
            print(f"loosened (a MINOR change, §10): {line}")
        print(f"wrote {TOLERANCES.relative_to(ROOT)}")
    return 0


def this_command(args: argparse.Namespace, impls: list[str]) -> str:
    """This run's command line, as recorded in the method (one of several when --merge joins runs)."""
    parts = ["python scripts/measure_tolerances.py", f"--examples {args.examples}"]
    parts += [f"--impl {impl}" for impl in impls] + [f"--merge {path}" for path in args.merge]
    parts += [f"--out {args.out}"] if args.out else []
    parts += ["--write"] if args.write else []
    parts += ["--reset"] if args.reset else []
    return " ".join(parts)


def measure(impls: list[str], examples: int, jobs: int) -> tuple[dict[str, dict], list[str]]:
    """Each adapter's measurements (adapter|device|dtype|quantity -> errors), and the adapters whose suite failed."""
    stats: dict[str, dict] = {}
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        pending = list(impls)
        running: list[tuple[str, Path, subprocess.Popen]] = []
        while pending or running:
            while pending and len(running) < jobs:
                impl = pending.pop(0)
                out = Path(tmp) / f"{len(pending)}-{Path(impl).stem}.json"
                worker_args = ["--worker", impl, "--out", str(out), "--examples", str(examples)]
                command = [sys.executable, __file__, *worker_args]
                print(f"measuring {impl} ...", flush=True)
                running.append((impl, out, subprocess.Popen(command, cwd=ROOT)))
            impl, out, process = running.pop(0)
            process.wait()
            result = json.loads(out.read_text()) if out.exists() else {"exit_status": process.returncode, "stats": {}}
            if result["exit_status"] not in (0, 5):
                failed.append(impl)
            stats.update(result["stats"])
    return stats, failed


def report(stats: dict[str, dict], merged: dict) -> None:
    current = json.loads(TOLERANCES.read_text(encoding="utf-8"))
    print(f"\n{'adapter':<8} {'device':<6} {'dtype':<8} {'quantity':<18} {'max abs err':>12} {'max rel err':>12}")
    for key in sorted(stats):
        adapter, device, dtype, quantity = key.split("|")
        entry = stats[key]
        print(
            f"{adapter:<8} {device:<6} {dtype:<8} {quantity:<18} {entry['max_abs_error']:>12.3g} {entry['max_rel_error']:>12.3g}"
        )
    print(f"\n{'device':<6} {'dtype':<8} {'quantity':<18} {'atol':>8} {'rtol':>8}   margin's (atol, rtol); rule of §10")
    for (device, dtype, quantity), measured in sorted(merged.items()):
        new = proposal(dtype, measured)
        now = current["dtypes"].get(dtype, {}).get(quantity)
        if device != "cpu":
            now = current.get("devices", {}).get(device, {}).get(dtype, {}).get(quantity, now)
        verdict = "no value" if now is None else "; ".join(breaks_rule(now, measured)) or f"kept (>= {RULE:g}x)"
        atol, rtol = (now["atol"], now["rtol"]) if now else (float("nan"), float("nan"))
        print(
            f"{device:<6} {dtype:<8} {quantity:<18} {atol:>8.0e} {rtol:>8.0e}   "
            f"({new['atol']:.0e}, {new['rtol']:.0e}); {verdict}"
        )


def write(merged: dict, how: dict, reset: bool) -> list[str]:
    """Record the measurements; keep each value unless it breaks the rule of §10 (or `reset`).
    Returns a line per loosened value."""
    data = json.loads(TOLERANCES.read_text(encoding="utf-8"))
    data["schema_version"] = 2
    data["description"] = (
        "Tolerances of spec/elmo.md §10: actual matches expected when |a - e| <= atol + rtol * |e| elementwise. "
        "Each value is at least 3 times the largest error measured by scripts/measure_tolerances.py on every "
        "built-in implementation ('measured': absolute where |e| < split, relative where |e| >= split; the worst, "
        "where it was seen, and each adapter's own); a value first set, or loosened because a measurement came "
        "closer than 3 times, is the error times the dtype's margin, rounded up to 1, 2 or 5 times a power of ten. "
        "'dtypes' are CPU values; 'devices' overrides them for one device."
    )
    if any(device == "cpu" for device, _, _ in merged):
        data["method"] = how
    devices = data.setdefault("devices", {})
    loosened = []
    for (device, dtype, quantity), measured in sorted(merged.items()):
        if device == "cpu":
            current = data.setdefault("dtypes", {}).setdefault(dtype, {}).get(quantity)
            entry, why = kept_or_loosened(dtype, current, measured, reset)
            data["dtypes"][dtype][quantity] = entry
        else:
            cpu = data["dtypes"][dtype][quantity]
            current = devices.get(device, {}).get(dtype, {}).get(quantity)
            entry, why = kept_or_loosened(dtype, current or cpu, measured, reset)
            entry["atol"], entry["rtol"] = max(entry["atol"], cpu["atol"]), max(entry["rtol"], cpu["rtol"])
            if current is None and (entry["atol"], entry["rtol"]) == (cpu["atol"], cpu["rtol"]):
                continue  # the CPU's values serve this device
            devices.setdefault(device, {}).setdefault(dtype, {})[quantity] = entry
        if why:
            loosened.append(
                f"{device} {dtype} {quantity}: {'; '.join(why)} -> atol {entry['atol']:.0e}, rtol {entry['rtol']:.0e}"
            )
    TOLERANCES.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return loosened


def method(adapters: list[str], examples: int, commands: list[str]) -> dict:
    return {
        "command": " && ".join(commands),
        "split": SPLIT,
        "margin": MARGIN,
        "rule": RULE,
        "rounding": "up to 1, 2 or 5 times a power of ten",
        "adapters": adapters,
        "hypothesis_examples": examples,
        "library_versions": versions(),
    }


if __name__ == "__main__":
    sys.exit(main())
