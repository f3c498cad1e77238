"""ScalarMix's vjp spins for 30 CPU seconds before answering: its tests pass, but far past their
CPU-time limit (docs/grading.md, "Time limits")."""

import time

from elmo_conformance.adapters.numpy import NumpyAdapter


class Slow(NumpyAdapter):
    name = "slow"

    def scalar_mix_vjp(self, s, gamma, layers, g_out):
        end = time.process_time() + 30
        while time.process_time() < end:
            pass
        return super().scalar_mix_vjp(s, gamma, layers, g_out)


adapter = Slow()
