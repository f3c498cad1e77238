"""The fixtures (§12) as the tests use them, and small random biLM configurations.

Every fixture is read through ``fixtures.manifest.load_fixture``: its bytes are hashed and
compared with the manifest's SHA-256 as the start-up check verified it, and those same bytes are
parsed, so a file changed after start-up fails the tests that read it, naming the file (§12).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from elmo_conformance.fixtures.manifest import load_fixture
from elmo_conformance.reference.params import init_params


def _split(arrays: dict[str, np.ndarray], prefix: str) -> dict[str, np.ndarray]:
    return {key[len(prefix) :]: value for key, value in arrays.items() if key.startswith(prefix)}


@cache
def golden() -> dict:
    """golden_bilm.npz (§12.2), with `params`, `grad_loss` and `grad_mix` as dicts."""
    arrays = load_fixture("golden_bilm.npz")
    out = {key: value for key, value in arrays.items() if "." not in key}
    for prefix in ("params", "grad_loss", "grad_mix"):
        out[prefix] = _split(arrays, prefix + ".")
    return out


@cache
def probe_separable() -> dict[str, np.ndarray]:
    """probe_separable.npz (§12.3)."""
    return load_fixture("probe_separable.npz")


@cache
def scalar_mix_examples() -> dict[str, dict]:
    """scalar_mix_examples.json (§12.1), by example name."""
    return {example["name"]: example for example in load_fixture("scalar_mix_examples.json")["examples"]}


@dataclass(frozen=True)
class Learning:
    """The learning experiment's data (§9, §12.4)."""

    corpus: dict
    init: dict[str, np.ndarray]
    thresholds: dict[str, dict[str, str]]


@cache
def learning() -> Learning:
    corpus = load_fixture("learning_corpus.json")
    init = _split(load_fixture("learning_init.npz"), "params.")
    rows = {row["metric"]: row for row in load_fixture("learning_thresholds.tsv")}
    return Learning(corpus, init, rows)


def random_bilm(
    seed: int, vocab: int, d: int, n_layers: int, lengths: list[int], steps: int | None = None, scale: float = 1.0
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """float64 params drawn as PyTorch would (times `scale`), random ids, and the lengths given.

    Padded positions get random ids too, so that a padding bug has something to read.
    """
    rng = np.random.default_rng(seed)
    params = {name: scale * value for name, value in init_params(vocab, d, n_layers, rng).items()}
    steps = steps or max(lengths)
    ids = rng.integers(0, vocab, size=(len(lengths), steps))
    return params, ids, np.array(lengths, dtype=np.int64)


def widen(value):
    """Floating arrays (also inside dicts and lists) to float64: expected values are computed in
    float64 from the very inputs the adapter got (§10)."""
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return value.astype(np.float64)
    if isinstance(value, dict):
        return {key: widen(item) for key, item in value.items()}
    if isinstance(value, list):
        return [widen(item) for item in value]
    return value


def real_mask(lengths: np.ndarray, steps: int) -> np.ndarray:
    """[B, T]: True at real positions (§1.1)."""
    return np.arange(steps)[None, :] < lengths[:, None]
