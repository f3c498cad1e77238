"""Two probe shortcuts of §7: one shift for the whole softmax array instead of one per row (§7.2:
at a large learning rate some row's exponentials all underflow, and 0 / 0 is NaN), and a column
taken as constant when none of its values is below its first row's (§7.1 decides by equality)."""

import numpy as np

from elmo_conformance import reference
from elmo_conformance.adapters.numpy import NumpyAdapter
from elmo_conformance.adapters.numpy.mutants import substitute


def softmax_rows(z):
    e = np.exp(z - z.max())
    return e / e.sum(axis=1, keepdims=True)


def standardize(X):
    constant = np.all(X >= X[0], axis=0)
    mu = np.where(constant, X[0], X.mean(axis=0))
    return mu.astype(X.dtype), np.where(constant, 1.0, X.std(axis=0)).astype(X.dtype)


class ProbeShortcuts(NumpyAdapter):
    name = "probe-shortcuts"

    def fit_linear_probe(self, features, labels, n_classes, l2=1e-3, steps=200, lr=0.5):
        with (
            substitute(reference.probe, "softmax_rows", softmax_rows),
            substitute(reference.probe, "standardize", standardize),
            np.errstate(all="ignore"),
        ):
            return reference.fit_linear_probe(features, labels, n_classes, l2=l2, steps=steps, lr=lr)


adapter = ProbeShortcuts()
