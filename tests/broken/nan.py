"""bilm_layers returns NaN in R^1 at a real position."""

import numpy as np

from elmo_conformance.adapters.numpy import NumpyAdapter


class NaNLayers(NumpyAdapter):
    name = "nan"

    def bilm_layers(self, params, ids, lengths):
        layers = super().bilm_layers(params, ids, lengths)
        layers[1][0, 0, 0] = np.nan
        return layers


adapter = NaNLayers()
