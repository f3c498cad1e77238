"""The harness against implementation processes that break the wire protocol (spec §15.7).

Each faulty program (tests/faulty/program.py) is the numpy adapter behind the protocol server
until one call, where it misbehaves. The run must fail exactly the test that made the call, with a
message saying what was sent, what came back and what the process wrote to stderr; go on with a
fresh process; finish and write its report; and leave no process behind. A process that cannot
complete the handshake, or speaks another major version, is refused with one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FAULTY = ROOT / "tests" / "faulty" / "program.py"
# Three tests in file order: test_r0 makes 1 call, test_calls_are_deterministic 15 (its 5th is
# bilm_logits), test_hand_example_scalar_mix 2.
SELECTION = ["--dtype", "float64", "-k", "test_r0_repeats or test_calls_are or test_hand_example_scalar"]


def survivors(marker: str) -> list[str]:
    """Command lines of live processes that carry `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in command and "pytest" not in command:
            found.append(command)
    return found


def run_faulty(tmp_path: Path, mode: str, at: int = 5, timeout: float = 3.0) -> tuple[int, dict | None, str, str]:
    marker = f"faulty-{uuid.uuid4().hex[:12]}"
    impl = f"cmd:{sys.executable} {FAULTY} {mode} {at} {marker}"
    report = tmp_path / "report.json"
    command = [sys.executable, "-m", "pytest", "conformance", "--impl", impl, "--report", str(report)]
    command += ["-p", "no:cacheprovider", "--call-timeout", str(timeout), *SELECTION]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    data = json.loads(report.read_text()) if report.exists() else None
    return done.returncode, data, done.stdout + done.stderr, marker


def outcome(report: dict, test: str) -> dict:
    [found] = [t for t in report["tests"] if t["test"] == test]
    return found


FAILURES = {
    "exit": "the process closed its standard output before answering; it exited with status 3",
    "segfault": "the process closed its standard output before answering; it was killed by SIGSEGV",
    "hang": "did not return within 3 s (--call-timeout)",
    "garbage": "the process wrote bytes that are not a frame (a frame starts with b'ELMO'",
    "truncated": "the process closed its standard output after 24 of the",
    "oversized": "the process declared a frame body of 3221225472 bytes, more than the limit of 1073741824",
    "undecodable": "the process wrote a frame whose body cannot be decoded: unknown tag b'z' at byte 0",
    "wrong-id": "the process answered request",
    "spawn-child": "did not return within 3 s (--call-timeout)",
}


@pytest.mark.parametrize("mode", sorted(FAILURES))
def test_a_misbehaving_process_fails_one_test_and_the_run_goes_on(tmp_path: Path, mode: str) -> None:
    code, report, output, marker = run_faulty(tmp_path, mode)
    assert code == 1, output
    assert report is not None and report["complete"], output
    failed = outcome(report, "test_calls_are_deterministic")
    assert failed["outcome"] == "failed"
    message = failed["message"]
    assert FAILURES[mode] in message, message
    assert "numpy.bilm_logits" in message and "§3.5" in message, "the failure names the call and its section"
    assert "sent: bilm_logits(params={embedding: float64[7, 3]" in message, "what was sent"
    assert f"faulty: call 5 (bilm_logits): {mode}" in message, "the tail of the process's stderr"
    assert "During handling of the above exception" not in message
    assert outcome(report, "test_r0_repeats_the_embedding")["outcome"] == "passed"
    assert outcome(report, "test_hand_example_scalar_mix")["outcome"] == "passed", "a fresh process took over"
    assert survivors(marker) == []


def test_a_result_of_the_wrong_shape_is_an_ordinary_failure_and_keeps_the_process(tmp_path: Path) -> None:
    code, report, output, marker = run_faulty(tmp_path, "wrong-shape", at=1)
    assert code == 1, output
    message = outcome(report, "test_r0_repeats_the_embedding")["message"]
    assert "bilm_layers()[0] (R^0): expected shape [5, 5, 8], got [5, 5, 7]" in message
    assert "§3.4" in message and "The process was stopped" not in message
    assert outcome(report, "test_hand_example_scalar_mix")["outcome"] == "passed"
    assert survivors(marker) == []


def test_a_process_that_floods_stderr_never_blocks(tmp_path: Path) -> None:
    """20 MB of stderr per call, far more than a pipe holds: read as it comes, the run passes."""
    code, report, output, marker = run_faulty(tmp_path, "flood-stderr", timeout=60.0)
    assert code == 0, output[-3000:]
    assert report["summary"] == {"passed": 3}
    assert survivors(marker) == []


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        (
            "exit-at-once",
            "the handshake failed (§15.4): the process closed its standard output before answering; "
            "it exited with status 2",
        ),
        (
            "other-version",
            "the process speaks protocol 2.0, this suite speaks 1.0; major versions must match (spec §15.4)",
        ),
    ],
)
def test_a_process_that_cannot_shake_hands_is_refused_in_one_line(tmp_path: Path, mode: str, expected: str) -> None:
    code, report, output, marker = run_faulty(tmp_path, mode)
    assert code == 4, output
    [line] = [line for line in output.splitlines() if line.startswith("ERROR: ")]
    assert expected in line
    assert report == {**report, "complete": True, "tests": []} and expected in report["refused"]
    if mode == "exit-at-once":
        assert "faulty: cannot open model.bin: No such file or directory" in output, "its stderr is shown"
    assert survivors(marker) == []


def test_a_refused_run_replaces_the_previous_reports(tmp_path: Path) -> None:
    """A passing report of an earlier run must not survive a run refused at start-up."""
    report = tmp_path / "report.json"
    table = tmp_path / "table.json"
    report.write_text(json.dumps({"summary": {"passed": 420}, "exit_status": 0}))
    table.write_text("{}")
    command = [sys.executable, "-m", "pytest", "conformance", "--impl", "cmd:/nonexistent/elmo --serve"]
    command += ["--report", str(report), "--pass-table", str(table), "-p", "no:cacheprovider"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 4
    assert "cannot run '/nonexistent/elmo'" in done.stdout + done.stderr
    assert json.loads(report.read_text())["exit_status"] == 4 and not table.exists()


def test_a_report_path_that_is_a_directory_is_refused_before_the_run(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "pytest", "conformance", "--impl", "numpy", "--report", str(tmp_path)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 4
    assert f"--report {tmp_path}: is a directory" in done.stdout + done.stderr
