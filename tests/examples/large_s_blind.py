"""A ScalarMix-only adapter with one declared mutant that the equivalence pre-check cannot tell
apart (§13.1): `x-unshifted` skips the shift of §5.4 only when some |s| is large, so on the
pre-check's ordinary s it returns the same bits, and only test_scalar_mix_is_stable_for_large_s
sees the overflow. The runner must still run it, and the suite kills it."""

import numpy as np

from elmo_conformance.adapters.input_checks import with_input_checks


def mix(s, gamma, layers, shift=True):
    s = s.astype(layers[0].dtype)
    w = np.exp(s - s.max()) if shift or np.abs(s).max() < 100 else np.exp(s)
    w = w / w.sum()
    stacked = np.stack(layers)
    return np.asarray(gamma[0] * np.tensordot(w.astype(stacked.dtype), stacked, axes=1), dtype=stacked.dtype)


@with_input_checks
class Mix:
    name = "blind"
    capabilities = frozenset({"float64", "scalar_mix"})

    def scalar_mix(self, s, gamma, layers):
        return mix(s, gamma.astype(layers[0].dtype), layers)


@with_input_checks
class Unshifted(Mix):
    """softmax(s) without the shift of §5.4 when some |s| >= 100 (exp overflows)"""

    def scalar_mix(self, s, gamma, layers):
        return mix(s, gamma.astype(layers[0].dtype), layers, shift=False)


adapter = Mix()
adapter.mutants = {"x-unshifted": Unshifted}
