"""bilm_layers raises: every test that needs the layers fails, naming the exception."""

from elmo_conformance.adapters.numpy import NumpyAdapter


class Raises(NumpyAdapter):
    name = "raises"

    def bilm_layers(self, params, ids, lengths):
        raise RuntimeError("the layers are not implemented yet")


adapter = Raises()
