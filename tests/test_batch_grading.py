"""Grading a class with `elmo-conformance batch` (docs/grading.md; issue 33).

The parts without a cluster first: the grading file and its errors, the points of each test, a
grade from the outcomes a harness observed, the grade sheet and Gradescope's results.json, the
regrade key, and single jobs on this machine (a job stopped at its deadline keeps what its harness
journaled; a test past its CPU-time limit is stopped; a submission cannot put its own modules into
the harness's process). Then, marked `integration`, a class on the embedded Dask cluster: quiet,
under load and regraded.

The class is tests/batch/{good,wrong,hang-late,crash,hidden}, graded with tests/batch/grading.toml
over the six tests of conformance/test_scalar_mix.py (-k test_scalar_mix --dtype float64: one case
each). Every expected score below is computed by hand from that grading file.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from elmo_conformance.batch import grading, jobs, records, regrade, submissions
from elmo_conformance.batch.__main__ import main as batch_main
from elmo_conformance.batch.executor import Outcome
from elmo_conformance.ground.resources import child_environment

ROOT = Path(__file__).resolve().parent.parent
CLASS = ROOT / "tests" / "batch"
GRADING = CLASS / "grading.toml"
SELECTION = ["-k", "test_scalar_mix", "--dtype", "float64"]

HAND, UNIFORM, LARGE, SHAPE, MATCHES, VJP = (
    "test_hand_example_scalar_mix",  # §5.1 §5.2: its own entry, 4 points, visible
    "test_scalar_mix_starts_uniform_and_trains",  # §5.3 §6.3: sections "6", 2 points, visible
    "test_scalar_mix_is_stable_for_large_s",  # §5.4: sections "5.4", 3 points, hidden
    "test_scalar_mix_over_any_layer_shape",  # §5.2 §6.3: sections "6", 2 points; its own entry: hidden
    "test_scalar_mix_matches_reference",  # §5.1 §5.2: the top level, 1 point; its own entry: after_due_date
    "test_scalar_mix_vjp_matches_reference",  # §6.3: sections "6", 2 points, visible
)
# From tests/batch/grading.toml, by the rules of docs/grading.md ("Points and visibility").
POINTS = {HAND: 4, UNIFORM: 2, LARGE: 3, SHAPE: 2, MATCHES: 1, VJP: 2}
VISIBILITY = {
    HAND: "visible",
    UNIFORM: "visible",
    LARGE: "hidden",
    SHAPE: "hidden",
    MATCHES: "after_due_date",
    VJP: "visible",
}
CHAPTER = {HAND: "5", UNIFORM: "5", LARGE: "5", SHAPE: "5", MATCHES: "5", VJP: "6"}  # each one's first section
# What each submission passes (its adapter's docstring says why), its verdict, and its grade:
# the sum of the points of the tests it passes (one case each).
CLASS_EXPECTED = {
    "good": ("pass", {HAND, UNIFORM, LARGE, SHAPE, MATCHES, VJP}, 14, {"5": 12, "6": 2}),  # 4+2+3+2+1 | 2
    "wrong": ("fail", {VJP}, 2, {"5": 0, "6": 2}),  # raw s as weights: only the vjp (the reference's) passes
    "hang-late": ("hung", {HAND, UNIFORM}, 6, {"5": 6, "6": 0}),  # 4+2, then it hangs in the third test
    "crash": ("fail", {HAND, LARGE, MATCHES}, 8, {"5": 8, "6": 0}),  # 4+3+1: every vjp call crashes
    "hidden": ("fail", {HAND, UNIFORM, VJP}, 8, {"5": 6, "6": 2}),  # 4+2 | 2: fails the three not visible
}


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ------------------------------------------------------------------------------ the grading file


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("g.toml", "points = [", "not valid TOML: "),
        ("g.json", '{"points": 1,}', "not valid JSON: "),
        ("g.yaml", "points: 1", "expected a .toml or .json file, got .yaml"),
        (
            "g.toml",
            "pionts = 1",
            "unknown key 'pionts' (expected points, visibility, per_test_columns, sections, tests)",
        ),
        ("g.toml", "points = -1", "points: expected a number of points >= 0, got -1"),
        ("g.toml", "points = true", "points: expected a number of points >= 0, got True"),
        ("g.toml", "points = inf", "points: expected a number of points >= 0, got inf"),
        (
            "g.toml",
            'visibility = "secret"',
            "visibility: expected one of visible, hidden, after_due_date, after_published",
        ),
        ("g.toml", 'per_test_columns = "yes"', "per_test_columns: expected true or false, got 'yes'"),
        ("g.toml", "sections = 3", "sections: expected a table of entries, got int"),
        ("g.toml", '[sections]\n"5.9" = 1', 'sections."5.9": not a section of the spec'),
        ("g.toml", '[sections]\n"5" = -2', 'sections."5": expected a number of points >= 0, got -2'),
        ("g.toml", '[sections]\n"5" = {pts = 2}', "sections.\"5\": unknown key 'pts' (expected points or visibility)"),
        ("g.toml", '[sections]\n"5" = {}', 'sections."5": an empty entry'),
        ("g.toml", "[tests]\ntest_hand_example = 2", "tests.test_hand_example: not a test of the suite"),
        ("g.json", '{"tests": {"test_hand_example_scalar_mix": {"visibility": "hiden"}}}', "expected one of visible"),
        ("g.json", "[1, 2]", "expected a table (TOML) or an object (JSON) at the top, got list"),
    ],
)
def test_a_grading_file_that_cannot_be_used_names_the_entry_and_what_was_expected(tmp_path, name, text, expected):
    """docs/grading.md, "The grading file": every broken file is refused with a message that names
    --grading, the file, the entry and what was expected."""
    path = write(tmp_path, name, text)
    with pytest.raises(grading.GradingError) as caught:
        grading.load(path)
    message = str(caught.value)
    assert message.startswith(f"--grading {path}"), message
    assert expected in message, message


def test_an_unknown_test_id_suggests_the_suites_and_the_batch_refuses_it(tmp_path, capsys):
    """A misspelt test id names the closest tests of the suite; the batch stops before any job
    (exit status 2), naming it."""
    path = write(tmp_path, "g.toml", "[tests]\ntest_hand_example_scalarmix = 2\n")
    with pytest.raises(grading.GradingError, match="did you mean test_hand_example_scalar_mix"):
        grading.load(path)
    code = batch_main(["numpy", "--out", str(tmp_path / "out"), "--grading", str(path), "--no-progress"])
    assert code == 2
    assert "tests.test_hand_example_scalarmix: not a test of the suite" in capsys.readouterr().err


def test_points_and_visibility_follow_the_most_specific_entry():
    """docs/grading.md, "Points and visibility": a test's own entry, else the most specific section
    entry (the first in the file on a tie), else the top level; tests/batch/grading.toml, by hand."""
    loaded = grading.load(GRADING)
    tests = grading.suite_tests()
    for test in POINTS:
        assert loaded.rule(test, list(tests[test])) == (POINTS[test], VISIBILITY[test]), test
    assert grading.Grading().rule(HAND, ["5.1"]) == (1.0, "visible")  # no grading file: 1 point, visible
    tie = grading.parse({"sections": {"6": 5, "5": {"points": 7, "visibility": "hidden"}}})
    assert tie.rule(UNIFORM, ["5.3", "6.3"]) == (5.0, "hidden")  # "6" first in the file; visibility from "5"
    assert tie.rule(LARGE, ["5.4"]) == (7.0, "hidden")
    json_form = grading.parse(json.loads(json.dumps({"points": 2, "tests": {HAND: {"points": 0}}})))
    assert json_form.rule(HAND, ["5.1"]) == (0.0, "visible") and json_form.rule(LARGE, ["5.4"]) == (2.0, "visible")


# ------------------------------------------------------------------------------ grades


def test_a_grade_is_the_points_times_the_share_of_cases_passed():
    """docs/grading.md, "Partial credit": 3 of 4 cases of a 2-point test give 1.5; cases not run
    give 0 and say why; a case stopped at its CPU-time limit says so."""
    expected = {
        "test_a": {"cases": 4, "sections": ["8"]},
        "test_b": {"cases": 1, "sections": ["5.1", "6.3"]},
        "test_c": {"cases": 2, "sections": ["6.3"]},
    }
    observed = [
        *({"test": "test_a", "nodeid": f"a[{i}]", "outcome": "passed"} for i in range(3)),
        {"test": "test_a", "nodeid": "a[3]", "outcome": "failed", "message": "E  wrong\n"},
        {"test": "test_b", "nodeid": "b", "outcome": "failed", "hit": {"kind": "cpu", "cpu_s": 2.5, "limit_s": 2.0}},
    ]
    given = grading.parse({"points": 2, "sections": {"5": 3}})
    graded = grading.grade(given, expected, observed, why_missing="the job was stopped")
    by_test = {t["test"]: t for t in graded["tests"]}
    assert by_test["test_a"]["score"] == 1.5 and by_test["test_a"]["status"] == "failed"  # 2 * 3/4
    assert "3 of 4 case(s) passed" in by_test["test_a"]["output"] and "wrong" in by_test["test_a"]["output"]
    assert by_test["test_b"]["score"] == 0 and by_test["test_b"]["max_score"] == 3  # §5 covers §5.1
    assert "stopped at its CPU-time limit (2.5 s used, limit 2.0 s)" in by_test["test_b"]["output"]
    assert by_test["test_c"]["score"] == 0 and "2 case(s) not run: the job was stopped" in by_test["test_c"]["output"]
    assert graded["score"] == 1.5 and graded["max_score"] == 7  # 2 + 3 + 2
    assert graded["chapters"] == {"5": [0.0, 3.0], "6": [0.0, 2.0], "8": [1.5, 2.0]}


def _record(name: str, verdict: str, passing: set[str], **extra) -> dict:
    expected = {t: {"cases": 1, "sections": list(grading.suite_tests()[t])} for t in POINTS}
    observed = [{"test": t, "nodeid": t, "outcome": "passed" if t in passing else "failed"} for t in POINTS]
    record = records.new_record(submissions.Submission(name, name, "folder", "adapter.py"))
    record.update(verdict=verdict, duration_s=3.4, **extra)
    record["grade"] = grading.grade(grading.load(GRADING), expected, observed)
    return record


def test_the_grade_sheet_and_gradescopes_results_by_hand(tmp_path):
    """docs/grading.md, "grades.csv" and "Gradescope": a row per submission with a column per
    chapter and, with per_test_columns, per test; results.json in Gradescope's documented schema
    (https://gradescope-autograders.readthedocs.io/en/latest/specs/), where a submission that fails
    only tests its students cannot see never reads "All tests passed"."""
    sheet = [_record(name, verdict, passing) for name, (verdict, passing, _, _) in CLASS_EXPECTED.items()]
    sheet[2]["partial"] = {"finished": 2, "collected": 6}
    rows = list(csv.DictReader(io.StringIO(grading.grades_csv(sheet, grading.load(GRADING)))))
    assert list(rows[0]) == ["name", "verdict", "score", "max_score", "5 ScalarMix", "6 Gradients", *POINTS, "notes"]
    for row, (name, (verdict, passing, total, chapters)) in zip(rows, CLASS_EXPECTED.items(), strict=True):
        assert (row["name"], row["verdict"], row["score"], row["max_score"]) == (name, verdict, str(total), "14")
        assert (row["5 ScalarMix"], row["6 Gradients"]) == (str(chapters["5"]), str(chapters["6"]))
        assert {t: row[t] for t in POINTS} == {t: str(POINTS[t] if t in passing else 0) for t in POINTS}
    assert rows[2]["notes"] == "partial: 2 of 6 cases finished before it stopped"

    documented_top = {"score", "execution_time", "output", "visibility", "stdout_visibility", "extra_data", "tests"}
    documented_test = {"score", "max_score", "status", "name", "name_format", "number", "output", "tags", "visibility"}
    for record in sheet:
        results = grading.gradescope_results(record)
        assert set(results) <= documented_top and set(results) >= {"score", "output", "tests"}
        assert results["score"] == CLASS_EXPECTED[record["name"]][2] and results["execution_time"] == 3
        assert results["stdout_visibility"] == "hidden"
        for test in results["tests"]:
            assert set(test) <= documented_test and test["status"] in ("passed", "failed")
            assert test["visibility"] in grading.VISIBILITIES
        named = {t["name"].split(" ")[0]: t for t in results["tests"]}
        assert {t: (named[t]["max_score"], named[t]["visibility"]) for t in POINTS} == {
            t: (POINTS[t], VISIBILITY[t]) for t in POINTS
        }
        assert named[HAND]["name"] == f"{HAND} (§5.1, §5.2)" and named[HAND]["tags"] == ["§5.1", "§5.2"]
    hidden = grading.gradescope_results(sheet[4])
    assert "All tests passed" not in hidden["output"]
    assert (
        "Visible tests: 3 of 3 passed. 3 more test(s) are not shown here yet; they count in the score."
        in (hidden["output"])
    )
    options = {"mutants": "none", "suite_args": [], "job_timeout_s": 25, "time_factor": 20.0, "time_floor_s": 10.0}
    page = records.write_dashboard(tmp_path, sheet, {"reused": 0}, {**options, "grading": {"source": "g.toml"}})
    html = page.read_text()
    for record in sheet:  # the class dashboard: a score column
        total = CLASS_EXPECTED[record["name"]][2]
        assert f'data-submission="{record["name"]}" data-verdict="{record["verdict"]}"' in html
        assert f'data-score="{total} / 14"><span class="mono" style="white-space: nowrap;">{total} / 14</span>' in html
    assert "partial: 2 of 6 cases finished" in html and "g.toml; CPU-time limits 20.0" in html
    everyone_sees = dict(sheet[0], grade=grading.grade(grading.Grading(), {HAND: {"cases": 1, "sections": []}}, []))
    assert "All tests passed" not in grading.gradescope_results(everyone_sees)["output"]  # 0 of 1 passed


def test_observed_tests_come_from_a_complete_report_or_else_the_journal(tmp_path):
    """docs/grading.md, "Partial results": a complete report's outcomes; a run that did not finish,
    its harness's journal; a test stopped at its CPU-time limit is failed whatever its last call
    gave."""
    journal = [
        {"event": "collected", "nodeids": ["a", "b", "c"]},
        {"event": "test", "nodeid": "a", "test": "test_a", "outcome": "passed"},
        {"event": "test", "nodeid": "b", "test": "test_b", "outcome": "passed", "hit": {"kind": "cpu"}},
    ]
    complete = {"complete": True, "tests": [{"nodeid": "a", "outcome": "passed"}, {"nodeid": "b", "outcome": "passed"}]}
    tests, partial = records.observed_tests({"report": complete, "journal": journal})
    assert partial is None and [(t["test"], t["outcome"]) for t in tests] == [("a", "passed"), ("b", "failed")]
    assert tests[1]["hit"] == {"kind": "cpu"}  # the journal's word for why, on the report's test
    tests, partial = records.observed_tests({"report": {"complete": False}, "journal": journal})
    assert partial == {"finished": 2, "collected": 3} and [t["outcome"] for t in tests] == ["passed", "failed"]
    assert records.observed_tests(None) == ([], {"finished": 0, "collected": None})
    refused = {"stage": "suite", "exit_status": 4, "report": {"complete": True, "refused": "no adapter"}, "journal": []}
    record = records.new_record(submissions.Submission("r", "r", "folder", "adapter.py"))
    records.judge_suite(record, Outcome(None, jobs.Job("r", "adapter.py"), refused), tmp_path / "r", tmp_path)
    assert record["verdict"] == records.NOT_LOADED and "partial" not in record  # nothing was collected


def test_the_time_limits_a_run_hit_are_its_cpu_limits_and_call_timeouts():
    """docs/grading.md, "Time limits": a journal entry the watchdog stopped, and a failure with the
    harness's own --call-timeout message (conformance/case.py), are limits hit; another failure
    is not."""
    journal = [
        {"event": "collected", "nodeids": ["a", "b", "c"]},
        {"event": "test", "nodeid": "a", "test": "t", "outcome": "failed", "hit": {"kind": "cpu", "cpu_s": 3.1}},
        {
            "event": "test",
            "nodeid": "b",
            "test": "u",
            "outcome": "failed",
            "message": "E   §5.1 ScalarMix\nE   hangs.scalar_mix did not return within 10 s (--call-timeout)",
        },
        {"event": "test", "nodeid": "c", "test": "v", "outcome": "failed", "message": "E   assert 1 == 2"},
    ]
    assert jobs.time_limit_hits(journal) == [
        {"nodeid": "a", "test": "t", "kind": "cpu", "cpu_s": 3.1},
        {"nodeid": "b", "test": "u", "kind": "call-timeout"},
    ]


def test_a_regrade_key_follows_the_content_suite_and_options(tmp_path):
    """docs/grading.md, "Regrades": the same files packed again (other times) give the same key;
    a changed byte, an executable bit or an option gives another."""
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "adapter.py").write_text("adapter = None\n")
    options = {"suite_args": ["-q"], "time_factor": 20.0}
    first = submissions.resolve(str(folder))
    os.utime(folder / "adapter.py", (1, 1))
    again = submissions.resolve(str(folder))
    assert first.files != again.files  # the packing differs (its times) ...
    assert regrade.key(first, options) == regrade.key(again, options)  # ... the key does not
    assert regrade.key(first, options) != regrade.key(first, {**options, "time_factor": 10.0})
    (folder / "adapter.py").chmod(0o755)
    assert regrade.content_hash(submissions.resolve(str(folder))) != regrade.content_hash(first)
    (folder / "adapter.py").write_text("adapter = 1\n")
    assert regrade.content_hash(submissions.resolve(str(folder))) != regrade.content_hash(first)
    cache = regrade.Cache(tmp_path / "out")
    assert cache.get("k") is None
    cache.put("k", {"result": {"stage": "suite"}})
    assert cache.get("k") == {"result": {"stage": "suite"}, "key": "k"}
    (tmp_path / "out" / "cache" / "k.json").write_text('{"key": "other", "result": {}}')
    assert cache.get("k") is None  # a file whose key is not its name is not used


# ------------------------------------------------------------------------------ single jobs, no cluster


def job(name: str, deadline_s: float, **options) -> jobs.Job:
    submission = submissions.resolve(str(CLASS / name))
    return jobs.Job(
        name, submission.impl or "", "suite", submission.files, None, ["-q", *SELECTION], deadline_s, **options
    )


def test_a_job_stopped_at_its_deadline_keeps_what_its_harness_journaled(tmp_path):
    """docs/grading.md, "Partial results": tests/batch/hang-late passes two tests, then hangs; its
    job is stopped at its deadline, and the two tests its harness journaled still count (6 points:
    4 + 2)."""
    the_job = job("hang-late", 12.0, time_factor=20.0, time_floor_s=10.0)
    result = jobs.run_job(the_job)
    assert result["stage"] == "suite" and result["timed_out"] is True, result.get("problem")
    assert not (result["report"] or {}).get("complete")  # the report never finished
    finished = [(e["test"], e["outcome"]) for e in result["journal"] if e["event"] == "test"]
    assert finished == [(HAND, "passed"), (UNIFORM, "passed")]
    assert result["calibration"]["items"] == dict.fromkeys(POINTS, 1)  # the reference ran all six
    record = records.new_record(submissions.resolve(str(CLASS / "hang-late")))
    records.judge_suite(record, Outcome(None, the_job, result), tmp_path / "h", tmp_path)
    assert record["verdict"] == records.HUNG and record["partial"] == {"finished": 2, "collected": 6}
    assert record["reason"].endswith("and was stopped; 2 of 6 tests had finished")
    expected = grading.expected_tests(result["calibration"], [])
    graded = grading.grade(grading.load(GRADING), expected, records.observed_tests(result)[0], record["reason"])
    assert graded["score"] == 6 and graded["chapters"] == {"5": [6.0, 12.0], "6": [0.0, 2.0]}


def test_a_test_past_its_cpu_time_limit_is_stopped_and_says_so():
    """docs/grading.md, "Time limits": tests/batch/slow spins 30 CPU seconds in each vjp call; with
    a limit of 1 CPU second per test its three tests that call the vjp are stopped at about 1 s of
    CPU time, fail, and say so; the other three pass."""
    started = time.monotonic()
    result = jobs.run_job(job("slow", 120.0, time_factor=1.0, time_floor_s=1.0))
    took = time.monotonic() - started
    tests = {e["test"]: e for e in result["journal"] if e["event"] == "test"}
    stopped = {UNIFORM, SHAPE, VJP}  # the tests that call scalar_mix_vjp
    assert {t for t, e in tests.items() if e["hit"]} == stopped
    for name in stopped:
        assert tests[name]["outcome"] == "failed" and tests[name]["hit"]["kind"] == "cpu"
        assert 1.0 < tests[name]["hit"]["cpu_s"] < 5.0 and tests[name]["limit_s"] == 1.0
    assert {t for t, e in tests.items() if e["outcome"] == "passed"} == set(POINTS) - stopped
    assert {h["test"] for h in result["time_limit_hits"]} == stopped
    graded = grading.grade(
        grading.Grading(), grading.expected_tests(result["calibration"], []), records.observed_tests(result)[0]
    )
    assert graded["score"] == 3 and all(
        "stopped at its CPU-time limit" in t["output"] for t in graded["tests"] if t["test"] in stopped
    )
    assert took < 60, f"{took:.0f} s: the limit did not stop the 30-second calls"


def test_a_submission_cannot_put_its_own_modules_into_the_harness(tmp_path, monkeypatch):
    """docs/grading.md, "What a submission cannot change": the harness runs in the submission's
    folder, and Python would import a `pytest.py` there into the harness's own process, outside
    the sandbox; a job's harness runs with PYTHONSAFEPATH, so it never does. Shown first without it."""
    folder = tmp_path / "hostile"
    folder.mkdir()
    (folder / "adapter.py").write_text((CLASS / "good" / "adapter.py").read_text())
    marker = tmp_path / "the-harness-ran-my-code"
    (folder / "pytest.py").write_text(
        f"import os, sys\nopen({str(marker)!r}, 'w').write('hijacked')\n"
        "del sys.modules['pytest']\nsys.path = [p for p in sys.path if os.path.abspath(p or '.') != os.getcwd()]\n"
        "import pytest\nsys.modules[__name__] = pytest\n"
    )
    submission = submissions.resolve(str(folder))
    the_job = jobs.Job("hostile", "adapter.py", "suite", submission.files, None, ["-q", "-k", HAND], 60.0)
    original = jobs._job_env
    monkeypatch.setattr(
        jobs, "_job_env", lambda j, i: {k: v for k, v in original(j, i).items() if k != "PYTHONSAFEPATH"}
    )
    jobs.run_job(the_job)
    assert marker.exists(), "without PYTHONSAFEPATH the harness imports the submission's pytest.py"
    marker.unlink()
    monkeypatch.setattr(jobs, "_job_env", original)
    result = jobs.run_job(the_job)
    assert not marker.exists(), "the harness imported the submission's pytest.py"
    assert result["exit_status"] == 0


# ------------------------------------------------------------------------------ a class on the cluster

JOB_TIMEOUT = "25"  # above a passing job on a loaded 2-core machine (about 8 s), the hang's deadline


def run_batch(out: Path, *extra: str, names: tuple[str, ...] = tuple(CLASS_EXPECTED)) -> tuple[float, str]:
    command = [
        sys.executable, "-m", "elmo_conformance", "batch", *(str(CLASS / n) for n in names), "--out", str(out),
        "--job-timeout", JOB_TIMEOUT, "--no-progress", "--no-dashboard", "--grading", str(GRADING),
        "--export", "gradescope", *extra, *SELECTION,
    ]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, env=child_environment(), capture_output=True, text=True, timeout=600)
    took = time.monotonic() - started
    assert done.returncode == 0, done.stdout + done.stderr
    return took, done.stdout + done.stderr


def grades_of(out: Path) -> dict[str, dict]:
    """Each submission's verdict, score, chapters and tests, from grades.csv and its results.json."""
    found = {}
    for row in csv.DictReader(io.StringIO((out / "grades.csv").read_text())):
        results = json.loads((out / "submissions" / row["name"] / "results.json").read_text())
        found[row["name"]] = {
            "verdict": row["verdict"],
            "score": row["score"],
            "chapters": (row["5 ScalarMix"], row["6 Gradients"]),
            "tests": {t: row[t] for t in POINTS},
            "results": (results["score"], [(t["name"], t["score"], t["status"]) for t in results["tests"]]),
        }
    return found


def check_class(out: Path) -> dict[str, dict]:
    """grades.csv and every results.json against tests/batch/grading.toml, by hand (CLASS_EXPECTED)."""
    found = grades_of(out)
    assert list(found) == list(CLASS_EXPECTED)
    for name, (verdict, passing, total, chapters) in CLASS_EXPECTED.items():
        assert total == sum(POINTS[t] for t in passing)
        got = found[name]
        assert (got["verdict"], got["score"], got["chapters"]) == (verdict, str(total), (str(chapters["5"]), str(chapters["6"]))), name  # fmt: skip
        assert got["tests"] == {t: str(POINTS[t] if t in passing else 0) for t in POINTS}, name
        score, tests = got["results"]
        assert score == total and [(n.split(" ")[0], s, st) for n, s, st in tests] == [
            (t, float(POINTS[t] if t in passing else 0), "passed" if t in passing else "failed") for t in POINTS
        ], name
    hidden = json.loads((out / "submissions" / "hidden" / "results.json").read_text())
    assert "All tests passed" not in hidden["output"] and "Visible tests: 3 of 3 passed" in hidden["output"]
    data = {r["name"]: r for r in json.loads((out / "batch.json").read_text())["submissions"]}
    hang = data["hang-late"]
    assert hang["partial"] == {"finished": 2, "collected": 6}
    limits = hang["time_limits"]
    assert limits["rerun_alone"] is True and limits["counted"] == "the run alone" and limits["limit_counts"] is True
    assert limits["first_run"]["deadline_hit"] and limits["rerun"]["deadline_hit"]
    assert [a["outcome"] for a in hang["attempts"]] == ["hit a time limit: run again alone", "result"]
    for name in ("good", "wrong", "crash", "hidden"):
        assert (
            data[name]["time_limits"]["rerun_alone"] is False and data[name]["time_limits"]["first_run"]["hits"] == []
        )
    page = (out / "index.html").read_text()
    for name, (_, _, total, _) in CLASS_EXPECTED.items():
        assert f'data-score="{total} / 14"' in page, name
    # The hostile submission's own results.json, grade sheet and journal lines changed nothing.
    assert data["crash"]["grade"]["score"] == 8
    assert not any(p.name in ("grades.csv", "journal.jsonl") for p in (out / "submissions" / "crash").iterdir())
    return found


@contextlib.contextmanager
def busy_cores():
    """Another process per core, each spinning, as long as the block runs."""
    spinners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
        for _ in range(os.cpu_count() or 2)
    ]
    try:
        yield
    finally:
        for spinner in spinners:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(spinner.pid, signal.SIGKILL)
            spinner.wait()


@pytest.mark.integration
def test_a_class_graded_quiet_under_load_and_regraded(tmp_path):
    """Issue 33's "Done when": the class (a correct, a wrong, a hanging, a crashing submission and
    one failing the tests its students cannot see) graded on the embedded cluster, grades.csv and
    every results.json checked against the grading file, partial credit for the hanging one; the
    same class on one worker while a spinning process per core keeps the machine busy gives every
    verdict and score of the quiet run; a second run re-uses every result in a small fraction of
    the first's time, and --regrade runs a submission again."""
    pytest.importorskip("distributed")
    quiet_s, _ = run_batch(tmp_path / "quiet", "--workers", "2")
    quiet = check_class(tmp_path / "quiet")
    with busy_cores():
        loaded_s, _ = run_batch(tmp_path / "loaded", "--workers", "1")
    assert grades_of(tmp_path / "loaded") == quiet
    again_s, printed = run_batch(tmp_path / "quiet", "--workers", "2")
    assert "5 result(s) re-used, 0 run" in printed
    assert grades_of(tmp_path / "quiet") == quiet
    assert again_s < 0.2 * quiet_s, (again_s, quiet_s)
    _, printed = run_batch(tmp_path / "quiet", "--workers", "1", "--regrade", names=("good",))
    assert "0 result(s) re-used, 1 run" in printed
    print(f"quiet {quiet_s:.1f} s, loaded {loaded_s:.1f} s, re-used {again_s:.1f} s ({again_s / quiet_s:.3f})")


@pytest.mark.integration
def test_a_regrade_reuses_a_mutation_result(tmp_path):
    """docs/grading.md, "Regrades": a passing submission's mutation result is kept with its suite
    result; the second batch restores both, and its mutation report, without a cluster."""
    pytest.importorskip("distributed")
    out = tmp_path / "out"
    command = [sys.executable, "-m", "elmo_conformance", "batch", str(CLASS / "good"), "--out", str(out), "--workers",
               "1", "--no-progress", "--no-dashboard", "--mutants", "declared", *SELECTION]  # fmt: skip
    first = subprocess.run(command, env=child_environment(), capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stdout + first.stderr
    before = json.loads((out / "batch.json").read_text())["submissions"][0]["mutation"]
    report = (out / before["report"]).read_text()
    (out / before["report"]).unlink()
    again = subprocess.run(command, env=child_environment(), capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "1 result(s) re-used, 0 run; 1 mutation result(s) re-used" in again.stdout
    data = json.loads((out / "batch.json").read_text())
    assert data["executor"]["engine"] == "none"  # nothing ran: no cluster was started
    assert data["submissions"][0]["mutation"] == {**before, "reused": True}
    assert (out / before["report"]).read_text() == report
