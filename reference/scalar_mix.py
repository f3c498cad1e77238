"""§5: ScalarMix, and §6.3: its vector-Jacobian product."""

from __future__ import annotations

import numpy as np

from elmo_conformance.reference import validate


def mix_weights(s: np.ndarray) -> np.ndarray:
    """§5.1: softmax(s) with the maximum subtracted first, so no exp overflows (§5.4)."""
    w = np.exp(s - s.max())
    return w / w.sum()


def scalar_mix(s: np.ndarray, gamma: np.ndarray, layers: list[np.ndarray]) -> np.ndarray:
    """§5.2: γ Σ_k w_k R^k, in the layers' dtype and of one layer's shape (a 0-d array for 0-d
    layers: NumPy turns a product with a 0-d array into a scalar, hence `np.asarray`)."""
    stacked = validate.check_mix(s, gamma, layers)
    w = mix_weights(s.astype(stacked.dtype))
    return np.asarray(gamma.astype(stacked.dtype)[0] * np.tensordot(w, stacked, axes=1))


def scalar_mix_vjp(
    s: np.ndarray, gamma: np.ndarray, layers: list[np.ndarray], g_out: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """§6.3: (g_s, g_gamma, g_layers) for J = Σ g_out ⊙ scalar_mix(s, gamma, layers)."""
    stacked = validate.check_mix(s, gamma, layers)
    validate.check_g_out(g_out, stacked.shape[1:])
    g_out = g_out.astype(stacked.dtype)
    w = mix_weights(s.astype(stacked.dtype))
    scale = gamma.astype(stacked.dtype)[0]
    m = (stacked * g_out).reshape(len(stacked), -1).sum(axis=1)
    mu = w @ m
    g_s = scale * w * (m - mu)
    g_layers = [np.asarray(scale * wk * g_out) for wk in w]
    return g_s, np.array([mu], dtype=stacked.dtype), g_layers
