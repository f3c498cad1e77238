"""Reads the LSTM gate blocks in the order i, f, o, g (§2.2 says i, f, g, o): every other part of the
biLM is right, so the failure must be headed by the cell (§2.2), not only by the stacks."""

import numpy as np

from elmo_conformance import reference
from elmo_conformance.adapters.numpy import NumpyAdapter
from elmo_conformance.reference import validate


def swapped(params):
    out = {}
    for name, value in params.items():
        if name.startswith(("fwd.", "bwd.")):
            i, f, g, o = np.split(value, 4, axis=0)
            value = np.concatenate([i, f, o, g], axis=0)
        out[name] = value
    return out


class GateOrder(NumpyAdapter):
    name = "gate-order"

    def bilm_layers(self, params, ids, lengths=None):
        validate.check_bilm_inputs(params, ids, lengths)
        return reference.bilm_layers(swapped(params), ids, lengths)


adapter = GateOrder()
