"""Every way the project launches the conformance suite goes through the one entry point,
`elmo_conformance.run` (elmo_conformance/runner/running.py; spec §11.1): this test lists the places that
start pytest on the suite, and fails on one that does not go through it.

The exceptions are the tests of plain `pytest` itself: a user may run the suite with
`python -m pytest -p elmo_conformance.conformance.plugin ...` (the reproduce commands print that
form), and those tests check that it works, from a checkout and from the installed wheel."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import elmo_conformance
from elmo_conformance.ground.resources import child_environment
from tests.suite_runs import run_suite_here

ROOT = Path(__file__).resolve().parent.parent
LAUNCH = re.compile(r'"-m",\s*"pytest"|pytest\.main\(|\bpytest",\s*"conformance"')
# path -> why it starts pytest itself
THROUGH_THE_ENTRY_POINT = {
    "elmo_conformance/runner/running.py": "the entry point itself: run(), in a child or (where='here', the mutation workers) in its own process",
}
PLAIN_PYTEST = {
    "tests/test_console.py": "the plugin's registration, and the printed `python -m pytest` reproduce command",
    "tests/test_wheel.py": "plain pytest with the installed plugin, from an empty directory",
    "tests/test_harness.py": "runs the printed `python -m pytest` reproduce command as a user would",
    "tests/test_entry_point.py": "this test's own pattern",
}
# The project's own test runs (pytest on tests/, not on the suite).
OWN_TESTS = {"noxfile.py"}


def launches() -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith((".git/", ".nox/", "build/", ".venv/")) or "/site-packages/" in relative:
            continue
        lines = [n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if LAUNCH.search(line)]
        if lines:
            found[relative] = lines
    return found


def test_the_pattern_finds_a_launch() -> None:
    """The check can fail: each form of a launch is seen."""
    for line in ('[sys.executable, "-m", "pytest", "conformance"]', "pytest.main(args)", '("pytest", "conformance")'):
        assert LAUNCH.search(line), line
    assert not LAUNCH.search("elmo_conformance.run('numpy')")


def test_every_launch_of_the_suite_goes_through_the_entry_point() -> None:
    allowed = {**THROUGH_THE_ENTRY_POINT, **PLAIN_PYTEST, **{path: "the project's tests" for path in OWN_TESTS}}
    stray = {path: lines for path, lines in launches().items() if path not in allowed}
    assert not stray, (
        "these files start pytest on the suite themselves; run it through elmo_conformance.run "
        f"(or run(where='here') in a long-lived worker): {stray}"
    )


def test_two_runs_in_one_process_each_start_their_own_adapter_process(tmp_path: Path) -> None:
    """`run(where="here")` twice in one Python process (the mutation workers, the project's own tests): the
    first run's adapter processes are stopped when it ends, and the second run starts its own
    rather than calling a stopped one (§11.1, §15.7)."""
    for run in ("first", "second"):
        (tmp_path / run).mkdir()
        code, report, output = run_suite_here(
            tmp_path / run, "numpy", "--dtype", "float64", "-k", "test_hand_example_scalar_mix"
        )
        assert code == 0 and report is not None and report["summary"] == {"passed": 1}, f"{run} run:\n{output}"


RUN_HERE_AFTER_IMPORT = """
import sys, tempfile
from pathlib import Path
import elmo_conformance.conformance.plugin  # imported before the run, as an earlier test's import has it
from tests.suite_runs import run_suite_here
code, report, output = run_suite_here(Path(tempfile.mkdtemp()), "numpy", "--dtype", "float64", "-k", "test_hand_example_scalar_mix")
print(output)
sys.exit(code)
"""


def test_a_run_in_this_process_after_the_suite_was_imported_adds_no_warning() -> None:
    """A process that imported the suite's plugin before `run(where="here")` (a pytest-xdist worker whose
    tests import it): pytest cannot rewrite its assertions and, unless told otherwise, prints a
    PytestAssertRewriteWarning in the run's output, which the suite's output must not carry."""
    done = subprocess.run(
        [sys.executable, "-c", RUN_HERE_AFTER_IMPORT], cwd=ROOT, env=child_environment(), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warnings summary" not in done.stdout and "PytestAssertRewriteWarning" not in done.stdout, done.stdout


def test_one_way_in_runs_the_suite_here_and_says_what_it_saw(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`elmo_conformance.run(..., where="here")` (§11.1's entry point, in this process): the same
    RunResult as a child's run, its outcomes what pytest reported here."""
    monkeypatch.chdir(tmp_path)
    result = elmo_conformance.run(
        "numpy", ["--dtype", "float64", "-k", "test_hand_example_scalar_mix or test_no_such_test"], where="here"
    )
    assert (result.exit_status, result.complete, result.problem) == (0, True, None)
    assert result.counts == {"passed": 1}, result.tests
    [test] = result.tests
    assert test.nodeid.endswith("test_hand_example_scalar_mix[numpy-float64]"), test.nodeid
    child = elmo_conformance.run("numpy", ["--dtype", "float64", "-k", "test_hand_example_scalar_mix"], cwd=tmp_path)
    assert child.outcomes == result.outcomes, "one result type: a child's run records the same outcomes"


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"where": "here", "deadline_s": 5.0}, "deadline_s"),
        ({"where": "here", "env": {}}, "env"),
        ({"where": "here", "capture": True}, "capture"),
        ({"plugins": [object()]}, "plugins"),
        ({"where": "elsewhere"}, "where"),
    ],
)
def test_an_option_for_the_other_place_is_refused_by_name(options: dict, named: str) -> None:
    with pytest.raises(ValueError, match=rf"^{named}: "):
        elmo_conformance.run("numpy", **options)
