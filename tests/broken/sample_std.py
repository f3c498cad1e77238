"""The probe standardizes with the sample standard deviation (divisor N - 1); §7.1 divides by N."""

import numpy as np

from elmo_conformance import reference
from elmo_conformance.adapters.numpy import NumpyAdapter
from elmo_conformance.adapters.numpy.mutants import substitute


def standardize(X):
    constant = np.all(X == X[0], axis=0)
    mu = np.where(constant, X[0], X.mean(axis=0))
    sigma = np.where(constant, 1.0, X.std(axis=0, ddof=1))
    return mu.astype(X.dtype), sigma.astype(X.dtype)


class SampleStd(NumpyAdapter):
    name = "sample-std"

    def fit_linear_probe(self, features, labels, n_classes, l2=1e-3, steps=200, lr=0.5):
        with substitute(reference.probe, "standardize", standardize):
            return reference.fit_linear_probe(features, labels, n_classes, l2=l2, steps=steps, lr=lr)


adapter = SampleStd()
