"""Too strict on the other side of §8's boundaries: refuses ids of any integer dtype but int64
(§8 allows every integer dtype) and an id of V - 1 (an off-by-one: V03's range is [0, V))."""

import numpy as np

from elmo_conformance.adapters.numpy import NumpyAdapter


class StrictIds(NumpyAdapter):
    name = "strict-ids"

    def bilm_layers(self, params, ids, lengths=None):
        if isinstance(ids, np.ndarray) and ids.dtype != np.int64:
            raise ValueError(f"ids: expected int64, got {ids.dtype}")
        if isinstance(ids, np.ndarray) and ids.size and ids.max() >= params["embedding"].shape[0] - 1:
            raise ValueError("ids: expected values in [0, V - 1)")
        return super().bilm_layers(params, ids, lengths)


adapter = StrictIds()
