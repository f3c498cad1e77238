"""The loss's log-sum-exp is not shifted by the maximum (§4.2 says "computed stably"): with logits
beyond about 710 exp overflows in float64 and the loss is infinite or NaN."""

import numpy as np

from elmo_conformance import reference
from elmo_conformance.adapters.numpy import NumpyAdapter
from elmo_conformance.reference import validate


class UnshiftedLogSumExp(NumpyAdapter):
    name = "unshifted-lse"

    def bilm_loss(self, params, ids, lengths=None):
        _, _, _, full = validate.check_bilm_inputs(params, ids, lengths)
        validate.check_has_targets(lengths, full)
        total = 0.0
        for logits, targets in zip(reference.bilm_logits(params, ids, lengths), reference.loss.targets(ids, full)):
            scored = targets >= 0
            z = logits[scored]
            with np.errstate(over="ignore", invalid="ignore"):
                ce = np.log(np.exp(z).sum(axis=1)) - z[np.arange(len(z)), targets[scored]]
            total += 0.5 * float(ce.mean())
        return total


adapter = UnshiftedLogSumExp()
