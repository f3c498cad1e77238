"""Hypothesis strategies, in one place; every draw is labelled so a failure reads as a config.

A draw picks the sizes and a seed; the arrays then come from NumPy's generator with that seed, so
that shrinking works on a handful of integers rather than on whole arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from .data import random_bilm


@dataclass(frozen=True)
class BiLMConfig:
    vocab: int
    d: int
    n_layers: int
    lengths: tuple[int, ...]
    steps: int
    seed: int
    lengths_given: bool

    def build(self) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray | None]:
        """float64 params, ids and lengths (None when the config leaves them absent)."""
        params, ids, lengths = random_bilm(self.seed, self.vocab, self.d, self.n_layers, list(self.lengths), self.steps)
        return params, ids, (lengths if self.lengths_given else None)


def bilm_config(data: st.DataObject, min_length: int = 1) -> BiLMConfig:
    """V, d, L in 1..3, B, T and lengths (§3): the differential configurations of §14."""
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
    return BiLMConfig(vocab, d, n_layers, lengths, steps, seed, lengths_given)


def mix_inputs(data: st.DataObject) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], np.ndarray]:
    """(s, gamma, layers, g_out) in float64 for §5 and §6.3."""
    n = data.draw(st.integers(1, 4), label="number of layers")
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3), label="layer shape"))
    spread = data.draw(st.sampled_from([0.1, 1.0, 5.0, 30.0]), label="scale of s")
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


def probe_data(data: st.DataObject) -> ProbeData:
    """Small, possibly overlapping classes, an offset, maybe a constant column (§7)."""
    n_classes = data.draw(st.integers(2, 4), label="C")
    n = data.draw(st.integers(n_classes, 24), label="N")
    dims = data.draw(st.integers(1, 5), label="D")
    steps = data.draw(st.integers(0, 30), label="steps")
    lr = data.draw(st.sampled_from([0.05, 0.5, 1.0]), label="lr")
    l2 = data.draw(st.sampled_from([0.0, 1e-3, 0.1]), label="l2")
    constant = data.draw(st.booleans(), label="constant column")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    labels = np.concatenate([np.arange(n_classes), rng.integers(0, n_classes, n - n_classes)])
    centres = rng.normal(0.0, 2.0, (n_classes, dims)) + rng.normal(0.0, 10.0, dims)
    features = centres[labels] + rng.standard_normal((n, dims))
    if constant:
        features[:, 0] = 3.7
    return ProbeData(features, labels.astype(np.int64), n_classes, steps, lr, l2)
