"""A wrong ScalarMix: the raw s as weights (no softmax), as the mutant s01 does."""

import numpy as np

from elmo_conformance.adapters.numpy import NumpyAdapter


class Wrong(NumpyAdapter):
    name = "wrong"

    def scalar_mix(self, s, gamma, layers):
        return (gamma[0] * np.tensordot(s.astype(layers[0].dtype), np.stack(layers), axes=1)).astype(layers[0].dtype)


adapter = Wrong()
