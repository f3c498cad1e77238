"""The generated mutants' baseline (elmo_conformance/mutation/worker.py, run_baseline) records which
lines of the implementation each test runs, also for an implementation whose modules the worker
had imported before the run: the reference (`mutate --impl numpy`), which the suite's own modules
import, runs from where it was first imported, not from the baseline's copy, and its lines were
not recorded (every mutant of the reference was NoCoverage)."""

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
job = BaselineJob("numpy", select="hand_example_scalar_mix", lines=tuple(map(str, files)), copy=copy, run_as=run_as, cwd=cwd)
baseline = run_baseline(job, lambda event: None)
print(json.dumps({"error": baseline.error, "tests": sorted(baseline.tests), "lines": baseline.lines}))
"""


def test_the_baseline_records_the_lines_of_the_reference_the_worker_had_imported() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["error"] is None and len(found["tests"]) == 2, found
    mix = str(ROOT / "reference" / "scalar_mix.py")
    assert mix in found["lines"], sorted(found["lines"])  # by the user's file name, as the mutants know it
    reached = {test for tests in found["lines"][mix].values() for test in tests}
    assert reached == set(found["tests"])  # each test ran lines of the ScalarMix it checks
