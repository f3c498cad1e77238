"""Checks 6 and 7 of ``elmo-conformance fixtures``: the conformance suite against the fixtures.

6. ``reference``: the reference (``--impl numpy``) passes the whole suite with these fixtures,
   the learning test (§9.3's thresholds) included; reported per fixture, with the tests that read
   it (seen by ``fixtures.usage``);
7. ``mutants``: every catalog mutant of the reference (``spec/mutants.json``, §13) is killed by
   each of its expected tests: run with ``--mutant ID -k <killers>``, each killer must fail.

``elmo-conformance fixtures --impl ARG`` runs checks 6 and 7 with another implementation in place of the
reference: any ``--impl`` argument of §11, a process (``cmd:...``, §15) included.

Each run is a subprocess with ``ELMO_FIXTURES_DIR`` set, so it reads the fixtures being
validated, and a crash or a hang of the suite is a failed check, never a crashed command.
"""

from __future__ import annotations

import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from elmo_conformance.fixtures.store import FIXTURES_ENV, SPEC_DIR, load_json
from elmo_conformance.fixtures.validate import FAIL, PASS, WARN, Result
from elmo_conformance.mutation import gate
from elmo_conformance.runner.running import run

REFERENCE = "numpy"
SUITE_TIMEOUT_S = 900.0
MUTANT_TIMEOUT_S = 300.0


def pytest_run(args: list[str], fixtures_dir: Path, timeout: float) -> tuple[int | None, str]:
    """Run the suite with ARGS on ``fixtures_dir`` through the one entry point
    (``elmo_conformance.run``): (exit status or None on a timeout, the tail of its output)."""
    env = dict(os.environ, **{FIXTURES_ENV: str(fixtures_dir)})
    result = run(pytest_args=[*args, "-p", "no:cacheprovider"], env=env, capture=True, deadline_s=timeout)
    if result.timed_out:
        return None, f"timed out after {timeout:.0f} s: {' '.join(result.command)}"
    return result.exit_status, (result.output or "")[-4000:]


def _last_line(output: str) -> str:
    lines = [line for line in output.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else "(no output)"


def _outcomes(report: dict[str, Any]) -> dict[str, str]:
    return {test["nodeid"]: test["outcome"] for test in report["tests"]}


def _refused(report: dict[str, Any]) -> str | None:
    """Why the suite refused to run (its report says so, §11), or None."""
    return report.get("refused") if isinstance(report, dict) else None


@dataclass
class ReferenceRun:
    """Check 6's one run of the whole suite: its exit status (None: it timed out), the tail of its
    output, and, when it ran, every test's outcome and the fixture files each test read."""

    impl: str
    code: int | None
    output: str
    outcomes: dict[str, str] | None = None
    usage: dict[str, list[str]] | None = None
    refused: str | None = None


def run_reference(fixtures_dir: Path, impl: str = REFERENCE) -> ReferenceRun:
    """The whole suite on `impl` with the fixtures of `fixtures_dir`, recording which test reads
    which fixture (``fixtures.usage``)."""
    with tempfile.TemporaryDirectory(prefix="elmo-fixtures-") as tmp:
        report_path, usage_path = Path(tmp) / "report.json", Path(tmp) / "usage.json"
        args = ["--impl", impl, "-q", "--report", str(report_path)]
        args += ["-p", "elmo_conformance.fixtures.usage", "--fixture-usage", str(usage_path)]
        code, output = pytest_run(args, fixtures_dir, SUITE_TIMEOUT_S)
        if code is None or not report_path.is_file() or not usage_path.is_file():
            return ReferenceRun(impl, code, output)
        report = load_json(report_path)
        if _refused(report):
            return ReferenceRun(impl, code, output, refused=_refused(report))
        return ReferenceRun(impl, code, output, _outcomes(report), load_json(usage_path))


def check_reference(fixtures_dir: Path, names: list[str], impl: str = REFERENCE) -> list[Result]:
    """Check 6: one result per fixture, then one for the whole run."""
    return judge_reference(run_reference(fixtures_dir, impl), names)


def judge_reference(run: ReferenceRun, names: list[str]) -> list[Result]:
    """Check 6's results from its run: one per fixture, then one for the whole run."""
    code, output, impl = run.code, run.output, run.impl
    if run.refused:
        return [
            Result("reference", name, FAIL, f"the suite did not run (exit {code}): {run.refused}") for name in names
        ]
    if run.outcomes is None or run.usage is None:
        why = output if code is None else f"the suite stopped (exit {code}): {_last_line(output)}"
        return [Result("reference", name, FAIL, why) for name in names]
    outcomes, usage = run.outcomes, run.usage
    results = []
    for name in names:
        tests = sorted(nodeid for nodeid, files in usage.items() if name in files and nodeid in outcomes)
        failed = [t for t in tests if outcomes[t] not in ("passed", "skipped", "xfailed")]
        if failed:
            shown = ", ".join(t.split("::")[-1] for t in failed[:3])
            results.append(
                Result("reference", name, FAIL, f"{len(failed)} of {len(tests)} tests reading it fail: {shown}")
            )
        elif not tests:
            results.append(Result("reference", name, WARN, "no conformance test reads it"))
        else:
            files = sorted({t.split("::")[0].removeprefix("conformance/") for t in tests})
            results.append(Result("reference", name, PASS, f"{len(tests)} tests read it and pass ({', '.join(files)})"))
    failed = [nodeid for nodeid, outcome in outcomes.items() if outcome not in ("passed", "skipped", "xfailed")]
    summary = f"{len(outcomes) - len(failed)} of {len(outcomes)} tests pass (--impl {impl}, exit {code})"
    if failed or code != 0:
        shown = ", ".join(t.split("::")[-1] for t in failed[:3]) or _last_line(output)
        results.append(Result("reference", "(whole suite)", FAIL, f"{summary}: {shown}"))
    else:
        results.append(Result("reference", "(whole suite)", PASS, summary))
    return results


def check_mutant(mutant: dict[str, Any], fixtures_dir: Path, impl: str = REFERENCE) -> Result:
    """Check 7 for one catalog mutant: each expected killer fails on it."""
    mutant_id, killers = mutant["id"], list(mutant["expected_killers"])
    with tempfile.TemporaryDirectory(prefix="elmo-mutant-") as tmp:
        report_path = Path(tmp) / "report.json"
        args = ["--impl", impl, "--mutant", mutant_id, "-k", " or ".join(killers), "-q"]
        code, output = pytest_run([*args, "--report", str(report_path)], fixtures_dir, MUTANT_TIMEOUT_S)
        if code is None or not report_path.is_file():
            why = output if code is None else f"the suite did not run (exit {code}): {_last_line(output)}"
            return Result("mutants", mutant_id, FAIL, why)
        report = load_json(report_path)
        if _refused(report):
            return Result("mutants", mutant_id, FAIL, f"the suite did not run (exit {code}): {_refused(report)}")
        outcomes = _outcomes(report)
    # The catalog gate of §13.1, the mutation runner's (elmo_conformance/mutation/gate.py): every case of
    # every expected killer that runs must kill the mutant. The reference skips none.
    result = gate.check(killers, outcomes)
    survived = [f"{killer} (no such test ran)" for killer in result.unknown]
    survived += [f"{killer} (skipped)" for killer in result.skipped]
    missed: dict[str, set[str]] = {}
    for nodeid, outcome in result.missed:
        missed.setdefault(gate.test_name(nodeid), set()).add(outcome)
    survived += [f"{killer} ({', '.join(sorted(seen))})" for killer, seen in missed.items()]
    killed_by = [
        f"{killer} [{', '.join(nodeid.partition('[')[2].rstrip(']') or nodeid for nodeid in cases)}]"
        for killer, cases in result.killed.items()
    ]
    if survived:
        return Result("mutants", mutant_id, FAIL, f"not killed by {'; '.join(survived)} ({mutant['title']})")
    return Result("mutants", mutant_id, PASS, f"killed by {'; '.join(killed_by)}")


def check_mutants(fixtures_dir: Path, jobs: int | None = None, impl: str = REFERENCE) -> list[Result]:
    """Check 7 for every catalog mutant, several at a time (each is its own process)."""
    catalog = load_json(SPEC_DIR / "mutants.json")["mutants"]
    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
        return list(pool.map(lambda mutant: check_mutant(mutant, fixtures_dir, impl), catalog))
