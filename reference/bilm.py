"""§3: the biLM's layers and logits, and §6.2: the vector-Jacobian product of its layers."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from elmo_conformance.reference import validate
from elmo_conformance.reference.lstm import LSTMCache, lstm_backward, lstm_forward


def real_mask(lengths: np.ndarray, steps: int) -> np.ndarray:
    """[B, T] booleans: position t of row b is real when t < ℓ_b (§1.1)."""
    return np.arange(steps)[None, :] < lengths[:, None]


def reverse_padded(x: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """§3.3: reverse each row of x [B, T, ...] inside its own length; padded positions stay put.

    The permutation is its own inverse, so it also reverses the backward stack's outputs back.
    """
    steps = x.shape[1]
    t = np.arange(steps)[None, :]
    index = np.where(t < lengths[:, None], lengths[:, None] - 1 - t, t)
    return x[np.arange(x.shape[0])[:, None], index]


def run_lstm(params: dict[str, np.ndarray], prefix: str, u: np.ndarray) -> tuple[np.ndarray, LSTMCache]:
    p = {part: params[f"{prefix}.{part}"] for part in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}
    return lstm_forward(u, p["weight_ih"], p["weight_hh"], p["bias_ih"], p["bias_hh"])


@dataclass
class BiLMPass:
    """The states of one forward pass (§3), kept for the backward pass (§6)."""

    ids: np.ndarray
    lengths: np.ndarray
    mask: np.ndarray  # [B, T]
    e: np.ndarray  # [B, T, d]
    f: list[np.ndarray]  # f^1 .. f^L, source order, [B, T, d]
    b: list[np.ndarray]  # b^1 .. b^L, source order, [B, T, d]
    f_caches: list[LSTMCache]
    b_caches: list[LSTMCache]  # caches of the backward LSTMs, in reversed order

    def layers(self) -> list[np.ndarray]:
        """§3.4: R^0 = [e ; e], R^k = [f^k ; b^k], exactly 0 at padded positions."""
        pairs = [(self.e, self.e), *zip(self.f, self.b)]
        mask = self.mask[:, :, None]
        return [np.where(mask, np.concatenate(pair, axis=-1), 0.0).astype(self.e.dtype) for pair in pairs]


def forward_stack(params: dict[str, np.ndarray], e: np.ndarray, n_layers: int) -> tuple[list, list]:
    """§3.2: forward layer 1 reads e; layer k >= 2 reads f^(k-1) and nothing else."""
    states, caches, u = [], [], e
    for k in range(n_layers):
        u, cache = run_lstm(params, f"fwd.{k}", u)
        states.append(u)
        caches.append(cache)
    return states, caches


def backward_stack(
    params: dict[str, np.ndarray], e: np.ndarray, lengths: np.ndarray, n_layers: int
) -> tuple[list, list]:
    """§3.3: the same stack over each row reversed inside its length, outputs reversed back."""
    states, caches, u = [], [], reverse_padded(e, lengths)
    for k in range(n_layers):
        u, cache = run_lstm(params, f"bwd.{k}", u)
        states.append(reverse_padded(u, lengths))
        caches.append(cache)
    return states, caches


def run_bilm(params: dict[str, np.ndarray], ids: np.ndarray, lengths: np.ndarray, n_layers: int) -> BiLMPass:
    """§3.1-§3.3 on validated inputs."""
    e = params["embedding"][ids]
    f, f_caches = forward_stack(params, e, n_layers)
    b, b_caches = backward_stack(params, e, lengths, n_layers)
    return BiLMPass(ids, lengths, real_mask(lengths, ids.shape[1]), e, f, b, f_caches, b_caches)


def bilm_layers(params: dict[str, np.ndarray], ids: np.ndarray, lengths: np.ndarray | None = None) -> list[np.ndarray]:
    """§3.4: [R^0, ..., R^L], each [B, T, 2d]."""
    _, _, n_layers, lengths_ = validate.check_bilm_inputs(params, ids, lengths)
    return run_bilm(params, ids, lengths_, n_layers).layers()


def logits_from(params: dict[str, np.ndarray], state: np.ndarray) -> np.ndarray:
    """§3.5: the shared output layer, W_out · h + c."""
    return state @ params["out.weight"].T + params["out.bias"]


def top_states(run: BiLMPass) -> tuple[np.ndarray, np.ndarray]:
    """f^L and b^L with padded positions 0, as in R^L (§3.4)."""
    d = run.e.shape[-1]
    top = run.layers()[-1]
    return top[..., :d], top[..., d:]


def bilm_logits(
    params: dict[str, np.ndarray], ids: np.ndarray, lengths: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """§3.5: (fwd, bwd) logits, each [B, T, V]."""
    _, _, n_layers, lengths_ = validate.check_bilm_inputs(params, ids, lengths)
    f_top, b_top = top_states(run_bilm(params, ids, lengths_, n_layers))
    return logits_from(params, f_top), logits_from(params, b_top)


def backprop_layers(params: dict[str, np.ndarray], run: BiLMPass, g_layers: list[np.ndarray]) -> dict[str, np.ndarray]:
    """§6.2: gradients of Σ_k <g_layers[k], R^k> with respect to every parameter.

    Padded positions of R^k are constants, so their gradients are dropped first. Each stack is
    then backpropagated from its top layer down, adding each layer's own gradient on the way.
    """
    d = run.e.shape[-1]
    mask = run.mask[:, :, None]
    g = [np.where(mask, gk, 0.0).astype(run.e.dtype) for gk in g_layers]
    grads = {name: np.zeros_like(value) for name, value in params.items()}
    g_e = g[0][..., :d] + g[0][..., d:]

    g_u = np.zeros_like(run.e)
    for k in reversed(range(len(run.f))):
        g_u, layer_grads = lstm_backward(g[k + 1][..., :d] + g_u, run.f_caches[k])
        for part, value in layer_grads.items():
            grads[f"fwd.{k}.{part}"] = value
    g_e = g_e + g_u

    g_u = np.zeros_like(run.e)
    for k in reversed(range(len(run.b))):
        # The reversal is a permutation that is its own inverse: it maps gradients the same way.
        g_u, layer_grads = lstm_backward(reverse_padded(g[k + 1][..., d:], run.lengths) + g_u, run.b_caches[k])
        for part, value in layer_grads.items():
            grads[f"bwd.{k}.{part}"] = value
    g_e = g_e + reverse_padded(g_u, run.lengths)

    np.add.at(grads["embedding"], run.ids[run.mask], g_e[run.mask])
    return grads


def bilm_layers_vjp(
    params: dict[str, np.ndarray], ids: np.ndarray, lengths: np.ndarray | None, g_layers: list[np.ndarray]
) -> dict[str, np.ndarray]:
    """§6.2, with out.weight and out.bias zero since they do not reach R^k."""
    _, d, n_layers, lengths_ = validate.check_bilm_inputs(params, ids, lengths)
    shape = (*ids.shape, 2 * d)
    validate.check_g_layers(g_layers, n_layers, shape)
    dtype = params["embedding"].dtype
    return backprop_layers(params, run_bilm(params, ids, lengths_, n_layers), [g.astype(dtype) for g in g_layers])
