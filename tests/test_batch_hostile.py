"""A class with every attack of issue 29 keeps every honest verdict (docs/sandbox.md, "What the
sandbox stops"; spec §11.1, the judge and the judged).

One batch on a real Dask cluster (`dask scheduler` and two `dask worker`s started by their own
tools, bench.batch.dask_cluster), with the sandbox on, of: an honest correct submission (the
victim, run beside the saboteur), an honest wrong one, a correct one named `batch.json`, and five
hostile wrong ones, each knowing every path and address a real attacker could find (written into
its folder here):
- the forger writes a passing report at the console command's private path (tests/hostile/forger.py);
- the escapee starts a detached process in a session of its own, with an empty environment, that
  keeps rewriting the batch's `batch.json` and `index.html` to say that everyone passed;
- the saboteur replaces every other submission's `adapter.py` it can find and kills every process
  it can see;
- the tamperer appends a hook that passes every test to the installed suite's conftest.py;
- the hijacker connects to the scheduler and patches the jobs of every worker (`client.run`).
Every honest verdict stands, each hostile submission fails on its own wrong ScalarMix, the batch's
files are its own, the suite's files are unchanged, and no process of any job is left.

Each attack is shown succeeding without the sandbox by a test of its own (tests/test_sandbox.py,
tests/test_batch.py, each failing at 8a2ccf4); this class is never run without it, since the
saboteur would kill every process the user can signal and the tamperer would rewrite the suite.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from elmo_conformance.ground.resources import child_environment, package_dir
from elmo_conformance.processes import sandbox
from tests.test_batch import SELECTION, finish, marked

pytest.importorskip("distributed")
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(sandbox.unavailable() is not None, reason="bubblewrap cannot run here"),
]

ROOT = Path(__file__).resolve().parent.parent
WRONG = """
import numpy as np

from elmo_conformance.adapters.numpy import NumpyAdapter


class Wrong(NumpyAdapter):
    name = "NAME"

    def scalar_mix(self, s, gamma, layers):
        return (gamma[0] * np.tensordot(s.astype(layers[0].dtype), np.stack(layers), axes=1)).astype(layers[0].dtype)


adapter = Wrong()
"""
CORRECT = """
from elmo_conformance.adapters.numpy import NumpyAdapter


class Correct(NumpyAdapter):
    name = "NAME"


adapter = Correct()
"""
ESCAPEE = """
import os
import subprocess

OUT = {out!r}
LOOP = (
    "import json, os, time\\n"
    "for _ in range(600):\\n"
    "    for name in ('batch.json', 'index.html'):\\n"
    "        try:\\n"
    "            with open(os.path.join({out!r}, name), 'w') as f: f.write('everyone passed')\\n"
    "        except OSError:\\n"
    "            pass\\n"
    "    time.sleep(0.2)  # escapee-{marker}\\n"
)
subprocess.Popen(
    ["/bin/sh", "-c", 'exec "$0" -c "$1" escapee-{marker} &', {python!r}, LOOP],
    env={{}}, start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
)
"""
SABOTEUR = """
import glob
import os
import signal

WRONG = {wrong!r}
for pattern in ({folders!r} + "/*/adapter.py", "/tmp/**/adapter.py"):
    for path in glob.glob(pattern, recursive=True):
        if os.path.abspath(path) != os.path.abspath(__file__):
            try:
                with open(path, "w") as f:
                    f.write(WRONG.replace("NAME", "victim"))
            except OSError:
                pass
for entry in os.listdir("/proc"):
    if entry.isdigit() and int(entry) not in (os.getpid(), os.getppid(), 1):
        try:
            os.kill(int(entry), signal.SIGKILL)
        except OSError:
            pass
"""
TAMPERER = """
import elmo_conformance.conformance as suite
import os

HOOK = (
    "\\n\\nimport pytest\\n\\n@pytest.hookimpl(hookwrapper=True)\\n"
    "def pytest_runtest_makereport(item, call):\\n"
    "    outcome = yield\\n    outcome.get_result().outcome = 'passed'\\n"
)
for path in (os.path.join(os.path.dirname(suite.__file__), "conftest.py"), {conftest!r}):
    try:
        with open(path, "a") as f:
            f.write(HOOK)
    except OSError:
        pass
"""
HIJACKER = """
import json

try:
    from distributed import Client

    address = json.load(open({scheduler_file!r}))["address"]
    with Client(address, timeout=5, set_as_default=False) as client:
        def patch():
            import elmo_conformance.batch.jobs as jobs
            jobs.run_job = lambda *a, **k: {{"verdict": "pass"}}
        client.run(patch)
except Exception:
    pass
"""


def submission(folder: Path, name: str, preamble: str, body: str) -> None:
    (folder / name).mkdir(parents=True)
    (folder / name / "adapter.py").write_text(preamble + "\n" + body.replace("NAME", name), encoding="utf-8")


def suite_files() -> dict[str, str]:
    top = Path(package_dir("conformance"))
    return {p.relative_to(top).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in top.rglob("*.py")}


def test_a_hostile_class_keeps_every_honest_verdict(tmp_path: Path) -> None:
    from bench.batch import dask_cluster

    marker = f"{time.time_ns() % 10**9}"
    out, folder = tmp_path / "out", tmp_path / "class"
    folder.mkdir()
    before = suite_files()
    with dask_cluster(tmp_path) as scheduler_file:
        forger = (ROOT / "tests" / "hostile" / "forger.py").read_text(encoding="utf-8")
        submission(folder, "forger", "", forger)
        submission(folder, "escapee", ESCAPEE.format(out=str(out), marker=marker, python=sys.executable), WRONG)
        submission(folder, "saboteur", SABOTEUR.format(wrong=WRONG, folders=str(folder)), WRONG)
        conftest = str(Path(package_dir("conformance")) / "conftest.py")
        submission(folder, "tamperer", TAMPERER.format(conftest=conftest), WRONG)
        submission(folder, "hijacker", HIJACKER.format(scheduler_file=str(scheduler_file)), WRONG)
        submission(folder, "victim", "", CORRECT)
        victim = (folder / "victim" / "adapter.py").read_text(encoding="utf-8")
        submission(folder, "batch.json", "", CORRECT)
        submission(folder, "wrong", "", WRONG)
        submission(folder, "good", "", CORRECT)
        # The hostile first, so that they run beside the honest ones and before those that come last.
        order = ["saboteur", "victim", "forger", "escapee", "tamperer", "hijacker", "batch.json", "wrong", "good"]
        command = [sys.executable, "-m", "elmo_conformance", "batch", *(str(folder / n) for n in order)]
        command += ["--out", str(out), "--job-timeout", "120", "--no-progress", "--scheduler-file", str(scheduler_file)]
        process = subprocess.Popen(
            [*command, *SELECTION],
            env=child_environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        done = finish(process, timeout=900)
    time.sleep(2)  # what an escaped process would write after the batch client exited
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    data = json.loads((out / "batch.json").read_text(encoding="utf-8"))
    verdicts = {r["name"]: r["verdict"] for r in data["submissions"]}
    honest = {"victim": "pass", "batch.json": "pass", "good": "pass", "wrong": "fail"}
    hostile = {name: "fail" for name in ("forger", "escapee", "saboteur", "tamperer", "hijacker")}
    assert verdicts == {**honest, **hostile}, done.stdout[-3000:] + done.stderr[-3000:]
    assert "everyone passed" not in (out / "index.html").read_text(encoding="utf-8")
    assert (out / "submissions" / "batch.json").is_dir(), "the submission named batch.json has a folder of its own"
    assert (folder / "victim" / "adapter.py").read_text(encoding="utf-8") == victim, "the saboteur wrote"
    assert suite_files() == before, "a submission changed the installed suite"
    job_ids = {a["job"] for r in data["submissions"] for a in r["attempts"] if a.get("job")}
    assert len(job_ids) >= 9 and marked(job_ids) == [], "a process of a job outlived it"
    left = [p for p in os.listdir("/proc") if p.isdigit() and _has(p, f"escapee-{marker}")]
    assert not left, "the escapee's detached process outlived its job"
    shutil.rmtree(folder, ignore_errors=True)


def _has(pid: str, text: str) -> bool:
    try:
        return text.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
