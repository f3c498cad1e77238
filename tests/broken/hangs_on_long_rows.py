"""bilm_layers hangs on a batch whose rows are longer than 2 tokens, and works otherwise: a property
test that draws such a batch fails, and Hypothesis, shrinking the failure, would call it again and
again, waiting out the call timeout each time."""

import time

from elmo_conformance.adapters.numpy import NumpyAdapter


class HangsOnLongRows(NumpyAdapter):
    name = "hangs-on-long-rows"

    def bilm_layers(self, params, ids, lengths):
        if getattr(ids, "ndim", 0) == 2 and ids.shape[1] > 2:
            while True:
                time.sleep(0.05)
        return super().bilm_layers(params, ids, lengths)


adapter = HangsOnLongRows()
