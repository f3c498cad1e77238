"""bilm_layers returns masked arrays whose padded positions are masked out instead of 0 (§3.4): the
data underneath hold whatever was computed there. A masked array is an ndarray subclass, whose
comparisons and finiteness checks skip masked entries."""

import numpy as np

from elmo_conformance.adapters.numpy import NumpyAdapter


class MaskedLayers(NumpyAdapter):
    name = "masked-layers"

    def bilm_layers(self, params, ids, lengths):
        layers = super().bilm_layers(params, ids, lengths)
        T = ids.shape[1]
        full = np.full(ids.shape[0], T) if lengths is None else np.asarray(lengths)
        padded = np.arange(T)[None, :] >= full[:, None]
        out = []
        for layer in layers:
            data = layer.copy()
            data[padded] = np.nan  # never meant to be seen
            out.append(np.ma.masked_array(data, mask=np.broadcast_to(padded[:, :, None], data.shape)))
        return out


adapter = MaskedLayers()
