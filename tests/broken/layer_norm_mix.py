"""ScalarMix as AllenNLP's ScalarMix(do_layer_norm=True) computes it: each layer is normalized to
mean 0 and variance 1 over its elements before the mix (§5.2 mixes the layers as they are)."""

import numpy as np

from elmo_conformance.adapters.numpy import NumpyAdapter
from elmo_conformance.reference import validate


class LayerNormMix(NumpyAdapter):
    name = "layer-norm-mix"

    def scalar_mix(self, s, gamma, layers):
        stacked = validate.check_mix(s, gamma, layers)
        mean = stacked.mean(axis=tuple(range(1, stacked.ndim)), keepdims=True)
        var = ((stacked - mean) ** 2).mean(axis=tuple(range(1, stacked.ndim)), keepdims=True)
        normed = (stacked - mean) / np.sqrt(var + 1e-12)
        w = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
        return np.asarray(gamma[0] * np.tensordot(w.astype(stacked.dtype), normed, axes=1), dtype=stacked.dtype)


adapter = LayerNormMix()
