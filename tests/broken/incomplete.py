"""Declares a name and capabilities but only one protocol function."""

from elmo_conformance import reference


class Incomplete:
    name = "incomplete"
    capabilities = frozenset({"float64"})
    bilm_layers = staticmethod(reference.bilm_layers)


adapter = Incomplete()
