"""The benchmark code (bench/) at tiny sizes: it runs, its baseline computes what the reference
computes, its FLOP counts match a count by hand, and a broken contender is reported, not fatal.
Speed itself is measured by `nox -s bench`, never here."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from bench import baseline, bilm, flops, mutants, probe, scaling, suite, wire  # noqa: E402
from bench.__main__ import main  # noqa: E402
from bench.timing import interleaved  # noqa: E402
from elmo_conformance import reference  # noqa: E402
from elmo_conformance.adapters.loading import as_adapter, load_adapter  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TINY = bilm.BiLMSize(batch=4, steps=7, d=5, n_layers=2, vocab=13)


def test_baseline_computes_the_reference_loss_and_gradients() -> None:
    params, ids, lengths = bilm.make_inputs(TINY, "float64", seed=3)
    lengths[1] = 1  # a row with no target, and rows shorter than T
    model = baseline.PackedBiLM(params)
    loss = baseline.loss_and_grad(model, *baseline.as_tensors(ids, lengths))
    assert math.isclose(loss, reference.bilm_loss(params, ids, lengths), rel_tol=1e-12)
    expected = reference.bilm_loss_grad(params, ids, lengths)
    got = model.grads()
    assert set(got) == set(expected)
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-9, atol=1e-12, err_msg=name)


def test_flop_counts_match_a_count_by_hand() -> None:
    # d = 1: each LSTM product is [4, 1] by [1]: 4 multiply-adds, 8 FLOPs. Forward: 2 products;
    # backward: the gradients of u, of h_{t-1}, of weight_ih and of weight_hh: 4 more.
    assert flops.lstm_flops(tokens=1, d=1) == 6 * 8
    assert flops.lstm_flops(tokens=3, d=2) == 3 * 6 * (2 * 4 * 2 * 2)
    # V = 1, d = 1: logits, then the gradients of h and of W_out: 3 products of 2 FLOPs.
    assert flops.output_layer_flops(scored=1, d=1, vocab=1) == 6
    # 2 layers x 2 directions of LSTMs over 5 tokens, and the output layer at 4 positions each way.
    total = flops.bilm_loss_grad_flops(real_tokens=5, scored=4, d=1, vocab=1, n_layers=2)
    assert total == 4 * 5 * 48 + 2 * 4 * 6
    # N = 2, D = 3, C = 1: Z V and Zᵀ G are 6 multiply-adds each, 24 FLOPs a step.
    assert flops.probe_flops(n=2, dim=3, n_classes=1, steps=10) == 10 * 24


def test_interleaved_alternates_and_drops_a_broken_contender() -> None:
    calls: list[str] = []

    def broken() -> None:
        calls.append("broken")
        raise RuntimeError("no result")

    contenders = {"a": lambda: calls.append("a"), "b": lambda: calls.append("b"), "broken": broken}
    timings, errors = interleaved(contenders, repeats=3, warmup=1)
    assert errors == {"broken": "RuntimeError: no result"}
    assert set(timings) == {"a", "b"} and all(len(t.times) == 3 for t in timings.values())
    # warm-up round (reversed: round -1 is odd), then rounds 0, 1, 2 alternating the order
    assert calls == ["broken", "b", "a", "a", "b", "b", "a", "a", "b"]
    with pytest.raises(ValueError, match="repeats"):
        interleaved(contenders, repeats=0)


def test_linear_fit_of_an_exact_line() -> None:
    fit = scaling.linear_fit([10, 20, 40], [2 + 3 * 10, 2 + 3 * 20, 2 + 3 * 40])
    assert fit["slope_s"] == pytest.approx(3.0) and fit["intercept_s"] == pytest.approx(2.0)
    assert fit["r2"] == pytest.approx(1.0)


def test_summarize_takes_the_slowest_five() -> None:
    tests = [{"nodeid": f"t{i}", "duration_s": float(i)} for i in range(1, 8)]
    out = suite.summarize({"duration_s": 40.0, "summary": {"passed": 7}, "tests": tests})
    assert [t["nodeid"] for t in out["slowest"]] == ["t7", "t6", "t5", "t4", "t3"]
    assert out["slowest_share"] == pytest.approx((7 + 6 + 5 + 4 + 3) / 40.0)


def test_mutation_report_summary() -> None:
    def mutant(ident: str, status: str, ms: float | None) -> dict:
        return {"id": ident, "status": status, **({} if ms is None else {"duration": ms, "testsCompleted": 3})}

    timed = [mutant(f"numpy:s0{i}", "Killed", 1000.0 * i) for i in range(1, 8)]
    report = {
        "files": {"adapters/numpy/mutants.py": {"mutants": [*timed, mutant("numpy:s09", "Ignored", None)]}},
        "performance": {"initialRun": 2500, "mutation": 9000},
        "config": {"workers": 2},
    }
    out = mutants.summarize(report)
    assert out["baseline_s"] == 2.5 and out["mutation_s"] == 9.0 and out["workers"] == 2
    assert out["statuses"] == {"Killed": 7, "Ignored": 1}
    assert [m["mutant"] for m in out["slowest"]] == ["numpy:s07", "numpy:s06", "numpy:s05", "numpy:s04", "numpy:s03"]
    assert out["slowest_share"] == pytest.approx((7 + 6 + 5 + 4 + 3) / 28)


class _LossRaises:
    """The reference, except that bilm_loss fails: the benchmark must say so and go on."""

    name = "loss-raises"
    capabilities = frozenset({"float64", "float32", "grad"})

    def __getattr__(self, method: str):
        return getattr(reference, method)

    def bilm_loss(self, *args):
        raise RuntimeError("deliberately broken")


def test_a_broken_adapter_is_reported_not_fatal() -> None:
    adapters = [load_adapter("numpy"), as_adapter(_LossRaises(), "tests")]
    out = bilm.compare(adapters, TINY, "float64", repeats=1, peak=None, rtol=1e-9)
    assert "numpy" in out["results"] and "loss-raises" not in out["results"]
    assert "deliberately broken" in out["skipped"]["loss-raises"]
    assert out["results"][bilm.BASELINE]["ratio_to_baseline"] == 1.0


def test_probe_comparison_scores_every_contender_on_the_same_data() -> None:
    size = probe.ProbeSize(n=90, dim=4, n_classes=3, steps=30, held_out=30)
    out = probe.compare([load_adapter("numpy")], size, "float32", repeats=1, peak=1e9)
    row = out["results"]["numpy"]
    assert 0.0 <= row["train_accuracy"] <= 1.0 and 0.0 <= row["held_out_accuracy"] <= 1.0
    assert row["flops_per_s"] > 0 and row["fraction_of_peak"] == pytest.approx(row["flops_per_s"] / 1e9)
    assert probe.SKLEARN in out["results"] or probe.SKLEARN in out["skipped"]


def test_the_command_line_writes_json_and_table(tmp_path, capsys) -> None:
    out, table = tmp_path / "bench.json", tmp_path / "bench.md"
    argv = ["--smoke", "--impl", "numpy", "--parts", "bilm,probe,scaling", "--out", str(out), "--table", str(table)]
    assert main(argv) == 0
    result = json.loads(out.read_text())
    assert [part["dtype"] for part in result["bilm"]] == ["float64", "float32"]
    for part in result["bilm"]:
        assert set(part["results"]) == {bilm.BASELINE, "numpy"}, part["skipped"]
        assert all(row["median_s"] > 0 and row["flops_per_s"] > 0 for row in part["results"].values())
    assert [part["axis"] for part in result["scaling"]] == ["T", "B"]
    assert "biLM loss+grad, float64" in table.read_text() and "biLM loss+grad" in capsys.readouterr().out


def test_the_wire_part_compares_the_frames_with_json(tmp_path) -> None:
    """§15.8: each encoding gives back the arrays it was given, and is timed and sized."""
    out = wire.compare(bilm.BiLMSize(batch=3, steps=6, d=4, n_layers=1, vocab=11), "float32", repeats=1)
    assert set(out["timings"]) == set(wire.ENCODINGS) and not out["errors"]
    assert out["bytes"]["frames (§15.3)"] < out["bytes"]["JSON + base64"] < out["bytes"]["JSON numbers"]
    assert min(out["ratio_to_fastest"].values()) == 1.0


def test_a_lossy_encoding_is_caught(monkeypatch) -> None:
    """The round-trip check of wire.compare fails on an encoding that loses precision."""

    def rounded(message: dict) -> bytes:
        return json.dumps(wire._to_json(message, lambda a: wire._numbers(a.astype(np.float16)))).encode()

    monkeypatch.setitem(wire.ENCODINGS, "lossy", (rounded, lambda data: wire._from_json(json.loads(data))))
    with pytest.raises(AssertionError, match="lossy does not give back the arrays"):
        wire.compare(bilm.BiLMSize(batch=2, steps=3, d=2, n_layers=1, vocab=5), "float64", repeats=1)


def test_the_suite_part_times_a_conformance_run(tmp_path) -> None:
    out = tmp_path / "bench.json"
    argv = ["--smoke", "--impl", "numpy", "--parts", "suite", "--workers", "1", "--out", str(out)]
    assert main([*argv, "--table", str(tmp_path / "bench.md")]) == 0
    run = json.loads(out.read_text())["suite"]["per_adapter"]["numpy"]
    assert run["exit_status"] == 0 and run["summary"] == {"passed": 2}
    assert 0 < run["pytest_s"] <= run["wall_s"] and 0 < run["slowest_share"] <= 1
    isolation = json.loads(out.read_text())["suite"]["isolation"]["numpy"]  # §11.1's cost
    assert set(isolation["median_s"]) == {"in_process", "child_process"}
    assert isolation["ratio_median"] == isolation["median_s"]["child_process"] / isolation["median_s"]["in_process"]
    assert "| numpy |" in (tmp_path / "bench.md").read_text()


@pytest.mark.parametrize(
    ("argv", "named"),
    [(["--parts", "nope"], "--parts"), (["--workers", "0"], "--workers"), (["--repeats", "0"], "--repeats")],
)
def test_bad_options_are_refused_by_name(argv: list[str], named: str, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2 and named in capsys.readouterr().err


def test_threads_limit_every_library_or_is_refused_by_name(tmp_path) -> None:
    # In a subprocess: the limit is process-wide and must not slow the rest of this test run.
    out = tmp_path / "bench.json"
    argv = ["--smoke", "--threads", "1", "--impl", "numpy", "--parts", "bilm", "--out", str(out)]
    command = [sys.executable, "-m", "bench", *argv, "--table", str(tmp_path / "bench.md")]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    if importlib.util.find_spec("threadpoolctl") is None:
        assert done.returncode == 2 and "--threads" in done.stderr and "threadpoolctl" in done.stderr
        return
    assert done.returncode == 0, done.stderr
    threads = json.loads(out.read_text())["environment"]["threads"]
    assert threads["torch"] == 1 and threads["environment"]["OPENBLAS_NUM_THREADS"] == "1"
    assert all(lib["threads"] == 1 for lib in threads["native"])
