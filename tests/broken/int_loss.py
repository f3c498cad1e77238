"""bilm_loss returns a Python int, not the Python float of §1.2 (the loss, rounded)."""

from elmo_conformance.adapters.numpy import NumpyAdapter


class IntLoss(NumpyAdapter):
    name = "int-loss"

    def bilm_loss(self, params, ids, lengths):
        return round(super().bilm_loss(params, ids, lengths))


adapter = IntLoss()
