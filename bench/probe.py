"""The probe: each adapter's fit_linear_probe (§7) against scikit-learn's LogisticRegression.

Both fit the same objective on the same data: sklearn's multinomial L2 logistic regression
minimizes C Σ CE + ½‖V‖², which divided by C·N is §7.2's F with l2 = 1 / (C N); so sklearn gets
C = 1 / (l2 N) and the data standardized as §7.1 says (the standardization is not timed for it).
sklearn runs its default solver (L-BFGS) to its default tolerance; §7 takes exactly `steps`
gradient steps. Each is scored on its training rows and on held-out rows from the same source.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from elmo_conformance.adapters.loading import LoadedAdapter
from elmo_conformance.reference.probe import standardize

from .flops import probe_flops
from .timing import interleaved

SKLEARN = "scikit-learn LogisticRegression"


@dataclass(frozen=True)
class ProbeSize:
    n: int = 20000
    dim: int = 1024
    n_classes: int = 17
    steps: int = 200
    held_out: int = 5000
    l2: float = 1e-3
    lr: float = 0.5

    def as_json(self) -> dict:
        return {"N": self.n, "D": self.dim, "C": self.n_classes, "steps": self.steps, "held_out": self.held_out}


def make_data(size: ProbeSize, dtype: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Overlapping Gaussian classes, with columns of unequal scale and offset (so that §7.1's
    standardization matters) and one constant column. Returns (X, y, X_held_out, y_held_out)."""
    rng = np.random.default_rng(seed)
    total = size.n + size.held_out
    means = 0.08 * rng.standard_normal((size.n_classes, size.dim))
    y = rng.integers(0, size.n_classes, size=total)
    y[: size.n_classes] = np.arange(size.n_classes)  # every class is present in the training rows
    scale = np.exp(rng.uniform(-2.0, 2.0, size=size.dim))
    offset = rng.uniform(-5.0, 5.0, size=size.dim)
    X = (means[y] + rng.standard_normal((total, size.dim))) * scale + offset
    X[:, -1] = 3.0
    X = X.astype(dtype)
    return X[: size.n], y[: size.n], X[size.n :], y[size.n :]


def compare(adapters: list[LoadedAdapter], size: ProbeSize, dtype: str, repeats: int, peak: float | None) -> dict:
    """Interleaved fits of scikit-learn (when installed) and every adapter, on the same data."""
    X, y, X_held, y_held = make_data(size, dtype)
    mu, sigma = standardize(X)
    Z, Z_held = (X - mu) / sigma, (X_held - mu) / sigma
    fitted: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    contenders, skipped, sk = {}, {}, _sklearn(size)
    if sk is None:
        skipped[SKLEARN] = "scikit-learn is not installed (nox -s bench installs it)"
    else:
        contenders[SKLEARN] = _fit_sklearn(sk, Z, y, fitted)
    for adapter in adapters:
        if getattr(adapter, "unavailable", None):
            skipped[adapter.name] = f"{adapter.name} cannot run here: {adapter.unavailable}"
            continue
        if dtype not in adapter.capabilities:
            skipped[adapter.name] = f"{adapter.name} does not declare {dtype!r}"
            continue
        contenders[adapter.name] = _fit(adapter, X, y, size, fitted)
    timings, errors = interleaved(contenders, repeats=repeats, warmup=0)
    skipped.update({name: f"raised while timed: {error}" for name, error in errors.items()})
    base = timings[SKLEARN].median if SKLEARN in timings else None
    flops = probe_flops(size.n, size.dim, size.n_classes, size.steps)
    rows = {}
    for name, timing in timings.items():
        W, b = fitted[name]
        # sklearn was fitted on Z; its weights apply to Z, the adapters' to raw features (§7.4)
        train, held = (Z, Z_held) if name == SKLEARN else (X, X_held)
        row = {
            **timing.as_json(),
            "ratio_to_sklearn": timing.median / base if base else None,
            "ratio_of_min_to_sklearn": min(timing.times) / min(timings[SKLEARN].times) if base else None,
            "train_accuracy": _accuracy(W, b, train, y),
            "held_out_accuracy": _accuracy(W, b, held, y_held),
        }
        if name == SKLEARN:
            row.update(n_iter=int(np.max(sk.n_iter_)), max_iter=sk.max_iter)
        else:
            rate = flops / timing.median
            row.update(flops_per_s=rate, fraction_of_peak=rate / peak if peak else None)
        rows[name] = row
    return {
        "dtype": dtype,
        "size": size.as_json(),
        "flops": flops,
        "baseline": SKLEARN,
        "sklearn_C": None if sk is None else sk.C,
        "results": rows,
        "skipped": skipped,
    }


def _sklearn(size: ProbeSize):
    """sklearn's LogisticRegression with §7.2's penalty, or None when sklearn is not installed."""
    try:
        from sklearn.linear_model import LogisticRegression
    except ImportError:
        return None
    return LogisticRegression(C=1.0 / (size.l2 * size.n))


def _fit_sklearn(sk, Z: np.ndarray, y: np.ndarray, fitted: dict):
    def run() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # not converging shows as n_iter == max_iter in the report
            sk.fit(Z, y)
        # coef_ is [C, D]; as (W, b) on Z it is scored by the same code as the adapters
        fitted[SKLEARN] = (sk.coef_.T, sk.intercept_)

    return run


def _fit(adapter: LoadedAdapter, X: np.ndarray, y: np.ndarray, size: ProbeSize, fitted: dict):
    fn = adapter.adapter.fit_linear_probe

    def run() -> None:
        fitted[adapter.name] = fn(X, y, size.n_classes, l2=size.l2, steps=size.steps, lr=size.lr)

    return run


def _accuracy(W: np.ndarray, b: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    """§7.5, computed here so that every contender is scored by the same code."""
    scores = X @ W.astype(X.dtype) + b.astype(X.dtype)
    return float(np.mean(np.argmax(scores, axis=1) == y))
