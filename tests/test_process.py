"""The harness against implementation processes that break the wire protocol (spec §15.7).

Each faulty program (tests/faulty/program.py) is the numpy adapter behind the protocol server
until one call, where it misbehaves. The run must fail exactly the test that made the call, with a
message saying what was sent, what came back and what the process wrote to stderr; go on with a
fresh process; finish and write its report; and leave no process behind. A process that cannot
complete the handshake, or speaks another major version, is refused with one line."""

from __future__ import annotations

import json
import os
import signal
import struct
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

import elmo_conformance
from elmo_conformance import reference
from elmo_conformance.adapters.loading import load_adapter, served_command
from elmo_conformance.adapters.wire import codec
from elmo_conformance.adapters.wire.client import (
    HANDSHAKE_FLOOR,
    MAX_ANSWER_VALUES,
    ProcessAdapter,
    ProcessFailure,
    ProcessTimeout,
    RemoteError,
)
from elmo_conformance.conformance.case import Case
from elmo_conformance.processes import sandbox
from tests.suite_runs import run_suite, run_suite_here

ROOT = Path(__file__).resolve().parent.parent
FAULTY = ROOT / "tests" / "faulty" / "program.py"
# Three tests in file order: test_r0 makes 1 call, test_calls_are_deterministic 15 (its 5th is
# bilm_logits), test_hand_example_scalar_mix 2.
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
SELECTION = ["--dtype", "float64", "-k", "test_r0_repeats or test_calls_are or test_hand_example_scalar"]


def survivors(marker: str) -> list[str]:
    """`pid command line` of live processes that carry `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in command and "pytest" not in command:
            found.append(f"{entry.name} {command}")
    return found


def run_faulty(tmp_path: Path, mode: str, at: int = 5, timeout: float = 3.0) -> tuple[int, dict | None, str, str]:
    """The suite on a faulty program, in this process (run_suite_here): what misbehaves is the
    program, a child of the harness, whatever process the harness runs in."""
    marker = f"faulty-{uuid.uuid4().hex[:12]}"
    impl = f"cmd:{sys.executable} {FAULTY} {mode} {at} {marker}"
    code, data, output = run_suite_here(tmp_path, impl, "--call-timeout", str(timeout), *SELECTION)
    return code, data, output, marker


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
    code, _, output = run_suite(tmp_path, "cmd:/nonexistent/elmo --serve", "--pass-table", str(table), timeout=300)
    assert code == 4
    assert "/nonexistent/elmo" in output and "No such file or directory" in output, output
    assert json.loads(report.read_text())["exit_status"] == 4 and not table.exists()


def test_a_report_path_that_is_a_directory_is_refused_before_the_run(tmp_path: Path) -> None:
    done = elmo_conformance.run("numpy", ["-p", "no:cacheprovider"], report=tmp_path, capture=True, deadline_s=300)
    assert done.exit_status == 4
    assert f"--report {tmp_path}: is a directory" in (done.output or "")


# ------------------------------------------------------------------------------------------------
# adapters/wire/client.py driven directly (issue 21): one process, one or two calls, no pytest run.

S, GAMMA, LAYERS = np.zeros(3), np.ones(1), [np.full((2, 3, 4), float(k)) for k in range(3)]


def faulty_adapter(mode: str, at: int = 1, call_timeout: float = 30.0, **kwargs: object) -> tuple[ProcessAdapter, str]:
    marker = f"faulty-{uuid.uuid4().hex[:12]}"
    argv = [sys.executable, str(FAULTY), mode, str(at), marker]
    return ProcessAdapter(f"cmd:faulty {mode}", argv, call_timeout=call_timeout, **kwargs), marker


def fails(adapter: ProcessAdapter, expected: type[BaseException] = ProcessFailure) -> tuple[str, float]:
    """The message of the exception a tiny call raises, and how long the call took."""
    start = time.monotonic()
    with pytest.raises(BaseException) as caught:
        adapter.scalar_mix(S, GAMMA, LAYERS)
    assert type(caught.value) is expected, f"{type(caught.value).__name__}: {caught.value}"
    return str(caught.value), time.monotonic() - start


def test_an_answer_declaring_more_than_the_call_can_return_is_refused_before_it_is_read() -> None:
    """Issue 21.1: 10^9 one-byte nulls are under the frame limit; decoded, they would take
    minutes and gigabytes. The header is refused at once (§11.1)."""
    adapter, marker = faulty_adapter("huge-answer")
    try:
        message, took = fails(adapter)
    finally:
        adapter.stop()
    assert "declared a frame body of 1000000005 bytes, more than any answer to this call can need" in message
    assert took < 10
    assert survivors(marker) == []


def test_an_answer_of_too_many_values_is_refused_as_it_is_decoded() -> None:
    adapter, marker = faulty_adapter("many-values")
    try:
        message, took = fails(adapter)
    finally:
        adapter.stop()
    assert f"wrote a frame whose body cannot be decoded: the body holds more than {MAX_ANSWER_VALUES} values" in message
    assert took < 10


def test_decoding_is_bounded_in_values_and_deadline() -> None:
    body = b"l" + struct.pack("<I", 10**6) + b"n" * 10**6
    with pytest.raises(codec.WireError, match="holds more than 65536 values"):
        codec.decode(body, max_values=1 << 16)
    with pytest.raises(codec.WireTimeout):
        codec.decode(body, deadline=time.monotonic() - 1)
    assert len(codec.decode(body)) == 10**6, "without bounds the same body decodes"


def test_a_process_in_a_session_of_its_own_does_not_outlive_the_harness() -> None:
    """Issue 21.3: a grandchild started with start_new_session=True, and a daemon that lost its
    parent, are not in the process group; they are found and ended all the same (§11.1)."""
    adapter, marker = faulty_adapter("spawn-session", call_timeout=2.0)
    try:
        fails(adapter, ProcessTimeout)
        assert survivors(marker) == []
    finally:
        adapter.stop()
        for command in survivors(marker):  # leave nothing behind when the test fails
            os.kill(int(command.split()[0]), signal.SIGKILL)


def test_a_process_that_exits_while_its_child_holds_the_pipe_is_seen_to_exit() -> None:
    """Issue 21.7: the pipe stays open (a grandchild holds it) but the process is gone: the call
    fails at once as an exit, not as a timeout after the whole call timeout. In the sandbox
    (issue 29) the grandchild ends with the program, and the pipe closes with it."""
    adapter, marker = faulty_adapter("exit-leaving-child", call_timeout=30.0)
    try:
        message, took = fails(adapter)
    finally:
        adapter.stop()
    if sandbox.active():
        assert "closed its standard output before answering" in message
    else:
        assert "exited before answering (a process it started still holds its standard output open)" in message
    assert "it exited with status 3" in message
    assert took < 10
    assert survivors(marker) == []


def test_the_handshake_deadline_is_derived_from_the_call_timeout(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Issue 21.4: a restarted process that hangs in its handshake fails the call after the
    handshake deadline (the call timeout, at least HANDSHAKE_FLOOR), which the message names."""
    assert _deadline(3.0, None) == HANDSHAKE_FLOOR and _deadline(300.0, None) == 300.0 and _deadline(3.0, 1.5) == 1.5
    monkeypatch.setattr("elmo_conformance.adapters.wire.client.HANDSHAKE_FLOOR", 0.5)
    env = {**os.environ, "FAULTY_STATE": str(tmp_path / "started")}
    box = sandbox.Sandbox(writable=(str(tmp_path),), keep=("FAULTY_STATE",))
    adapter, marker = faulty_adapter("restart-hangs", call_timeout=60.0, env=env, box=box)
    adapter.call_timeout = 2.0  # as the harness sets it before each call
    try:
        message, _ = fails(adapter)
        assert "it exited with status 3" in message
        message, took = fails(adapter)
    finally:
        adapter.stop()
    assert "restarting the process failed" in message
    assert "did not answer within the handshake deadline of 2 s (the call timeout, 2 s, and at least 0.5 s)" in message
    assert took < 8
    assert survivors(marker) == []


def _deadline(call_timeout: float, startup_timeout: float | None) -> float:
    adapter = object.__new__(ProcessAdapter)
    adapter.call_timeout, adapter.startup_timeout = call_timeout, startup_timeout
    return adapter.handshake_timeout


def test_an_answer_that_does_not_decode_is_a_protocol_error_never_a_value_error() -> None:
    """Issue 21.5: a 65-dimensional array is a valid §15.3 value that NumPy cannot hold; a
    ValueError out of decoding would pass for the implementation's refusal (§8)."""
    adapter, marker = faulty_adapter("65-dims")
    try:
        message, _ = fails(adapter)
    finally:
        adapter.stop()
    assert "wrote a frame whose body cannot be decoded: an array at byte" in message
    assert "has 65 dimensions; at most 64 can be decoded" in message


def served(path: Path) -> ProcessAdapter:
    return ProcessAdapter(str(path), served_command(str(path)), call_timeout=60.0, env=ENV)


def test_a_method_whose_lookup_raises_is_answered_as_an_error() -> None:
    """Issue 21.8: the lookup is the adapter's code; what it raises is what the call raised, as in
    the harness's process, and the server goes on."""
    adapter = served(FAULTY.parent / "raising_lookup.py")
    try:
        with pytest.raises(RemoteError, match="RuntimeError: scalar_mix cannot be looked up"):
            adapter.scalar_mix(S, GAMMA, LAYERS)
        with pytest.raises(ValueError, match="s: looked up, refused"):
            adapter.scalar_mix_vjp(S, GAMMA, LAYERS, LAYERS[0])
        assert adapter.bilm_loss is not None and adapter._connection is not None, "the same process goes on"
    finally:
        adapter.stop()


@pytest.mark.parametrize("mode", ["in-process", "child process"])
def test_a_big_endian_float64_result_is_a_float64_in_both_modes(mode: str) -> None:
    """Issue 21.9: §15.3 accepts either byte order of the right dtype and compares by value; the
    wire re-encodes little-endian, the harness's process converts: the same verdict."""
    path = str(FAULTY.parent / "big_endian.py")
    loaded = load_adapter(path, isolate=mode == "child process")
    try:
        case = Case(loaded, np.dtype("float64"))
        out = case.scalar_mix(S, GAMMA, LAYERS)
        assert out.dtype == np.dtype("float64") and out.dtype.isnative
        np.testing.assert_array_equal(out, reference.scalar_mix(S, GAMMA, LAYERS))
    finally:
        stop = getattr(loaded.adapter, "stop", None)
        if stop is not None:
            stop()


def test_the_servers_purity_check_compares_with_the_request_bytes_and_copies_nothing() -> None:
    """§1.4 in the protocol server: the snapshot of a decoded argument is a view of the request's
    bytes; a change is found bit for bit, and a change of bits that keeps every value (-0.0 for
    0.0) is no change, as with a comparison by value in the harness's process."""
    from elmo_conformance.adapters.purity import first_change, snapshot

    args = {"s": np.array([0.0, 1.0, np.nan]), "layers": [np.arange(6.0).reshape(2, 3)] * 2}
    sources: dict = {}
    decoded = codec.decode(codec.encode(args), sources=sources)
    before = snapshot(decoded, sources)
    assert before["s"] is sources[id(decoded["s"])] and not before["s"].flags.owndata, "no copy"
    assert first_change(before, decoded, "args") is None
    decoded["s"][0] = -0.0
    assert first_change(before, decoded, "args") is None, "-0.0 == 0.0, as the harness compares"
    decoded["layers"][1][1, 2] = 7.0
    assert first_change(before, decoded, "args") == "args['layers'][1]"
    decoded["layers"].append(np.zeros(1))
    assert first_change(before, decoded, "args") == "args['layers'] (length 2, now 3)"
