"""scalar_mix never returns."""

import time

from elmo_conformance.adapters.numpy import NumpyAdapter


class Hangs(NumpyAdapter):
    name = "hangs"

    def scalar_mix(self, s, gamma, layers):
        while True:
            time.sleep(0.05)


adapter = Hangs()
