"""Accepts lengths longer than T (§8 row V05) by clipping them."""

import numpy as np

from elmo_conformance.adapters.numpy import NumpyAdapter


class LaxLengths(NumpyAdapter):
    name = "lax-lengths"

    def bilm_layers(self, params, ids, lengths):
        if lengths is not None:
            lengths = np.minimum(lengths, ids.shape[1])
        return super().bilm_layers(params, ids, lengths)


adapter = LaxLengths()
