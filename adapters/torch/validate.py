"""Input checks of the torch adapter: every row of spec §8, run before any computation (§1.3).

Written for this adapter, independently of the reference. Each check raises ValueError whose
message starts with the offending argument's name (for a params entry, its canonical name, §2.1)
and says what was expected and what came.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_FWD_WEIGHT_IH = re.compile(r"fwd\.\d+\.weight_ih")


def _fail(arg: str, expected: str, got: Any, row: str) -> None:
    raise ValueError(f"{arg}: expected {expected}, got {_describe(got)} (spec §8 {row})")


def _describe(x: Any) -> str:
    if isinstance(x, np.ndarray):
        return f"an array of shape {list(x.shape)} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}" if isinstance(x, numbers.Number) else type(x).__name__


def _is_float_array(x: Any) -> bool:
    return isinstance(x, np.ndarray) and x.dtype in FLOAT_DTYPES


def _is_int_array(x: Any) -> bool:
    return isinstance(x, np.ndarray) and x.dtype.kind in "iu"  # kind "b" (bool) is excluded


def _is_int(x: Any) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _is_real(x: Any) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def canonical_shapes(V: int, d: int, L: int) -> dict[str, tuple[int, ...]]:
    """The 3 + 8L names of §2.1 with their shapes."""
    shapes: dict[str, tuple[int, ...]] = {"embedding": (V, d)}
    for direction in ("fwd", "bwd"):
        for k in range(L):
            for kind in ("weight_ih", "weight_hh"):
                shapes[f"{direction}.{k}.{kind}"] = (4 * d, d)
            for kind in ("bias_ih", "bias_hh"):
                shapes[f"{direction}.{k}.{kind}"] = (4 * d,)
    return shapes | {"out.weight": (V, d), "out.bias": (V,)}


# -- biLM functions --


def check_params(params: Any) -> tuple[int, int, int]:
    """V06-V09; returns (V, d, L)."""
    if not isinstance(params, Mapping):
        _fail("params", "a dict from canonical name to array (§2.1)", params, "V06")
    emb = params.get("embedding")
    if emb is None:
        raise ValueError("params: missing entry 'embedding' (spec §2.1, §8 V06)")
    if not _is_float_array(emb):
        _fail("embedding", "a float32 or float64 array", emb, "V09")
    if emb.ndim != 2 or 0 in emb.shape:
        _fail("embedding", "shape [V, d] with V, d >= 1", emb, "V08")
    V, d = emb.shape
    # L counts the fwd.{k}.weight_ih entries (§2.1); with none, fwd.0.weight_ih is missing
    L = max(1, sum(1 for k in params if isinstance(k, str) and _FWD_WEIGHT_IH.fullmatch(k)))
    shapes = canonical_shapes(V, d, L)
    for name in shapes:
        if name not in params:
            raise ValueError(f"params: missing entry {name!r} (spec §2.1 for L={L}, §8 V06)")
    for name in params:
        if name not in shapes:
            raise ValueError(f"params: unexpected entry {name!r}, not a §2.1 name for L={L} (spec §8 V07)")
    for name, shape in shapes.items():
        value = params[name]
        if not _is_float_array(value) or value.dtype != emb.dtype:
            _fail(name, f"a {emb.dtype} array, the dtype of embedding", value, "V09")
        if value.shape != shape:
            _fail(name, f"shape {list(shape)}", value, "V08")
    return V, d, L


def check_bilm(params: Any, ids: Any, lengths: Any) -> tuple[int, int, int, int, int]:
    """V01-V09; returns (V, d, L, B, T)."""
    V, d, L = check_params(params)
    if not _is_int_array(ids) or ids.ndim != 2:
        _fail("ids", "a 2-D integer array [B, T]", ids, "V01")
    B, T = ids.shape
    if B == 0 or T == 0:
        _fail("ids", "B >= 1 and T >= 1", ids, "V02")
    if ids.min() < 0 or ids.max() >= V:
        raise ValueError(
            f"ids: expected every id in [0, {V}), padded positions included, "
            f"got values in [{ids.min()}, {ids.max()}] (spec §8 V03)"
        )
    if lengths is not None:
        if not _is_int_array(lengths) or lengths.shape != (B,):
            _fail("lengths", f"None or a 1-D integer array of length B = {B}", lengths, "V04")
        if lengths.min() < 1 or lengths.max() > T:
            raise ValueError(
                f"lengths: expected every length in [1, T = {T}], got values in "
                f"[{lengths.min()}, {lengths.max()}] (spec §8 V05)"
            )
    return V, d, L, B, T


def check_has_targets(ids: np.ndarray, lengths: np.ndarray | None) -> None:
    """V11: the loss needs n = Σ (ℓ_b - 1) > 0 (§4.3)."""
    if lengths is None and ids.shape[1] == 1:
        raise ValueError("ids: T = 1 leaves no targets for the loss (spec §4.3, §8 V11)")
    if lengths is not None and lengths.max() == 1:
        raise ValueError("lengths: every row has length 1, no targets for the loss (§4.3, §8 V11)")


def check_g_layers(g_layers: Any, L: int, B: int, T: int, d: int) -> None:
    """V10: L + 1 float arrays (float32 or float64, not integer, §8) of shape [B, T, 2d]."""
    shape = (B, T, 2 * d)
    if (
        not isinstance(g_layers, (list, tuple))
        or len(g_layers) != L + 1
        or not all(_is_float_array(g) and g.shape == shape for g in g_layers)
    ):
        _fail("g_layers", f"a list of {L + 1} float arrays of shape {list(shape)}", g_layers, "V10")


# -- ScalarMix functions --


def check_mix(s: Any, gamma: Any, layers: Any) -> None:
    """V12-V14."""
    if not isinstance(layers, (list, tuple)) or not layers or not all(map(_is_float_array, layers)):
        _fail("layers", "a non-empty list of float32 or float64 arrays", layers, "V12")
    first = layers[0]
    if any(r.shape != first.shape or r.dtype != first.dtype for r in layers):
        raise ValueError(
            "layers: expected arrays of one shape and one dtype, got shapes "
            f"{[list(r.shape) for r in layers]} and dtypes "
            f"{[str(r.dtype) for r in layers]} (spec §8 V12)"
        )
    if not _is_float_array(s) or s.shape != (len(layers),):
        _fail("s", f"a 1-D float array of length {len(layers)}, one per layer", s, "V13")
    if not np.isfinite(s).all():
        raise ValueError("s: expected finite values, got NaN or infinity (spec §8 V13)")
    if not _is_float_array(gamma) or gamma.shape != (1,) or not np.isfinite(gamma).all():
        _fail("gamma", "a finite float array of shape [1]", gamma, "V14")


def check_g_out(g_out: Any, shape: tuple[int, ...]) -> None:
    """V15: a float array (float32 or float64, not integer, §8) of a layer's shape."""
    if not _is_float_array(g_out) or g_out.shape != shape:
        _fail("g_out", f"a float array of shape {list(shape)}, a layer's shape", g_out, "V15")


# -- probe functions --


def _check_features_labels(features: Any, labels: Any) -> None:
    """V16, V17."""
    if not _is_float_array(features) or features.ndim != 2 or 0 in features.shape:
        _fail("features", "a 2-D float array [N, D] with N, D >= 1", features, "V16")
    if not np.isfinite(features).all():
        raise ValueError("features: expected finite values, got NaN or infinity (spec §8 V16)")
    if not _is_int_array(labels) or labels.shape != (features.shape[0],):
        _fail("labels", f"a 1-D integer array of length N = {features.shape[0]}", labels, "V17")


def _check_label_range(labels: np.ndarray, C: int) -> None:
    """V18."""
    if labels.min() < 0 or labels.max() >= C:
        raise ValueError(
            f"labels: expected values in [0, {C}), got values in [{labels.min()}, {labels.max()}] (spec §8 V18)"
        )


def check_fit(features: Any, labels: Any, n_classes: Any, l2: Any, steps: Any, lr: Any) -> None:
    """V16-V23."""
    _check_features_labels(features, labels)
    if not _is_int(n_classes) or n_classes < 2:
        _fail("n_classes", "an integer >= 2", n_classes, "V19")
    _check_label_range(labels, int(n_classes))
    if np.unique(labels).size < 2:
        raise ValueError("labels: expected at least two distinct classes, got one (spec §8 V20)")
    if not _is_int(steps) or steps < 0:
        _fail("steps", "an integer >= 0", steps, "V21")
    if not _is_real(lr) or not math.isfinite(lr) or lr <= 0:
        _fail("lr", "a finite number > 0", lr, "V22")
    if not _is_real(l2) or not math.isfinite(l2) or l2 < 0:
        _fail("l2", "a finite number >= 0", l2, "V23")


def check_accuracy(W: Any, b: Any, features: Any, labels: Any) -> None:
    """V16-V18, V24, V25."""
    _check_features_labels(features, labels)
    D = features.shape[1]
    if not _is_float_array(W) or W.ndim != 2 or W.shape[0] != D or W.shape[1] == 0:
        _fail("W", f"a 2-D float array with D = {D} rows and at least one column", W, "V24")
    C = W.shape[1]
    if not _is_float_array(b) or b.shape != (C,):
        _fail("b", f"a 1-D float array of length C = {C}, the columns of W", b, "V25")
    _check_label_range(labels, C)
