"""A sharper suite: gaps that implementations nobody on the team wrote found, each closed by a test
that a broken adapter (tests/broken/) fails, and failure messages that point at their cause.

Each test here first shows the check failing on a broken input; the built-in adapters pass every
check (the conformance runs of `nox -s tests`)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from tests.suite_runs import run_suite_here

ROOT = Path(__file__).resolve().parent.parent
BROKEN = ROOT / "tests" / "broken"


def run_suite(tmp_path: Path, impl: str, *args: str) -> tuple[int, dict, str]:
    """The suite on IMPL with ARGS in this process, the adapter in the harness's process (fast);
    (exit status, JSON report, terminal output)."""
    code, report, output = run_suite_here(tmp_path, impl, "--in-process", *args)
    assert report is not None, output
    return code, report, output


_RUNS: dict[tuple[str, ...], tuple[int, dict, str]] = {}


def run_suite_once(tmp_path_factory: pytest.TempPathFactory, impl: str, *args: str) -> tuple[int, dict, str]:
    """run_suite, one run per command line in this process: tests that judge the same run share it."""
    key = (impl, *args)
    if key not in _RUNS:
        _RUNS[key] = run_suite(tmp_path_factory.mktemp("run"), impl, *args)
    return _RUNS[key]


def outcome(report: dict, test: str, case: str | None = None) -> dict:
    found = [t for t in report["tests"] if t["test"] == test and (case is None or t["case"] == case)]
    assert found, f"{test} did not run"
    return found[0]


# -------------------------------------------------------------- §3.4: zeros selected, not multiplied


def test_padding_multiplied_by_a_mask_fails_on_nan_and_on_the_sign_of_zero(tmp_path: Path) -> None:
    code, report, output = run_suite(
        tmp_path, str(BROKEN / "mask_multiply.py"), "-k", "padding_never_leaks or selected_not_multiplied"
    )
    assert code == 1, output
    for dtype in ("float64", "float32"):
        case = f"mask-multiply-{dtype}"
        leaks = outcome(report, "test_padding_never_leaks", case)  # passed while it compared with == only
        assert leaks["outcome"] == "failed" and "holds -0.0: padded positions are +0.0" in leaks["message"]
        failed = outcome(report, "test_padding_is_selected_not_multiplied", case)
        assert failed["outcome"] == "failed"
        assert failed["message"].startswith("§3.4 Layers and padding\nR^1 at padded position [1, 3] is [nan,")
        assert "must be selected (where), not multiplied by a mask, since NaN · 0 is NaN" in failed["message"]


# -------------------------------------------------------------- §9.3: a band, not a bar


def test_a_biLM_whose_forward_states_read_the_backward_ones_is_below_the_learning_band(tmp_path: Path) -> None:
    code, report, output = run_suite(tmp_path, str(BROKEN / "future_leaking.py"), "-k", "disambiguate")
    assert code == 1, output
    for dtype in ("float64", "float32"):
        message = outcome(report, "test_contextual_layers_disambiguate", f"future-leaking-{dtype}")["message"]
        assert message.startswith("§9.3 Expected outcome; §3.2 The forward stack; §3.3 The backward stack\n")
        assert "after training the loss is 0.34" in message and "below the band [0.5653, 0.6890]" in message


def test_the_learning_band_comes_from_the_reference_runs() -> None:
    """§12.4: bar = largest + margin, floor = smallest - margin, both from the same runs."""
    from elmo_conformance.fixtures.thresholds import threshold_rows

    runs = [{"final_loss": x, "acc_r0": 0.5, "acc_r1": 1.0, "majority": 0.5} for x in (0.61, 0.62, 0.63)]
    rows = {row[0]: row for row in threshold_rows(runs, 0.5, (0, 1, 2))}
    assert rows["final_loss"][1:3] == ["<=", pytest.approx(0.68)]  # 0.63 + max(3 · 0.01, 0.05)
    assert rows["final_loss_floor"][1:3] == [">=", pytest.approx(0.56)]  # 0.61 - the same margin
    assert rows["final_loss_floor"][6] == rows["final_loss"][6] == 0.05
    assert rows["final_loss_floor"][7] == rows["final_loss"][7] == "reference:seeds=0,1,2"


# -------------------------------------------------------------- §1.3: the argument as a whole word


def test_a_message_that_names_the_argument_only_as_a_substring_fails(tmp_path: Path) -> None:
    code, report, output = run_suite(
        tmp_path, str(BROKEN / "leaky_errors.py"), "--dtype", "float64", "-k", "V13 and scalar_mix and not vjp"
    )
    assert code == 1, output
    failed = [t for t in report["tests"] if t["outcome"] == "failed"]
    assert {t["nodeid"].split("V13-scalar_mix-")[1] for t in failed} == {
        "s_of_shape_[L_+_2]]",
        "s_of_shape_[L]]",
        "2-D_s]",
        "0-d_s]",
    }
    assert (
        "leaky-errors.scalar_mix given s of shape [L + 2] (V13) raised ValueError, but its message does "
        "not name 's' (as a whole word): cannot reshape array of size 4 into shape (3,)"
    ) in output


@pytest.mark.parametrize(
    "message, argument, names",
    [
        ("cannot reshape array of size 3 into shape (4,)", "s", False),
        ("bad vector", "b", False),
        ("bwd.0.weight_ih: expected shape [8, 2]", "fwd.0.weight_ih", False),
        ("fwd.0.weight_ih_l0 is missing", "fwd.0.weight_ih", False),
        ("ids.shape is wrong", "ids", False),
        ("s: expected a 1-D float array", "s", True),
        ("len(s) = 4 but there are 3 layers", "s", True),
        ("params: missing canonical entry 'out.bias'", "out.bias", True),
        ("expected every id in [0, 5) for ids.", "ids", True),
    ],
)
def test_an_argument_is_named_as_a_whole_identifier(message: str, argument: str, names: bool) -> None:
    from elmo_conformance.conformance.case import names_argument

    assert names_argument(message, argument) is names


# -------------------------------------------------------------- uncovered corners


def test_a_bug_only_a_single_layer_biLM_reaches_fails_a_fixed_test(tmp_path: Path) -> None:
    code, report, output = run_suite(tmp_path, str(BROKEN / "squeezed_layers.py"), "-k", "test_bilm.py")
    assert code == 1, output
    failed = {t["test"] for t in report["tests"] if t["outcome"] == "failed"}
    assert "test_a_single_layer_bilm" in failed
    assert failed <= {"test_a_single_layer_bilm", "test_layers_and_logits_match_reference"}, "only L = 1 reaches it"


def test_the_reference_mixes_0d_layers_into_a_0d_array() -> None:
    """§5.2: the result has the shape of one layer; NumPy would return a scalar for 0-d layers."""
    from elmo_conformance import reference

    s, gamma = np.array([0.0, np.log(3.0)]), np.array([2.0])
    out = reference.scalar_mix(s, gamma, [np.array(1.0), np.array(5.0)])
    assert type(out) is np.ndarray and out.shape == () and out == pytest.approx(8.0)
    _, _, g_layers = reference.scalar_mix_vjp(s, gamma, [np.array(1.0), np.array(5.0)], np.array(1.0))
    assert all(type(g) is np.ndarray and g.shape == () for g in g_layers)


def test_a_constant_column_of_0_1s_is_constant(tmp_path: Path) -> None:
    code, report, output = run_suite(
        tmp_path, str(BROKEN / "std_constant.py"), "--dtype", "float64", "-k", "constant_column"
    )
    assert code == 1, output
    message = outcome(report, "test_probe_gives_a_constant_column_no_weight")["message"]
    assert message.startswith("§7.1 Standardization\nW row 0, for a column of three 0.1s, is [")


def test_the_differential_loss_draws_logits_that_overflow_an_unshifted_exp(tmp_path: Path) -> None:
    code, report, output = run_suite(
        tmp_path, str(BROKEN / "unshifted_logsumexp.py"), "--dtype", "float64", "-k", "loss_matches_reference"
    )
    assert code == 1, output
    message = outcome(report, "test_loss_matches_reference")["message"]
    assert "bilm_loss(): expected a finite number, got inf" in message
    assert "logit scale = 5000.0" in message


def test_the_differential_probe_draws_tied_logits(tmp_path: Path) -> None:
    code, report, output = run_suite(
        tmp_path, str(BROKEN / "ties_to_highest.py"), "--dtype", "float64", "-k", "probe_matches_reference"
    )
    assert code == 1, output
    message = outcome(report, "test_probe_matches_reference")["message"]
    assert message.startswith("§7.5 Accuracy\nprobe_accuracy = ")
    assert "classes 0 and the last tie on every row, so the lowest index, 0, is predicted" in message
    assert "tied logits = True" in message


def test_the_strategies_draw_the_values_that_break_implementations() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from elmo_conformance.conformance import plugin  # noqa: F401  (the "conformance" profile)
    from elmo_conformance.conformance.strategies import mix_inputs, probe_data

    seen: dict[str, set] = {"ndim": set(), "big s": set(), "0.1": set(), "tiny": set(), "tied": set()}

    @settings(settings.get_profile("conformance"), max_examples=60)
    @given(st.data())
    def draw(data: st.DataObject) -> None:
        s, _, layers, _ = mix_inputs(data)
        seen["ndim"].add(layers[0].ndim)
        seen["big s"].add(bool(np.abs(s).max() > 200))
        p = probe_data(data)
        seen["0.1"].add(bool(np.all(p.features[:, 0] == 0.1)))
        seen["tiny"].add(bool(np.abs(p.features[:, -1]).max() < 1e-6))
        seen["tied"].add(bool(np.array_equal(p.W[:, 0], p.W[:, -1])))

    draw()
    assert 0 in seen["ndim"] and 1 in seen["ndim"]
    assert all(True in seen[key] for key in ("big s", "0.1", "tiny", "tied")), seen


# -------------------------------------------------------------- §6: failures that point at their cause


@pytest.mark.parametrize(
    "mutant, heading, says",
    [
        ("s03", "§3.2 The forward stack\nf^2, the forward half of R^2", "the backward half agrees"),
        ("s05", "§3.3 The backward stack\nb^1, the backward half of R^1", "(reading from the row's end at"),
    ],
)
def test_a_differential_biLM_failure_names_the_stack_and_layer(
    tmp_path_factory: pytest.TempPathFactory, mutant: str, heading: str, says: str
) -> None:
    code, report, output = run_suite_once(
        tmp_path_factory, "numpy", "--mutant", mutant, "--dtype", "float64", "-k", "layers_and_logits_match_reference"
    )
    assert code == 1, output
    message = outcome(report, "test_layers_and_logits_match_reference")["message"]
    assert message.startswith(heading) and says in message and "first differs at row" in message


@pytest.mark.parametrize(
    "impl, heading, says",
    [
        (str(BROKEN / "sample_std.py"), "§7.1 Standardization", "the sample standard deviation (divisor N - 1)"),
        ("numpy --mutant s09", "§7.4 Folding back", "(V, a) were not folded back"),
        ("numpy --mutant s10", "§7.3 Gradient descent", "W is -1 times §7's in every column"),
    ],
)
def test_a_probe_weight_failure_names_what_its_short_runs_show(
    tmp_path: Path, impl: str, heading: str, says: str
) -> None:
    impl, *mutant = impl.split()
    code, report, output = run_suite(tmp_path, impl, *mutant, "--dtype", "float64", "-k", "golden_weights")
    assert code == 1, output
    message = outcome(report, "test_probe_matches_golden_weights")["message"]
    assert message.startswith(f"{heading}; §12.3 The probe\nW against the oracle (after one step"), message
    assert says in message


def test_a_layer_normalized_scalar_mix_is_named(tmp_path: Path) -> None:
    code, report, output = run_suite(
        tmp_path, str(BROKEN / "layer_norm_mix.py"), "--dtype", "float64", "-k", "hand_example or golden"
    )
    assert code == 1, output
    for test in ("test_hand_example_scalar_mix", "test_golden_torch"):
        message = outcome(report, test)["message"]
        assert message.startswith("§5.2 The mix"), message
        assert "the layers look layer-normalized before mixing (as AllenNLP's ScalarMix" in message


def test_a_property_tests_failing_example_is_in_its_message(tmp_path_factory: pytest.TempPathFactory) -> None:
    code, report, output = run_suite_once(
        tmp_path_factory, "numpy", "--mutant", "s03", "--dtype", "float64", "-k", "layers_and_logits_match_reference"
    )
    assert code == 1, output
    message = outcome(report, "test_layers_and_logits_match_reference")["message"]
    example = message.split("- failing example -")[1]
    for draw in ("\nV = ", "\nd = ", "\nL = 3", "\nT = ", "\nB = ", "\nseed = ", "@reproduce_failure("):
        assert draw in example, example
    assert "- failing example -" in output and "\nL = 3\n" in output, "in the terminal at normal verbosity too"


def test_failure_text_has_no_exception_chain_and_no_warnings(tmp_path: Path) -> None:
    code, report, output = run_suite(
        tmp_path, str(BROKEN / "chained.py"), "--dtype", "float64", "-k", "test_r0 or layers_and_logits"
    )
    assert code == 1, output
    message = outcome(report, "test_r0_repeats_the_embedding")["message"]
    assert "chained.bilm_layers raised RuntimeError: the layers could not be built" in message
    assert "During handling" not in message and "During handling" not in output
    assert "warnings summary" not in output, output


def test_a_difference_from_an_expected_0_has_no_relative_error_and_no_warning() -> None:
    from elmo_conformance.conformance.checks import assert_close

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(pytest.fail.Exception) as failure:
            assert_close(np.array([1.0, 0.0]), np.zeros(2), {"rtol": 1e-6, "atol": 1e-6}, "x", ("5.2",))
        assert "no rel error: every expected value is 0" in str(failure.value)
        assert "e+307" not in str(failure.value)
        with pytest.raises(pytest.fail.Exception) as failure:
            assert_close(np.array([np.inf, np.nan]), np.array([-1e308, 1.0]), {"rtol": 0, "atol": 0}, "x", ("5.2",))
        assert "2 of 2 values differ" in str(failure.value)


# -------------------------------------------------------------- §10 of the issue: a failing run is not slow


def test_the_default_profile_does_not_shrink_and_the_shrink_profile_does() -> None:
    from hypothesis import Phase, settings

    from elmo_conformance.conformance import plugin  # noqa: F401  (registers the profiles)

    assert Phase.shrink not in settings.get_profile("conformance").phases
    assert Phase.explain not in settings.get_profile("conformance").phases
    assert Phase.shrink in settings.get_profile("shrink").phases
    assert settings.get_profile("shrink").derandomize and settings.get_profile("shrink").max_examples == 12


# -------------------------------------------------------------- issue 32: the headings and numerics


def test_a_gate_order_bug_is_headed_by_the_cell(tmp_path: Path) -> None:
    code, report, output = run_suite_here(
        tmp_path, str(BROKEN / "gate_order.py"), "--dtype", "float64", "-k", "test_golden_torch"
    )
    assert code == 1, output
    message = outcome(report, "test_golden_torch", "gate-order-float64")["message"]
    assert message.startswith("§2.2 The LSTM cell; §3.2 The forward stack; §3.3 The backward stack"), message
    assert "f^1 at position 0 is a single step of the LSTM cell from the zero state" in message


def test_a_softmax_shifted_by_s0_is_headed_by_numerical_stability(tmp_path: Path) -> None:
    code, report, output = run_suite_here(
        tmp_path, str(BROKEN / "s0_shift.py"), "--dtype", "float64", "-k", "stable_for_large_s"
    )
    assert code == 1, output
    message = outcome(report, "test_scalar_mix_is_stable_for_large_s", "s0-shift-float64")["message"]
    assert message.startswith("§5.4 Numerical stability; §5.1 Weights\nmix at s = (-1000, 0, 1000) is [nan,"), message
    assert "softmax(s) must subtract max(s) before exp" in message


def test_probe_shortcuts_fail_the_large_learning_rate_and_the_constant_column(tmp_path: Path) -> None:
    code, report, output = run_suite_here(
        tmp_path, str(BROKEN / "probe_shortcuts.py"), "-k", "softmax_is_shifted or constant_column"
    )
    assert code == 1, output
    for dtype in ("float64", "float32"):
        case = f"probe-shortcuts-{dtype}"
        message = outcome(report, "test_probe_softmax_is_shifted_row_by_row", case)["message"]
        assert message.startswith("§7.2 Objective\nfit_linear_probe with lr = 1e4, l2 = 0 on separable data"), message
        message = outcome(report, "test_probe_gives_a_constant_column_no_weight", case)["message"]
        assert message.startswith("§7.1 Standardization\nW for the columns (1, 1, 3, 2)"), message
        assert "§7.1 decides by the equality of every row" in message
