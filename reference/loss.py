"""§4: the biLM loss, and §6.1: its gradient."""

from __future__ import annotations

import numpy as np

from elmo_conformance.reference import validate
from elmo_conformance.reference.bilm import BiLMPass, backprop_layers, logits_from, run_bilm, top_states

NO_TARGET = -1


def targets(ids: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """§4.1: the target id of every scored position, NO_TARGET elsewhere.

    Forward: position t predicts x_{t+1} for t <= ℓ-2. Backward: position t predicts x_{t-1} for
    t >= 1 (and t <= ℓ-1). The targets are int64 whatever the integer dtype of ids (§8: unsigned
    ones too), so that NO_TARGET stays -1.
    """
    ids = ids.astype(np.int64, copy=False)
    t = np.arange(ids.shape[1])[None, :]
    ell = lengths[:, None]
    fwd = np.full_like(ids, NO_TARGET, dtype=np.int64)
    bwd = np.full_like(ids, NO_TARGET, dtype=np.int64)
    fwd[:, :-1] = np.where(t[:, :-1] <= ell - 2, ids[:, 1:], NO_TARGET)
    bwd[:, 1:] = np.where(t[:, 1:] <= ell - 1, ids[:, :-1], NO_TARGET)
    return fwd, bwd


def mean_cross_entropy(logits: np.ndarray, picked: np.ndarray) -> tuple[float, np.ndarray]:
    """§4.2 over n scored positions: the mean of CE(logits_j, picked_j) and its gradient on logits.

    `logits` [n, V] is overwritten: at V = 5000 it is the largest array of the pass, and the
    softmax that the gradient needs can take its place.
    """
    rows = np.arange(len(picked))
    logits -= logits.max(axis=1, keepdims=True)  # the stable CE of §4.2: exp never overflows
    picked_logit = logits[rows, picked]
    p = np.exp(logits, out=logits)
    total = p.sum(axis=1)
    value = float(np.mean(np.log(total) - picked_logit))
    p /= total[:, None]
    p[rows, picked] -= 1.0
    p /= len(picked)
    return value, p


def scored_loss(
    params: dict[str, np.ndarray], top: np.ndarray, target: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """One direction of §4.2 from its top states [B, T, d] and targets [B, T].

    Only the scored positions (§4.1) have logits computed: the others change nothing. Returns
    (L_dir, the scored mask [B, T], their states [n, d], dL_dir/dlogits [n, V]).
    """
    scored = target != NO_TARGET
    states = top[scored]
    value, g_logits = mean_cross_entropy(logits_from(params, states), target[scored])
    return value, scored, states, g_logits


def _loss_and_pass(params: dict, ids: np.ndarray, lengths: np.ndarray | None) -> tuple[float, BiLMPass, list]:
    _, _, n_layers, lengths_ = validate.check_bilm_inputs(params, ids, lengths)
    validate.check_has_targets(lengths, lengths_)
    run = run_bilm(params, ids, lengths_, n_layers)
    directions = [scored_loss(params, top, target) for top, target in zip(top_states(run), targets(ids, lengths_))]
    return 0.5 * (directions[0][0] + directions[1][0]), run, directions


def bilm_loss(params: dict[str, np.ndarray], ids: np.ndarray, lengths: np.ndarray | None = None) -> float:
    """§4.2: (L_fwd + L_bwd) / 2, each a token-level mean over the batch."""
    return _loss_and_pass(params, ids, lengths)[0]


def bilm_loss_grad(
    params: dict[str, np.ndarray], ids: np.ndarray, lengths: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """§6.1: the gradient of bilm_loss with respect to every parameter.

    Through the shared output layer to f^L and b^L at the scored positions, then down both
    stacks as in §6.2 with a gradient on the top layer only.
    """
    _, run, directions = _loss_and_pass(params, ids, lengths)
    out_weight = params["out.weight"]
    d = out_weight.shape[1]
    g_top = np.zeros((*ids.shape, 2 * d), dtype=out_weight.dtype)
    g_out_weight = np.zeros_like(out_weight)
    g_out_bias = np.zeros_like(params["out.bias"])
    for half, (_, scored, states, g_logits) in zip((slice(0, d), slice(d, 2 * d)), directions):
        g_logits *= 0.5  # bilm_loss is the average of the two directions
        g_top[..., half][scored] = g_logits @ out_weight
        g_out_weight += g_logits.T @ states
        g_out_bias += g_logits.sum(axis=0)
    g_layers = [np.zeros_like(g_top)] * len(run.f) + [g_top]
    grads = backprop_layers(params, run, g_layers)
    grads["out.weight"], grads["out.bias"] = g_out_weight, g_out_bias
    return grads
