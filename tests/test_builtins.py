"""The built-in implementations that `nox -s tests` checks beside numpy and torch (tests/test_parity.py):
jax (§11, a JAX implementation) and c (§15, a program speaking the wire protocol) pass the whole
suite in both dtypes, and every mutant of the C implementation is killed by its expected tests
(spec §13.1). Each runs as one test so that pytest-xdist spreads them over the machine's cores."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import elmo_conformance
from elmo_conformance.conformance.loading import available_builtins

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("impl", ["jax", "c"])
def test_the_built_in_implementation_passes_the_whole_suite(impl: str) -> None:
    if impl not in available_builtins():
        pytest.skip(f"--impl {impl} does not run here (its dependencies are missing)")
    result = elmo_conformance.run(impl, ["-q", "-p", "no:cacheprovider"], capture=True, deadline_s=1800)
    assert result.exit_status == 0 and result.complete, result.describe()
    assert result.counts.get("passed", 0) > 300 and set(result.counts) <= {"passed", "skipped"}, result.counts


def test_every_mutant_of_the_c_implementation_is_killed(tmp_path: Path) -> None:
    """§13.1's gate for the C implementation: every catalog mutant killed by its expected tests."""
    command = [sys.executable, "-m", "elmo_conformance", "mutants", "--impl", "c", "--out", str(tmp_path), "--no-html"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    report = json.loads((tmp_path / "mutation-report.json").read_text())
    statuses = [mutant["status"] for entry in report["files"].values() for mutant in entry["mutants"]]
    assert statuses and set(statuses) == {"Killed"}, statuses
