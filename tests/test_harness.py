"""The harness against deliberately broken adapters (tests/broken/): each is failed with a clear
message naming the spec section, and the run still finishes and writes its report."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.suite_runs import run_suite_here
from tests.test_components import WIRE_TESTS

ROOT = Path(__file__).resolve().parent.parent
BROKEN = ROOT / "tests" / "broken"


def run_suite(tmp_path: Path, impl: str, *args: str) -> tuple[int, dict | None, str]:
    """The suite on IMPL with ARGS in this process (the adapter served in a child process, as a
    user's run has it); (exit status, report, output)."""
    return run_suite_here(tmp_path, impl, *args)


def outcomes(report: dict, test: str) -> list[dict]:
    return [t for t in report["tests"] if t["test"] == test]


def test_an_adapter_that_raises_fails_cleanly_and_the_report_is_written(tmp_path: Path) -> None:
    code, report, output = run_suite(tmp_path, str(BROKEN / "raises.py"), "--dtype", "float64")
    assert code == 1, output
    assert report is not None and report["summary"]["failed"] > 0 and report["summary"]["passed"] > 0
    [padding] = outcomes(report, "test_padding_never_leaks")
    assert padding["outcome"] == "failed"
    assert "raises.bilm_layers raised RuntimeError: the layers are not implemented yet" in padding["message"]
    assert "§3.4 Layers and padding" in padding["message"]
    [mix] = outcomes(report, "test_hand_example_scalar_mix")
    assert mix["outcome"] == "passed", "tests that do not need the layers still run and pass"
    assert "nox -s conformance -- --impl" in output and "test_padding_never_leaks[raises-float64]" in output


def test_nan_in_a_layer_is_named(tmp_path: Path) -> None:
    code, report, _ = run_suite(
        tmp_path, str(BROKEN / "nan.py"), "--dtype", "float64", "-k", "test_r0_repeats or test_golden"
    )
    assert code == 1
    [golden] = outcomes(report, "test_golden_torch")
    assert golden["outcome"] == "failed"
    assert "bilm_layers()[1] (R^1): 1 non-finite values, first nan at [0, 0, 0]" in golden["message"]


def test_a_wrong_shape_is_named(tmp_path: Path) -> None:
    code, report, _ = run_suite(tmp_path, str(BROKEN / "wrong_shape.py"), "--dtype", "float32", "-k", "test_logits_use")
    assert code == 1
    [logits] = outcomes(report, "test_logits_use_the_shared_output_layer")
    assert "bilm_logits()[0] (fwd): expected shape [4, 5, 9], got [4, 5, 10]" in logits["message"]
    assert "§3.5 Logits" in logits["message"]


def test_a_hung_call_is_stopped(tmp_path: Path) -> None:
    code, report, _ = run_suite(
        tmp_path,
        str(BROKEN / "hangs.py"),
        "--dtype",
        "float64",
        "--call-timeout",
        "0.5",
        "-k",
        "test_hand_example or test_r0",
    )
    assert code == 1
    [mix] = outcomes(report, "test_hand_example_scalar_mix")
    assert "hangs.scalar_mix did not return within 0.5 s" in mix["message"]
    [r0] = outcomes(report, "test_r0_repeats_the_embedding")
    assert r0["outcome"] == "passed", "the run goes on after a hung call"


def test_an_adapter_that_modifies_its_input_fails(tmp_path: Path) -> None:
    code, report, _ = run_suite(
        tmp_path, str(BROKEN / "mutates.py"), "--dtype", "float64", "-k", "test_bilm_loss_targets"
    )
    assert code == 1
    [loss] = outcomes(report, "test_bilm_loss_targets")
    assert "mutates.bilm_loss modified its input args[0][1]" in loss["message"] and "§1.4" in loss["message"]


def test_a_missing_validation_is_caught(tmp_path: Path) -> None:
    code, report, _ = run_suite(
        tmp_path, str(BROKEN / "lax_lengths.py"), "--dtype", "float64", "-k", "V05 and bilm_layers"
    )
    assert code == 1
    failed = [t for t in report["tests"] if t["outcome"] == "failed"]
    # T + 1 sent as the first length and as the last (spec/validation.json, "at": "last"), and T + 2
    sent = sorted(t["nodeid"].rsplit("V05-bilm_layers-", 1)[-1] for t in failed)
    assert sent == ["a_length_of_T_+_1]", "a_length_of_T_+_1_as_the_last_element]", "a_length_of_T_+_2]"], failed
    for test in failed:
        assert (
            "accepted a length of T + " in test["message"]
            and "expected ValueError naming 'lengths'" in (test["message"])
        )
        assert "§8 Input validation" in test["message"]


def test_a_catalog_pitfall_is_named(tmp_path: Path) -> None:
    code, report, _ = run_suite(
        tmp_path, str(BROKEN / "skip_softmax.py"), "--dtype", "float64", "-k", "test_hand_example"
    )
    assert code == 1
    [mix] = outcomes(report, "test_hand_example_scalar_mix")
    assert "the weights equal the raw s" in mix["message"] and "§5.1 Weights" in mix["message"]


def test_a_forward_only_factory_is_checked_on_everything_else(tmp_path: Path) -> None:
    code, report, output = run_suite(tmp_path, str(BROKEN / "forward_only.py"))
    assert code == 0, output
    assert {a["name"] for a in report["adapters"]} == {"forward-only"}
    skipped = [t for t in report["tests"] if t["outcome"] == "skipped"]
    served = [t for t in skipped if "is a Python adapter: the harness's own protocol server speaks" in t["message"]]
    assert {t["test"] for t in served} == WIRE_TESTS, "§15.6's tests of a program skip a Python adapter"
    assert skipped and all("does not declare" in t["message"] for t in skipped if t not in served)
    assert any(t["test"] == "test_loss_grad_against_central_differences" for t in skipped)
    assert outcomes(report, "test_golden_torch")[0]["outcome"] == "passed"
    assert not any(t["case"] and "float32" in t["case"] for t in report["tests"]), "float32 is not declared"


def test_the_printed_command_reproduces_the_failure(tmp_path: Path) -> None:
    _, _, output = run_suite(tmp_path, str(BROKEN / "skip_softmax.py"), "--dtype", "float32", "-k", "test_hand_example")
    [command] = re.findall(r"^nox -s conformance -- (.+)$", output, flags=re.MULTILINE)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *shlex.split(command), "-p", "no:cacheprovider"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1 and "1 failed" in done.stdout


@pytest.mark.parametrize(
    "impl, message",
    [
        ("no/such/adapter.py", "--impl no/such/adapter.py: no such file"),
        ("nonsense", "expected a built-in name (numpy, torch"),
        ("reference:no_such_attr", "module 'reference' has no attribute 'no_such_attr'"),
        ("elmo_conformance.reference.params:LSTM_PARTS", "the adapter has no 'name' string"),
        ("tests/broken/incomplete.py", "adapter 'incomplete' lacks the protocol method(s) scalar_mix, bilm_logits"),
    ],
)
def test_a_bad_impl_argument_is_one_clear_line(tmp_path: Path, impl: str, message: str) -> None:
    code, report, output = run_suite(tmp_path, impl)
    assert code == 4 and report is not None and report["tests"] == [], output
    assert message in output and message in report["refused"]


def test_every_conformance_test_is_listed_in_the_readme() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "conformance",
            "--impl",
            "numpy",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    collected = set(re.findall(r"::(test_\w+)", done.stdout))
    listed = set(re.findall(r"`(test_\w+)`", (ROOT / "conformance" / "README.md").read_text()))
    assert collected == listed, (
        f"missing from README: {sorted(collected - listed)}; stale: {sorted(listed - collected)}"
    )
