"""scalar_mix installs its own SIGALRM handler, which ignores the alarm, then never returns."""

import signal
import time

from elmo_conformance.adapters.numpy import NumpyAdapter


class OwnAlarm(NumpyAdapter):
    name = "own-alarm"

    def scalar_mix(self, s, gamma, layers):
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        while True:
            time.sleep(0.05)


adapter = OwnAlarm()
