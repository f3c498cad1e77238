"""A third-party adapter that declares mutants (spec §11, §13), for the mutation runner's tests
(tests/test_mutants_runner.py end to end, tests/test_mutants_judging.py one mutant at a time).

It wraps the reference without subclassing the built-in adapter and computes in float64 only,
which keeps a full mutation run short. It declares two catalog mutants and one of each kind of
extra the runner must report: killed, hanging, crashing the process, equivalent and surviving.
Each declares the reference function it stands in for (`replaces`, §13.1), so that it runs only
the tests that reach it, except x-crash: without `replaces` every test of the suite is selected
(it ends the process in the equivalence pre-check, before its first test, so that costs nothing).
"""

from __future__ import annotations

import os
import time

import numpy as np

from elmo_conformance import reference


class Mine:
    name = "mine"
    capabilities = frozenset({"float64", "grad"})

    scalar_mix = staticmethod(reference.scalar_mix)
    scalar_mix_vjp = staticmethod(reference.scalar_mix_vjp)
    bilm_layers = staticmethod(reference.bilm_layers)
    bilm_logits = staticmethod(reference.bilm_logits)
    bilm_loss = staticmethod(reference.bilm_loss)
    bilm_loss_grad = staticmethod(reference.bilm_loss_grad)
    bilm_layers_vjp = staticmethod(reference.bilm_layers_vjp)
    fit_linear_probe = staticmethod(reference.fit_linear_probe)
    probe_accuracy = staticmethod(reference.probe_accuracy)


class RawWeights(Mine):
    """s01: the raw s as weights."""

    replaces = (reference.scalar_mix,)

    def scalar_mix(self, s, gamma, layers):
        reference.scalar_mix(s, gamma, layers)  # for its validation (§8)
        dtype = layers[0].dtype
        return gamma.astype(dtype)[0] * np.tensordot(s.astype(dtype), np.stack(layers), axes=1)


class NoGamma(Mine):
    """s02: γ is never applied."""

    replaces = (reference.scalar_mix,)

    def scalar_mix(self, s, gamma, layers):
        reference.scalar_mix(s, gamma, layers)
        return reference.scalar_mix(s, np.ones_like(gamma), layers)


class MeanOfRowMeans(Mine):
    """The loss averages per-row means instead of taking one token-level mean (§4.2)."""

    replaces = (reference.bilm_loss,)

    def bilm_loss(self, params, ids, lengths=None):
        reference.bilm_loss(params, ids, lengths)  # validates (§8) and refuses a batch with no target (§4.3)
        full = np.full(len(ids), ids.shape[1]) if lengths is None else lengths
        rows = [reference.bilm_loss(params, ids[b : b + 1, : full[b]]) for b in range(len(ids)) if full[b] > 1]
        return float(np.mean(rows))


class Hangs(Mine):
    """scalar_mix never returns."""

    replaces = (reference.scalar_mix,)  # its deadline: the short tests of the mix, not the probe's training

    def scalar_mix(self, s, gamma, layers):
        while True:
            time.sleep(1)


class Crashes(Mine):
    """bilm_loss ends the process."""

    def bilm_loss(self, params, ids, lengths=None):
        os._exit(3)


class SameResults(Mine):
    """The mix of a copy of the list of layers: the same bits, an equivalent mutant."""

    replaces = (reference.scalar_mix,)

    def scalar_mix(self, s, gamma, layers):
        # Only a list is copied: list() of one stacked array would accept what §8 V12 refuses.
        return reference.scalar_mix(s, gamma, list(layers) if isinstance(layers, list) else layers)


class NumpyScalar(Mine):
    """probe_accuracy returns a NumPy float64 (a subclass of float), which the suite accepts."""

    replaces = (reference.probe_accuracy,)

    def probe_accuracy(self, W, b, features, labels):
        return np.float64(reference.probe_accuracy(W, b, features, labels))


adapter = Mine()
adapter.mutants = {
    "s01": RawWeights,
    "s02": NoGamma,
    "x-rowmeans": MeanOfRowMeans,
    "x-hang": Hangs,
    "x-crash": Crashes,
    "x-same": SameResults,
    "x-numpy-scalar": NumpyScalar,
}
