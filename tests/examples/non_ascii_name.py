"""An adapter whose name is not ASCII, declaring catalog mutant s01, for the mutation runner's
tests: pytest escapes the name in node ids (`[m\\xefne-float64]`), and the runner must still find
the adapter's tests and run its mutant. It computes in float64 only, and the mutant says what it
replaces, which keeps the run short."""

import numpy as np

from elmo_conformance import reference
from elmo_conformance.adapters.numpy import NumpyAdapter


class Accented(NumpyAdapter):
    name = "mïne"
    capabilities = frozenset({"float64", "grad"})


class RawWeights(Accented):
    """s01: the raw s as weights."""

    replaces = (reference.scalar_mix,)

    def scalar_mix(self, s, gamma, layers):
        reference.scalar_mix(s, gamma, layers)  # for its validation (§8)
        dtype = layers[0].dtype
        return gamma.astype(dtype)[0] * np.tensordot(s.astype(dtype), np.stack(layers), axes=1)


adapter = Accented()
adapter.mutants = {"s01": RawWeights}
