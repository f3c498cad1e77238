"""§8: input validation. Every check raises ValueError naming the argument (§1.3)."""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Mapping, Sequence
from typing import TypeGuard

import numpy as np

from elmo_conformance.reference.params import param_names, param_shapes

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_LAYER_KEY = re.compile(r"fwd\.\d+\.weight_ih")


def _describe(x: object) -> str:
    if isinstance(x, np.ndarray):
        return f"an array of dtype {x.dtype} and shape {list(x.shape)}"
    return f"{type(x).__name__}"


def is_int_array(x: object) -> TypeGuard[np.ndarray]:
    return isinstance(x, np.ndarray) and x.dtype.kind in "iu"


def is_float_array(x: object) -> TypeGuard[np.ndarray]:
    return isinstance(x, np.ndarray) and x.dtype in FLOAT_DTYPES


def check_params(params: object) -> tuple[int, int, int, np.dtype]:
    """V06-V09: the exact canonical names of §2.1, their shapes and one float dtype.

    Returns (V, d, L, dtype).
    """
    if not isinstance(params, Mapping):
        raise ValueError(f"params: expected a dict of canonical names to arrays, got {_describe(params)}")
    n_layers = sum(1 for key in params if isinstance(key, str) and _LAYER_KEY.fullmatch(key))
    expected = param_names(max(n_layers, 1))
    missing = [name for name in expected if name not in params]
    if missing:
        raise ValueError(f"params: missing canonical entry {missing[0]!r} (§2.1)")
    extra = sorted(str(key) for key in params if key not in expected)
    if extra:
        raise ValueError(f"params: {extra[0]!r} is not a canonical name for L = {n_layers} (§2.1)")
    embedding = params["embedding"]
    if not is_float_array(embedding):
        raise ValueError(f"embedding: expected a float32 or float64 array, got {_describe(embedding)}")
    if embedding.ndim != 2 or 0 in embedding.shape:
        raise ValueError(f"embedding: expected shape [V, d] with V, d >= 1, got {list(embedding.shape)}")
    vocab, d = embedding.shape
    for name, shape in param_shapes(vocab, d, n_layers).items():
        value = params[name]
        if not isinstance(value, np.ndarray) or value.dtype != embedding.dtype:
            raise ValueError(
                f"{name}: expected an array of dtype {embedding.dtype} like embedding, got {_describe(value)}"
            )
        if value.shape != shape:
            raise ValueError(f"{name}: expected shape {list(shape)} (V={vocab}, d={d}), got {list(value.shape)}")
    return vocab, d, n_layers, embedding.dtype


def check_ids(ids: object, vocab: int) -> np.ndarray:
    """V01-V03."""
    if not is_int_array(ids) or ids.ndim != 2:
        raise ValueError(f"ids: expected a 2-D integer array [B, T], got {_describe(ids)}")
    if 0 in ids.shape:
        raise ValueError(f"ids: expected B >= 1 and T >= 1, got shape {list(ids.shape)}")
    if ids.min() < 0 or ids.max() >= vocab:
        raise ValueError(f"ids: expected values in [0, {vocab}), got values in [{ids.min()}, {ids.max()}]")
    return ids


def check_lengths(lengths: object, batch: int, steps: int) -> np.ndarray:
    """V04-V05; absent lengths mean every row is full."""
    if lengths is None:
        return np.full(batch, steps, dtype=np.int64)
    if not is_int_array(lengths) or lengths.shape != (batch,):
        raise ValueError(f"lengths: expected None or a 1-D integer array of length B={batch}, got {_describe(lengths)}")
    if lengths.min() < 1 or lengths.max() > steps:
        raise ValueError(
            f"lengths: expected values in [1, T={steps}], got values in [{lengths.min()}, {lengths.max()}]"
        )
    return lengths.astype(np.int64)


def check_bilm_inputs(params: object, ids: object, lengths: object) -> tuple[int, int, int, np.ndarray]:
    """V01-V09 for every biLM function. Returns (V, d, L, lengths as an array)."""
    vocab, d, n_layers, _ = check_params(params)
    batch, steps = check_ids(ids, vocab).shape
    return vocab, d, n_layers, check_lengths(lengths, batch, steps)


def check_has_targets(lengths_given: object, lengths: np.ndarray) -> None:
    """V11, §4.3: the loss needs at least one row with two real tokens."""
    if int(lengths.max()) < 2:
        arg = "ids" if lengths_given is None else "lengths"
        raise ValueError(f"{arg}: no targets, every row has length 1 so the loss is undefined (§4.3)")


def check_g_layers(g_layers: object, n_layers: int, shape: tuple[int, ...]) -> None:
    """V10."""
    ok = (
        isinstance(g_layers, Sequence)
        and len(g_layers) == n_layers + 1
        and all(is_float_array(g) and g.shape == shape for g in g_layers)
    )
    if not ok:
        raise ValueError(f"g_layers: expected a list of L+1={n_layers + 1} float arrays of shape {list(shape)}")


def check_mix(s: object, gamma: object, layers: object) -> np.ndarray:
    """V12-V14. Returns the layers stacked into one array [L+1, ...]."""
    if isinstance(layers, np.ndarray) or not isinstance(layers, Sequence) or len(layers) == 0:
        raise ValueError(f"layers: expected a non-empty list of float arrays, got {_describe(layers)}")
    first = layers[0]
    for k, layer in enumerate(layers):
        if not is_float_array(layer):
            raise ValueError(f"layers: layer {k} is not a float32 or float64 array, got {_describe(layer)}")
        if layer.shape != first.shape or layer.dtype != first.dtype:
            raise ValueError(f"layers: layer {k} is {_describe(layer)}, layer 0 is {_describe(first)}; all must match")
    if not is_float_array(s) or s.ndim != 1:
        raise ValueError(f"s: expected a 1-D float array, got {_describe(s)}")
    if len(s) != len(layers):
        raise ValueError(f"s: len(s) = {len(s)} but there are {len(layers)} layers (§5.2)")
    if not np.all(np.isfinite(s)):
        raise ValueError("s: expected finite values")
    if not is_float_array(gamma) or gamma.shape != (1,) or not np.isfinite(gamma[0]):
        raise ValueError(f"gamma: expected a finite float array of shape [1], got {_describe(gamma)}")
    return np.stack(layers)


def check_g_out(g_out: object, shape: tuple[int, ...]) -> None:
    """V15."""
    if not is_float_array(g_out) or g_out.shape != shape:
        raise ValueError(f"g_out: expected a float array of a layer's shape {list(shape)}, got {_describe(g_out)}")


def check_features(features: object) -> np.ndarray:
    """V16."""
    if not is_float_array(features) or features.ndim != 2 or 0 in features.shape:
        raise ValueError(f"features: expected a 2-D float array [N, D] with N, D >= 1, got {_describe(features)}")
    if not np.all(np.isfinite(features)):
        raise ValueError("features: expected finite values, found NaN or infinity")
    return features


def check_labels(labels: object, n_rows: int, n_classes: int) -> np.ndarray:
    """V17-V18."""
    if not is_int_array(labels) or labels.shape != (n_rows,):
        raise ValueError(f"labels: expected a 1-D integer array of length N={n_rows}, got {_describe(labels)}")
    if labels.min() < 0 or labels.max() >= n_classes:
        raise ValueError(f"labels: expected values in [0, {n_classes}), got values in [{labels.min()}, {labels.max()}]")
    return labels


def _is_int(x: object) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool | np.bool_)


def _is_real(x: object) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool | np.bool_) and math.isfinite(float(x))


def check_fit_settings(n_classes: object, steps: object, lr: object, l2: object) -> None:
    """V19, V21-V23."""
    if not _is_int(n_classes) or n_classes < 2:  # type: ignore[operator]
        raise ValueError(f"n_classes: expected an integer >= 2, got {n_classes!r}")
    if not _is_int(steps) or steps < 0:  # type: ignore[operator]
        raise ValueError(f"steps: expected an integer >= 0, got {steps!r}")
    if not _is_real(lr) or lr <= 0:  # type: ignore[operator]
        raise ValueError(f"lr: expected a finite number > 0, got {lr!r}")
    if not _is_real(l2) or l2 < 0:  # type: ignore[operator]
        raise ValueError(f"l2: expected a finite number >= 0, got {l2!r}")


def check_two_classes(labels: np.ndarray) -> None:
    """V20: a probe needs two classes to separate."""
    if np.all(labels == labels[0]):
        raise ValueError(f"labels: expected at least two distinct classes, every label is {labels[0]}")


def check_fit_inputs(
    features: object, labels: object, n_classes: object, steps: object, lr: object, l2: object
) -> tuple[np.ndarray, np.ndarray]:
    """V16-V23 for fit_linear_probe, in the table's order. Returns (features, labels)."""
    X = check_features(features)
    check_fit_settings(n_classes, steps, lr, l2)
    y = check_labels(labels, len(X), n_classes)  # type: ignore[arg-type]
    check_two_classes(y)
    return X, y


def check_probe_weights(W: object, b: object, n_features: int) -> int:
    """V24-V25. Returns C."""
    if not is_float_array(W) or W.ndim != 2 or W.shape[0] != n_features or W.shape[1] == 0:
        raise ValueError(f"W: expected a 2-D float array [D={n_features}, C], got {_describe(W)}")
    n_classes = W.shape[1]
    if not is_float_array(b) or b.shape != (n_classes,):
        raise ValueError(f"b: expected a 1-D float array of length C={n_classes}, got {_describe(b)}")
    return n_classes
