"""bilm_loss writes into the caller's ids."""

from elmo_conformance.adapters.numpy import NumpyAdapter


class Mutates(NumpyAdapter):
    name = "mutates"

    def bilm_loss(self, params, ids, lengths):
        value = super().bilm_loss(params, ids, lengths)
        ids[0, 0] = (ids[0, 0] + 1) % params["embedding"].shape[0]
        return value


adapter = Mutates()
