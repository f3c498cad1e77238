"""ScalarMix hangs when some |s| is 1000 or more (test_scalar_mix_is_stable_for_large_s, the third
test of conformance/test_scalar_mix.py): the tests before it pass, then the job runs past its
deadline. Its grade counts the tests that finished (docs/grading.md, "Partial results")."""

import time

import numpy as np

from elmo_conformance.adapters.numpy import NumpyAdapter


class HangsLate(NumpyAdapter):
    name = "hang-late"

    def scalar_mix(self, s, gamma, layers):
        if np.max(np.abs(s)) >= 1000:
            time.sleep(3600)
        return super().scalar_mix(s, gamma, layers)


adapter = HangsLate()
