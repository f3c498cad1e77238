"""The catalog gate of spec §13.1, written once: does every expected killer of a catalog mutant
kill it? Used by the mutation runner (verdicts.py) and the fixtures' self-check (elmo_conformance/maintain/fixture_suite.py,
check 7); tests/test_parity.py gates through the runner's exit status.

A case of an expected killer kills the mutant when it fails or errors; one that runs and passes
(or xfails, ...) is a miss, and so is an expected killer with no test of that name in the suite.
A killer all of whose cases are skipped (the adapter's capabilities) and a case that did not run
(the mutant timed out first) are noted by the caller, not failed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

KILLING = ("failed", "error")


def test_name(nodeid: str) -> str:
    """The test function of a node id: `conformance/test_x.py::test_mix[numpy-float64]` -> test_mix."""
    return nodeid.split("::")[-1].split("[")[0]


@dataclass
class Gate:
    """What the expected killers did, in the catalog's order of killers."""

    killed: dict[str, list[str]] = field(default_factory=dict)  # killer -> the cases that killed it
    missed: list[tuple[str, str]] = field(default_factory=list)  # (case, outcome): ran and did not kill
    unknown: list[str] = field(default_factory=list)  # killers with no test of that name
    skipped: list[str] = field(default_factory=list)  # killers whose every case was skipped
    not_run: list[str] = field(default_factory=list)  # cases that did not run on the mutant

    @property
    def passed(self) -> bool:
        return not self.missed and not self.unknown


def check(expected: Iterable[str], cases: Mapping[str, str | None]) -> Gate:
    """The gate for one mutant. `cases`: every case of the suite that may be an expected killer's,
    node id -> its outcome on the mutant ("skipped" when the clean run skips it, None when it did
    not run on the mutant)."""
    gate = Gate()
    for name in expected:
        mine = {nodeid: outcome for nodeid, outcome in cases.items() if test_name(nodeid) == name}
        if not mine:
            gate.unknown.append(name)
            continue
        if all(outcome == "skipped" for outcome in mine.values()):
            gate.skipped.append(name)
            continue
        for nodeid, outcome in mine.items():
            if outcome == "skipped":
                continue
            if outcome is None:
                gate.not_run.append(nodeid)
            elif outcome in KILLING:
                gate.killed.setdefault(name, []).append(nodeid)
            else:
                gate.missed.append((nodeid, outcome))
    return gate
