"""§7: the linear probe."""

from __future__ import annotations

import numpy as np

from elmo_conformance.reference import validate


def standardize(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """§7.1: (μ, σ) per column; a constant column gets μ = its value and σ = 1."""
    constant = np.all(X == X[0], axis=0)
    mu = np.where(constant, X[0], X.mean(axis=0))
    sigma = np.where(constant, 1.0, X.std(axis=0)).astype(X.dtype)
    return mu.astype(X.dtype), sigma


def softmax_rows(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def gradient_step(Z: np.ndarray, Y: np.ndarray, V: np.ndarray, a: np.ndarray, l2: float, lr: float):
    """§7.3: one full-batch step on F(V, a) of §7.2; both updates use the gradient at (V, a)."""
    G = softmax_rows(Z @ V + a)
    G -= Y  # in place: G is [N, C], the largest array of a step after Z
    G /= len(Z)
    return V - lr * (Z.T @ G + l2 * V), a - lr * G.sum(axis=0)


def fold_back(V: np.ndarray, a: np.ndarray, mu: np.ndarray, sigma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """§7.4: weights for raw features, X W + b = Z V + a."""
    W = V / sigma[:, None]
    return W, a - mu @ W


def fit_linear_probe(
    features: np.ndarray, labels: np.ndarray, n_classes: int, l2: float = 1e-3, steps: int = 200, lr: float = 0.5
) -> tuple[np.ndarray, np.ndarray]:
    """§7: standardize, `steps` gradient-descent steps from zero, fold back. Returns (W, b)."""
    X, y = validate.check_fit_inputs(features, labels, n_classes, steps, lr, l2)
    dtype = X.dtype
    mu, sigma = standardize(X)
    Z = (X - mu) / sigma
    Y = np.eye(n_classes, dtype=dtype)[y]
    V = np.zeros((X.shape[1], n_classes), dtype=dtype)
    a = np.zeros(n_classes, dtype=dtype)
    lr_, l2_ = dtype.type(lr), dtype.type(l2)
    for _ in range(steps):
        V, a = gradient_step(Z, Y, V, a, l2_, lr_)
    return fold_back(V, a, mu, sigma)


def probe_accuracy(W: np.ndarray, b: np.ndarray, features: np.ndarray, labels: np.ndarray) -> float:
    """§7.5: the fraction of rows whose argmax (lowest index on ties) equals the label."""
    X = validate.check_features(features)
    n_classes = validate.check_probe_weights(W, b, X.shape[1])
    y = validate.check_labels(labels, len(X), n_classes)
    predicted = np.argmax(X @ W.astype(X.dtype) + b.astype(X.dtype), axis=1)
    return float(np.mean(predicted == y))
