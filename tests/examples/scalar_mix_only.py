"""A ScalarMix-only adapter in the way one wraps a library (spec §11): it declares the component
`scalar_mix` and nothing else, computes with a plain function that validates nothing, and takes
its input checks (§8) from elmo_conformance.adapters.input_checks."""

import numpy as np

from elmo_conformance.adapters.input_checks import with_input_checks


def library_mix(s, gamma, layers):
    """A library's ScalarMix: softmax(s), shifted (§5.4), then γ Σ w_k R^k; no input checks."""
    w = np.exp(s - s.max())
    w = w / w.sum()
    stacked = np.stack(layers)
    return np.asarray(gamma[0] * np.tensordot(w.astype(stacked.dtype), stacked, axes=1), dtype=stacked.dtype)


def library_mix_vjp(s, gamma, layers, g_out):
    w = np.exp(s - s.max())
    w = (w / w.sum()).astype(layers[0].dtype)
    stacked = np.stack(layers)
    m = (stacked * g_out).reshape(len(layers), -1).sum(axis=1)
    mu = w @ m
    g_s = gamma[0] * w * (m - mu)
    return g_s.astype(stacked.dtype), np.array([mu], stacked.dtype), [np.asarray(gamma[0] * wk * g_out) for wk in w]


@with_input_checks
class ScalarMixOnly:
    name = "scalar-mix-only"
    capabilities = frozenset({"float64", "float32", "grad", "scalar_mix"})

    def scalar_mix(self, s, gamma, layers):
        dtype = layers[0].dtype
        return library_mix(s.astype(dtype), gamma.astype(dtype), layers)

    def scalar_mix_vjp(self, s, gamma, layers, g_out):
        dtype = layers[0].dtype
        return library_mix_vjp(s.astype(dtype), gamma.astype(dtype), layers, g_out.astype(dtype))


adapter = ScalarMixOnly()
