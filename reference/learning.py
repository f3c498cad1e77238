"""§9: the learning experiment, shared by the conformance test and the thresholds generator.

`impl` is anything with the protocol's function names (§11): an adapter, the `reference` module,
or the harness's checked view of an adapter.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def adamw(
    params: dict[str, np.ndarray],
    grad: Any,
    steps: int,
    lr: float,
    betas: tuple[float, float],
    eps: float,
    weight_decay: float,
) -> dict[str, np.ndarray]:
    """§9.2: PyTorch's AdamW, decoupled weight decay on every parameter; returns new arrays."""
    beta1, beta2 = betas
    p = {name: value.copy() for name, value in params.items()}
    m = {name: np.zeros_like(value) for name, value in p.items()}
    v = {name: np.zeros_like(value) for name, value in p.items()}
    for t in range(1, steps + 1):
        g = grad(p)
        for name in p:
            p[name] = p[name] - lr * weight_decay * p[name]
            m[name] = beta1 * m[name] + (1 - beta1) * g[name]
            v[name] = beta2 * v[name] + (1 - beta2) * g[name] ** 2
            m_hat = m[name] / (1 - beta1**t)
            v_hat = v[name] / (1 - beta2**t)
            p[name] = (p[name] - lr * m_hat / (np.sqrt(v_hat) + eps)).astype(params[name].dtype)
    return p


def batch(corpus: dict) -> tuple[np.ndarray, np.ndarray]:
    """The whole corpus as one batch: ids [B, T] and lengths [B] (§9.1)."""
    return np.array(corpus["ids"], dtype=np.int64), np.array(corpus["lengths"], dtype=np.int64)


def train(impl: Any, corpus: dict, params: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """§9.2: the corpus's AdamW settings on bilm_loss_grad, from `params`."""
    ids, lengths = batch(corpus)
    settings = corpus["training"]
    return adamw(
        params,
        lambda p: impl.bilm_loss_grad(p, ids, lengths),
        steps=settings["steps"],
        lr=settings["lr"],
        betas=tuple(settings["betas"]),
        eps=settings["eps"],
        weight_decay=settings["weight_decay"],
    )


def saw_features(layer: np.ndarray, corpus: dict, held_out: bool) -> tuple[np.ndarray, np.ndarray]:
    """The rows of one layer at the "saw" occurrences of one split, and their labels (§9.1)."""
    picked = [o for o in corpus["saw"] if (o["sentence"] >= corpus["n_train"]) == held_out]
    rows = np.array([layer[o["sentence"], o["position"]] for o in picked])
    return rows, np.array([o["label"] for o in picked], dtype=np.int64)


def evaluate(impl: Any, corpus: dict, params: dict[str, np.ndarray]) -> dict[str, float]:
    """§9.3: the final loss, and held-out probe accuracies on R^0 and R^1 with the majority rate."""
    ids, lengths = batch(corpus)
    layers = impl.bilm_layers(params, ids, lengths)
    result = {"final_loss": float(impl.bilm_loss(params, ids, lengths))}
    for k in (0, 1):
        X_train, y_train = saw_features(layers[k], corpus, held_out=False)
        X_test, y_test = saw_features(layers[k], corpus, held_out=True)
        W, b = impl.fit_linear_probe(X_train, y_train, 2)
        result[f"acc_r{k}"] = float(impl.probe_accuracy(W, b, X_test, y_test))
    _, y_train = saw_features(layers[0], corpus, held_out=False)
    _, y_test = saw_features(layers[0], corpus, held_out=True)
    majority_class = int(np.argmax(np.bincount(y_train, minlength=2)))
    result["majority"] = float(np.mean(y_test == majority_class))
    return result
