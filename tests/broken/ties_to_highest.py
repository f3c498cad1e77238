"""probe_accuracy breaks ties towards the highest class index (§7.5 says the lowest)."""

import numpy as np

from elmo_conformance.adapters.numpy import NumpyAdapter
from elmo_conformance.reference import validate


class TiesToHighest(NumpyAdapter):
    name = "ties-to-highest"

    def probe_accuracy(self, W, b, features, labels):
        X = validate.check_features(features)
        validate.check_labels(labels, len(X), validate.check_probe_weights(W, b, X.shape[1]))
        logits = X @ W.astype(X.dtype) + b.astype(X.dtype)
        predicted = logits.shape[1] - 1 - np.argmax(logits[:, ::-1], axis=1)
        return float(np.mean(predicted == labels))


adapter = TiesToHighest()
