"""Tolerance margins (spec §10): how much of its tolerance each comparison used.

A comparison of an actual array `a` with the expected `e` passes when |a - e| <= atol + rtol |e|
elementwise. Its *margin* is max |a - e| / (atol + rtol |e|) over the elements: below 1 it passes,
and how far below says how much room is left (0.9 is one rounding change from failing, 1e-3 has
room). An all-zero difference has margin 0; a NaN, an infinite difference or a shape mismatch has
an infinite margin.

`Case.tol(quantity)` returns a `Tolerance`: the {'rtol', 'atol'} dict of §10 that also carries the
quantity, the adapter's name, dtype and device, so that `assert_close` can `record` each
comparison into the `MarginCollector` that the report's Recorder activates for its session.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np


class Tolerance(dict):
    """{'rtol', 'atol'} of one quantity of §10, for one adapter in one dtype on one device."""

    def __init__(self, values: dict[str, float], quantity: str, adapter: str, dtype: str, device: str = "cpu") -> None:
        super().__init__(values)
        self.quantity = quantity
        self.adapter = adapter
        self.dtype = dtype
        self.device = device

    def __reduce__(self) -> tuple:  # picklable with its attributes (process adapters, workers)
        return (Tolerance, (dict(self), self.quantity, self.adapter, self.dtype, self.device))


def margin(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> float:
    """max |a - e| / (atol + rtol |e|); 0 when every difference is 0, inf for a NaN or an
    infinite difference (§10's rule in float64, as assert_close applies it)."""
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    if a.shape != e.shape:
        return math.inf
    if a.size == 0:
        return 0.0
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        diff = np.abs(a - e)
        bound = atol + rtol * np.abs(e)
        ratio = np.where(diff == 0, 0.0, diff / bound)  # 0/0 where the bound is 0 and a == e counts as 0
    ratio = np.where(np.isnan(ratio), np.inf, ratio)
    return float(ratio.max())


@dataclass
class Margin:
    """The largest margin of one adapter, dtype and quantity, with what was compared."""

    max_margin: float = 0.0
    comparisons: int = 0
    values: int = 0
    failed: int = 0
    worst: str = ""
    worst_test: str | None = None
    rtol: float = 0.0
    atol: float = 0.0
    device: str = "cpu"

    def as_json(self) -> dict[str, Any]:
        finite = math.isfinite(self.max_margin)
        return {
            "max_margin": self.max_margin if finite else None,
            "comparisons": self.comparisons,
            "values": self.values,
            "failed": self.failed,
            "worst": self.worst,
            "worst_test": self.worst_test,
            "rtol": self.rtol,
            "atol": self.atol,
            "device": self.device,
        }


@dataclass
class MarginCollector:
    """Every recorded comparison of a session, kept as the largest margin per adapter, dtype and
    quantity; `current_test` names the test running now (the Recorder sets it)."""

    entries: dict[tuple[str, str, str], Margin] = field(default_factory=dict)
    current_test: str | None = None

    def add(self, tol: Tolerance, value: float, size: int, what: str, failed: bool | None = None) -> None:
        """One comparison; `failed` is the comparison's own verdict (default: margin > 1)."""
        entry = self.entries.setdefault((tol.adapter, tol.dtype, tol.quantity), Margin())
        entry.comparisons += 1
        entry.values += size
        entry.failed += (not value <= 1.0) if failed is None else bool(failed)
        entry.rtol, entry.atol, entry.device = float(tol["rtol"]), float(tol["atol"]), tol.device
        if entry.comparisons == 1 or value > entry.max_margin:
            entry.max_margin, entry.worst, entry.worst_test = value, what, self.current_test

    def as_json(self) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
        """{adapter: {dtype: {quantity: Margin.as_json()}}}, in the order first seen."""
        out: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
        for (adapter, dtype, quantity), entry in self.entries.items():
            out.setdefault(adapter, {}).setdefault(dtype, {})[quantity] = entry.as_json()
        return out


_active: MarginCollector | None = None


def activate(collector: MarginCollector | None) -> None:
    """Send the margins of `record` to `collector` (None: record nothing)."""
    global _active
    _active = collector


def active() -> MarginCollector | None:
    return _active


def record(
    actual: np.ndarray, expected: np.ndarray, tol: dict[str, float], what: str, failed: bool | None = None
) -> float | None:
    """Record one comparison's margin when `tol` is a Tolerance and a collector is active; returns
    the margin (None when nothing was recorded). `failed`: the comparison's verdict, if known."""
    if _active is None or not isinstance(tol, Tolerance):
        return None
    value = margin(actual, expected, tol["rtol"], tol["atol"])
    _active.add(tol, value, int(np.size(actual)), what, failed)
    return value
