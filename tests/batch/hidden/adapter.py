"""ScalarMix's softmax shifted by s[0] instead of max(s) (spec §5.1, §5.4): right for every s whose
first entry is its largest or close to it, an overflow for s = (-1000, 0, 1000). The grading file
of tests/test_batch_grading.py hides the tests this fails."""

import numpy as np

from elmo_conformance.adapters.numpy import NumpyAdapter


class ShiftsByFirst(NumpyAdapter):
    name = "hidden"

    def scalar_mix(self, s, gamma, layers):
        with np.errstate(over="ignore", invalid="ignore"):
            e = np.exp(s - s[0])
            w = e / np.sum(e)
        return (gamma[0] * np.tensordot(w.astype(layers[0].dtype), np.stack(layers), axes=1)).astype(layers[0].dtype)


adapter = ShiftsByFirst()
