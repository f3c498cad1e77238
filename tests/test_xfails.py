"""--xfails-file (conformance/xfails.py): the format, matching, strictness and stale entries."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from elmo_conformance.conformance.xfails import Entry, parse
from tests.suite_runs import run_suite_here

ROOT = Path(__file__).resolve().parent.parent
SKIP_SOFTMAX = ROOT / "tests" / "broken" / "skip_softmax.py"  # fails test_hand_example_scalar_mix (s01)


def item(nodeid: str) -> SimpleNamespace:
    """What Entry.matches reads from a pytest item."""
    name = nodeid.split("::")[-1]
    return SimpleNamespace(nodeid=nodeid, name=name, originalname=name.split("[")[0])


PADDING = item("conformance/test_bilm.py::test_padding_never_leaks[mine-float32]")


@pytest.mark.parametrize(
    "pattern, matches",
    [
        ("conformance/test_bilm.py::test_padding_never_leaks[mine-float32]", True),
        ("test_padding_never_leaks[mine-float32]", True),
        ("test_padding_never_leaks", True),
        ("test_padding_never_leaks[mine-*]", True),
        ("*[mine-float32]", True),
        ("test_padding_never_leaks[mine-float64]", False),
        ("test_padding", False),  # a prefix is not a match; write test_padding* for that
        ("test_padding_never_leaks[mine-float3[2]]", False),  # brackets are literal, not a class
    ],
)
def test_an_entry_matches_node_ids_names_and_star_patterns(pattern: str, matches: bool) -> None:
    assert Entry(pattern, "why", "f:1").matches(PADDING) is matches


def test_the_file_format(tmp_path: Path) -> None:
    path = tmp_path / "xfails.txt"
    path.write_text(
        "# expected failures of mine\n\n"
        "test_padding_never_leaks[mine-float32]   # padding is masked by multiplication\n"
        "  test_probe_*[mine-*] #lr is float32 inside  \n",
        encoding="utf-8",
    )
    entries = parse(path)
    assert [(e.pattern, e.reason, e.where) for e in entries] == [
        ("test_padding_never_leaks[mine-float32]", "padding is masked by multiplication", f"{path}:3"),
        ("test_probe_*[mine-*]", "lr is float32 inside", f"{path}:4"),
    ]


@pytest.mark.parametrize(
    "line, message",
    [
        ("test_padding_never_leaks[mine-float32]", "has no reason"),
        ("test_padding_never_leaks[mine-float32]   #   ", "has no reason"),
        ("test_a test_b  # two on one line", "contains white space"),
    ],
)
def test_a_bad_line_is_a_usage_error_naming_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "xfails.txt"
    path.write_text(f"# header\n{line}\n", encoding="utf-8")
    with pytest.raises(pytest.UsageError, match=rf"xfails.txt, line 2: .*{message}"):
        parse(path)


def test_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(pytest.UsageError, match="--xfails-file .*absent.txt: cannot read it"):
        parse(tmp_path / "absent.txt")


def run(tmp_path: Path, xfails: str, *args: str) -> tuple[int, dict | None, str]:
    (tmp_path / "xfails.txt").write_text(xfails, encoding="utf-8")
    args = ["--dtype", "float64", "--xfails-file", str(tmp_path / "xfails.txt"), *args]
    return run_suite_here(tmp_path, str(SKIP_SOFTMAX), *args)


def outcome(report: dict, test: str) -> dict:
    [result] = [t for t in report["tests"] if t["test"] == test]
    return result


def test_a_listed_failure_is_xfailed_and_the_run_passes(tmp_path: Path) -> None:
    code, report, output = run(
        tmp_path,
        "test_hand_example_scalar_mix[skip-softmax-float64]  # s01: the raw s are the weights\n",
        "-k",
        "test_hand_example_scalar_mix or test_probe_accuracy_breaks_ties",
        "-rx",
    )
    assert code == 0, output
    assert outcome(report, "test_hand_example_scalar_mix")["outcome"] == "xfailed"
    assert outcome(report, "test_probe_accuracy_breaks_ties_to_the_lowest_index")["outcome"] == "passed"
    assert f"s01: the raw s are the weights ({tmp_path / 'xfails.txt'}:1)" in output  # the reason and its line


def test_a_listed_test_that_passes_fails_the_run(tmp_path: Path) -> None:
    code, report, output = run(
        tmp_path,
        "test_probe_accuracy_breaks_ties_to_the_lowest_index  # believed broken\n",
        "-k",
        "test_probe_accuracy_breaks_ties",
    )
    assert code == 1, output
    result = outcome(report, "test_probe_accuracy_breaks_ties_to_the_lowest_index")
    assert result["outcome"] == "failed"
    assert "[XPASS(strict)] believed broken" in result["message"]
    assert "XPASS" in output


def test_an_entry_that_matches_nothing_warns_but_one_left_out_by_k_does_not(tmp_path: Path) -> None:
    code, report, output = run(
        tmp_path,
        "test_hand_example_scalar_mix[skip-softmax-float64]  # s01, collected, then left out by -k\n"
        "test_probe_accuracy_breaks_ties_to_the_lowest_index[skip-softmax-float32]  # no float32 case is collected\n"
        "test_no_such_test  # renamed long ago\n",
        "-k",
        "test_probe_accuracy_breaks_ties",
    )
    assert code == 0, output
    assert outcome(report, "test_probe_accuracy_breaks_ties_to_the_lowest_index")["outcome"] == "passed"
    assert "UnusedXfailEntry" in output
    assert "xfails.txt:1:" not in output  # -k leaves tests out after the entries are matched
    unused = "test_probe_accuracy_breaks_ties_to_the_lowest_index[skip-softmax-float32]"
    assert f"xfails.txt:2: '{unused}' matches no collected test" in output
    assert "xfails.txt:3: 'test_no_such_test' matches no collected test" in output


def test_a_reasonless_entry_stops_the_run_before_any_test(tmp_path: Path) -> None:
    code, report, output = run(tmp_path, "test_hand_example_scalar_mix\n")
    assert code == 4, output
    assert "xfails.txt, line 1: 'test_hand_example_scalar_mix' has no reason" in output
    assert report["tests"] == [] and "has no reason" in report["refused"]
