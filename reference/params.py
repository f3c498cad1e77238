"""§2.1: the canonical parameter names and shapes of a biLM."""

from __future__ import annotations

import numpy as np

LSTM_PARTS = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
DIRECTIONS = ("fwd", "bwd")


def param_names(n_layers: int) -> list[str]:
    """The 3 + 8L canonical names, in a fixed order (§2.1)."""
    lstm = [f"{dr}.{k}.{part}" for dr in DIRECTIONS for k in range(n_layers) for part in LSTM_PARTS]
    return ["embedding", *lstm, "out.weight", "out.bias"]


def param_shapes(vocab: int, d: int, n_layers: int) -> dict[str, tuple[int, ...]]:
    """Shape of every canonical entry (§2.1); gates are stacked i, f, g, o (§2.2)."""
    lstm_shapes = {"weight_ih": (4 * d, d), "weight_hh": (4 * d, d), "bias_ih": (4 * d,), "bias_hh": (4 * d,)}
    shapes: dict[str, tuple[int, ...]] = {"embedding": (vocab, d)}
    for name in param_names(n_layers)[1:-2]:
        shapes[name] = lstm_shapes[name.rsplit(".", 1)[1]]
    shapes["out.weight"] = (vocab, d)
    shapes["out.bias"] = (vocab,)
    return shapes


def init_params(
    vocab: int, d: int, n_layers: int, rng: np.random.Generator, dtype: type = np.float64
) -> dict[str, np.ndarray]:
    """Draw parameters the way PyTorch's modules do by default.

    The embedding is N(0, 1); every other entry is U(-1/sqrt(d), 1/sqrt(d)), the default of
    `nn.LSTM` and of `nn.Linear` with `d` inputs. Draws follow `param_names` order.
    """
    bound = 1.0 / np.sqrt(d)
    params: dict[str, np.ndarray] = {}
    for name, shape in param_shapes(vocab, d, n_layers).items():
        if name == "embedding":
            value = rng.standard_normal(shape)
        else:
            value = rng.uniform(-bound, bound, size=shape)
        params[name] = value.astype(dtype)
    return params
