"""bilm_loss returns a 0-dimensional array holding the loss, not the Python float of §1.2."""

import numpy as np

from elmo_conformance.adapters.numpy import NumpyAdapter


class ArrayLoss(NumpyAdapter):
    name = "array-loss"

    def bilm_loss(self, params, ids, lengths):
        return np.array(super().bilm_loss(params, ids, lengths))


adapter = ArrayLoss()
