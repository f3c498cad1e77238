"""Capabilities, devices and unavailable adapters (spec §11), and tolerances by device (§10)."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest

from elmo_conformance.adapters.loading import AdapterLoadError, as_adapter, available_builtins, load_adapter
from elmo_conformance.spec import tolerances
from tests.suite_runs import run_suite_here

ROOT = Path(__file__).resolve().parent.parent


def run_suite(tmp_path: Path, impl: str, *args: str) -> tuple[int, dict | None, str]:
    return run_suite_here(tmp_path, impl, "-q", *args)


def adapter_file(tmp_path: Path, body: str, name: str = "mine.py") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return str(path)


def by_adapter(report: dict) -> list[dict]:
    return [t for t in report["tests"] if t["case"] is not None]


def test_an_unavailable_adapter_has_every_test_skipped_with_its_reason(tmp_path: Path) -> None:
    impl = adapter_file(
        tmp_path,
        """
        from elmo_conformance.adapters.numpy import NumpyAdapter

        class Elsewhere(NumpyAdapter):
            name = "elsewhere"
            device = "tpu"
            unavailable = "no TPU here"

        adapter = Elsewhere()
        """,
    )
    code, report, output = run_suite(tmp_path, impl)
    assert code == 0, output
    tests = by_adapter(report)
    assert len(tests) > 300  # every test, in both dtypes
    assert {t["case"] for t in tests} == {"elsewhere-float64", "elsewhere-float32"}
    assert {(t["outcome"], t["message"]) for t in tests} == {("skipped", "Skipped: no TPU here")}
    assert report["adapters"][0]["device"] == "tpu"


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="the cuda adapter needs torch")
def test_impl_cuda_without_a_cuda_device_skips_everything_and_exits_0(tmp_path: Path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device; scripts/gpu-check runs the cuda adapter there")
    code, report, output = run_suite(tmp_path, "cuda")
    assert code == 0, output
    tests = by_adapter(report)
    assert len(tests) > 300
    assert {(t["outcome"], t["message"]) for t in tests} == {("skipped", "Skipped: no CUDA device")}
    assert "cuda" not in available_builtins()


def test_a_float32_only_adapter_runs_in_float32_and_skips_float64_only_tests(tmp_path: Path) -> None:
    impl = adapter_file(
        tmp_path,
        """
        from elmo_conformance.adapters.numpy import NumpyAdapter

        class Single(NumpyAdapter):
            name = "single"
            capabilities = frozenset({"float32", "grad"})

        adapter = Single()
        """,
    )
    code, report, output = run_suite(tmp_path, impl, "-k", "test_hand_example or test_loss_grad_against_central")
    assert code == 0, output
    outcomes = {(t["test"], t["case"]): (t["outcome"], t["message"]) for t in by_adapter(report)}
    assert outcomes == {
        ("test_hand_example_scalar_mix", "single-float32"): ("passed", None),
        ("test_loss_grad_against_central_differences", "single-float64"): (
            "skipped",
            "Skipped: needs dtype float64, which single does not declare (§11)",
        ),
    }


def test_the_cuda_adapter_code_path_works_on_the_cpu_device(tmp_path: Path) -> None:
    """CudaAdapter and its mutants run adapters/torch under torch.device(...); on the CPU device
    that exercises the wrapping and the class order, everything but the GPU itself."""
    pytest.importorskip("torch")
    on_cpu = """
        from elmo_conformance.adapters.cuda import MUTANTS, CudaAdapter

        class OnCpu(CudaAdapter):
            name = "cuda-on-cpu"
            device = "cpu"

            def __init__(self):
                self.unavailable = None

        class S07OnCpu(MUTANTS["s07"], OnCpu):
            pass

        adapter = OnCpu()
        """
    impl = adapter_file(tmp_path, on_cpu)
    tests = "test_golden_torch or test_bilm_loss_targets or test_probe_separates or test_calls_are_deterministic"
    code, report, output = run_suite(tmp_path, impl, "-k", tests, "--dtype", "float64")
    assert code == 0, output
    assert {t["outcome"] for t in by_adapter(report)} == {"passed"} and len(by_adapter(report)) == 4
    # s07's targets come from torch.arange without a device: the default device must cover it.
    mutant = adapter_file(tmp_path, on_cpu.replace("adapter = OnCpu()", "adapter = S07OnCpu()"), "mutant.py")
    code, report, output = run_suite(tmp_path, mutant, "-k", "test_bilm_loss_targets", "--dtype", "float64")
    assert code == 1, output
    [loss] = by_adapter(report)
    assert loss["outcome"] == "failed" and "the forward direction scored on the current token" in loss["message"]


@pytest.mark.parametrize(
    "attributes, message",
    [
        ({"device": ""}, "has a 'device' that is not a name such as 'cpu'"),
        ({"device": 3}, "has a 'device' that is not a name such as 'cpu'"),
        ({"unavailable": ""}, "'unavailable' must be None or a reason"),
        ({"unavailable": True}, "'unavailable' must be None or a reason"),
    ],
)
def test_bad_device_declarations_are_refused(attributes: dict, message: str) -> None:
    from elmo_conformance.adapters.numpy import NumpyAdapter

    broken = type("Broken", (NumpyAdapter,), {"name": "broken", **attributes})()
    with pytest.raises(AdapterLoadError, match=message):
        as_adapter(broken, "broken.py")


def test_the_device_defaults_to_cpu_and_is_available() -> None:
    loaded = load_adapter("numpy")
    assert (loaded.device, loaded.unavailable) == ("cpu", None)


def test_a_missing_optional_package_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "jax" else real(name, *a))
    with pytest.raises(AdapterLoadError) as raised:
        load_adapter("jax")
    assert str(raised.value) == "--impl jax: needs the package 'jax', which is not installed (pip install jax)"
    assert "jax" not in available_builtins()


def test_tolerances_depend_on_dtype_and_device(monkeypatch: pytest.MonkeyPatch) -> None:
    entry = {"measured": {"max_abs_error": 0.0, "max_rel_error": 0.0, "comparisons": 1, "values": 1}}
    table = {
        "dtypes": {
            "float32": {"layers": {"rtol": 2e-6, "atol": 1e-6, **entry}, "mix": {"rtol": 5e-6, "atol": 5e-6, **entry}},
            "float64": {"layers": {"rtol": 5e-14, "atol": 5e-14, **entry}},
        },
        "devices": {"cuda": {"float32": {"layers": {"rtol": 1e-5, "atol": 2e-6, **entry}}}},
    }
    monkeypatch.setattr(tolerances, "table", lambda: table)
    assert tolerances.tolerance("float32", "cpu", "layers") == {"rtol": 2e-6, "atol": 1e-6}
    assert tolerances.tolerance("float32", "cuda", "layers") == {"rtol": 1e-5, "atol": 2e-6}
    assert tolerances.tolerance("float32", "cuda:1", "layers") == {"rtol": 1e-5, "atol": 2e-6}
    assert tolerances.tolerance("float32", "cuda", "mix") == {"rtol": 5e-6, "atol": 5e-6}  # no override
    assert tolerances.tolerance("float64", "cuda", "layers") == {"rtol": 5e-14, "atol": 5e-14}
    with pytest.raises(KeyError, match="no float64 tolerance for 'mix'"):
        tolerances.tolerance("float64", "cpu", "mix")


def test_the_tolerance_file_matches_its_schema_and_covers_every_quantity() -> None:
    """§10: every quantity of every dtype has a tolerance (the 3x rule against the recorded
    measurements is tests/test_tolerance_rule.py's)."""
    data = tolerances.table()  # validates against spec/schemas/tolerances.schema.json (itself checked by
    # tests/test_fixtures_integrity.py::test_every_schema_of_the_spec_is_a_valid_schema)
    assert set(data["dtypes"]["float64"]) == set(tolerances.QUANTITIES)
    assert set(data["dtypes"]["float32"]) == set(tolerances.QUANTITIES) - {"finite_difference"}
