"""The bad inputs of spec §8: one valid input of every kind, and every row of the validation table
(spec/validation.json) as changes of it, for every function the row names.

`valid_arguments` is the one table of valid inputs by argument name (spec/protocol.json's names):
the bad cases change it, and the mutation runner's equivalence pre-check calls every function on it
as it is. The bad cases are written relative to its sizes (`V + 1`, `D + 1` rows), so the table can
change without rewriting them; only V07's extra layer names its `L`.

The validation tests (test_validation.py) call each function on each bad input and expect a
ValueError naming the argument; the mutation runner's equivalence pre-check (§13.1) calls the
clean adapter and each mutant on the same bad inputs, so that a mutant that only stops rejecting
one of them is not taken for an equivalent one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .data import probe_separable, random_bilm
from .protocol import protocol

N_LAYERS = 3  # L of the valid biLM below

# The function groups §8 names, from spec/protocol.json.
BILM = protocol().group("biLM functions")
MIX = protocol().group("ScalarMix functions")
PROBE = protocol().group("probe functions")


@dataclass(frozen=True)
class Inputs:
    """One valid input of every kind, in float64; a bad case replaces one of them (with anything:
    a bad value may be of any type, hence `Any`)."""

    params: dict[str, Any]
    ids: Any
    lengths: Any
    g_layers: list[Any]
    s: Any
    gamma: Any
    layers: list[Any]
    g_out: Any
    features: Any
    labels: Any
    n_classes: Any
    W: Any
    b: Any
    settings: dict[str, Any]


def valid_arguments(dtype: np.dtype) -> dict[str, Any]:
    """One valid value for every argument name of spec/protocol.json, float arguments in `dtype`.

    Chosen so that every catalog defect of §13 changes an output (the equivalence pre-check,
    §13.1): three layers (§3.2 acts from layer 2), rows shorter than T (§3.3, §3.4), rows of length
    >= 2 (§4.1), γ ≠ 1 and s far from softmax(s) (§5), and probe features far from the origin with
    a constant column (§7.4)."""

    def cast(x: np.ndarray) -> np.ndarray:
        return x.astype(dtype)

    rng = np.random.default_rng(13)
    params, ids, lengths = random_bilm(13, 9, 4, N_LAYERS, [6, 4, 2, 7])
    probe = probe_separable()
    features, n_classes = cast(probe["features"]), int(probe["n_classes"])
    return {
        "params": {name: cast(value) for name, value in params.items()},
        "ids": ids,
        "lengths": lengths,
        "g_layers": [cast(rng.standard_normal((*ids.shape, 8))) for _ in range(N_LAYERS + 1)],
        "s": cast(np.array([0.2, 0.8, 1.8])),
        "gamma": cast(np.array([1.5])),
        "layers": [cast(rng.standard_normal((2, 3, 4))) for _ in range(3)],
        "g_out": cast(rng.standard_normal((2, 3, 4))),
        "features": features,
        "labels": probe["labels"],
        "n_classes": n_classes,
        "l2": float(probe["l2"]),
        "steps": int(probe["steps"]),
        "lr": float(probe["lr"]),
        "W": np.eye(features.shape[1], n_classes, dtype=dtype),  # only the first columns score: accuracy < 1
        "b": np.zeros(n_classes, dtype=dtype),
    }


SETTINGS = ("l2", "steps", "lr")


def valid_inputs() -> Inputs:
    """valid_arguments in float64, the probe's settings gathered in `settings`."""
    values = valid_arguments(np.dtype(np.float64))
    return Inputs(**{k: v for k, v in values.items() if k not in SETTINGS}, settings={k: values[k] for k in SETTINGS})


def arguments(function: str, x: Inputs) -> tuple[tuple, dict]:
    """The call of `function` on inputs x: each argument of spec/protocol.json by its name (the
    probe's settings from `x.settings`), passed as the harness passes them (§11)."""
    spec = protocol().functions[function]
    bound = {name: x.settings[name] if name in x.settings else getattr(x, name) for name in spec.argument_names}
    return spec.split_call(bound)


def with_param(x: Inputs, name: str, value: object) -> Inputs:
    return replace(x, params={**x.params, name: value})


def without_param(x: Inputs, name: str) -> Inputs:
    return replace(x, params={k: v for k, v in x.params.items() if k != name})


def with_id(x: Inputs, where: tuple[int, int], value: int) -> Inputs:
    ids = x.ids.copy()
    ids[where] = value
    return replace(x, ids=ids)


def vocab(x: Inputs) -> int:
    return x.params["embedding"].shape[0]


def padded_position(x: Inputs) -> tuple[int, int]:
    """The last position of the shortest row, a padded one."""
    assert x.lengths is not None
    return int(np.argmin(x.lengths)), x.ids.shape[1] - 1


def with_length(x: Inputs, row: int, value: int) -> Inputs:
    assert x.lengths is not None
    return replace(x, lengths=np.where(np.arange(len(x.lengths)) == row, value, x.lengths))


def with_first_label(x: Inputs, value: int) -> Inputs:
    return replace(x, labels=np.where(np.arange(len(x.labels)) == 0, value, x.labels))


def non_finite_features(x: Inputs, value: float, dt: np.dtype) -> Inputs:
    return replace(x, features=np.where(np.eye(*x.features.shape) > 0, value, x.features).astype(dt))


def with_layer(x: Inputs, k: int, value: object) -> Inputs:
    return replace(x, layers=[value if j == k else layer for j, layer in enumerate(x.layers)])


def with_s_value(x: Inputs, value: float, dt: np.dtype) -> Inputs:
    """s with its middle entry replaced by `value` (not the first: a check of s[0] alone misses it)."""
    return replace(x, s=np.where(np.arange(len(x.s)) == 1, value, x.s).astype(dt))


def other_float(dtype: np.dtype) -> type:
    return np.float32 if dtype == np.float64 else np.float64


@dataclass(frozen=True)
class Bad:
    row: str
    functions: tuple[str, ...]
    argument: str
    why: str
    change: Callable[[Inputs, np.dtype], Inputs]


BAD = [
    Bad("V01", BILM, "ids", "float ids", lambda x, dt: replace(x, ids=x.ids.astype(np.float64))),
    Bad("V01", BILM, "ids", "1-D ids", lambda x, dt: replace(x, ids=x.ids[0], lengths=None)),
    Bad("V01", BILM, "ids", "boolean ids", lambda x, dt: replace(x, ids=x.ids > 2)),
    Bad("V01", BILM, "ids", "ids as a nested list", lambda x, dt: replace(x, ids=x.ids.tolist())),
    Bad("V02", BILM, "ids", "ids with T = 0", lambda x, dt: replace(x, ids=x.ids[:, :0], lengths=None)),
    Bad("V02", BILM, "ids", "ids with B = 0", lambda x, dt: replace(x, ids=x.ids[:0], lengths=None)),
    Bad("V03", BILM, "ids", "an id of -1", lambda x, dt: with_id(x, (0, 0), -1)),
    Bad("V03", BILM, "ids", "an id of V at a padded position", lambda x, dt: with_id(x, padded_position(x), vocab(x))),
    Bad("V04", BILM, "lengths", "float lengths", lambda x, dt: replace(x, lengths=x.lengths.astype(np.float64))),
    Bad("V04", BILM, "lengths", "lengths of length B + 1", lambda x, dt: replace(x, lengths=np.append(x.lengths, 1))),
    Bad("V04", BILM, "lengths", "2-D lengths", lambda x, dt: replace(x, lengths=x.lengths[:, None])),
    Bad("V04", BILM, "lengths", "lengths as a list", lambda x, dt: replace(x, lengths=x.lengths.tolist())),
    Bad("V05", BILM, "lengths", "a length of 0", lambda x, dt: with_length(x, 1, 0)),
    Bad("V05", BILM, "lengths", "a length of T + 1", lambda x, dt: with_length(x, 0, x.ids.shape[1] + 1)),
    Bad("V06", BILM, "fwd.1.bias_hh", "params without fwd.1.bias_hh", lambda x, dt: without_param(x, "fwd.1.bias_hh")),
    Bad("V06", BILM, "out.bias", "params without out.bias", lambda x, dt: without_param(x, "out.bias")),
    Bad(
        "V07",
        BILM,
        f"fwd.{N_LAYERS}.weight_hh",
        f"an extra fwd.{N_LAYERS}.weight_hh",
        lambda x, dt: with_param(x, f"fwd.{N_LAYERS}.weight_hh", x.params["fwd.1.weight_hh"]),
    ),
    Bad("V07", BILM, "dropout", "an extra entry 'dropout'", lambda x, dt: with_param(x, "dropout", np.zeros(1, dt))),
    # A key is any string (§8, §15.3 carries it as UTF-8). The message names `params`, and may quote
    # such a key escaped or cut short, so `params` is what these three must name: a key of 60
    # non-ASCII characters, é (its quote must stay UTF-8 through the protocol, §15.3), a canonical
    # name followed by a NUL and more, and a key longer than a name buffer sized for canonical names.
    Bad(
        "V07",
        BILM,
        "params",
        "an extra entry with non-ASCII characters",
        lambda x, dt: with_param(x, "x" + "\u00e9" * 60, x.params["fwd.0.weight_ih"]),
    ),
    Bad(
        "V07",
        BILM,
        "params",
        "an extra entry with a NUL character",
        lambda x, dt: with_param(x, "fwd.0.weight_ih\x00x", x.params["fwd.0.weight_ih"]),
    ),
    Bad(
        "V07",
        BILM,
        "params",
        "an extra entry of 76 characters",
        lambda x, dt: with_param(x, "fwd.0." + "x" * 70, x.params["fwd.0.weight_ih"]),
    ),
    Bad(
        "V08",
        BILM,
        "fwd.0.weight_hh",
        "fwd.0.weight_hh of shape [4d, d + 1]",
        lambda x, dt: with_param(x, "fwd.0.weight_hh", np.zeros(np.add(x.params["fwd.0.weight_hh"].shape, (0, 1)), dt)),
    ),
    Bad(
        "V08",
        BILM,
        "out.bias",
        "out.bias of shape [V + 1]",
        lambda x, dt: with_param(x, "out.bias", np.zeros(vocab(x) + 1, dt)),
    ),
    Bad(
        "V08",
        BILM,
        "bwd.1.weight_ih",
        "bwd.1.weight_ih transposed",
        lambda x, dt: with_param(x, "bwd.1.weight_ih", x.params["bwd.1.weight_ih"].T.copy()),
    ),
    Bad(
        "V08",
        BILM,
        "embedding",
        "a 1-D embedding",
        lambda x, dt: with_param(x, "embedding", x.params["embedding"].ravel()),
    ),
    Bad(
        "V09",
        BILM,
        "bwd.1.bias_ih",
        "an integer bwd.1.bias_ih",
        lambda x, dt: with_param(x, "bwd.1.bias_ih", np.zeros(x.params["bwd.1.bias_ih"].shape, np.int64)),
    ),
    Bad(
        "V09",
        BILM,
        "out.weight",
        "out.weight in the other float dtype",
        lambda x, dt: with_param(x, "out.weight", x.params["out.weight"].astype(other_float(dt))),
    ),
    # The last LSTM entry of param_names order too: a check that walks all but the last one misses it.
    Bad(
        "V09",
        BILM,
        f"bwd.{N_LAYERS - 1}.bias_hh",
        f"bwd.{N_LAYERS - 1}.bias_hh in the other float dtype",
        lambda x, dt: with_param(
            x, f"bwd.{N_LAYERS - 1}.bias_hh", x.params[f"bwd.{N_LAYERS - 1}.bias_hh"].astype(other_float(dt))
        ),
    ),
    Bad(
        "V10",
        ("bilm_layers_vjp",),
        "g_layers",
        "L arrays instead of L + 1",
        lambda x, dt: replace(x, g_layers=x.g_layers[:-1]),
    ),
    Bad(
        "V10",
        ("bilm_layers_vjp",),
        "g_layers",
        "g_layers of width d",
        lambda x, dt: replace(x, g_layers=[g[..., :2] for g in x.g_layers]),
    ),
    Bad(
        "V11",
        ("bilm_loss", "bilm_loss_grad"),
        "lengths",
        "every length 1",
        lambda x, dt: replace(x, lengths=np.ones_like(x.lengths)),
    ),
    Bad(
        "V11",
        ("bilm_loss", "bilm_loss_grad"),
        "ids",
        "T = 1, no lengths",
        lambda x, dt: replace(x, ids=x.ids[:, :1], lengths=None),
    ),
    Bad("V12", MIX, "layers", "no layers", lambda x, dt: replace(x, layers=[], s=np.zeros(0, dt))),
    Bad(
        "V12",
        MIX,
        "layers",
        "layers of different shapes",
        lambda x, dt: replace(x, layers=[*x.layers[:2], x.layers[2][:, :2]]),
    ),
    # A layer larger than layer 0, and one with an extra axis: a check that compares the shapes by
    # order (`<`) or by size alone instead of for equality passes these.
    Bad(
        "V12",
        MIX,
        "layers",
        "a layer larger than layer 0",
        lambda x, dt: with_layer(x, 1, np.concatenate([x.layers[1], x.layers[1][:, :1]], axis=1)),
    ),
    Bad(
        "V12",
        MIX,
        "layers",
        "a layer with an extra axis",
        lambda x, dt: with_layer(x, 2, x.layers[2][..., None]),
    ),
    Bad(
        "V12",
        MIX,
        "layers",
        "integer layers",
        lambda x, dt: replace(x, layers=[np.ones(layer.shape, np.int64) for layer in x.layers]),
    ),
    Bad(
        "V12",
        MIX,
        "layers",
        "layers of two float dtypes",
        lambda x, dt: replace(x, layers=[*x.layers[:2], x.layers[2].astype(other_float(dt))]),
    ),
    Bad("V13", MIX, "s", "len(s) = number of layers + 1", lambda x, dt: replace(x, s=np.zeros(len(x.layers) + 1, dt))),
    Bad("V13", MIX, "s", "len(s) = number of layers - 1", lambda x, dt: replace(x, s=np.zeros(len(x.layers) - 1, dt))),
    Bad("V13", MIX, "s", "2-D s", lambda x, dt: replace(x, s=x.s[:, None])),
    Bad("V13", MIX, "s", "integer s", lambda x, dt: replace(x, s=np.zeros(len(x.s), np.int64))),
    # Non-finite s of the right length and dtype, so that only the finiteness check can refuse them.
    Bad("V13", MIX, "s", "s with a NaN", lambda x, dt: with_s_value(x, np.nan, dt)),
    Bad("V13", MIX, "s", "s with +infinity", lambda x, dt: with_s_value(x, np.inf, dt)),
    Bad("V13", MIX, "s", "s with -infinity", lambda x, dt: with_s_value(x, -np.inf, dt)),
    Bad("V14", MIX, "gamma", "gamma of shape [2]", lambda x, dt: replace(x, gamma=np.ones(2, dt))),
    Bad("V14", MIX, "gamma", "a NaN gamma", lambda x, dt: replace(x, gamma=np.full(1, np.nan, dt))),
    Bad("V14", MIX, "gamma", "gamma as a Python float", lambda x, dt: replace(x, gamma=1.0)),
    Bad("V15", ("scalar_mix_vjp",), "g_out", "g_out of another shape", lambda x, dt: replace(x, g_out=x.g_out[:, :2])),
    Bad("V16", PROBE, "features", "1-D features", lambda x, dt: replace(x, features=x.features[:, 0])),
    Bad(
        "V16",
        PROBE,
        "features",
        "features with a NaN",
        lambda x, dt: non_finite_features(x, np.nan, dt),
    ),
    Bad(
        "V16",
        PROBE,
        "features",
        "features with an infinity",
        lambda x, dt: non_finite_features(x, np.inf, dt),
    ),
    Bad("V16", PROBE, "features", "integer features", lambda x, dt: replace(x, features=x.features.astype(np.int64))),
    Bad(
        "V16",
        ("fit_linear_probe",),
        "features",
        "N = 0",
        lambda x, dt: replace(x, features=x.features[:0], labels=x.labels[:0]),
    ),
    Bad("V17", PROBE, "labels", "labels one shorter than N", lambda x, dt: replace(x, labels=x.labels[:-1])),
    Bad("V17", PROBE, "labels", "float labels", lambda x, dt: replace(x, labels=x.labels.astype(np.float64))),
    Bad("V17", PROBE, "labels", "2-D labels", lambda x, dt: replace(x, labels=x.labels[:, None])),
    Bad(
        "V18",
        PROBE,
        "labels",
        "a label of -1",
        lambda x, dt: with_first_label(x, -1),
    ),
    Bad(
        "V18",
        PROBE,
        "labels",
        "a label equal to the number of classes",
        lambda x, dt: with_first_label(x, int(x.n_classes)),
    ),
    # With one class the labels are necessarily wrong too (V18 or V20), so either name will do.
    Bad("V19", ("fit_linear_probe",), "n_classes|labels", "n_classes = 1", lambda x, dt: replace(x, n_classes=1)),
    Bad(
        "V19",
        ("fit_linear_probe",),
        "n_classes",
        "n_classes as a float",
        lambda x, dt: replace(x, n_classes=float(x.n_classes)),
    ),
    Bad("V19", ("fit_linear_probe",), "n_classes", "n_classes = True", lambda x, dt: replace(x, n_classes=True)),
    Bad(
        "V20",
        ("fit_linear_probe",),
        "labels",
        "a single class",
        lambda x, dt: replace(x, labels=np.ones_like(x.labels)),
    ),
    Bad(
        "V21",
        ("fit_linear_probe",),
        "steps",
        "steps = -1",
        lambda x, dt: replace(x, settings={**x.settings, "steps": -1}),
    ),
    Bad(
        "V21",
        ("fit_linear_probe",),
        "steps",
        "steps = 2.5",
        lambda x, dt: replace(x, settings={**x.settings, "steps": 2.5}),
    ),
    Bad("V22", ("fit_linear_probe",), "lr", "lr = 0", lambda x, dt: replace(x, settings={**x.settings, "lr": 0.0})),
    Bad("V22", ("fit_linear_probe",), "lr", "lr = -0.5", lambda x, dt: replace(x, settings={**x.settings, "lr": -0.5})),
    Bad(
        "V22",
        ("fit_linear_probe",),
        "lr",
        "lr = NaN",
        lambda x, dt: replace(x, settings={**x.settings, "lr": float("nan")}),
    ),
    # A string is not a number (§8), even one that float() reads.
    Bad(
        "V22",
        ("fit_linear_probe",),
        "lr",
        "lr as the string '0.5'",
        lambda x, dt: replace(x, settings={**x.settings, "lr": "0.5"}),
    ),
    Bad(
        "V23",
        ("fit_linear_probe",),
        "l2",
        "l2 = -0.001",
        lambda x, dt: replace(x, settings={**x.settings, "l2": -1e-3}),
    ),
    Bad(
        "V23",
        ("fit_linear_probe",),
        "l2",
        "l2 = infinity",
        lambda x, dt: replace(x, settings={**x.settings, "l2": float("inf")}),
    ),
    Bad(
        "V23",
        ("fit_linear_probe",),
        "l2",
        "l2 as the string '0.001'",
        lambda x, dt: replace(x, settings={**x.settings, "l2": "0.001"}),
    ),
    Bad(
        "V24",
        ("probe_accuracy",),
        "W",
        "W with D + 1 rows",
        lambda x, dt: replace(x, W=np.zeros(np.add(x.W.shape, (1, 0)), dt)),
    ),
    Bad("V24", ("probe_accuracy",), "W", "1-D W", lambda x, dt: replace(x, W=x.W[:, 0])),
    Bad("V25", ("probe_accuracy",), "b", "b of length C + 1", lambda x, dt: replace(x, b=np.zeros(len(x.b) + 1, dt))),
    Bad("V25", ("probe_accuracy",), "b", "2-D b", lambda x, dt: replace(x, b=x.b[None, :])),
]

CALLS = [(bad, function) for bad in BAD for function in bad.functions]


def cast_inputs(x: Inputs, cast: Callable[[Any], Any]) -> Inputs:
    """The inputs with every float argument passed through `cast` (to a case's dtype)."""
    names = ("params", "g_layers", "s", "gamma", "layers", "g_out", "features", "W", "b")
    return replace(x, **{name: cast(getattr(x, name)) for name in names})


def bad_call(bad: Bad, function: str, dtype: np.dtype) -> tuple[tuple, dict]:
    """The call of `function` on the bad input `bad`, every float argument in `dtype` (§1.2)."""

    def cast(value: object) -> object:
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            return value.astype(dtype)
        if isinstance(value, dict):
            return {key: cast(item) for key, item in value.items()}
        if isinstance(value, list):
            return [cast(item) for item in value]
        return value

    return arguments(function, bad.change(cast_inputs(valid_inputs(), cast), dtype))
