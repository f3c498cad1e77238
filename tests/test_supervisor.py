"""The one entry point, `elmo_conformance.run`, and its supervision (spec §11.1): a run exits 0
only when every collected test ran and passed and this run's own report says so.

The stand-ins for pytest here are small scripts that write what a pytest process would (the
private copy of the report, stamped with the run id, and the `finished` marker), so that each
rule of the supervision is checked in about a second; the real suite is run where a rule needs it
(a stale report at the --report path, a concurrent run's report, a leaked thread)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import elmo_conformance
from elmo_conformance.ground.resources import checkout_root, child_environment
from elmo_conformance.runner import invocation, supervisor

ROOT = Path(__file__).resolve().parent.parent
RUN_ID = "0123abcd"


def _stand_in(tmp_path: Path, body: str) -> tuple[list[str], Path, Path]:
    script, report, finished = tmp_path / "stand_in.py", tmp_path / "report.json", tmp_path / "finished"
    preamble = (
        "import json, sys, threading, pathlib\n"
        "report, finished = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])\n"
    )
    script.write_text(preamble + textwrap.dedent(body), encoding="utf-8")
    return [sys.executable, str(script), str(report), str(finished)], report, finished


def _report(exit_status: int, collected: int, ran: int, run_id: str | None = RUN_ID) -> str:
    tests = [{"nodeid": f"t{i}", "outcome": "passed"} for i in range(ran)]
    record = {"complete": True, "exit_status": exit_status, "collected": collected, "tests": tests}
    return json.dumps(record | ({"run_id": run_id} if run_id else {}))


def _supervise(command: list[str], report: Path, finished: Path, **kwargs) -> supervisor.Supervised:
    return supervisor.supervise(command, dict(os.environ), report, finished, RUN_ID, **kwargs)


def test_a_finished_run_whose_process_does_not_exit_is_stopped_and_its_report_decides(tmp_path: Path) -> None:
    """§11.1: a thread left running does not hold the run; the report's status is used."""
    command, report, finished = _stand_in(
        tmp_path,
        f"""
        report.write_text({_report(1, 2, 2)!r})
        finished.write_text("finished")
        threading.Thread(target=threading.Event().wait).start()  # Python waits for it forever
        """,
    )
    started = time.monotonic()
    seen = _supervise(command, report, finished, exit_grace=1.0)
    assert seen.exit_status == 1, seen
    assert time.monotonic() - started < 30
    assert any("had finished but did not exit" in note for note in seen.notes), seen.notes


@pytest.mark.parametrize(
    "body, status, reason",
    [
        ("pass", 3, "it wrote no report"),
        ('report.write_text(\'{"complete": false, "run_id": "0123abcd"}\')', 3, "the run did not finish"),
        (f"report.write_text({_report(0, 3, 2)!r})", 3, "its report has outcomes for 2 of the 3 tests collected"),
        (f"report.write_text({_report(1, 2, 2)!r})", 1, "pytest exited 0 but its report records exit status 1"),
        (f"report.write_text({_report(0, 2, 2)!r})", 0, None),
        # A complete, passing report that this run did not write (no run id, another run's id).
        (f"report.write_text({_report(0, 2, 2, run_id=None)!r})", 3, "its report was not written by this run"),
        (f"report.write_text({_report(0, 2, 2, run_id='other')!r})", 3, "its report was not written by this run"),
        ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", 3, "killed by SIGKILL"),
    ],
)
def test_exit_status_0_needs_this_runs_complete_report_with_every_outcome(
    tmp_path: Path, body: str, status: int, reason: str | None
) -> None:
    """§11.1: the status is 0 only with this run's own complete report holding every outcome."""
    command, report, finished = _stand_in(tmp_path, body)
    seen = _supervise(command, report, finished)
    assert seen.exit_status == status, seen
    notes = "\n".join(seen.notes)
    assert (reason in notes) if reason else notes == ""


def test_a_report_that_turns_incomplete_again_restarts_the_grace(tmp_path: Path) -> None:
    """§11.1: the time a complete report was seen is this run's, and resets when it changes; a
    slow run whose report only later becomes complete is not stopped early."""
    command, report, finished = _stand_in(
        tmp_path,
        f"""
        import time
        report.write_text({_report(0, 2, 2, run_id="stale")!r})  # someone else's complete report
        time.sleep(2.5)
        report.write_text({_report(0, 2, 2)!r})
        """,
    )
    seen = _supervise(command, report, finished, report_grace=1.0)
    assert seen.exit_status == 0, seen
    assert seen.notes == []


def test_a_run_past_its_deadline_is_stopped_with_its_process_group(tmp_path: Path) -> None:
    """§11.1: a deadline ends the run and every process in its group; the run is not finished."""
    marker = tmp_path / "child.pid"
    command, report, finished = _stand_in(
        tmp_path,
        f"""
        import subprocess, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        pathlib.Path({str(marker)!r}).write_text(str(child.pid))
        time.sleep(300)
        """,
    )
    started = time.monotonic()
    seen = _supervise(command, report, finished, deadline_s=2.0)
    assert seen.exit_status == supervisor.NOT_FINISHED and "deadline" in (seen.problem or ""), seen
    assert time.monotonic() - started < 30
    pid = int(marker.read_text())
    for _ in range(50):
        if not _alive(pid):
            break
        time.sleep(0.1)
    assert not _alive(pid), "the grandchild outlived the run"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return not (status.exists() and status.read_text().split(")")[-1].split()[0] == "Z")


def test_test_ids_are_found_wherever_the_suite_is(tmp_path: Path) -> None:
    root = ROOT if checkout_root() else None
    assert root is not None
    nodeid = "conformance/test_bilm.py::test_padding_never_leaks[mine-float64]"
    args = invocation.suite_arguments(["--impl", "mine.py", "-k", "conformance", nodeid], cwd=tmp_path)
    assert args[:4] == ["-c", str(ROOT / "conformance" / "suite.ini"), "--rootdir", str(ROOT)]
    assert args[4:] == ["--impl", "mine.py", "-k", "conformance", str(ROOT / "conformance/test_bilm.py") + nodeid[24:]]
    located = invocation.suite_arguments(["--impl", "numpy"], cwd=tmp_path)[4:]
    assert located == [str(ROOT / "conformance"), "--impl", "numpy"]


def test_bad_arguments_name_the_argument() -> None:
    with pytest.raises(ValueError, match="isolation: expected one of child, in-process"):
        elmo_conformance.run("numpy", isolation="sideways")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="pytest_args: expected a sequence"):
        elmo_conformance.run("numpy", "-k test_hand_example")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ with the real suite

SLOW = """
import time
from elmo_conformance.adapters.numpy import NumpyAdapter

class Slow(NumpyAdapter):
    name = "slow"

    def scalar_mix(self, s, gamma, layers):
        time.sleep(1.5)
        return super().scalar_mix(s, gamma, layers)

adapter = Slow()
"""


def test_a_stale_complete_report_at_the_report_path_changes_nothing(tmp_path: Path) -> None:
    """The reproduction of a false failure (issue 18): a previous run's complete report at the
    --report path, then a correct run slower than the grace after a complete report: it passes,
    and the path then holds this run's report."""
    adapter = tmp_path / "slow.py"
    adapter.write_text(SLOW, encoding="utf-8")
    path = tmp_path / "r.json"
    path.write_text(_report(0, 1, 1, run_id="a-previous-run"), encoding="utf-8")
    result = elmo_conformance.run(
        str(adapter),
        ["-k", "test_hand_example_scalar_mix", "-q", "-p", "no:cacheprovider"],
        dtype="float64",
        report=path,
        report_grace_s=1.0,
        capture=True,
    )
    assert result.exit_status == 0 and result.complete, result.describe()
    assert result.counts == {"passed": 1}
    written = json.loads(path.read_text())
    assert written["run_id"] == result.report["run_id"] != "a-previous-run"
    assert result.notes == []


def test_a_report_path_another_run_writes_is_not_taken_for_this_runs(tmp_path: Path) -> None:
    """Two runs with one --report path: each is judged by its own copy, and says when the path
    holds another run's report."""
    adapter = tmp_path / "slow.py"
    adapter.write_text(SLOW, encoding="utf-8")
    path = tmp_path / "r.json"
    hijacker = tmp_path / "hijack.py"
    hijacker.write_text(
        textwrap.dedent(
            f"""
            import time, pathlib
            path = pathlib.Path({str(path)!r})
            for _ in range(200):
                time.sleep(0.1)
                path.write_text({_report(0, 1, 1, run_id="another-run")!r})
            """
        ),
        encoding="utf-8",
    )
    import subprocess

    other = subprocess.Popen([sys.executable, str(hijacker)])
    try:
        result = elmo_conformance.run(
            str(adapter),
            ["-k", "test_hand_example_scalar_mix or test_scalar_mix_gamma", "-q", "-p", "no:cacheprovider"],
            dtype="float64",
            report=path,
            capture=True,
        )
    finally:
        other.kill()
        other.wait()
    assert result.report is not None and result.report["run_id"] != "another-run", result.describe()
    assert result.exit_status == 0 and result.complete, result.describe()
    assert any("is not this run's" in note for note in result.notes), result.notes


def test_a_read_only_report_is_refused_not_trusted(tmp_path: Path) -> None:
    """A --report path that cannot be written is refused (exit 4), whatever it holds."""
    path = tmp_path / "r.json"
    path.write_text(_report(0, 1, 1, run_id="a-previous-run"), encoding="utf-8")
    path.chmod(0o444)
    if os.access(path, os.W_OK):
        pytest.skip("this user can write a read-only file (root)")
    result = elmo_conformance.run("numpy", ["-k", "test_hand_example_scalar_mix", "-q"], report=path, capture=True)
    assert result.exit_status == 4 and not result.complete, result.describe()
    assert "cannot be written" in (result.output or "")


def test_a_page_that_cannot_be_written_is_one_line_and_the_same_status_in_the_json(tmp_path: Path) -> None:
    """The HTML page is part of the report (§11.1): `--report out/x.json` where out/x.html is a
    folder gives one clear line, no traceback, and the same non-zero status in the JSON."""
    (tmp_path / "x.html").mkdir()
    report = tmp_path / "x.json"
    result = elmo_conformance.run(
        "numpy", ["-k", "test_hand_example_scalar_mix"], dtype="float64", report=report, capture=True
    )
    written = json.loads(report.read_text())
    assert result.exit_status == written["exit_status"] == supervisor.NOT_FINISHED, result.describe()
    assert (
        result.problem
        == written["page_error"]
        == f"the HTML page {tmp_path / 'x.html'} cannot be written: Is a directory"
    )
    assert "Traceback" not in (result.output or ""), result.output


# ------------------------------------------------------------------------ the self-tests' in-process runs

HANGING_RUN = """
import time
from pathlib import Path
from tests.suite_runs import run_args_here

folder = Path({folder!r})
(folder / "sleeps.py").write_text(
    "import time\\n"
    "from elmo_conformance.adapters.numpy import NumpyAdapter\\n\\n\\n"
    "class Sleeps(NumpyAdapter):\\n"
    "    name = 'sleeps'\\n\\n"
    "    def scalar_mix(self, s, gamma, layers):\\n"
    "        time.sleep(3600)\\n\\n\\n"
    "adapter = Sleeps()\\n"
)
one = ["-k", "test_hand_example_scalar_mix", "--dtype", "float64"]
code, _ = run_args_here("--impl", "numpy", "--co", *one, deadline_s=15)
time.sleep(16)
print(f"a run that ended in time: exit {{code}}, this process still running", flush=True)
run_args_here("--impl", str(folder / "sleeps.py"), "--in-process", "--call-timeout", "1000", *one, deadline_s=3)
print("not reached", flush=True)
"""


def test_an_in_process_run_that_hangs_ends_its_process_with_every_stack(tmp_path: Path) -> None:
    """tests/suite_runs.run_args_here: a run in the test's own process that outlives its deadline
    (here an adapter asleep for an hour, --in-process, with a call timeout beyond the deadline)
    ends that process with exit status 1, the run's output and every thread's stack; a run that
    ended in time leaves the process running past its deadline."""
    script = tmp_path / "hang.py"
    script.write_text(HANGING_RUN.format(folder=str(tmp_path)), encoding="utf-8")
    env = child_environment()  # the checkout first on PYTHONPATH, for tests.suite_runs
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert "a run that ended in time: exit 0, this process still running" in done.stdout, done.stdout + done.stderr
    assert done.returncode == 1 and "not reached" not in done.stdout, done.stdout + done.stderr
    assert "a suite run in this process did not end within 3 s (the harness hung)" in done.stderr, done.stderr
    assert "test_hand_example_scalar_mix" in done.stderr, "the run's output so far"
    assert re.search(r'File ".*sleeps\.py", line 9 in scalar_mix', done.stderr), done.stderr


def test_every_suite_option_that_takes_a_value_is_known_to_the_command_line(tmp_path: Path) -> None:
    """invocation.VALUE_OPTIONS holds each option of conformance/options.py that takes a value (read
    from its pytest_addoption calls), and no suite option that does not exist, so that an option's
    value is never taken for a test to locate."""
    import ast

    source = (Path(__file__).resolve().parent.parent / "conformance" / "options.py").read_text(encoding="utf-8")
    declared, with_value = set(), set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "addoption":
            names = {a.value for a in node.args if isinstance(a, ast.Constant) and str(a.value).startswith("--")}
            action = next((k.value for k in node.keywords if k.arg == "action"), None)
            declared |= names
            if not (isinstance(action, ast.Constant) and action.value in ("store_true", "store_false")):
                with_value |= names
    assert {"--impl", "--report", "--sandbox-limit"} <= with_value and "--no-sandbox" not in with_value
    assert with_value <= invocation.VALUE_OPTIONS
    help_text = subprocess.run(  # pytest's options and the suite's, through the entry point
        [sys.executable, "-m", "elmo_conformance", "suite", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=child_environment(),
    ).stdout
    known = (
        set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", help_text)) | declared | {"--junitxml"}
    )  # an alias --help hides
    assert {o for o in invocation.VALUE_OPTIONS if o.startswith("--")} <= known, "an option that exists nowhere"
