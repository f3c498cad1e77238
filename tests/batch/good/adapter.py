"""A correct implementation: the reference, under its own name."""

from elmo_conformance.adapters.numpy import NumpyAdapter


class Good(NumpyAdapter):
    name = "good"


adapter = Good()
