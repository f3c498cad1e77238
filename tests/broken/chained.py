"""bilm_layers raises while handling another exception (a chain), as library code often does."""

from elmo_conformance.adapters.numpy import NumpyAdapter


class Chained(NumpyAdapter):
    name = "chained"

    def bilm_layers(self, params, ids, lengths=None):
        try:
            return {}["layers"]
        except KeyError:
            raise RuntimeError("the layers could not be built")  # noqa: B904  (the chain is the point)


adapter = Chained()
