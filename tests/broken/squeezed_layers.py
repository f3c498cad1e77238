"""Stacks the hidden layers into one [L, B, T, 2d] array and passes it through a helper that drops
a leading axis of size 1 (written for a batch of one sentence): with L = 1 it drops the layer axis
instead, and the rows of the batch come back as layers. Only a biLM with L = 1 reaches the bug."""

import numpy as np

from elmo_conformance import reference
from elmo_conformance.adapters.numpy import NumpyAdapter


def drop_single_batch(x):
    return x[0] if x.shape[0] == 1 else x


class SqueezedLayers(NumpyAdapter):
    name = "squeezed-layers"

    def bilm_layers(self, params, ids, lengths=None):
        layers = reference.bilm_layers(params, ids, lengths)
        hidden = drop_single_batch(np.stack(layers[1:]))
        return [layers[0], *hidden]


adapter = SqueezedLayers()
