"""§4: the biLM loss, and §6.1: its gradient."""

from __future__ import annotations

import numpy as np

from . import validate
from .bilm import BiLMPass, backprop_layers, logits_from, run_bilm, top_states

NO_TARGET = -1


def targets(ids: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """§4.1: the target id of every scored position, NO_TARGET elsewhere.

    Forward: position t predicts x_{t+1} for t <= ℓ-2. Backward: position t predicts x_{t-1} for
    t >= 1 (and t <= ℓ-1).
    """
    t = np.arange(ids.shape[1])[None, :]
    ell = lengths[:, None]
    fwd = np.full_like(ids, NO_TARGET, dtype=np.int64)
    bwd = np.full_like(ids, NO_TARGET, dtype=np.int64)
    fwd[:, :-1] = np.where(t[:, :-1] <= ell - 2, ids[:, 1:], NO_TARGET)
    bwd[:, 1:] = np.where(t[:, 1:] <= ell - 1, ids[:, :-1], NO_TARGET)
    return fwd, bwd


def log_softmax(z: np.ndarray) -> np.ndarray:
    shifted = z - z.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def mean_cross_entropy(logits: np.ndarray, target: np.ndarray) -> tuple[float, np.ndarray]:
    """§4.2: the token-level mean of CE over the scored positions, and its gradient on logits."""
    scored = target != NO_TARGET
    log_p = log_softmax(logits[scored])
    picked = target[scored]
    rows = np.arange(len(picked))
    value = -log_p[rows, picked].mean()
    g_scored = np.exp(log_p)
    g_scored[rows, picked] -= 1.0
    g_logits = np.zeros_like(logits)
    g_logits[scored] = g_scored / len(picked)
    return float(value), g_logits


def _loss_and_pass(params: dict, ids: np.ndarray, lengths: np.ndarray | None) -> tuple[float, BiLMPass, tuple]:
    _, _, n_layers, lengths_ = validate.check_bilm_inputs(params, ids, lengths)
    validate.check_has_targets(lengths, lengths_)
    run = run_bilm(params, ids, lengths_, n_layers)
    f_top, b_top = top_states(run)
    fwd_target, bwd_target = targets(ids, lengths_)
    loss_fwd, g_fwd = mean_cross_entropy(logits_from(params, f_top), fwd_target)
    loss_bwd, g_bwd = mean_cross_entropy(logits_from(params, b_top), bwd_target)
    return 0.5 * (loss_fwd + loss_bwd), run, (f_top, b_top, 0.5 * g_fwd, 0.5 * g_bwd)


def bilm_loss(params: dict[str, np.ndarray], ids: np.ndarray, lengths: np.ndarray | None = None) -> float:
    """§4.2: (L_fwd + L_bwd) / 2, each a token-level mean over the batch."""
    return _loss_and_pass(params, ids, lengths)[0]


def bilm_loss_grad(
    params: dict[str, np.ndarray], ids: np.ndarray, lengths: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """§6.1: the gradient of bilm_loss with respect to every parameter.

    Through the shared output layer to f^L and b^L, then down both stacks as in §6.2 with a
    gradient on the top layer only.
    """
    _, run, (f_top, b_top, g_fwd, g_bwd) = _loss_and_pass(params, ids, lengths)
    out_weight = params["out.weight"]
    g_top = np.concatenate([g_fwd @ out_weight, g_bwd @ out_weight], axis=-1)
    zeros = np.zeros_like(g_top)
    g_layers = [zeros] * len(run.f) + [g_top]
    grads = backprop_layers(params, run, g_layers)
    vocab, d = out_weight.shape
    grads["out.weight"] = g_fwd.reshape(-1, vocab).T @ f_top.reshape(-1, d) + g_bwd.reshape(
        -1, vocab
    ).T @ b_top.reshape(-1, d)
    grads["out.bias"] = g_fwd.sum(axis=(0, 1)) + g_bwd.sum(axis=(0, 1))
    return grads
