"""Warm workers (elmo_conformance/mutation/warm.py, zygote.py) judge a Python implementation's generated
mutants as a fresh process per mutant does (`mutate --fresh`).

On a copy of tests/examples/outside_mix.py with `-k` selecting four tests: a seeded sample of its
mutants, the one that hangs, one that changes the adapter's hello (collected differently: run
fresh), and mutmut's two checks of switched mutants (every mutant off survives; a mutant forced to
fail is seen failing), each through both paths with one clean copy and one test order
(tests/mutate_modes.py): the same status and the same killing test.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from elmo_conformance.mutation.generate import generate

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "tests" / "examples" / "outside_mix.py"
FAST = "hand_example or stable_for_large_s"
HANGS = "k += 1 -> pass"  # the softmax's loop never ends: a Timeout
NEW_HELLO = 'grad", " -> (nothing)'  # drops two capabilities: another hello, another collection


def modes(user: Path, *args: str, env: dict[str, str] | None = None) -> dict:
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path, **(env or {})}
    command = [sys.executable, str(ROOT / "tests" / "mutate_modes.py"), str(user / "outside_mix.py"), "-k", FAST]
    done = subprocess.run([*command, *args], capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def differences(found: dict) -> list[str]:
    """Each mutant whose status or first killer differs between the two paths."""
    out = []
    for key, label in found["mutants"].items():
        fresh, warm = found["fresh"][key], found["warm"][key]
        if (fresh["status"], fresh["killers"]) != (warm["status"], warm["killers"]):
            out.append(f"{label}: fresh {fresh['status']} {fresh['killers']}, warm {warm['status']} {warm['killers']}")
    return out


def test_warm_workers_give_each_mutant_the_status_and_killer_a_fresh_process_gives(tmp_path: Path) -> None:
    shutil.copy(EXAMPLE, tmp_path / "outside_mix.py")
    ids = {m.label().split("  ", 1)[1]: m.id for m in generate(tmp_path / "outside_mix.py")}
    found = modes(
        tmp_path, "--sample", "8", "--seed", "0", "--timeout", "6", "--forced",
        "--mutant", ids[HANGS], "--mutant", ids[NEW_HELLO],
    )  # fmt: skip
    assert len(found["order"]) == 4, found["order"]
    assert differences(found) == []
    warm = {key: result["status"] for key, result in found["warm"].items()}
    assert warm["forced-off"] == "Survived"  # every mutant off: the clean code passes through the warm path
    assert warm["forced-fail"] == "Killed"  # a mutant forced to fail is seen failing
    assert found["warm"]["forced-fail"]["killers"] == [found["order"][0]]
    assert warm[ids[HANGS]] == "Timeout"
    assert warm[ids[NEW_HELLO]] == "Survived"
    assert {"Killed", "Survived"} <= set(warm.values())  # the sample judges both ways


def test_the_comparison_sees_a_verdict_that_differs() -> None:
    """The check itself: a mutant whose warm status or killer is not the fresh one is named."""
    same = {"status": "Killed", "killers": ["t[a]"]}
    found = {
        "mutants": {"m1": "f.py:1:1  a -> b", "m2": "f.py:2:1  c -> d"},
        "fresh": {"m1": same, "m2": same},
        "warm": {"m1": same, "m2": {"status": "Killed", "killers": ["t[b]"]}},
    }
    assert differences(found) == ["f.py:2:1  c -> d: fresh Killed ['t[a]'], warm Killed ['t[b]']"]
    found["warm"]["m2"] = {"status": "Survived", "killers": []}
    assert len(differences(found)) == 1
    found["warm"]["m2"] = same
    assert differences(found) == []


pytestmark = pytest.mark.xdist_group("mutate-warm")


def test_a_hanging_mutant_leaves_no_process_without_the_sandbox(tmp_path: Path) -> None:
    """Without the sandbox's PID namespace, the warm server's fork that serves a hanging mutant
    ends with its worker (the runner kills a worker past its deadline) all the same."""
    shutil.copy(EXAMPLE, tmp_path / "outside_mix.py")
    ids = {m.label().split("  ", 1)[1]: m.id for m in generate(tmp_path / "outside_mix.py")}
    scratch = Path(tempfile.mkdtemp(prefix="warm-", dir="/tmp"))  # short: the warm server's socket path
    try:
        found = modes(
            tmp_path, "--sample", "0", "--timeout", "4", "--mutant", ids[HANGS],
            env={"ELMO_CONFORMANCE_NO_SANDBOX": "1", "TMPDIR": str(scratch)},
        )  # fmt: skip
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    assert found["warm"][ids[HANGS]]["status"] == found["fresh"][ids[HANGS]]["status"] == "Timeout"
    left = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if str(scratch) in command:
            left.append(f"{entry.name}: {command[:200]}")
    assert left == []


def test_a_mutant_that_hangs_is_a_timeout_at_its_test_deadline_and_its_worker_lives_on(tmp_path: Path) -> None:
    """§13.2 (deadlines.py): the hanging mutant is stopped at its first test's own deadline (2 s
    here), long before the whole run's (60 s), by the process that judges it: its verdict comes
    back from the worker, which then judges the next mutant warm."""
    shutil.copy(EXAMPLE, tmp_path / "outside_mix.py")
    ids = {m.label().split("  ", 1)[1]: m.id for m in generate(tmp_path / "outside_mix.py")}
    found = modes(
        tmp_path, "--sample", "0", "--timeout", "60", "--test-deadline", "2", "--modes", "warm", "--forced",
        "--mutant", ids[HANGS],
    )  # fmt: skip
    hung = found["warm"][ids[HANGS]]
    assert hung["status"] == "Timeout", hung
    assert f"its test {found['order'][0]} did not finish within 2.0 s" in hung["reason"], hung["reason"]
    assert hung["warm"] and hung["duration"] < 30, hung  # handed back by the worker, not stopped by the runner
    assert found["warm"]["forced-fail"]["status"] == "Killed"  # the same worker, still judging
    assert found["warm"]["forced-fail"]["warm"] and found["warm"]["forced-off"]["status"] == "Survived"


MAIN = ROOT / "adapters" / "c" / "main.c"


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_a_program_mutant_that_hangs_at_its_start_is_a_timeout_at_the_starts_deadline(tmp_path: Path) -> None:
    """§13.2 (deadlines.py, warm.py): a mutant of the built-in c that reads a frame's length from
    the wrong byte waits for bytes that never come, before its handshake answers. Its start has a
    deadline of its own (--test-timeout-min + --timeout-factor x the clean program's start), kept
    by the process that judges it: a Timeout after about 2 s here, not after the whole run's
    deadline (20 s and more) with its worker stopped and replaced."""
    lines = MAIN.read_text(encoding="utf-8").splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "size_t length = (size_t)header[4]" in text)
    (mutant,) = [m.id for m in generate(MAIN) if m.line == line and m.label().endswith("  5 -> 1")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "elmo_conformance", "mutate", "--impl", "c", "--source", str(MAIN)]
    command += ["-k", "hand_example_scalar_mix", "--mutant", mutant, "--test-timeout-min", "2", "--workers", "1"]
    command += ["--no-cache", "--no-html", "--no-line-coverage", "--out", str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads((tmp_path / "mutation-report.json").read_text(encoding="utf-8"))
    (found,) = [m for entry in report["files"].values() for m in entry["mutants"]]
    assert found["status"] == "Timeout", found
    assert "its start did not finish within 2." in found["statusReason"], found["statusReason"]
    assert found["duration"] < 10_000, found  # milliseconds: the start's deadline, not the run's
