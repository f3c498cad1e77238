"""The harness against hostile adapters (tests/broken/): calls that no alarm can stop, a hang
inside a property test, a leaked thread, reused output buffers, scalars and arrays of the wrong
kind, inputs that grow, two adapters of one name. Each run must finish, write its report and fail
exactly what is wrong with a clear message, both with the default (every Python adapter in a
child process behind the protocol server, spec §11) and, where the harness's own checks differ,
with --in-process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis.errors import InvalidArgument

from tests.suite_runs import run_suite as _run_suite
from tests.suite_runs import run_suite_here

ROOT = Path(__file__).resolve().parent.parent
BROKEN = ROOT / "tests" / "broken"
IN_PROCESS = "--in-process"


def run_suite(tmp_path: Path, impl: str, *args: str) -> tuple[int, dict | None, str]:
    """The suite on IMPL with ARGS in this process (pytest.main, as the mutation workers run it);
    (exit status, report, output). For what the harness says of an adapter that its own checks or
    its adapter's child process catch."""
    return run_suite_here(tmp_path, impl, "--dtype", "float64", *args)


def run_suite_apart(
    tmp_path: Path, impl: str, *args: str, timeout: float = 180, env: dict | None = None, cwd: Path | None = None
) -> tuple[int, dict | None, str]:
    """The suite through the entry point, in a pytest process of its own: for an adapter that could
    hang or outlive the harness's own process (--in-process), that reads the harness's environment
    (`env`, --in-process: a sandboxed process gets none of it), or that writes in its working folder
    (`cwd`, the sandbox's working copy). A run that does not finish within `timeout` seconds fails
    the test: the harness hung."""
    return _run_suite(tmp_path, impl, "--dtype", "float64", *args, timeout=timeout, env=env, cwd=cwd or ROOT)


def outcome(report: dict, test: str) -> dict:
    [found] = [t for t in report["tests"] if t["test"] == test]
    return found


# -- item 7: what the in-process alarm cannot stop -------------------------------------------------


@pytest.mark.parametrize(
    ("adapter", "call", "test"),
    [
        ("retries", "retries.bilm_layers", "test_r0_repeats_the_embedding"),  # catches the alarm, retries
        ("own_alarm", "own-alarm.scalar_mix", "test_hand_example_scalar_mix"),  # ignores SIGALRM
        ("native_deadlock", "native-deadlock.scalar_mix", "test_hand_example_scalar_mix"),  # never back in Python
    ],
)
def test_a_hang_no_alarm_can_stop_fails_one_test_and_the_run_goes_on(
    tmp_path: Path, adapter: str, call: str, test: str
) -> None:
    """In the harness's process each of these hangs the run forever; in its child process the call
    times out, the process is stopped, the test fails and the next test gets a fresh process."""
    selection = "test_r0_repeats or test_hand_example_scalar_mix or test_probe_separates"
    code, report, output = run_suite(tmp_path, str(BROKEN / f"{adapter}.py"), "--call-timeout", "1", "-k", selection)
    assert code == 1, output
    assert report is not None and report["complete"]
    failed = outcome(report, test)
    assert failed["outcome"] == "failed"
    assert f"{call} did not return within 1 s (--call-timeout)" in failed["message"]
    assert "The process was stopped" in failed["message"]
    assert outcome(report, "test_probe_separates_separable_data")["outcome"] == "passed", "the run goes on"


def shrinking_profile() -> list[str]:
    """A Hypothesis profile of the harness that shrinks failing examples, where there is one."""
    import elmo_conformance.conformance.plugin  # noqa: F401  (registers the harness's profiles)

    try:
        settings.get_profile("shrink")
    except InvalidArgument:
        return []
    return ["--hypothesis-profile", "shrink"]


@pytest.mark.parametrize("mode", ["", IN_PROCESS])
def test_a_hung_call_in_a_property_test_fails_at_once_and_is_not_retried(tmp_path: Path, mode: str) -> None:
    """Hypothesis retries a failing example while it shrinks; a call that timed out must not be
    retried (before: 13 retries of 1 s each for this test, 281 s for a test in the field)."""
    args = ["--call-timeout", "1", "-k", "test_forward_layers_never_see_the_future", *shrinking_profile()]
    args += [mode] if mode else []
    run = run_suite_apart if mode == IN_PROCESS else run_suite  # --in-process: the hang is in the harness
    code, report, output = run(tmp_path, str(BROKEN / "hangs_on_long_rows.py"), *args)
    assert code == 1, output
    failed = outcome(report, "test_forward_layers_never_see_the_future")
    assert failed["outcome"] == "failed" and failed["when"] == "call", "a test failure, not an internal error"
    assert "hangs-on-long-rows.bilm_layers did not return within 1 s (--call-timeout)" in failed["message"]
    assert "Traceback" not in failed["message"] and "CallAbandoned" not in failed["message"]
    assert failed["duration_s"] < 5, f"the hung call was retried: the test took {failed['duration_s']} s"


@pytest.mark.parametrize("mode", ["", IN_PROCESS])
def test_a_leaked_non_daemon_thread_does_not_keep_the_run_alive(tmp_path: Path, mode: str) -> None:
    """Python waits for every non-daemon thread before it exits. In a child process the thread
    dies with it; in the harness's process, `pytest` exits without waiting, and says so."""
    args = ["-k", "test_hand_example_scalar_mix", *([mode] if mode else [])]
    code, report, output = run_suite_apart(tmp_path, str(BROKEN / "leaks_thread.py"), *args, timeout=90)
    assert code == 0, output
    assert report["complete"] and report["summary"] == {"passed": 1}
    left = "the adapter left 1 non-daemon thread(s) running ('leaked-by-adapter')"
    assert (left in output) == (mode == IN_PROCESS), output


def test_an_adapter_runs_in_a_child_process_unless_in_process_is_given(tmp_path: Path) -> None:
    """The adapter writes the id of its process's parent in its working folder: the harness (whose
    parent is this test) by default (or, in the sandbox, the sandbox's first process), this test
    itself with --in-process."""
    impl = tmp_path / "where.py"
    impl.write_text(
        "import os\n"
        "from elmo_conformance.adapters.numpy import NumpyAdapter\n\n\n"
        "class Where(NumpyAdapter):\n"
        "    name = 'where'\n\n"
        "    def scalar_mix(self, s, gamma, layers):\n"
        "        with open('where.txt', 'a') as out:\n"
        "            out.write(f'{os.getppid()}\\n')\n"
        "        return super().scalar_mix(s, gamma, layers)\n\n\n"
        "adapter = Where()\n",
        encoding="utf-8",
    )
    parents = {}
    for mode in ("", IN_PROCESS):
        record = tmp_path / "where.txt"
        record.unlink(missing_ok=True)
        args = ["-k", "test_hand_example_scalar_mix", *([mode] if mode else [])]
        code, _, output = run_suite_apart(tmp_path, str(impl), *args, cwd=tmp_path)
        assert code == 0, output
        parents[mode] = {int(line) for line in record.read_text().split()}
    assert parents[IN_PROCESS] == {os.getpid()}, "--in-process: called in the harness, which this test started"
    assert len(parents[""]) == 1 and os.getpid() not in parents[""], "by default: called in a child of the harness"


# -- item 6: two adapters of one name --------------------------------------------------------------


def test_two_adapters_of_one_name_are_refused_naming_both(tmp_path: Path) -> None:
    other = tmp_path / "other.py"
    other.write_text("from elmo_conformance.adapters.numpy import NumpyAdapter\n\nadapter = NumpyAdapter()\n")
    code, report, output = run_suite(tmp_path, "numpy", "--impl", str(other))
    assert code == 4, output
    expected = f"--impl numpy and --impl {other}: both adapters are named 'numpy'"
    assert expected in output and expected in report["refused"] and report["tests"] == []


def test_an_empty_mutant_id_is_refused(tmp_path: Path) -> None:
    code, report, output = run_suite(tmp_path, "numpy", "--mutant", "")
    assert code == 4, output
    assert "--mutant '': expected a mutant id such as s01, got an empty one" in output
    assert report["tests"] == []


# -- item 4: reused output buffers and the determinism of every function (§1.4) ---------------------


@pytest.mark.parametrize(
    ("function", "what", "mode"),
    [
        ("bilm_layers", "R^0", ""),
        ("bilm_layers", "R^0", IN_PROCESS),
        ("bilm_loss_grad", "bilm_loss_grad['embedding']", IN_PROCESS),
        ("bilm_layers_vjp", "bilm_layers_vjp['embedding']", IN_PROCESS),
        ("scalar_mix_vjp", "scalar_mix_vjp g_s", IN_PROCESS),
    ],
)
def test_an_adapter_that_refills_one_output_buffer_fails_the_determinism_test(
    tmp_path: Path, function: str, what: str, mode: str
) -> None:
    """Its second call changes the first call's result in place: compared as returned, the two
    would be one array. The harness keeps a copy of every result, and checks every function."""
    args = ["-k", "test_calls_are_deterministic", *([mode] if mode else [])]
    code, report, output = run_suite_apart(
        tmp_path, str(BROKEN / "reuses_buffer.py"), *args, env={"ELMO_BROKEN_FUNCTION": function}
    )
    assert code == 1, output
    message = outcome(report, "test_calls_are_deterministic")["message"]
    assert f"{what} of a second identical call: 1 values are not bitwise equal" in message
    assert "§1.4" in message


# -- item 5: scalars that are not Python floats, masked arrays, inputs that grow -------------------


@pytest.mark.parametrize(
    ("adapter", "mode", "expected"),
    [
        ("int_loss", "", "bilm_loss(): expected a Python float, got int 2"),
        ("array_loss", "", "bilm_loss(): expected a Python float, got ndarray array(2.3"),
        ("array_loss", IN_PROCESS, "bilm_loss(): expected a Python float, got ndarray array(2.3"),
    ],
)
def test_a_loss_that_is_not_a_python_float_fails(tmp_path: Path, adapter: str, mode: str, expected: str) -> None:
    args = ["-k", "test_bilm_loss_targets", *([mode] if mode else [])]
    code, report, output = run_suite(tmp_path, str(BROKEN / f"{adapter}.py"), *args)
    assert code == 1, output
    message = outcome(report, "test_bilm_loss_targets")["message"]
    assert expected in message and "§1.2" in message


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("", "bilm_layers()[0]: a MaskedArray (an ndarray subclass) has no encoding"),
        (IN_PROCESS, "bilm_layers()[0] (R^0): expected a NumPy array, got MaskedArray (an ndarray subclass"),
    ],
)
def test_masked_layers_do_not_pass_the_padding_test(tmp_path: Path, mode: str, expected: str) -> None:
    """Masked padding hides NaN from comparisons and from the finiteness check: refused as such."""
    args = ["-k", "test_padding_never_leaks or test_r0_repeats", *([mode] if mode else [])]
    code, report, output = run_suite(tmp_path, str(BROKEN / "masked_layers.py"), *args)
    assert code == 1, output
    assert {t["outcome"] for t in report["tests"]} == {"failed"}
    assert expected in outcome(report, "test_padding_never_leaks")["message"]


@pytest.mark.parametrize("mode", ["", IN_PROCESS])
def test_an_entry_added_to_an_input_dict_or_list_fails(tmp_path: Path, mode: str) -> None:
    args = ["-k", "test_bilm_loss_targets or test_hand_example_scalar_mix", *([mode] if mode else [])]
    code, report, output = run_suite(tmp_path, str(BROKEN / "adds_entries.py"), *args)
    assert code == 1, output
    loss = outcome(report, "test_bilm_loss_targets")["message"]
    assert "adds-entries.bilm_loss modified its input args[0][0] ('cache.loss' added)" in loss and "§1.4" in loss
    mix = outcome(report, "test_hand_example_scalar_mix")["message"]
    assert "adds-entries.scalar_mix modified its input args[0][2] (length 2, now 3)" in mix
