"""Rejects a bad s with a leaked library error that names s only as a substring (§1.3, §8)."""

import numpy as np

from elmo_conformance.adapters.numpy import NumpyAdapter


class LeakyErrors(NumpyAdapter):
    name = "leaky-errors"

    def scalar_mix(self, s, gamma, layers):
        if isinstance(s, np.ndarray) and s.shape != (len(layers),):
            # What np.reshape says; "size" and "shape" contain the letter s, but not the argument s.
            raise ValueError(f"cannot reshape array of size {s.size} into shape ({len(layers)},)")
        return super().scalar_mix(s, gamma, layers)


adapter = LeakyErrors()
