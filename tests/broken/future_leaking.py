"""A biLM whose forward states read the backward ones: at every layer k >= 1 the forward half of
R^k is f^k + b^k, so the forward LM at position t sees x_(t+1), the token it must predict (§3.2).
Its gradients are exact (the reference's, through the leak), so training drives the loss far
below what a correct biLM reaches (§9.3): the lower end of the learning band catches it."""

import numpy as np

from elmo_conformance import reference
from elmo_conformance.adapters.numpy import NumpyAdapter
from elmo_conformance.reference import validate


def _halves(r, d):
    return r[..., :d], r[..., d:]


class FutureLeaking(NumpyAdapter):
    name = "future-leaking"

    def bilm_layers(self, params, ids, lengths=None):
        layers = reference.bilm_layers(params, ids, lengths)
        d = params["embedding"].shape[1]
        return [layers[0]] + [np.concatenate([f + b, b], axis=-1) for f, b in (_halves(r, d) for r in layers[1:])]

    def bilm_logits(self, params, ids, lengths=None):
        top = self.bilm_layers(params, ids, lengths)[-1]
        return tuple(reference.bilm.logits_from(params, h) for h in _halves(top, params["embedding"].shape[1]))

    def _directions(self, params, ids, lengths):
        _, _, _, full = validate.check_bilm_inputs(params, ids, lengths)
        validate.check_has_targets(lengths, full)
        top = self.bilm_layers(params, ids, lengths)[-1]
        halves = _halves(top, params["embedding"].shape[1])
        targets = reference.loss.targets(ids, full)
        return [reference.loss.scored_loss(params, h, t) for h, t in zip(halves, targets)]

    def bilm_loss(self, params, ids, lengths=None):
        directions = self._directions(params, ids, lengths)
        return 0.5 * (directions[0][0] + directions[1][0])

    def bilm_loss_grad(self, params, ids, lengths=None):
        directions = self._directions(params, ids, lengths)
        weight = params["out.weight"]
        d = weight.shape[1]
        g_top = np.zeros((*ids.shape, 2 * d), dtype=weight.dtype)
        g_weight, g_bias = np.zeros_like(weight), np.zeros_like(params["out.bias"])
        for half, (_, scored, states, g_logits) in zip((slice(0, d), slice(d, 2 * d)), directions):
            g_logits *= 0.5
            g_top[..., half][scored] = g_logits @ weight
            g_weight += g_logits.T @ states
            g_bias += g_logits.sum(axis=0)
        g_layers = [np.zeros_like(g_top) for _ in range(len(self.bilm_layers(params, ids, lengths)) - 1)] + [g_top]
        grads = self.bilm_layers_vjp(params, ids, lengths, g_layers)
        grads["out.weight"], grads["out.bias"] = g_weight, g_bias
        return grads

    def bilm_layers_vjp(self, params, ids, lengths, g_layers):
        """J = Σ <g_k, leaky R^k> = Σ <[g_f ; g_b + g_f], R^k>: the clean product, cotangents moved."""
        validate.check_bilm_inputs(params, ids, lengths)
        d = params["embedding"].shape[1]
        if isinstance(g_layers, list) and all(isinstance(g, np.ndarray) and g.shape[-1:] == (2 * d,) for g in g_layers):
            g_layers = [g_layers[0]] + [
                np.concatenate([gf, gb + gf], axis=-1) for gf, gb in (_halves(g, d) for g in g_layers[1:])
            ]
        return reference.bilm_layers_vjp(params, ids, lengths, g_layers)


adapter = FutureLeaking()
