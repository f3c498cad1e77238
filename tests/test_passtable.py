"""The pass table (conformance/passtable.py): its cells, its order, and a real run's table and JSON."""

from __future__ import annotations

import json
from pathlib import Path

from elmo_conformance.adapters.loading import LoadedAdapter
from elmo_conformance.conformance.passtable import cell, render, table
from tests.suite_runs import run_args_here

ROOT = Path(__file__).resolve().parent.parent
SKIP_SOFTMAX = ROOT / "tests" / "broken" / "skip_softmax.py"


def result(test: str, case: str | None, outcome: str, sections: list[str], message: str | None = None) -> dict:
    """One entry as the plugin's Recorder writes it."""
    return {"test": test, "case": case, "outcome": outcome, "sections": sections, "message": message}


def adapter(name: str, device: str = "cpu") -> LoadedAdapter:
    return LoadedAdapter(f"{name}.py", object(), name, frozenset({"float64", "float32"}), device)


def test_cells_count_outcomes_worst_first() -> None:
    assert cell(None) == "-"
    assert cell({"pass": 1}) == "pass"
    assert cell({"pass": 97}) == "97 pass"
    assert cell({"pass": 94, "FAIL": 3}) == "3 FAIL 94 pass"
    assert cell({"skip": 2, "xfail": 1, "XPASS": 1}) == "1 XPASS 1 xfail 2 skip"


def test_rows_follow_the_spec_and_columns_the_adapters() -> None:
    results = [
        result("test_probe", "b-float64", "passed", ["7.4"]),
        result("test_bilm", "b-float64", "failed", ["3.2"], "§3.2 ..."),
        result("test_bilm", "a-float32", "skipped", ["3.2"], "Skipped: no CUDA device"),
        result("test_bilm", "a-float64", "skipped", ["3.2"], "Skipped: no CUDA device"),
        result("test_golden", "a-float64", "xfailed", ["3", "12.2"]),
        result("test_golden", "b-float64", "failed", ["3", "12.2"], "[XPASS(strict)] known"),
        result("test_table_rows", None, "passed", ["8"]),
        result("test_probe", "b-float64", "passed", ["7.4"]),
    ]
    data = table([adapter("a", "cuda"), adapter("b")], ("float64", "float32"), results)
    assert [c["case"] for c in data["columns"]] == ["a-float64", "a-float32", "b-float64", "suite"]
    assert data["columns"][0] == {
        "case": "a-float64",
        "adapter": "a",
        "impl": "a.py",
        "dtype": "float64",
        "device": "cuda",
    }
    # §3 before §3.2 before §7.4 before §8: numeric order of the first cited section.
    assert [row["test"] for row in data["rows"]] == ["test_golden", "test_bilm", "test_probe", "test_table_rows"]
    cells = {row["test"]: row["cells"] for row in data["rows"]}
    assert cells["test_golden"] == {"a-float64": {"xfail": 1}, "b-float64": {"XPASS": 1}}
    assert cells["test_probe"] == {"b-float64": {"pass": 2}}
    assert data["totals"]["b-float64"] == {"pass": 2, "FAIL": 1, "XPASS": 1}
    assert data["skip_reasons"] == {"a-float64": {"no CUDA device": 1}, "a-float32": {"no CUDA device": 1}}

    lines = render(data)
    assert lines[0].split() == ["§", "test", "a-float64", "a-float32", "b-float64", "suite"]
    golden = next(line for line in lines if "test_golden" in line)
    assert golden.split() == ["3,12.2", "test_golden", "xfail", "-", "XPASS", "-"]
    total = next(line for line in lines if line.split()[:1] == ["total"])
    assert "1 FAIL 1 XPASS 2 pass" in total
    assert "skipped in a-float32: 1 x no CUDA device" in lines


def test_a_run_prints_the_table_and_writes_it_as_json(tmp_path: Path) -> None:
    out = tmp_path / "reports" / "pass-table.json"
    args = ["-k", "test_hand_example or test_probe_accuracy_breaks_ties or test_every_clause_is_sent"]
    args += ["--pass-table", str(out)]
    code, output = run_args_here("--impl", "numpy", "--impl", str(SKIP_SOFTMAX), *args)
    assert code == 1, output  # skip-softmax fails the hand example
    assert "pass table (spec sections and tests x adapter-dtype)" in output
    assert f"pass table written to {out}" in output
    data = json.loads(out.read_text())
    assert data["exit_status"] == 1
    names = ["numpy-float64", "numpy-float32", "skip-softmax-float64", "skip-softmax-float32", "suite"]
    assert [c["case"] for c in data["columns"]] == names
    cells = {row["test"]: row["cells"] for row in data["rows"]}
    assert cells["test_hand_example_scalar_mix"] == {
        "numpy-float64": {"pass": 1},
        "numpy-float32": {"pass": 1},
        "skip-softmax-float64": {"FAIL": 1},
        "skip-softmax-float32": {"FAIL": 1},
    }
    assert cells["test_every_clause_is_sent_from_both_sides"] == {"suite": {"pass": 1}}
    hand = next(line for line in output.splitlines() if line.startswith("5.1,5.2"))
    assert hand.split() == ["5.1,5.2", "test_hand_example_scalar_mix", "pass", "pass", "FAIL", "FAIL", "-"]


def test_quiet_runs_print_no_table(tmp_path: Path) -> None:
    args = ["-q", "-k", "test_probe_accuracy_breaks_ties"]
    code, output = run_args_here("--impl", "numpy", *args)
    assert code == 0, output
    assert "pass table" not in output
