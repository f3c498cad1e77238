"""``elmo-conformance fixtures``: can the fixtures still be trusted? (``nox -s fixtures``, spec §12)

Validate (the default) prints one line per check per fixture:

  0 manifest    the manifest reads: its format and spec version, canonical form, no duplicates
  1 listed      every file is in the manifest and every manifest entry exists
  2 sha256      the file (at most 16 MiB, read once) hashes to the manifest's SHA-256; one
                that does not is never parsed
  3 schema      those bytes match the schema (JSON Schema, npz layout, TSV columns), with
                npz sizes, JSON nesting and non-finite numbers checked before parsing
  4 provenance  generator, its hash, seed, library versions and project code hashes recorded
  5 regenerate  the generators (the torch float64 oracle, the reference runs for the learning
                bar) rerun into a temporary folder and match within tolerance: a drift report
                per value follows
  6 reference   the reference passes every test that reads the fixture, and the whole suite
  7 mutants     every catalog mutant of the reference is killed by each of its expected tests

If checks 0-3 find a problem, the fixtures are refused and checks 5-7 do not run. Exit status:
0 when nothing failed (warnings allowed), 1 when a check failed, 2 on bad arguments.

``--regenerate`` rewrites the generated fixtures and the manifest deterministically (twice in a
row gives identical bytes). It refuses, writing nothing, when a value drifted beyond tolerance
or changed shape, unless ``--accept-drift``; either way it prints the drift report.

Regenerating is the maintainer's work, in a checkout of the repository (the generators need
torch). In an installed package, check 5 is skipped and ``--regenerate`` is refused, each with a
line saying so: the installed fixtures are checked, never rewritten.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from elmo_conformance.fixtures.drift import Drift, compare, summary
from elmo_conformance.fixtures.generate import GENERATORS
from elmo_conformance.fixtures.generate.__main__ import generate_into
from elmo_conformance.fixtures.store import FIXTURES_DIR, MANIFEST_NAME, FixtureError, load_json, load_tsv
from elmo_conformance.fixtures.thresholds import describe
from elmo_conformance.fixtures.validate import FAIL, PASS, SKIP, WARN, Result, integrity
from elmo_conformance.ground.resources import checkout_root
from elmo_conformance.maintain.fixture_suite import REFERENCE, check_mutants, check_reference

THRESHOLDS_FILE = "learning_thresholds.tsv"
OPTIONAL = ("regenerate", "reference", "mutants")
INSTALLED = (
    "this is an installed package: regeneration runs in a checkout of the repository "
    "(nox -s fixtures -- --regenerate), with torch"
)


def say(line: str = "") -> None:
    print(line, flush=True)


def show(results: list[Result]) -> list[Result]:
    for result in results:
        say(result.line())
    return results


def drift_of(name: str, committed: Path, regenerated: Path) -> list[Drift]:
    """The drift of one file; an unreadable or missing side is one value that changed."""
    if not committed.is_file() or not regenerated.is_file():
        gone = "gone" if committed.is_file() else "new"
        return [Drift(name, "(file)", "exact", 0.0, 0.0, *(float("nan"),) * 3, verdict=gone)]
    try:
        return compare(name, committed, regenerated)
    except (FixtureError, ValueError) as exc:
        return [Drift(name, "(file)", "exact", 0.0, 0.0, *(float("nan"),) * 3, verdict="changed", detail=str(exc))]


def regenerate_to(tmp: Path, generators: tuple[str, ...] = GENERATORS) -> dict[str, str]:
    """Run the generators into ``tmp``; returns the generators that failed, with why."""
    say(f"regenerating into {tmp} (the torch float64 oracle, and the reference runs of the learning bar) ...")
    failed = {}
    for name in generators:
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # its progress lines; the report follows
                generate_into(tmp, [name])
        except Exception as exc:  # a generator's own assertion, or a library that changed under it
            failed[f"fixtures/generate/{name}.py"] = f"{type(exc).__name__}: {exc}"
    return failed


def print_drift(drifts: dict[str, list[Drift]]) -> None:
    say("drift report: committed against regenerated, per value (never bit for bit; see fixtures/README.md)")
    for name, values in drifts.items():
        say(f"  {name}: {summary(values)}")
        width = max(len(d.key) for d in values)
        for d in values:
            say("    " + d.line(width))


def print_thresholds(fixtures_dir: Path, tmp: Path) -> None:
    committed, derived = fixtures_dir / THRESHOLDS_FILE, tmp / THRESHOLDS_FILE
    if committed.is_file() and derived.is_file():
        say(
            "learning thresholds (§9.3, §12.4): the final loss within [smallest - margin, largest + margin] of the "
            "reference runs, margin = max(3 std, 0.05)"
        )
        for label, path in (("committed ", committed), ("re-derived", derived)):
            try:
                lines = describe(load_tsv(path))
            except (FixtureError, KeyError, ValueError) as exc:  # --regenerate reads unchecked files
                lines = [f"unreadable: {exc}"]
            for line in lines:
                say(f"  {label}  {line}")


def check_regenerate(fixtures_dir: Path, manifest: dict, tmp: Path) -> list[Result]:
    """Check 5: regenerate into ``tmp`` and compare with the committed fixtures."""
    failed = regenerate_to(tmp)
    regenerated = load_json(tmp / MANIFEST_NAME)["fixtures"] if (tmp / MANIFEST_NAME).is_file() else []
    made = {entry["path"]: entry for entry in regenerated}
    results, drifts = [], {}
    for entry in manifest["fixtures"]:
        name = entry["path"]
        if entry["generator"] in failed:
            results.append(
                Result("regenerate", name, FAIL, f"{entry['generator']} failed: {failed[entry['generator']]}")
            )
            continue
        if name not in made:
            results.append(Result("regenerate", name, FAIL, f"no generator makes it any more ({entry['generator']})"))
            continue
        drifts[name] = drift_of(name, fixtures_dir / name, tmp / name)
        same = made[name]["sha256"] == entry["sha256"]
        status = PASS if all(d.ok for d in drifts[name]) else FAIL
        results.append(
            Result("regenerate", name, status, f"{'byte-identical; ' if same else ''}{summary(drifts[name])}")
        )
    committed = {entry["path"] for entry in manifest["fixtures"]}
    results += [
        Result("regenerate", name, FAIL, "the generators make it but it is not committed (run --regenerate)")
        for name in sorted(made.keys() - committed)
    ]
    show(results)
    print_drift(drifts)
    print_thresholds(fixtures_dir, tmp)
    return results


def validate(fixtures_dir: Path, skip: list[str], jobs: int | None, impl: str = REFERENCE) -> int:
    say(f"validating {fixtures_dir}")
    manifest, results = integrity(fixtures_dir)
    show(results)
    if manifest is None or any(r.status == FAIL and r.check != "provenance" for r in results):
        say("FIXTURES REFUSED: fix or regenerate the files named above; checks 5-7 were not run")
        return 1
    names = [entry["path"] for entry in manifest["fixtures"]]
    if "regenerate" in skip or checkout_root() is None:
        why = "--skip regenerate" if "regenerate" in skip else INSTALLED
        results += show([Result("regenerate", name, SKIP, why) for name in names])
    else:
        with tempfile.TemporaryDirectory(prefix="elmo-regenerate-") as tmp:
            results += check_regenerate(fixtures_dir, manifest, Path(tmp))
    if "reference" in skip:
        results += show([Result("reference", name, SKIP, "--skip reference") for name in names])
    else:
        results += show(check_reference(fixtures_dir, names, impl))
    if "mutants" in skip:
        results += show([Result("mutants", "(catalog)", SKIP, "--skip mutants")])
    else:
        results += show(check_mutants(fixtures_dir, jobs, impl))
    counts = {status: sum(r.status == status for r in results) for status in (PASS, WARN, FAIL, SKIP)}
    say(", ".join(f"{n} {status.lower()}" for status, n in counts.items()))
    return 1 if counts[FAIL] else 0


def regenerate(fixtures_dir: Path, accept_drift: bool, only: tuple[str, ...] = ()) -> int:
    manifest_path = fixtures_dir / MANIFEST_NAME
    try:
        old = load_json(manifest_path)["fixtures"] if manifest_path.is_file() else []
    except (FixtureError, KeyError, TypeError) as exc:
        if only:
            say(f"cannot regenerate only {', '.join(only)}: the other entries of the manifest are unreadable: {exc}")
            return 1
        say(f"the old manifest is unreadable ({exc}); every fixture is regenerated")
        old = []
    chosen = {f"fixtures/generate/{name}.py" for name in only or GENERATORS}
    in_scope = [entry for entry in old if not only or entry["generator"] in chosen]
    with tempfile.TemporaryDirectory(prefix="elmo-regenerate-") as tmp_name:
        tmp = Path(tmp_name)
        if only and old:  # the generators keep the other entries of the manifest they find
            shutil.copyfile(manifest_path, tmp / MANIFEST_NAME)
        failed = regenerate_to(tmp, only or GENERATORS)
        if failed:
            for generator, why in failed.items():
                say(f"FAILED {generator}: {why}")
            say("nothing was written")
            return 1
        made = [entry["path"] for entry in load_json(tmp / MANIFEST_NAME)["fixtures"] if entry["generator"] in chosen]
        gone = sorted({entry["path"] for entry in in_scope} - set(made))
        names = sorted(set(made) | set(gone))
        drifts = {name: drift_of(name, fixtures_dir / name, tmp / name) for name in names}
        print_drift(drifts)
        print_thresholds(fixtures_dir, tmp)
        # A new file is an added fixture, not drift; anything else that is not ok needs consent.
        bad = [
            d
            for values in drifts.values()
            for d in values
            if not d.ok and not (d.key == "(file)" and d.verdict == "new")
        ]
        if bad and not accept_drift:
            what = "1 value" if len(bad) == 1 else f"{len(bad)} values"
            say(f"REFUSED: {what} drifted beyond tolerance or changed; nothing was written.")
            say("Read the report above; if the change is intended, rerun with --regenerate --accept-drift.")
            return 1
        fixtures_dir.mkdir(parents=True, exist_ok=True)
        for name in [*made, MANIFEST_NAME]:  # the manifest last, so it never lists bytes not yet written
            partial = fixtures_dir / f"{name}.tmp"
            shutil.copyfile(tmp / name, partial)
            os.replace(partial, fixtures_dir / name)
        for name in gone:
            (fixtures_dir / name).unlink(missing_ok=True)
            say(f"removed {name}: no generator makes it any more")
    say(f"wrote {len(made)} fixtures and {MANIFEST_NAME} to {fixtures_dir}" + (" (drift accepted)" if bad else ""))
    _, results = integrity(fixtures_dir)
    show(results)
    return 1 if any(r.status == FAIL for r in results) else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="elmo-conformance fixtures",
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--fixtures-dir", type=Path, default=FIXTURES_DIR, help="default: fixtures/ or $ELMO_FIXTURES_DIR"
    )
    parser.add_argument("--regenerate", action="store_true", help="rewrite the fixtures and the manifest")
    parser.add_argument("--accept-drift", action="store_true", help="with --regenerate: overwrite despite drift")
    parser.add_argument("--only", nargs="+", choices=GENERATORS, default=[], help="with --regenerate: these generators")
    parser.add_argument("--skip", action="append", choices=OPTIONAL, default=[], help="skip a slow check (repeatable)")
    parser.add_argument("--jobs", type=int, help="mutant runs at a time (default: the number of CPUs)")
    parser.add_argument(
        "--impl",
        default=REFERENCE,
        help="the implementation checks 6 and 7 run the suite on (any --impl argument of the suite, cmd:... included; "
        "default %(default)s, the reference)",
    )
    args = parser.parse_args(argv)
    if (args.accept_drift or args.only) and not args.regenerate:
        parser.error("--accept-drift and --only only apply to --regenerate")
    if args.regenerate and checkout_root() is None:
        parser.error(f"--regenerate: {INSTALLED}; the installed fixtures are checked, never rewritten")
    if args.jobs is not None and args.jobs < 1:
        parser.error(f"--jobs must be a positive integer, got {args.jobs}")
    started = time.perf_counter()
    fixtures_dir = args.fixtures_dir.resolve()
    code = (
        regenerate(fixtures_dir, args.accept_drift, tuple(args.only))
        if args.regenerate
        else validate(fixtures_dir, args.skip, args.jobs, args.impl)
    )
    say(f"elmo-conformance fixtures took {time.perf_counter() - started:.1f} s")
    return code


if __name__ == "__main__":
    sys.exit(main())
