"""Killers of nearby mutants first (elmo_conformance/mutation/nearby.py, spec §13.2): a mutant's
tests are reordered, never changed, with the tests that killed most mutants of its function first."""

from __future__ import annotations

from pathlib import Path

from elmo_conformance.mutation.generate import Generated
from elmo_conformance.mutation.nearby import Nearby, python_region

SOURCE = """\
import numpy as np

SCALE = 2


def softmax(s):
    e = np.exp(s - s.max())
    return e / e.sum()


def mix(s, layers):
    w = softmax(s)
    return SCALE * sum(wk * x for wk, x in zip(w, layers))
"""


def mutant(path: Path, line: int, name: str) -> Generated:
    text = SOURCE.splitlines()[line - 1]
    return Generated(name, str(path), line, text, text + "  # changed", "x ==> y", "python")


def test_a_function_s_killers_go_first_most_kills_first_and_only_its_own_tests(tmp_path: Path) -> None:
    path = tmp_path / "impl.py"
    path.write_text(SOURCE, encoding="utf-8")
    nearby = Nearby(python_region, first=2)
    order = ("t[a]", "t[b]", "t[c]", "t[d]")
    assert nearby.first(mutant(path, 7, "m1"), order) == order  # nothing killed yet
    nearby.killed(mutant(path, 7, "m1"), ["t[c]"])
    nearby.killed(mutant(path, 8, "m2"), ["t[d]", "t[x]"])
    nearby.killed(mutant(path, 8, "m3"), ["t[d]"])
    nearby.killed(mutant(path, 12, "m4"), ["t[b]"])  # another function: not softmax's
    # softmax's killers: t[d] twice, t[c] once, t[x] once but not among this mutant's tests
    assert nearby.first(mutant(path, 6, "m5"), order) == ("t[d]", "t[c]", "t[a]", "t[b]")
    assert nearby.first(mutant(path, 13, "m6"), order) == ("t[b]", "t[a]", "t[c]", "t[d]")
    assert nearby.first(mutant(path, 3, "m7"), order) == order  # module level: no kill there yet
    assert sorted(nearby.first(mutant(path, 7, "m8"), order)) == sorted(order)  # the same tests


def test_at_most_the_limit_goes_first(tmp_path: Path) -> None:
    path = tmp_path / "impl.py"
    path.write_text(SOURCE, encoding="utf-8")
    nearby = Nearby(python_region, first=1)
    nearby.killed(mutant(path, 7, "m1"), ["t[c]", "t[b]"])
    assert nearby.first(mutant(path, 8, "m2"), ("t[a]", "t[b]", "t[c]")) == ("t[b]", "t[a]", "t[c]")
