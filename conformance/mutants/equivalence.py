"""The equivalence pre-check (spec §13.1): does a mutant change any output of its adapter?

Both adapters are called on the same fixed inputs, chosen so that every catalog defect shows:
three layers (§3.2 acts from layer 2), rows shorter than T (§3.3, §3.4), rows of length >= 2 (§4.1),
γ ≠ 1 and s far from softmax(s) (§5), and probe features far from the origin with a constant
column (§7.4). Outputs are compared bitwise, types and dtypes included; an exception counts as
an output. A mutant that changes none is equivalent on these inputs and is not run.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from elmo_conformance.conformance.data import probe_separable, random_bilm

Call = tuple[str, tuple, dict]


def _calls(dtype: np.dtype, grad: bool) -> Iterator[Call]:
    def cast(x: np.ndarray) -> np.ndarray:
        return x.astype(dtype)

    rng = np.random.default_rng(13)
    params, ids, lengths = random_bilm(13, 9, 4, 3, [6, 4, 2, 7])
    params = {name: cast(value) for name, value in params.items()}
    s, gamma = cast(np.array([0.2, 0.8, 1.8])), cast(np.array([1.5]))
    layers = [cast(rng.standard_normal((2, 3, 4))) for _ in range(3)]
    g_out = cast(rng.standard_normal((2, 3, 4)))
    g_layers = [cast(rng.standard_normal((*ids.shape, 8))) for _ in range(4)]
    probe = probe_separable()
    X, y, n_classes = cast(probe["features"]), probe["labels"], int(probe["n_classes"])
    settings = {"l2": float(probe["l2"]), "steps": int(probe["steps"]), "lr": float(probe["lr"])}

    yield "scalar_mix", (s, gamma, layers), {}
    yield "bilm_layers", (params, ids, lengths), {}
    yield "bilm_logits", (params, ids, lengths), {}
    yield "bilm_loss", (params, ids, lengths), {}
    yield "fit_linear_probe", (X, y, n_classes), settings
    W = np.eye(X.shape[1], n_classes, dtype=dtype)  # only the first columns score, so accuracy < 1
    yield "probe_accuracy", (W, np.zeros(n_classes, dtype=dtype), X, y), {}
    if grad:
        yield "scalar_mix_vjp", (s, gamma, layers, g_out), {}
        yield "bilm_loss_grad", (params, ids, lengths), {}
        yield "bilm_layers_vjp", (params, ids, lengths, g_layers), {}


def _outcome(function: Callable, args: tuple, kwargs: dict) -> Any:
    try:
        return function(*args, **kwargs)
    except Exception as exc:  # an exception is an output too
        return ("raised", type(exc).__name__, str(exc))


def first_difference(a: Any, b: Any, path: str) -> str | None:
    """Where two outputs differ, bitwise, or None when identical."""
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} instead of {type(b).__name__}"
    if isinstance(a, np.ndarray):
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"{path}: {a.dtype}{list(a.shape)} instead of {b.dtype}{list(b.shape)}"
        same = np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
        return None if same else f"{path}: values differ"
    if isinstance(a, Mapping):
        if set(a) != set(b):
            return f"{path}: keys differ"
        return next((d for k in sorted(a) if (d := first_difference(a[k], b[k], f"{path}[{k!r}]"))), None)
    if isinstance(a, Sequence) and not isinstance(a, str):
        if len(a) != len(b):
            return f"{path}: length {len(a)} instead of {len(b)}"
        return next((d for i, (x, y) in enumerate(zip(a, b)) if (d := first_difference(x, y, f"{path}[{i}]"))), None)
    same = a == b or (isinstance(a, float) and a != a and b != b)
    return None if same else f"{path}: {a!r} instead of {b!r}"


def changed_output(clean: object, mutant: object, capabilities: frozenset[str]) -> str | None:
    """The first output the mutant changes, described; None when it is equivalent on these inputs."""
    dtype = np.dtype("float64" if "float64" in capabilities else "float32")
    for method, args, kwargs in _calls(dtype, "grad" in capabilities):
        expected = _outcome(getattr(clean, method), copy.deepcopy(args), dict(kwargs))
        given = copy.deepcopy(args)
        got = _outcome(getattr(mutant, method), given, dict(kwargs))
        difference = first_difference(got, expected, f"{method}()") or first_difference(
            given, args, f"{method}'s inputs after the call"
        )
        if difference:
            return difference
    return None
