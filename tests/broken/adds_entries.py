"""bilm_loss adds an entry to the caller's params dict, and scalar_mix appends to the caller's list
of layers: no array changes, but the inputs do (§1.4)."""

from elmo_conformance.adapters.numpy import NumpyAdapter


class AddsEntries(NumpyAdapter):
    name = "adds-entries"

    def bilm_loss(self, params, ids, lengths):
        value = super().bilm_loss(params, ids, lengths)
        params["cache.loss"] = value
        return value

    def scalar_mix(self, s, gamma, layers):
        out = super().scalar_mix(s, gamma, layers)
        layers.append(out)
        return out


adapter = AddsEntries()
