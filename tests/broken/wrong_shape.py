"""bilm_logits returns [B, T, V + 1] arrays."""

import numpy as np

from elmo_conformance.adapters.numpy import NumpyAdapter


class WrongShape(NumpyAdapter):
    name = "wrong-shape"

    def bilm_logits(self, params, ids, lengths):
        fwd, bwd = super().bilm_logits(params, ids, lengths)
        pad = np.zeros((*fwd.shape[:2], 1), fwd.dtype)
        return np.concatenate([fwd, pad], axis=-1), np.concatenate([bwd, pad], axis=-1)


adapter = WrongShape()
