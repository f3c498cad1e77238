"""Shifts softmax(s) by s[0] instead of max(s) (§5.1, §5.4): the same weights for ordinary s, NaN
once s[0] is far below the largest entry."""

import numpy as np

from elmo_conformance.adapters.numpy import NumpyAdapter
from elmo_conformance.reference import validate


class S0Shift(NumpyAdapter):
    name = "s0-shift"

    def scalar_mix(self, s, gamma, layers):
        stacked = validate.check_mix(s, gamma, layers)
        with np.errstate(all="ignore"):
            w = np.exp(s - s[0])
            w = w / w.sum()
            return np.asarray(gamma[0] * np.tensordot(w.astype(stacked.dtype), stacked, axes=1), dtype=stacked.dtype)


adapter = S0Shift()
