"""Every command README.md shows is run by a test (issue 30; the README is the front page, and a
command there that no longer works is the first thing a new user meets).

The commands are read from README.md's code blocks. Each is either run here, from an empty folder
with the console command of this checkout, with only what makes it short appended (`-k` selecting
one test, `--dtype float64`, `--max-mutants`, `--skip` of the fixtures' slow checks) and its
placeholders made real (`mine.py` a copy of tests/examples/outside_mix.py, `alice/` and `bob/`
submissions, `run1.json` and `run2.json` the reports of the first runs); or it is one that CI runs
as it is (`.ci/run`, checked by tests/test_contributing.py) or that the wheel's test runs (pip
install of the wheel, tests/test_wheel.py). A command that is neither fails the test by name.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from elmo_conformance.ground.resources import child_environment

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.integration
ONE_TEST = ["-k", "test_hand_example_scalar_mix", "--dtype", "float64"]
# Run elsewhere, as they are: the test commands CI runs (.ci/run, tests/test_contributing.py), and
# pip's installs (tests/test_wheel.py installs the wheel, as `pip install elmo-conformance` does,
# and .ci/run installs nox).
ELSEWHERE = {
    "pip install nox": ".ci/run",
    "nox -s tests": ".ci/run",
    "nox -s tests -- -m integration": ".ci/run",
    "pip install elmo-conformance": "tests/test_wheel.py",
}
# A nox session that wraps a console command is run as that command (noxfile.py: `nox -s
# conformance -- ARGS` is `elmo-conformance ARGS` with the pinned requirements).
NOX_WRAPS = {"nox -s conformance --": "elmo-conformance"}


def readme_commands() -> list[str]:
    """Each command line of README.md's code blocks (comments dropped)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
        for line in block.splitlines():
            command = line.split("  #", 1)[0].strip()
            if re.match(r"(elmo-conformance|nox|pip|python)\b", command):
                found.append(command)
    return found


def test_the_readme_shows_commands() -> None:
    commands = readme_commands()
    assert "elmo-conformance --impl mine.py" in commands and "nox -s tests" in commands, commands


def test_every_readme_command_runs(tmp_path: Path) -> None:
    env = child_environment()
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    console = [sys.executable, "-m", "elmo_conformance"]
    shutil.copy(ROOT / "tests" / "examples" / "outside_mix.py", tmp_path / "mine.py")
    for name, source in (("alice", "good"), ("bob", "wrong")):
        shutil.copytree(ROOT / "tests" / "batch" / source, tmp_path / name)
    reports: list[str] = []
    ran: dict[str, int] = {}

    def run(command: str) -> subprocess.CompletedProcess:
        words = command.split()
        for wrapper, wrapped in NOX_WRAPS.items():
            if command.startswith(wrapper):
                words = [wrapped, *command[len(wrapper) :].split()]
        assert words[0] == "elmo-conformance", f"no rule runs {command!r}: add one here"
        args = words[1:]
        sub = args[0] if args and not args[0].startswith("-") else "suite"
        if sub == "suite":
            report = tmp_path / f"run{len(reports) + 1}.json"
            args += [*ONE_TEST, "--report", str(report)]
            reports.append(str(report))
        elif sub == "mutate":
            args += ["-k", "hand_example", "--max-mutants", "2", "--no-html", "--out", str(tmp_path / "mutate")]
        elif sub == "batch":
            args += ["--no-progress", "--no-dashboard", *ONE_TEST]
        elif sub == "fixtures":
            args += ["--skip", "regenerate", "--skip", "reference", "--skip", "mutants"]
        elif sub == "dashboard":
            args = ["dashboard", *(reports[:2] if "run1.json" in args else args[1:]), "--out", str(tmp_path / "d.html")]
        return subprocess.run([*console, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)

    problems = []
    for command in readme_commands():
        if command in ELSEWHERE or command.startswith("pip install path/to/"):
            continue
        done = run(command)
        ran[command] = done.returncode
        if done.returncode != 0:
            problems.append(f"{command!r} exited {done.returncode}: {(done.stdout + done.stderr)[-1500:]}")
    assert not problems, "\n\n".join(problems)
    assert "elmo-conformance --impl mine.py" in ran and "elmo-conformance dashboard run1.json run2.json" in ran
    assert json.loads(Path(reports[0]).read_text(encoding="utf-8"))["complete"] is True
    assert (tmp_path / "class" / "batch.json").is_file() and (tmp_path / "d.html").is_file()
