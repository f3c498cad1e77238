"""Grading a class (docs/grading.md): points per test from a grading file, each submission's score
computed here, on the client, from the test outcomes its harness observed (never from anything
the submission wrote), the grade sheet ``grades.csv`` and Gradescope's ``results.json``.

A **grading file** (``--grading FILE``, TOML or JSON) gives points and a visibility per test:

    points = 1                  # each test not named below (default 1)
    visibility = "visible"      # visible, hidden, after_due_date, after_published (Gradescope's)
    per_test_columns = false    # grades.csv: a column per test, after the chapters'

    [sections]                  # each test of a spec chapter or section
    "6" = 2
    "5.4" = { points = 3, visibility = "hidden" }

    [tests]                     # a test of the suite, by its function's name
    test_hand_example_scalar_mix = { points = 4 }

A test's points and visibility come from its own entry, else from the most specific section entry
that covers one of its sections (§5 covers §5.4; the first such entry in the file on a tie), else
from the top level. A **test** is a test function of the suite; its cases (dtypes, parameters)
share its points: a test whose reference ran N cases scores points × (cases passed) / N, so a
submission gets partial credit within a test as well as across tests. A case not run (the job
was stopped before it, the submission does not implement it) scores 0. A test's chapter, the
column of grades.csv its points go to, is the chapter of the first section its ``spec`` marker
names.
"""

from __future__ import annotations

import ast
import csv
import difflib
import io
import json
import math
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

# Gradescope's visibility settings (https://gradescope-autograders.readthedocs.io/en/latest/specs/).
VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
FILE_KEYS = ("points", "visibility", "per_test_columns", "sections", "tests")
ENTRY_KEYS = ("points", "visibility")
GRADES_FILE = "grades.csv"
RESULTS_FILE = "results.json"  # Gradescope's name for it
PASSED = "passed"


class GradingError(ValueError):
    """A grading file that cannot be used: the message names the file, the entry and what was expected."""


@dataclass(frozen=True)
class Rule:
    """Points and visibility given to a section's tests or to one test (None: not given here)."""

    points: float | None = None
    visibility: str | None = None


@dataclass
class Grading:
    """What a grading file says; `Grading()` is the default: 1 point per test, all visible."""

    source: str | None = None
    points: float = 1.0
    visibility: str = "visible"
    per_test_columns: bool = False
    sections: dict[str, Rule] = field(default_factory=dict)
    tests: dict[str, Rule] = field(default_factory=dict)

    def rule(self, test: str, sections: list[str]) -> tuple[float, str]:
        """The points and visibility of `test`, whose spec marker names `sections`."""
        points, visibility = self.points, self.visibility
        best: list[tuple[int, int, Rule]] = []
        for order, (key, rule) in enumerate(self.sections.items()):
            if any(s == key or s.startswith(key + ".") for s in sections):
                best.append((-key.count("."), order, rule))
        for _, _, rule in sorted(best, key=lambda t: (t[0], t[1]), reverse=True):  # least specific first
            points = rule.points if rule.points is not None else points
            visibility = rule.visibility or visibility
        own = self.tests.get(test)
        if own is not None:
            points = own.points if own.points is not None else points
            visibility = own.visibility or visibility
        return points, visibility

    def describe(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "points": self.points,
            "visibility": self.visibility,
            "per_test_columns": self.per_test_columns,
            "sections": {k: _rule_json(r) for k, r in self.sections.items()},
            "tests": {k: _rule_json(r) for k, r in self.tests.items()},
        }


def _rule_json(rule: Rule) -> dict[str, Any]:
    return {k: v for k, v in (("points", rule.points), ("visibility", rule.visibility)) if v is not None}


@cache
def suite_tests() -> dict[str, tuple[str, ...]]:
    """Every test function of the suite -> the sections its ``@pytest.mark.spec`` names, read from
    the test files (conformance/test_*.py) without importing them."""
    from elmo_conformance.ground.resources import suite_dir

    found: dict[str, tuple[str, ...]] = {}
    for path in sorted(suite_dir().glob("test_*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_"):
                sections: tuple[str, ...] = ()
                for decorator in node.decorator_list:
                    if isinstance(decorator, ast.Call) and ast.unparse(decorator.func) == "pytest.mark.spec":
                        sections = tuple(str(ast.literal_eval(arg)) for arg in decorator.args)
                found[node.name] = sections
    return found


def _spec_sections() -> dict[str, str]:
    from elmo_conformance.spec.catalog import sections

    return sections()


def chapter_of(sections: list[str] | tuple[str, ...]) -> str:
    return sections[0].split(".")[0] if sections else "(none)"


def _points(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise GradingError(f"{where}: expected a number of points >= 0, got {value!r}")
    return float(value)


def _visibility(value: Any, where: str) -> str:
    if value not in VISIBILITIES:
        raise GradingError(f"{where}: expected one of {', '.join(VISIBILITIES)} (Gradescope's), got {value!r}")
    return str(value)


def _rule(value: Any, where: str) -> Rule:
    if isinstance(value, dict):
        extra = sorted(set(value) - set(ENTRY_KEYS))
        if extra:
            raise GradingError(f"{where}: unknown key {extra[0]!r} (expected {' or '.join(ENTRY_KEYS)})")
        if not value:
            raise GradingError(f"{where}: an empty entry (expected points, visibility or both)")
        points = _points(value["points"], f"{where}.points") if "points" in value else None
        visibility = _visibility(value["visibility"], f"{where}.visibility") if "visibility" in value else None
        return Rule(points, visibility)
    return Rule(_points(value, where))


def parse(data: Any, source: str = "the grading file") -> Grading:
    """A Grading from a grading file's contents (a TOML table or a JSON object); GradingError
    names `source`, the entry and what was expected."""
    where = f"--grading {source}"
    if not isinstance(data, dict):
        raise GradingError(
            f"{where}: expected a table (TOML) or an object (JSON) at the top, got {type(data).__name__}"
        )
    extra = [key for key in data if key not in FILE_KEYS]
    if extra:
        raise GradingError(f"{where}: unknown key {extra[0]!r} (expected {', '.join(FILE_KEYS)})")
    grading = Grading(source=source)
    if "points" in data:
        grading.points = _points(data["points"], f"{where}: points")
    if "visibility" in data:
        grading.visibility = _visibility(data["visibility"], f"{where}: visibility")
    if "per_test_columns" in data:
        if not isinstance(data["per_test_columns"], bool):
            raise GradingError(f"{where}: per_test_columns: expected true or false, got {data['per_test_columns']!r}")
        grading.per_test_columns = data["per_test_columns"]
    for part in ("sections", "tests"):
        if part in data and not isinstance(data[part], dict):
            raise GradingError(f"{where}: {part}: expected a table of entries, got {type(data[part]).__name__}")
    known_sections = _spec_sections()
    for key, value in (data.get("sections") or {}).items():
        if key not in known_sections:
            raise GradingError(
                f"{where}: sections.{json.dumps(key)}: not a section of the spec (expected a chapter or section "
                f"number of spec/elmo.md's headings, such as 5 or 5.4)"
            )
        grading.sections[key] = _rule(value, f"{where}: sections.{json.dumps(key)}")
    tests = suite_tests()
    for key, value in (data.get("tests") or {}).items():
        if key not in tests:
            close = difflib.get_close_matches(key, list(tests), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise GradingError(
                f"{where}: tests.{key}: not a test of the suite (expected the name of a test function of "
                f"conformance/test_*.py{hint})"
            )
        grading.tests[key] = _rule(value, f"{where}: tests.{key}")
    return grading


def load(path: str | Path) -> Grading:
    """Read a grading file: TOML (``.toml``, read with tomllib) or JSON (``.json``)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise GradingError(f"--grading {path}: cannot be read: {getattr(exc, 'strerror', None) or exc}") from None
    if path.suffix == ".toml":
        try:
            data: Any = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise GradingError(f"--grading {path}: not valid TOML: {exc}") from None
    elif path.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise GradingError(f"--grading {path}: not valid JSON: {exc}") from None
    else:
        raise GradingError(f"--grading {path}: expected a .toml or .json file, got {path.suffix or 'no suffix'}")
    return parse(data, str(path))


# ------------------------------------------------------------------------------ scores


def expected_tests(calibration: dict[str, Any] | None, observed: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The graded tests: test name -> {"cases": N, "sections": [...]}, from the reference's run on
    the worker (its calibration: the same selection), or else from what the submission ran."""
    found: dict[str, dict[str, Any]] = {}
    if calibration and calibration.get("items"):
        for name, cases in calibration["items"].items():
            found[name] = {"cases": int(cases), "sections": list((calibration.get("sections") or {}).get(name) or [])}
        return found
    for test in observed:
        entry = found.setdefault(str(test.get("test")), {"cases": 0, "sections": list(test.get("sections") or [])})
        entry["cases"] += 1
    return found


def _output(cases: list[dict[str, Any]], expected: int, why_missing: str | None) -> str:
    passed = sum(1 for t in cases if t.get("outcome") == PASSED)
    lines = [f"{passed} of {expected} case(s) passed"]
    for test in cases:
        hit = test.get("hit")
        if hit:
            lines.append(
                f"{test.get('nodeid')}: stopped at its CPU-time limit ({hit.get('cpu_s')} s used, "
                f"limit {hit.get('limit_s')} s)"
            )
        elif test.get("outcome") != PASSED:
            message = "\n".join(line for line in (test.get("message") or "").splitlines() if line.strip())
            lines.append(f"{test.get('nodeid')}: {test.get('outcome')}" + (f"\n{message[:1500]}" if message else ""))
    missing = expected - len(cases)
    if missing > 0:
        lines.append(f"{missing} case(s) not run" + (f": {why_missing}" if why_missing else ""))
    return "\n".join(lines)


def grade(
    grading: Grading,
    expected: dict[str, dict[str, Any]],
    observed: list[dict[str, Any]],
    why_missing: str | None = None,
) -> dict[str, Any]:
    """A submission's grade: each expected test's score (its points times the share of its cases
    that passed), the total, and the points per chapter. `observed`: the outcomes its harness
    recorded (``records.observed_tests``)."""
    by_test: dict[str, list[dict[str, Any]]] = {}
    for test in observed:
        by_test.setdefault(str(test.get("test")), []).append(test)
    tests = []
    chapters: dict[str, list[float]] = {}
    for name, info in expected.items():
        points, visibility = grading.rule(name, info["sections"])
        cases = by_test.get(name, [])
        passed = sum(1 for t in cases if t.get("outcome") == PASSED)
        total = max(info["cases"], 1)
        score = round(points * min(passed, total) / total, 4)
        chapter = chapter_of(info["sections"])
        cell = chapters.setdefault(chapter, [0.0, 0.0])
        cell[0] += score
        cell[1] += points
        tests.append(
            {
                "test": name,
                "sections": info["sections"],
                "chapter": chapter,
                "score": score,
                "max_score": points,
                "status": PASSED if passed >= info["cases"] else "failed",
                "cases": info["cases"],
                "passed": passed,
                "visibility": visibility,
                "output": _output(cases, info["cases"], why_missing),
            }
        )
    return {
        "score": round(sum(t["score"] for t in tests), 4),
        "max_score": round(sum(t["max_score"] for t in tests), 4),
        "chapters": {k: [round(v[0], 4), round(v[1], 4)] for k, v in sorted(chapters.items(), key=_chapter_key)},
        "tests": tests,
    }


def _chapter_key(item: tuple[str, Any]) -> tuple[int, str]:
    return (int(item[0]) if item[0].isdigit() else 10**6, item[0])


def number(value: float) -> str:
    """Points as a grade sheet shows them: at most 4 decimals, no trailing zeros."""
    return f"{round(value, 4):.4f}".rstrip("0").rstrip(".")


def grades_csv(records: list[dict[str, Any]], grading: Grading) -> str:
    """The grade sheet: a row per submission (its name, verdict, score, the maximum, notes), a
    column per spec chapter (points earned), and with per_test_columns a column per test."""
    chapters = sorted(
        {c for r in records for c in (r.get("grade") or {}).get("chapters", {})}, key=lambda c: _chapter_key((c, None))
    )
    titles = _spec_sections()
    tests = list(dict.fromkeys(t["test"] for r in records for t in (r.get("grade") or {}).get("tests", [])))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    header = ["name", "verdict", "score", "max_score"]
    header += [f"{c} {titles[c]}" if c in titles else c for c in chapters]
    header += tests if grading.per_test_columns else []
    writer.writerow([*header, "notes"])
    for record in records:
        grade = record.get("grade") or {}
        cells = grade.get("chapters", {})
        by_test = {t["test"]: t for t in grade.get("tests", [])}
        row = [record["name"], record["verdict"], number(grade.get("score", 0.0)), number(grade.get("max_score", 0.0))]
        row += [number(cells[c][0]) if c in cells else "" for c in chapters]
        if grading.per_test_columns:
            row += [number(by_test[t]["score"]) if t in by_test else "" for t in tests]
        writer.writerow([*row, "; ".join(grade_notes(record))])
    return buffer.getvalue()


def grade_notes(record: dict[str, Any]) -> list[str]:
    """What a grader should know about a row: a run that did not finish, a re-run, a reused result."""
    notes = []
    partial = record.get("partial")
    if partial:
        notes.append(
            f"partial: {partial.get('finished')} of {partial.get('collected')} cases finished before it stopped"
        )
    limits = record.get("time_limits") or {}
    if limits.get("rerun_alone"):
        notes.append(f"hit a time limit; re-run alone, {limits.get('counted')} counts")
    if record.get("reused"):
        notes.append("reused from an earlier run")
    return notes


def gradescope_results(record: dict[str, Any], top_visibility: str = "visible") -> dict[str, Any]:
    """Gradescope's results.json for a submission (https://gradescope-autograders.readthedocs.io/en/latest/specs/):
    ``score``, ``execution_time``, ``output``, ``visibility``, ``stdout_visibility`` and ``tests``,
    each with ``name``, ``score``, ``max_score``, ``status``, ``output``, ``visibility`` and
    ``tags`` (its spec sections)."""
    grade = record.get("grade") or {"score": 0.0, "max_score": 0.0, "tests": []}
    tests = grade["tests"]
    visible = [t for t in tests if t["visibility"] == "visible"]
    shown_passed = sum(1 for t in visible if t["status"] == PASSED)
    all_passed = all(t["status"] == PASSED for t in tests)
    lines = [
        f"{record['name']}: {number(grade['score'])} of {number(grade['max_score'])} points ({record['verdict']})."
    ]
    if record.get("reason"):
        lines.append(str(record["reason"]))
    if len(visible) < len(tests):
        # Never "all tests passed" while a test the student cannot see failed (issue 33).
        lines.append(
            f"Visible tests: {shown_passed} of {len(visible)} passed. {len(tests) - len(visible)} more test(s) "
            "are not shown here yet; they count in the score."
        )
    elif tests:
        lines.append("All tests passed." if all_passed else f"{shown_passed} of {len(tests)} tests passed.")
    lines += grade_notes(record)
    return {
        "score": grade["score"],
        "execution_time": round(record.get("duration_s") or 0.0),
        "output": "\n".join(lines),
        "visibility": top_visibility,
        "stdout_visibility": "hidden",
        "tests": [
            {
                "name": f"{t['test']} (§{', §'.join(t['sections'])})" if t["sections"] else t["test"],
                "score": t["score"],
                "max_score": t["max_score"],
                "status": t["status"],
                "output": t["output"],
                "visibility": t["visibility"],
                "tags": [f"§{s}" for s in t["sections"]],
            }
            for t in tests
        ],
    }
