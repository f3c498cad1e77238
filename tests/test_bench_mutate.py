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
