"""§2.2-§2.3: one single-direction LSTM over a batch, and its backward pass (§6).

Only the recurrence h_{t-1} -> h_t (and, backwards, the two carried gradients) is sequential.
Everything else is done for all steps at once: the input projections before the loop, the local
derivatives before the backward loop, the weight gradients after it. Inside, arrays are
time-major ([T, B, ...]) so that each step reads and writes one contiguous block.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def gate_affine(d: int, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """(scale, shift) per row of z, such that tanh(scale · z) · scale + shift gives i, f, g, o.

    σ(x) = (1 + tanh(x / 2)) / 2, so one tanh over all four blocks serves both nonlinearities of
    §2.2: the sigmoid blocks i, f, o are halved before it and mapped back after it, the tanh block
    g is left alone. Halving is exact in floating point, so this is σ and tanh as written.
    """
    scale = np.full((4, d), 0.5, dtype=dtype)
    scale[2] = 1.0
    shift = np.full((4, d), 0.5, dtype=dtype)
    shift[2] = 0.0
    return scale.reshape(4 * d), shift.reshape(4 * d)


@dataclass
class LSTMCache:
    """What the backward pass needs from the forward pass; time-major, [T, B, ...]."""

    u: np.ndarray  # inputs [T, B, d_in]
    h: np.ndarray  # outputs [T, B, d]
    c: np.ndarray  # cell states [T, B, d]
    tanh_c: np.ndarray  # tanh(c_t) [T, B, d]
    gates: np.ndarray  # i, f, g, o after their nonlinearities [T, B, 4d]
    weight_ih: np.ndarray
    weight_hh: np.ndarray


def lstm_forward(
    u: np.ndarray, weight_ih: np.ndarray, weight_hh: np.ndarray, bias_ih: np.ndarray, bias_hh: np.ndarray
) -> tuple[np.ndarray, LSTMCache]:
    """Run §2.2 over every step of every row of u [B, T, d_in], from the zero state of §2.3.

    Rows are independent and an output never depends on later steps, so padded steps at the end of
    a row may be run through: they cannot change the row's real outputs. Returns h [B, T, d].
    """
    batch, steps, _ = u.shape
    d = weight_hh.shape[1]
    scale, shift = gate_affine(d, u.dtype)
    u_t = np.ascontiguousarray(u.transpose(1, 0, 2))
    # The (scaled) input projections of every step at once; only h_{t-1} · weight_hhᵀ is sequential.
    z_input = (u_t.reshape(steps * batch, -1) @ weight_ih.T + bias_ih + bias_hh) * scale
    z_input = z_input.reshape(steps, batch, 4 * d)
    recurrent = weight_hh.T * scale
    h = np.empty((steps, batch, d), dtype=u.dtype)
    c = np.empty((steps, batch, d), dtype=u.dtype)
    tanh_c = np.empty((steps, batch, d), dtype=u.dtype)
    gates = np.empty((steps, batch, 4 * d), dtype=u.dtype)
    h_prev = np.zeros((batch, d), dtype=u.dtype)
    c_prev = np.zeros((batch, d), dtype=u.dtype)
    for t in range(steps):
        z = z_input[t] + h_prev @ recurrent  # z_t of §2.2, with its i, f, o blocks halved
        gates[t] = np.tanh(z) * scale + shift  # i_t, f_t, g_t, o_t
        i, f, g, o = np.split(gates[t], 4, axis=1)
        c[t] = f * c_prev + i * g
        tanh_c[t] = np.tanh(c[t])
        h[t] = o * tanh_c[t]
        h_prev, c_prev = h[t], c[t]
    return h.transpose(1, 0, 2), LSTMCache(u_t, h, c, tanh_c, gates, weight_ih, weight_hh)


def lstm_backward(g_h: np.ndarray, cache: LSTMCache) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Backpropagation through time: from d(objective)/dh [B, T, d] to the input and the weights.

    Returns (g_u [B, T, d_in], {"weight_ih", "weight_hh", "bias_ih", "bias_hh"}).
    """
    steps, batch, d = cache.h.shape
    g_h = g_h.transpose(1, 0, 2)
    zeros = np.zeros((1, batch, d), dtype=cache.h.dtype)
    c_prev = np.concatenate([zeros, cache.c[:-1]])
    h_prev = np.concatenate([zeros, cache.h[:-1]])
    gates = cache.gates.reshape(steps, batch, 4, d)
    i, f, g, o = gates[:, :, 0], gates[:, :, 1], gates[:, :, 2], gates[:, :, 3]
    # The local derivatives of every step at once: ∂h_t/∂c_t, then ∂c_t/∂z for the i, f, g blocks
    # and ∂h_t/∂z for the o block (σ' = σ(1 - σ), tanh' = 1 - tanh²).
    dh_dc = o * (1.0 - cache.tanh_c**2)
    local = np.empty_like(gates)
    local[:, :, 0] = g * i * (1.0 - i)
    local[:, :, 1] = c_prev * f * (1.0 - f)
    local[:, :, 2] = i * (1.0 - g**2)
    local[:, :, 3] = cache.tanh_c * o * (1.0 - o)
    g_z = np.empty_like(gates)
    g_h_next = np.zeros((batch, d), dtype=g_h.dtype)
    g_c_next = np.zeros((batch, d), dtype=g_h.dtype)
    for t in reversed(range(steps)):
        g_ht = g_h[t] + g_h_next  # h_t reaches the objective directly and through step t + 1
        g_ct = g_ht * dh_dc[t] + g_c_next  # c_t: through h_t and through c_{t+1}
        g_z[t, :, :3] = g_ct[:, None, :] * local[t, :, :3]  # i, f and g act through c_t
        g_z[t, :, 3] = g_ht * local[t, :, 3]  # o acts through h_t
        g_h_next = g_z[t].reshape(batch, 4 * d) @ cache.weight_hh
        g_c_next = g_ct * f[t]
    flat_z = g_z.reshape(steps * batch, 4 * d)
    g_bias = flat_z.sum(axis=0)
    grads = {
        "weight_ih": flat_z.T @ cache.u.reshape(steps * batch, -1),
        "weight_hh": flat_z.T @ h_prev.reshape(steps * batch, d),
        "bias_ih": g_bias,
        "bias_hh": g_bias.copy(),
    }
    g_u = (flat_z @ cache.weight_ih).reshape(steps, batch, -1)
    return g_u.transpose(1, 0, 2), grads
