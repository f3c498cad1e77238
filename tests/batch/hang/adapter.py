"""ScalarMix never returns: the job runs past its deadline."""

import time

from elmo_conformance.adapters.numpy import NumpyAdapter


class Hangs(NumpyAdapter):
    name = "hangs"

    def scalar_mix(self, s, gamma, layers):
        time.sleep(3600)


adapter = Hangs()
