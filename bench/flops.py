"""FLOP counts of the benchmarked work, from the matrix shapes (multiply-adds count 2).

Only matrix products are counted: they are the work that must be done. The elementwise gate
arithmetic, the softmax and the copies are O(d) per token against O(d^2) for the products, and an
implementation that spends long on them shows it as a lower rate.
"""

from __future__ import annotations


def lstm_flops(tokens: int, d: int) -> float:
    """One single-direction LSTM (§2.2) over `tokens` real steps, forward and backward.

    Forward per step: weight_ih · u and weight_hh · h, each [4d, d] by [d]: 2 · 2 · 4d · d.
    Backward per step: the gradient of u and of h_{t-1} (two products of the same size) and the
    gradients of weight_ih and weight_hh (two outer products accumulated): 4 · 2 · 4d · d.
    """
    return tokens * (2 + 4) * 2 * 4 * d * d


def output_layer_flops(scored: int, d: int, vocab: int) -> float:
    """The shared output layer (§3.5) at `scored` positions of one direction, forward and backward:
    the logits W_out · h (2 d V), then the gradients of h and of W_out (2 d V each)."""
    return scored * 3 * 2 * d * vocab


def bilm_loss_grad_flops(real_tokens: int, scored: int, d: int, vocab: int, n_layers: int) -> float:
    """bilm_loss_grad (§6.1): 2L LSTMs over the real tokens, and the output layer over each
    direction's n = Σ (ℓ_b - 1) scored positions (§4.1). Positions that are padded or unscored
    need no work, so an implementation that computes them anyway spends time it is not credited."""
    return 2 * n_layers * lstm_flops(real_tokens, d) + 2 * output_layer_flops(scored, d, vocab)


def probe_flops(n: int, dim: int, n_classes: int, steps: int) -> float:
    """fit_linear_probe (§7.3): per step Z V ([N, D] by [D, C]) and Zᵀ G ([D, N] by [N, C])."""
    return steps * 2 * (2 * n * dim * n_classes)
