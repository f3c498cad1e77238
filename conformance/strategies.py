"""Hypothesis strategies, in one place; every draw is labelled so a failure reads as a config.

A draw picks the sizes, a seed and the kind of values; the arrays then come from NumPy's generator
with that seed, so that shrinking works on a handful of integers rather than on whole arrays. The
kinds of values are those that break implementations: logits large enough to overflow a log-sum-exp
that is not shifted (§4.2), s far beyond exp's range (§5.4), 0-d layers (§5.2), tied probe logits
(§7.5), a constant probe column whose floating-point mean differs from its value (0.1, §7.1), and a
nearly constant one (a spread of 1e-9, which a threshold on σ would take for constant).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from elmo_conformance.conformance.data import random_bilm


@dataclass(frozen=True)
class BiLMConfig:
    vocab: int
    d: int
    n_layers: int
    lengths: tuple[int, ...]
    steps: int
    seed: int
    lengths_given: bool
    logit_scale: float = 1.0  # out.weight and out.bias times this: 5000 overflows an unshifted exp (§4.2)

    def build(self) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray | None]:
        """float64 params, ids and lengths (None when the config leaves them absent)."""
        params, ids, lengths = random_bilm(self.seed, self.vocab, self.d, self.n_layers, list(self.lengths), self.steps)
        for name in ("out.weight", "out.bias"):
            params[name] = self.logit_scale * params[name]
        return params, ids, (lengths if self.lengths_given else None)


def bilm_config(data: st.DataObject, min_length: int = 1, logit_scales: tuple[float, ...] = (1.0,)) -> BiLMConfig:
    """V, d, L in 1..3, B, T and lengths (§3): the differential configurations of §14; the output
    layer scaled by one of `logit_scales` (5000 makes logits that overflow an unshifted exp, §4.2)."""
    vocab = data.draw(st.integers(2, 9), label="V")
    d = data.draw(st.integers(1, 5), label="d")
    n_layers = data.draw(st.integers(1, 3), label="L")
    steps = data.draw(st.integers(max(min_length, 1), 6), label="T")
    batch = data.draw(st.integers(1, 4), label="B")
    lengths_given = data.draw(st.booleans(), label="lengths given")
    if lengths_given:
        length = st.integers(max(min_length, 1), steps)
        lengths = tuple(data.draw(st.lists(length, min_size=batch, max_size=batch), label="lengths"))
    else:
        lengths = (steps,) * batch
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    logit_scale = data.draw(st.sampled_from(logit_scales), label="logit scale") if len(logit_scales) > 1 else 1.0
    return BiLMConfig(vocab, d, n_layers, lengths, steps, seed, lengths_given, logit_scale)


def mix_inputs(data: st.DataObject) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], np.ndarray]:
    """(s, gamma, layers, g_out) in float64 for §5 and §6.3; layers of any shape, 0-d included."""
    n = data.draw(st.integers(1, 4), label="number of layers")
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=0, max_size=3), label="layer shape"))
    spread = data.draw(st.sampled_from([0.1, 1.0, 5.0, 30.0, 1000.0]), label="scale of s")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    s = spread * rng.standard_normal(n)
    gamma = np.array([rng.uniform(-2.0, 2.0)])
    layers = [rng.standard_normal(shape) for _ in range(n)]
    return s, gamma, layers, rng.standard_normal(shape)


@dataclass(frozen=True)
class ProbeData:
    features: np.ndarray
    labels: np.ndarray
    n_classes: int
    steps: int
    lr: float
    l2: float
    W: np.ndarray  # weights for probe_accuracy, with tied columns when the draw asks for ties (§7.5)
    b: np.ndarray


def probe_data(data: st.DataObject) -> ProbeData:
    """Small, possibly overlapping classes, an offset, maybe a constant column (of 3.7, or of 0.1,
    whose computed mean is not 0.1), maybe a nearly constant one (§7.1); weights for the accuracy,
    maybe with tied logits (§7.5)."""
    n_classes = data.draw(st.integers(2, 4), label="C")
    n = data.draw(st.integers(n_classes, 24), label="N")
    dims = data.draw(st.integers(1, 5), label="D")
    steps = data.draw(st.integers(0, 30), label="steps")
    lr = data.draw(st.sampled_from([0.05, 0.5, 1.0]), label="lr")
    l2 = data.draw(st.sampled_from([0.0, 1e-3, 0.1]), label="l2")
    constant = data.draw(st.sampled_from([None, 3.7, 0.1]), label="constant column")
    nearly_constant = data.draw(st.booleans(), label="nearly constant column") and dims >= 2
    tied = data.draw(st.booleans(), label="tied logits")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    labels = np.concatenate([np.arange(n_classes), rng.integers(0, n_classes, n - n_classes)])
    centres = rng.normal(0.0, 2.0, (n_classes, dims)) + rng.normal(0.0, 10.0, dims)
    features = centres[labels] + rng.standard_normal((n, dims))
    if constant is not None:
        features[:, 0] = constant
    if nearly_constant:
        features[:, -1] = 1e-9 * rng.standard_normal(n)
    # Whole numbers, so that with rounded features every logit is exact and a tie is a tie.
    W = rng.integers(-3, 4, (dims, n_classes)).astype(np.float64)
    b = rng.integers(-3, 4, n_classes).astype(np.float64)
    if tied:  # classes 0 and the last score the same on every row: argmax must pick 0 (§7.5)
        W[:, -1], b[-1] = W[:, 0], b[0]
    return ProbeData(features, labels.astype(np.int64), n_classes, steps, lr, l2, W, b)
