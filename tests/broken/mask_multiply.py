"""Zeroes padded positions by multiplying with a mask (§3.4 says they are selected): its forward
LSTMs run over every position, padding included, and R^k is then multiplied by the 0/1 mask. With
ordinary inputs that gives exactly 0; when the padded computation overflows, NaN · 0 is NaN."""

import numpy as np

from elmo_conformance import reference
from elmo_conformance.adapters.numpy import NumpyAdapter
from elmo_conformance.reference import validate


class MaskMultiply(NumpyAdapter):
    name = "mask-multiply"

    def bilm_layers(self, params, ids, lengths=None):
        _, d, _, full = validate.check_bilm_inputs(params, ids, lengths)
        selected = reference.bilm_layers(params, ids, lengths)  # the backward halves, and R^0
        unmasked = reference.bilm.run_bilm(params, ids, full, len(selected) - 1)  # f^k at every position
        mask = reference.bilm.real_mask(full, ids.shape[1])[..., None].astype(params["embedding"].dtype)
        with np.errstate(invalid="ignore", over="ignore"):
            return [selected[0]] + [
                np.concatenate([f * mask, r[..., d:]], axis=-1) for f, r in zip(unmasked.f, selected[1:])
            ]


adapter = MaskMultiply()
