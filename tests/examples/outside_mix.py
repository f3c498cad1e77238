"""ScalarMix (spec §5, §6.3) as an outside implementer might write it against the protocol of §11:
plain NumPy, the softmax by hand, its own gradient, the input checks of §8 from the package. The
mutation runner's self-tests and `elmo-conformance mutate` trial runs use it (README, "Mutation
testing"): it has a loop (a mutant of it can hang) and a helper nothing calls (its mutants reach
no test)."""

import numpy as np

from elmo_conformance.adapters.input_checks import with_input_checks


def softmax(s):
    """softmax(s) shifted by max(s) (§5.4), summed left to right."""
    shifted = s - s.max()
    e = np.exp(shifted)
    total = e.dtype.type(0)
    k = 0
    while k < len(e):
        total = total + e[k]
        k += 1
    return e / total


def softmax_unshifted(s):
    """An early version, kept for comparison; nothing calls it."""
    e = np.exp(s)
    return e / e.sum()


def mix(s, gamma, layers):
    w = softmax(s)
    out = np.zeros_like(layers[0])
    for weight, layer in zip(w, layers):
        out = out + weight * layer
    return gamma[0] * out


def mix_vjp(s, gamma, layers, g_out):
    w = softmax(s)
    m = np.array([np.sum(layer * g_out) for layer in layers], dtype=layers[0].dtype)
    mu = np.dot(w, m)
    g_s = gamma[0] * w * (m - mu)
    g_gamma = np.array([np.sum(mix(s, np.ones_like(gamma), layers) * g_out)], dtype=layers[0].dtype)
    return g_s, g_gamma, [gamma[0] * wk * g_out for wk in w]


@with_input_checks
class OutsideMix:
    name = "outside-mix"
    capabilities = frozenset({"float64", "float32", "grad", "scalar_mix"})

    def scalar_mix(self, s, gamma, layers):
        dtype = layers[0].dtype
        return np.asarray(mix(s.astype(dtype), gamma.astype(dtype), layers), dtype=dtype)

    def scalar_mix_vjp(self, s, gamma, layers, g_out):
        dtype = layers[0].dtype
        g_s, g_gamma, g_layers = mix_vjp(s.astype(dtype), gamma.astype(dtype), layers, g_out.astype(dtype))
        return g_s.astype(dtype), g_gamma.astype(dtype), [np.asarray(g, dtype=dtype) for g in g_layers]


adapter = OutsideMix()
