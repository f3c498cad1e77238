"""A seeded sample of the generated mutants, and how far its score can be from the whole set's
(spec §13.2; docs/mutation.md, "Samples").

`--max-mutants N --seed S` draws N of the generated mutants, stratified by source file with
proportional allocation (each file gets its share of N, the remainders going to the files with the
largest fractional parts; a file with any mutants gets at least one while N allows), each file's
mutants drawn at random with the seed. A sample's score is an estimate of the whole set's: it comes
with a 95 % Wilson score interval, finite-population corrected (the sample's effective size is its
size divided by the correction (M - m) / (M - 1), where m mutants of the sample count in the score
and M is the number of the whole set's mutants estimated to count). The interval treats the sample
as a simple random one; proportional stratification can only make the true interval narrower.

The precision a sample buys hardly depends on the program's size once the set is large: of a set
of 3,000 mutants, ±9.5 points at 100, ±6.6 at 200, ±4.5 at 400, ±3.0 at 800 (half-widths at a
score of 50 %, the worst case; at 85 %: ±6.9, ±4.8, ±3.3, ±2.1). `python -m
elmo_conformance.mutation.sampling` prints the table.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

Z95 = 1.959963984540054  # the normal quantile of 0.975


class _Mutant(Protocol):
    @property
    def file(self) -> str: ...


M = TypeVar("M", bound=_Mutant)


@dataclass(frozen=True)
class Drawn:
    """How the sample was drawn: what the report records."""

    population: int
    size: int
    seed: int
    strata: dict[str, tuple[int, int]]  # file: (its mutants, drawn)

    def as_json(self) -> dict[str, object]:
        return {
            "population": self.population,
            "size": self.size,
            "seed": self.seed,
            "stratifiedBy": "file",
            "strata": {name: {"mutants": n, "drawn": k} for name, (n, k) in sorted(self.strata.items())},
        }


def draw(mutants: Sequence[M], n: int | None, seed: int) -> tuple[list[M], Drawn | None]:
    """The sample of `n` of `mutants` (in their order) and how it was drawn; all of them and None
    when `n` is None or not smaller than the set."""
    if n is None or n >= len(mutants):
        return list(mutants), None
    groups: dict[str, list[int]] = {}
    for index, mutant in enumerate(mutants):
        groups.setdefault(mutant.file, []).append(index)
    shares = allocate({name: len(members) for name, members in groups.items()}, n)
    rng = random.Random(seed)
    keep: set[int] = set()
    for name in sorted(groups):
        keep.update(rng.sample(groups[name], shares[name]))
    strata = {name: (len(groups[name]), shares[name]) for name in groups}
    return [m for i, m in enumerate(mutants) if i in keep], Drawn(len(mutants), n, seed, strata)


def allocate(sizes: dict[str, int], n: int) -> dict[str, int]:
    """Proportional allocation of `n` draws over strata of `sizes` (largest remainders; each
    stratum at least one while `n` allows, taken from the largest shares)."""
    total = sum(sizes.values())
    exact = {name: n * size / total for name, size in sizes.items()}
    shares = {name: math.floor(value) for name, value in exact.items()}
    left = n - sum(shares.values())
    for name in sorted(exact, key=lambda k: (-(exact[k] - shares[k]), k))[:left]:
        shares[name] += 1
    for name in sorted(sizes, key=lambda k: (sizes[k], k)):
        if shares[name] == 0 and n >= len(sizes):
            donor = max(shares, key=lambda k: (shares[k], k))
            if shares[donor] > 1:
                shares[donor] -= 1
                shares[name] = 1
    return shares


@dataclass(frozen=True)
class Interval:
    low: float
    high: float

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2


def interval(detected: int, counted: int, sample: int, population: int) -> Interval | None:
    """The 95 % interval (in percent) of the whole set's score from a sample of `sample` of the
    `population` mutants, of which `counted` count in the score and `detected` were detected; None
    when nothing counted."""
    if counted <= 0:
        return None
    whole = max(counted, round(population * counted / sample)) if sample else counted
    correction = (whole - counted) / (whole - 1) if whole > 1 else 0.0
    if correction <= 0:
        p = 100.0 * detected / counted
        return Interval(p, p)
    effective = counted / correction
    p = detected / counted
    z2 = Z95 * Z95
    centre = (p + z2 / (2 * effective)) / (1 + z2 / effective)
    spread = Z95 * math.sqrt(p * (1 - p) / effective + z2 / (4 * effective * effective)) / (1 + z2 / effective)
    return Interval(100.0 * max(0.0, centre - spread), 100.0 * min(1.0, centre + spread))


def precision_table(sizes: Sequence[int] = (50, 100, 200, 400, 800, 1600), population: int = 3000) -> str:
    """Half-widths of the 95 % interval at a 50 % and an 85 % score, by sample size."""
    lines = [f"sample size | ±points at 50 % | ±points at 85 % (of {population} mutants)", "---|---|---"]
    for n in sizes:
        half = [interval(round(n * p), n, n, population) for p in (0.5, 0.85)]
        lines.append(f"{n} | " + " | ".join(f"{h.half_width:.1f}" if h else "-" for h in half))
    return "\n".join(lines)


__all__ = ["Drawn", "Interval", "allocate", "draw", "interval", "precision_table"]


if __name__ == "__main__":
    print(precision_table())
