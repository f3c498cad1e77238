"""Side-by-side timing: warm-up, then interleaved repeats, reported as medians."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Timing:
    """The repeats of one contender, in seconds."""

    times: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def spread(self) -> float:
        """(max - min) / median: how much the shared machine disturbed this contender."""
        return (max(self.times) - min(self.times)) / self.median if self.median > 0 else 0.0

    def as_json(self) -> dict:
        return {"median_s": self.median, "min_s": min(self.times), "spread": self.spread, "times_s": list(self.times)}


def time_once(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def interleaved(
    contenders: Mapping[str, Callable[[], object]], repeats: int, warmup: int = 1
) -> tuple[dict[str, Timing], dict[str, str]]:
    """Time each contender `repeats` times, alternating them so that a slow spell of the machine
    hits every side alike; the order flips every round so no side always runs first.

    Returns (timings, errors): a contender that raises is dropped from the race and its error
    kept, so one broken implementation never stops the others being measured.
    """
    if repeats < 1:
        raise ValueError(f"repeats: expected an integer >= 1, got {repeats!r}")
    if warmup < 0:
        raise ValueError(f"warmup: expected an integer >= 0, got {warmup!r}")
    names = list(contenders)
    times: dict[str, list[float]] = {name: [] for name in names}
    errors: dict[str, str] = {}
    for round_ in range(-warmup, repeats):
        for name in names if round_ % 2 == 0 else reversed(names):
            if name in errors:
                continue
            try:
                elapsed = time_once(contenders[name])
            except Exception as exc:  # reported, never a crashed benchmark
                errors[name] = f"{type(exc).__name__}: {exc}"
                continue
            if round_ >= 0:
                times[name].append(elapsed)
    return {name: Timing(tuple(t)) for name, t in times.items() if name not in errors}, errors
