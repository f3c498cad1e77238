"""Measure the error behind every tolerance of spec §10, and (with --write) set spec/tolerances.json.

    python scripts/measure_tolerances.py                      # numpy, torch and jax where installed
    python scripts/measure_tolerances.py --examples 100 --write
    python scripts/measure_tolerances.py --impl cuda          # on a GPU machine: the cuda overrides

Each adapter runs the conformance suite in its own process with every tolerance set to infinity
and `assert_close` replaced by a recorder, so every comparison the suite makes is measured, on the
fixtures and on the differential configurations (Hypothesis, derandomized, --examples each), in
every declared dtype. Per dtype, device and quantity the recorder keeps the largest absolute
error where |expected| < SPLIT and the largest relative error where |expected| >= SPLIT. Then

    atol = up(margin * max(largest absolute error, eps * SPLIT))
    rtol = up(margin * max(largest relative error, eps))

where eps is the dtype's machine epsilon, `up` rounds up to 1, 2 or 5 times a power of ten and
the margin is MARGIN[dtype]. Every value is covered: an error where |e| < SPLIT is below atol, one
where |e| >= SPLIT below rtol |e|. CPU measurements set `dtypes`; any other device's set
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
    import pytest
    from hypothesis import HealthCheck, settings

    settings.register_profile(
        "measure-tolerances",
        derandomize=True,
        database=None,
        deadline=None,
        max_examples=examples,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    recorder = Recorder()
    args = ["conformance", "--impl", impl, "-q", "-p", "no:cacheprovider", "-k", NOT_MEASURED]
    status = pytest.main([*args, "--hypothesis-profile", "measure-tolerances"], plugins=[recorder])
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
    """adapter|device|dtype|quantity -> (device, dtype, quantity) with the worst over adapters."""
    merged: dict[tuple[str, str, str], dict] = {}
    for key, entry in stats.items():
        _, device, dtype, quantity = key.split("|")
        into = merged.setdefault((device.split(":")[0], dtype, quantity), dict(EMPTY))
        for kind in ("abs", "rel"):
            if entry[f"{kind}_worst"] is not None and entry[f"max_{kind}_error"] >= into[f"max_{kind}_error"]:
                into[f"max_{kind}_error"], into[f"{kind}_worst"] = entry[f"max_{kind}_error"], entry[f"{kind}_worst"]
        into["comparisons"] += entry["comparisons"]
        into["values"] += entry["values"]
    return merged


def proposal(dtype: str, measured: dict) -> dict:
    margin, eps = MARGIN[dtype], EPS[dtype]
    return {
        "rtol": up(margin * max(measured["max_rel_error"], eps)),
        "atol": up(margin * max(measured["max_abs_error"], eps * SPLIT)),
        "measured": {k: (float(f"{v:.3g}") if isinstance(v, float) else v) for k, v in measured.items()},
    }


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
    parser.add_argument("--impl", action="append", default=[], help="adapter (repeatable); default: numpy, torch, jax")
    parser.add_argument("--examples", type=int, default=100, help="Hypothesis examples per property (default 100)")
    parser.add_argument("--jobs", type=int, default=2, help="adapters measured at once (default 2)")
    parser.add_argument("--write", action="store_true", help="write the values into spec/tolerances.json")
    parser.add_argument("--out", type=Path, help="also write the raw measurements as JSON to this path")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args.worker, args.examples, args.out)

    sys.path.insert(0, str(ROOT))
    from elmo_conformance.conformance.loading import available_builtins

    impls = args.impl or [name for name in ("numpy", "torch", "jax") if name in available_builtins()]
    stats: dict[str, dict] = {}
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        pending = list(impls)
        running: list[tuple[str, Path, subprocess.Popen]] = []
        while pending or running:
            while pending and len(running) < args.jobs:
                impl = pending.pop(0)
                out = Path(tmp) / f"{len(pending)}-{Path(impl).stem}.json"
                worker_args = ["--worker", impl, "--out", str(out), "--examples", str(args.examples)]
                command = [sys.executable, __file__, *worker_args]
                print(f"measuring {impl} ...", flush=True)
                running.append((impl, out, subprocess.Popen(command, cwd=ROOT)))
            impl, out, process = running.pop(0)
            process.wait()
            result = json.loads(out.read_text()) if out.exists() else {"exit_status": process.returncode, "stats": {}}
            if result["exit_status"] not in (0, 5):
                failed.append(impl)
            stats.update(result["stats"])
    merged = merge(stats)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"per_adapter": stats}, indent=1) + "\n", encoding="utf-8")
    report(stats, merged)
    if failed:
        print(f"not written: the suite failed for {', '.join(failed)}; fix that first", file=sys.stderr)
        return 1
    if args.write:
        write(merged, impls, args.examples)
        print(f"wrote {TOLERANCES.relative_to(ROOT)}")
    return 0


def report(stats: dict[str, dict], merged: dict) -> None:
    current = json.loads(TOLERANCES.read_text(encoding="utf-8"))
    print(f"\n{'adapter':<8} {'device':<6} {'dtype':<8} {'quantity':<18} {'max abs err':>12} {'max rel err':>12}")
    for key in sorted(stats):
        adapter, device, dtype, quantity = key.split("|")
        entry = stats[key]
        print(
            f"{adapter:<8} {device:<6} {dtype:<8} {quantity:<18} {entry['max_abs_error']:>12.3g} {entry['max_rel_error']:>12.3g}"
        )
    print(f"\n{'device':<6} {'dtype':<8} {'quantity':<18} {'atol':>8} {'rtol':>8}   (now: atol, rtol)")
    for (device, dtype, quantity), measured in sorted(merged.items()):
        new = proposal(dtype, measured)
        now = current["dtypes"].get(dtype, {}).get(quantity, {})
        print(
            f"{device:<6} {dtype:<8} {quantity:<18} {new['atol']:>8.0e} {new['rtol']:>8.0e}   "
            f"({now.get('atol', float('nan')):.0e}, {now.get('rtol', float('nan')):.0e})"
        )


def write(merged: dict, impls: list[str], examples: int) -> None:
    data = json.loads(TOLERANCES.read_text(encoding="utf-8"))
    data["schema_version"] = 2
    data["description"] = (
        "Tolerances of spec/elmo.md §10: actual matches expected when |a - e| <= atol + rtol * |e| elementwise. "
        "Each value is the largest error measured by scripts/measure_tolerances.py ('measured': absolute where "
        "|e| < split, relative where |e| >= split) times the dtype's margin, rounded up to 1, 2 or 5 times a power "
        "of ten. 'dtypes' are CPU values; 'devices' overrides them for one device."
    )
    if any(device == "cpu" for device, _, _ in merged):
        data["method"] = method(impls, examples)
    devices = data.setdefault("devices", {})
    for (device, dtype, quantity), measured in sorted(merged.items()):
        new = proposal(dtype, measured)
        if device == "cpu":
            data.setdefault("dtypes", {}).setdefault(dtype, {})[quantity] = new
            continue
        cpu = data["dtypes"][dtype][quantity]
        if new["atol"] > cpu["atol"] or new["rtol"] > cpu["rtol"]:
            new["atol"], new["rtol"] = max(new["atol"], cpu["atol"]), max(new["rtol"], cpu["rtol"])
            devices.setdefault(device, {}).setdefault(dtype, {})[quantity] = new
    TOLERANCES.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def method(impls: list[str], examples: int) -> dict:
    return {
        "command": f"python scripts/measure_tolerances.py --examples {examples} --write"
        + "".join(f" --impl {impl}" for impl in impls),
        "split": SPLIT,
        "margin": MARGIN,
        "rounding": "up to 1, 2 or 5 times a power of ten",
        "adapters": impls,
        "hypothesis_examples": examples,
        "library_versions": versions(),
    }


if __name__ == "__main__":
    sys.exit(main())
