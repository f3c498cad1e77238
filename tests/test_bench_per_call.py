"""bench/wire.py's cost of one call (§11.1): a tiny call and a refused one, in a child process and
in-process, wall and CPU time; bench/suite.py's CPU time of a run."""

from __future__ import annotations

from bench import suite, wire


def test_per_call_times_a_tiny_and_a_refused_call_both_ways() -> None:
    out = wire.per_call("numpy", calls=5, repeats=1)
    kinds = {f"{kind}, {mode}" for kind in ("tiny call", "error call") for mode in ("child process", "in-process")}
    assert not out["errors"] and set(out["us_per_call"]) == kinds
    assert all(value > 0 for value in out["us_per_call"].values())
    assert set(out["cpu_us_per_call"]) == kinds, "CPU time where /proc has schedstat, None elsewhere"
    assert (
        out["tiny call: ratio"]
        == out["us_per_call"]["tiny call, child process"] / out["us_per_call"]["tiny call, in-process"]
    )


def test_the_cpu_time_of_finished_children_grows() -> None:
    import subprocess
    import sys

    before = suite._children_cpu()
    subprocess.run([sys.executable, "-c", "sum(range(3_000_000))"], check=True)
    assert suite._children_cpu() > before
