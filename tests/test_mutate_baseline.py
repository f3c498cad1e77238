"""The generated mutants' baseline (elmo_conformance/mutation/worker.py, run_baseline) records which
lines of the implementation each test runs, also for an implementation whose modules the worker
had imported before the run: the reference (`mutate --impl numpy`), which the suite's own modules
import, runs from where it was first imported, not from the baseline's copy, and its lines were
not recorded (every mutant of the reference was NoCoverage). Only the lines run inside a test's
calls to the implementation count: those the harness runs itself (its inputs, the expected values
it computes with the reference) reach no mutant, which runs in a process only the calls reach."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """
import json, sys, tempfile
from pathlib import Path
from elmo_conformance.mutation import mutate
from elmo_conformance.mutation.scratch import baseline_copy
from elmo_conformance.mutation.worker import BaselineJob, _register_profile, run_baseline

assert "elmo_conformance.reference" in sys.modules  # imported with the worker, before any run
target, files = mutate.resolve(mutate.parse(["--impl", "numpy"]))
mutate._child_environment()
scratch = Path(tempfile.mkdtemp())
target, *_ = mutate.clean_copy(target, scratch, scratch / "out", 900.0)
copy, run_as, cwd = baseline_copy(target, scratch / "baseline")
_register_profile()
job = BaselineJob("numpy", select=sys.argv[1], lines=tuple(map(str, files)), copy=copy, run_as=run_as, cwd=cwd)
baseline = run_baseline(job, lambda event: None)
print(json.dumps({"error": baseline.error, "tests": sorted(baseline.tests), "lines": baseline.lines}))
"""


def baseline(select: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-c", SCRIPT, select]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_the_baseline_records_the_lines_of_the_reference_the_worker_had_imported() -> None:
    found = baseline("hand_example_scalar_mix")
    assert found["error"] is None and len(found["tests"]) == 2, found
    mix = str(ROOT / "reference" / "scalar_mix.py")
    assert mix in found["lines"], sorted(found["lines"])  # by the user's file name, as the mutants know it
    reached = {test for tests in found["lines"][mix].values() for test in tests}
    assert reached == set(found["tests"])  # each test ran lines of the ScalarMix it checks


def test_lines_the_harness_runs_itself_reach_no_test() -> None:
    """§13.2: `test_layers_and_logits_match_reference` draws its parameters with the reference's
    `init_params` (conformance/data.py) and computes its expected values with the reference's
    `bilm_layers`; only the lines the adapter's calls run are its. `init_params` is then reached by
    no test (its mutants are NoCoverage), while the biLM's lines are reached through the calls."""
    found = baseline("test_layers_and_logits_match_reference")
    assert found["error"] is None and len(found["tests"]) == 2, found
    params = (ROOT / "reference" / "params.py").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(params, 1) if line.startswith("def init_params("))
    body = {
        line for line in range(start + 1, len(params) + 1) if params[line - 1].strip().startswith(("bound", "value"))
    }
    assert len(body) == 3, body  # bound = ..., and the two draws of the loop
    recorded = found["lines"].get(str(ROOT / "reference" / "params.py"), {})
    assert all(not recorded.get(str(line)) for line in body), {line: recorded.get(str(line)) for line in body}
    bilm = found["lines"][str(ROOT / "reference" / "bilm.py")]
    assert {test for tests in bilm.values() for test in tests} == set(found["tests"])


CALLS = """
import json
from elmo_conformance.mutation.worker import BaselineJob, _register_profile, run_baseline

_register_profile()
job = BaselineJob("c", select="hand_example_scalar_mix or scalar_mix_vjp_matches_reference", record_calls=True)
baseline = run_baseline(job, lambda event: None)
print(json.dumps({"error": baseline.error, "tests": sorted(baseline.tests), "calls": baseline.calls}))
"""


def test_a_programs_baseline_records_the_protocol_functions_each_test_calls() -> None:
    """§13.2: for a program (the built-in c, a process), the baseline records which protocol
    functions each test calls, the map from a program's functions to the tests that reach them."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", CALLS], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["error"] is None and len(found["tests"]) == 4, found
    hand = sorted(t for t in found["tests"] if "hand_example" in t)
    vjp = sorted(t for t in found["tests"] if "vjp" in t)
    assert found["calls"]["scalar_mix"] == hand, found["calls"]
    assert found["calls"]["scalar_mix_vjp"] == vjp, found["calls"]
