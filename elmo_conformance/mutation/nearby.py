"""Killers of nearby mutants first (spec §13.2; docs/mutation.md, "How it stays fast").

Mutants of one function are mostly killed by the same few tests: a test that checks what the
function computes fails on most changes to it. So when a mutant is handed to a worker, the tests
that killed mutants of its *region* (the function around its line: a Python function outside every
function, or a brace language's function as reach.py finds it; the file's code outside every
function otherwise) come first among the tests that reach it, the tests that killed most of them
first; its other tests follow in their order (cheapest first). Only the order changes: the
mutant runs the same tests, to its first kill, and its status is the same; which test is named
as its first killer may be another.

Mutants are handed out longest first (their tests' baseline time), so the mutants of one function
tend to be handed out near one another, and the later ones learn from the earlier ones' kills.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable

from elmo_conformance.mutation.generate import Generated

FIRST = 3  # at most this many of a region's killers go first


class Nearby:
    """The tests that killed mutants, by region; `first` reorders a mutant's tests by them."""

    def __init__(self, region: Callable[[Generated], Hashable], first: int = FIRST) -> None:
        self.region = region
        self.limit = first
        self.kills: dict[Hashable, Counter[str]] = {}
        self._regions: dict[str, Hashable] = {}

    def _of(self, mutant: Generated) -> Hashable:
        found = self._regions.get(mutant.id)
        if found is None:
            found = self._regions[mutant.id] = self.region(mutant)
        return found

    def killed(self, mutant: Generated, killers: list[str]) -> None:
        """Record that `killers` killed `mutant`."""
        if killers:
            self.kills.setdefault(self._of(mutant), Counter()).update(killers)

    def first(self, mutant: Generated, order: tuple[str, ...]) -> tuple[str, ...]:
        """`order` with the tests that killed most mutants of the mutant's region first."""
        counts = self.kills.get(self._of(mutant))
        if not counts or len(order) < 2:
            return order
        position = {nodeid: i for i, nodeid in enumerate(order)}
        ranked = sorted((n for n in counts if n in position), key=lambda n: (-counts[n], position[n]))[: self.limit]
        if not ranked:
            return order
        chosen = set(ranked)
        return (*ranked, *(n for n in order if n not in chosen))


def file_region(mutant: Generated) -> Hashable:
    """The coarsest region: the mutant's file (a language whose functions are not found)."""
    return mutant.file


def python_region(mutant: Generated) -> Hashable:
    """The Python function outside every function that holds the mutant's line, or the file."""
    from elmo_conformance.mutation.reach import python_function

    return (mutant.file, python_function(mutant.file, mutant.line))


def program_region(function_at: Callable[[str, int], str | None]) -> Callable[[Generated], Hashable]:
    """A program's function around the mutant's line (reach.ProgramMap.function_at), or the file."""
    return lambda mutant: (mutant.file, function_at(mutant.file, mutant.line))
