"""bench/mutate.py: the generated-mutant part's figures, from a Stryker report."""

from __future__ import annotations

from bench import mutate


def _report() -> dict:
    def m(status: str, duration: float | None) -> dict:
        out = {"id": f"{status}{duration}", "status": status}
        if duration is not None:
            out["duration"] = duration * 1000
        return out

    mutants = [m("CompileError", 0.2), m("CompileError", 0.3), m("Killed", 4.0), m("Killed", 6.0)]
    mutants += [m("Survived", 30.0), m("Timeout", 0.0), m("NoCoverage", 0.0)]
    return {
        "files": {"a.c": {"mutants": mutants}},
        "performance": {"initialRun": 20000, "mutation": 300000},
        "config": {"workers": 2},
    }


def test_summarize_counts_and_ratios() -> None:
    s = mutate.summarize(_report())
    assert s["generated"] == 7 and s["run"] == 6
    assert s["statuses"] == {"CompileError": 2, "Killed": 2, "Survived": 1, "Timeout": 1, "NoCoverage": 1}
    assert s["score"] == 60.0  # killed and timed out (3) of those that ran or had no coverage (5)
    assert s["median_mutant_s"] == 4.0  # the timeout records no duration; no coverage costs nothing
    assert s["median_built_s"] == 6.0 and s["ratio_built_to_baseline"] == 0.3
    assert s["mean_cost_s"] == 100.0  # 300 s x 2 workers / 6 mutants run


def test_rows_show_the_figures_and_the_target() -> None:
    result = {"command": "elmo-conformance mutate --impl c", "wall_s": 320.0, **mutate.summarize(_report())}
    text = "\n".join(mutate.rows(result))
    assert "| 7 | 6 | 2 | 1 | 1 | 1 | 2 | 0 | 60.0 % |" in text and "at most 0.3x" in text
    assert mutate.rows({}) == [] and "pending" in mutate.rows({"pending": "not run with --smoke"})[1]


def test_the_warm_part_shows_both_modes_in_suite_runs_and_the_statuses_that_differ() -> None:
    from bench import warm

    def mode(wall: float, whole: float) -> dict:
        statuses = {"Killed": 250, "Survived": 40, "NoCoverage": 10}
        figures = {"ratio": wall / 10.0, "whole_s": whole, "whole_ratio": whole / 10.0, "cpu_s": wall, "cpu_ratio": 1.0}
        return {"wall_s": wall, "mutants": 300, "generated": 2995, "statuses": statuses, **figures}

    result = {"suite_s": 10.0, "sample": 300, "seed": 1, "workers": 2, "warm": mode(60.0, 500.0)}
    result |= {"fresh": mode(300.0, 2900.0), "differ": [], "speedup": 5.0, "cpu_speedup": 4.0}
    text = "\n".join(warm.rows(result))
    assert (
        "| warm | 300 of 2995 | 60 s | 6.0x | 60 s, 1.0x | 500 s | 50x | Killed 250, NoCoverage 10, Survived 40 |"
        in text
    )
    assert "| fresh | 300 of 2995 | 300 s | 30.0x | 300 s, 1.0x | 2900 s | 290x |" in text
    assert "5.00x faster in wall time, 4.00x in CPU time; statuses that differ: 0 (none)" in text
    assert "at most 60x" in text
    result["differ"] = ["abc"]
    assert "statuses that differ: 1 (abc)" in "\n".join(warm.rows(result))
    assert warm.rows({}) == [] and "failed" in warm.rows({"error": "the suite run failed"})[1]
