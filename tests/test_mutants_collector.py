"""The worker's pytest plugin: which tests a job runs and in what order; baseline shards merged."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from elmo_conformance.mutation.collector import Collector
from elmo_conformance.mutation.model import Baseline, TestOutcome
from elmo_conformance.mutation.runner import merge

NODEIDS = [f"conformance/test_x.py::test_{name}[mine-float64]" for name in "abcdef"]


def items() -> list[SimpleNamespace]:
    return [SimpleNamespace(nodeid=n, location=("x", i, n), path=Path("x")) for i, n in enumerate(NODEIDS)]


def collect(collector: Collector) -> tuple[list[str], list[str]]:
    """(the nodeids kept, in order; those reported as deselected)."""
    deselected: list[str] = []
    config = SimpleNamespace(
        hook=SimpleNamespace(pytest_deselected=lambda items: deselected.extend(i.nodeid for i in items))
    )
    found = items()
    collector.pytest_collection_modifyitems(config, found)
    return [item.nodeid for item in found], deselected


def test_a_mutant_job_runs_exactly_its_tests_in_its_order() -> None:
    kept, deselected = collect(Collector(lambda event: None, order=[NODEIDS[4], NODEIDS[0], NODEIDS[2]]))
    assert kept == [NODEIDS[4], NODEIDS[0], NODEIDS[2]]
    assert sorted(deselected) == sorted([NODEIDS[1], NODEIDS[3], NODEIDS[5]])
    kept, deselected = collect(Collector(lambda event: None, order=list(reversed(NODEIDS))))
    assert kept == list(reversed(NODEIDS)) and deselected == [], "reordering alone deselects nothing"


def test_baseline_shards_split_the_tests_and_merge_back_in_collection_order() -> None:
    shards = [collect(Collector(lambda event: None, shard=(i, 3)))[0] for i in range(3)]
    assert shards == [NODEIDS[0::3], NODEIDS[1::3], NODEIDS[2::3]]

    def shard(i: int, covered: list[str]) -> Baseline:
        tests = {n: TestOutcome(n, n, "passed", 0.1, "x", 1, index=NODEIDS.index(n)) for n in reversed(shards[i])}
        return Baseline("mine.py", "mine", tests=tests, coverage={"s01": covered}, duration=1.0 + i)

    merged = merge([shard(2, [NODEIDS[5]]), shard(0, [NODEIDS[0]]), shard(1, [])])
    assert list(merged.tests) == NODEIDS
    assert merged.coverage == {"s01": [NODEIDS[0], NODEIDS[5]]}
    assert merged.duration == 3.0 and merged.error is None
