"""§2.2-§2.3: one single-direction LSTM over a batch, and its backward pass (§6)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def sigmoid(z: np.ndarray) -> np.ndarray:
    # The tanh form never overflows, unlike 1 / (1 + exp(-z)) for large negative z.
    return 0.5 * (1.0 + np.tanh(0.5 * z))


@dataclass
class LSTMCache:
    """What the backward pass needs from the forward pass."""

    u: np.ndarray  # inputs [B, T, d_in]
    h: np.ndarray  # outputs [B, T, d]
    c: np.ndarray  # cell states [B, T, d]
    gates: np.ndarray  # i, f, g, o after their nonlinearities [B, T, 4d]
    weight_ih: np.ndarray
    weight_hh: np.ndarray


def lstm_forward(
    u: np.ndarray, weight_ih: np.ndarray, weight_hh: np.ndarray, bias_ih: np.ndarray, bias_hh: np.ndarray
) -> tuple[np.ndarray, LSTMCache]:
    """Run §2.2 over every step of every row, from the zero state of §2.3.

    Rows are independent and an output never depends on later steps, so padded steps at the end of
    a row may be run through: they cannot change the row's real outputs.
    """
    batch, steps, _ = u.shape
    d = weight_hh.shape[1]
    # The input projections of every step at once; only h @ weight_hh.T is sequential.
    z_input = u @ weight_ih.T + bias_ih + bias_hh
    h_t = np.zeros((batch, d), dtype=u.dtype)
    c_t = np.zeros((batch, d), dtype=u.dtype)
    h = np.empty((batch, steps, d), dtype=u.dtype)
    c = np.empty((batch, steps, d), dtype=u.dtype)
    gates = np.empty((batch, steps, 4 * d), dtype=u.dtype)
    for t in range(steps):
        z = z_input[:, t] + h_t @ weight_hh.T
        i, f, o = sigmoid(z[:, :d]), sigmoid(z[:, d : 2 * d]), sigmoid(z[:, 3 * d :])
        g = np.tanh(z[:, 2 * d : 3 * d])
        c_t = f * c_t + i * g
        h_t = o * np.tanh(c_t)
        h[:, t], c[:, t] = h_t, c_t
        gates[:, t] = np.concatenate([i, f, g, o], axis=1)
    return h, LSTMCache(u, h, c, gates, weight_ih, weight_hh)


def lstm_backward(g_h: np.ndarray, cache: LSTMCache) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Backpropagation through time: from d(objective)/dh [B, T, d] to the input and the weights.

    Returns (g_u, {"weight_ih", "weight_hh", "bias_ih", "bias_hh"}).
    """
    batch, steps, d = g_h.shape
    c_prev = np.concatenate([np.zeros((batch, 1, d), g_h.dtype), cache.c[:, :-1]], axis=1)
    h_prev = np.concatenate([np.zeros((batch, 1, d), g_h.dtype), cache.h[:, :-1]], axis=1)
    g_z = np.empty((batch, steps, 4 * d), dtype=g_h.dtype)
    g_h_next = np.zeros((batch, d), dtype=g_h.dtype)
    g_c_next = np.zeros((batch, d), dtype=g_h.dtype)
    for t in reversed(range(steps)):
        i, f = cache.gates[:, t, :d], cache.gates[:, t, d : 2 * d]
        g, o = cache.gates[:, t, 2 * d : 3 * d], cache.gates[:, t, 3 * d :]
        tanh_c = np.tanh(cache.c[:, t])
        g_ht = g_h[:, t] + g_h_next
        g_ct = g_ht * o * (1.0 - tanh_c**2) + g_c_next
        g_z[:, t, :d] = g_ct * g * i * (1.0 - i)
        g_z[:, t, d : 2 * d] = g_ct * c_prev[:, t] * f * (1.0 - f)
        g_z[:, t, 2 * d : 3 * d] = g_ct * i * (1.0 - g**2)
        g_z[:, t, 3 * d :] = g_ht * tanh_c * o * (1.0 - o)
        g_h_next = g_z[:, t] @ cache.weight_hh
        g_c_next = g_ct * f
    flat_z = g_z.reshape(batch * steps, 4 * d)
    g_bias = flat_z.sum(axis=0)
    grads = {
        "weight_ih": flat_z.T @ cache.u.reshape(batch * steps, -1),
        "weight_hh": flat_z.T @ h_prev.reshape(batch * steps, d),
        "bias_ih": g_bias,
        "bias_hh": g_bias.copy(),
    }
    return g_z @ cache.weight_ih, grads
