"""How the biLM's cost grows with the padded length T and the batch size B.

Each point is a side-by-side race as in bench/bilm.py. The work is linear in B and in T (one LSTM
step per token, one output product per scored position), so time should be too: each contender's
medians are fitted with time = a + b·x, and the fit's r² and the fixed cost a (per-call overhead
that does not shrink with the input) are reported.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from elmo_conformance.adapters.loading import LoadedAdapter

from .bilm import BiLMSize, compare


def linear_fit(xs: list[float], ys: list[float]) -> dict:
    """Least squares y = a + b·x, with r² (1 for a perfect line)."""
    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    slope, intercept = np.polyfit(x, y, 1)
    residual = y - (intercept + slope * x)
    total = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float((residual**2).sum()) / total if total > 0 else 1.0
    return {"intercept_s": float(intercept), "slope_s": float(slope), "r2": r2}


def sweep(
    adapters: list[LoadedAdapter],
    base: BiLMSize,
    axis: str,
    values: list[int],
    dtype: str,
    repeats: int,
    rtol: float,
) -> dict:
    """Race every contender at each value of `axis` ("steps" or "batch"), the rest as in `base`."""
    if axis not in ("steps", "batch"):
        raise ValueError(f"axis: expected 'steps' or 'batch', got {axis!r}")
    points = [compare(adapters, replace(base, **{axis: v}), dtype, repeats, None, rtol) for v in values]
    names = [name for name in points[0]["results"] if all(name in p["results"] for p in points)]
    medians = {name: [p["results"][name]["median_s"] for p in points] for name in names}
    return {
        "axis": "T" if axis == "steps" else "B",
        "values": values,
        "dtype": dtype,
        "base_size": base.as_json(),
        "median_s": medians,
        "fit": {name: linear_fit(values, ys) for name, ys in medians.items()},
        "skipped": {name: reason for p in points for name, reason in p["skipped"].items()},
    }
