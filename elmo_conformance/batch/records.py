"""The verdict of each submission, from its jobs' results, and what the batch writes: each
submission's reports under DIR/submissions/NAME/, DIR/batch.json and the class dashboard
DIR/index.html, every file written atomically (a new file renamed over the old one).

Verdicts (every one but "pass" is a red row):

- ``pass``: the suite ran every selected test and all passed (exit status 0);
- ``fail``: it ran and some test failed (1);
- ``no tests``: no test was selected for it (5: a ``-k`` that matches nothing, a component it does
  not declare);
- ``did not load``: a manifest that is not valid, a build command that failed, an adapter the suite
  refused (4);
- ``hung``: the job (its build, or the suite) ran past --job-timeout and was stopped;
- ``crashed``: the suite did not finish (3: its process or the adapter's died, or left its report
  incomplete) or exited with another status;
- ``killed its worker``: the worker process running it died, and died again on the retry elsewhere;
- ``lost``: no verdict: the job's result never came back (the cluster went away, another suite
  version on a worker, a job that raised), the worker has no sandbox, or the suite's installed
  files were not the client's or changed during the job. A lost job makes the batch's exit status
  non-zero.
"""

from __future__ import annotations

import datetime
import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from elmo_conformance.batch.submissions import BATCH_FILE, DASHBOARD_FILE, Submission
from elmo_conformance.conformance.record import write_text

PASS, FAIL, NO_TESTS, NOT_LOADED, HUNG, CRASHED, KILLED_WORKER, LOST = (
    "pass",
    "fail",
    "no tests",
    "did not load",
    "hung",
    "crashed",
    "killed its worker",
    "lost",
)
VERDICTS = (PASS, FAIL, NO_TESTS, NOT_LOADED, HUNG, CRASHED, KILLED_WORKER, LOST)
BATCH_VERSION = 1
FAILURES_KEPT = 10  # failures listed per submission in batch.json
FAILURE_LINES = 4  # first lines of each failure's message
DETECTED = ("Killed", "Timeout")
VALID = ("Killed", "Timeout", "Survived", "NoCoverage")  # Stryker's: what a mutation score counts


def first_lines(text: str | None, n: int = FAILURE_LINES) -> str:
    lines = [line for line in (text or "").splitlines() if line.strip()]
    return "\n".join(lines[:n])


def new_record(submission: Submission) -> dict[str, Any]:
    record: dict[str, Any] = {
        **submission.public(),
        "verdict": None,
        "reason": None,
        "exit_status": None,
        "counts": {},
        "sections": {},
        "failures": [],
        "mutation": None,
        "reports": {},
        "attempts": [],
        "duration_s": None,
    }
    if submission.problem:
        record.update(verdict=NOT_LOADED, reason=submission.problem)
    return record


def outcomes(tests: list[dict[str, Any]]) -> dict[str, Any]:
    """A record's counts, sections and first failures of `tests` (a report's, or the tests its
    harness journaled before the run was stopped)."""
    failing = [t for t in tests if t.get("outcome") in ("failed", "error", "xpassed")]
    return {
        "counts": dict(Counter(str(t.get("outcome")) for t in tests)),
        "sections": _sections({"tests": tests}),
        "failures": [
            {
                "nodeid": t.get("nodeid"),
                "sections": t.get("sections") or [],
                "first_lines": first_lines(t.get("message")),
            }
            for t in failing[:FAILURES_KEPT]
        ],
        "failures_total": len(failing),
    }


def _sections(report: dict[str, Any]) -> dict[str, dict[str, int]]:
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for test in report.get("tests") or []:
        for section in test.get("sections") or ["(none)"]:
            counts[section][str(test.get("outcome"))] += 1
    return {s: dict(counts[s]) for s in sorted(counts, key=_section_key)}


def _section_key(section: str) -> tuple:
    return tuple(int(p) if p.isdigit() else 10**6 for p in section.split("."))


def attempts(outcome: Any) -> list[dict[str, Any]]:
    """Each try of the job: its id (the JOB_ENV its processes carried), where it ran, what came of it."""
    ids = list(outcome.ids)
    attempts = [
        {"job": ids[i] if i < len(ids) else None, "worker": worker, "outcome": "its worker died"}
        for i, worker in enumerate(outcome.died)
    ]
    last = ids[len(outcome.died)] if len(ids) > len(outcome.died) else None
    if outcome.result is not None:
        where = outcome.result.get("where") or {}
        attempts.append(
            {
                "job": outcome.result.get("job"),
                "worker": where.get("worker"),
                "host": where.get("host"),
                "outcome": "result",
            }
        )
    elif outcome.lost:
        attempts.append({"job": last, "outcome": f"lost: {outcome.lost}"})
    return attempts


def observed_tests(result: dict[str, Any] | None) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Each test's outcome as the harness observed it, and None, or what is known of a run that did
    not finish: its complete report's tests, or else the journal its harness wrote as the tests
    finished (elmo_conformance/batch/journal.py), with {"finished": N, "collected": M}. A test
    that hit its CPU-time limit is failed, whatever came of its last call."""
    result = result or {}
    entries = [e for e in result.get("journal") or [] if isinstance(e, dict)]
    hits = {e.get("nodeid"): e["hit"] for e in entries if e.get("event") == "test" and e.get("hit")}
    report = result.get("report")
    partial: dict[str, Any] | None = None
    if isinstance(report, dict) and report.get("complete") is True and not report.get("refused"):
        tests = [dict(t) for t in report.get("tests") or [] if isinstance(t, dict)]
    else:
        tests = [dict(e) for e in entries if e.get("event") == "test"]
        collected = next((e.get("nodeids") for e in entries if e.get("event") == "collected"), None)
        partial = {"finished": len(tests), "collected": len(collected) if isinstance(collected, list) else None}
    for test in tests:
        test.setdefault("test", str(test.get("nodeid", "")).split("::")[-1].split("[")[0])
        if test.get("nodeid") in hits:
            test["hit"] = hits[test.get("nodeid")]
            if test.get("outcome") == "passed":
                test["outcome"] = "failed"
    return tests, partial


def judge_suite(record: dict[str, Any], outcome: Any, directory: Path, out: Path) -> None:
    """Fill a submission's record from its suite job's outcome, and write its reports."""
    record["attempts"] = attempts(outcome)
    record["duration_s"] = round(outcome.seconds, 3)
    if outcome.result is None:
        if outcome.lost is None:
            record.update(
                verdict=KILLED_WORKER,
                reason=f"the worker process running it died, on both tries ({', '.join(outcome.died)})",
            )
        else:
            record.update(verdict=LOST, reason=f"no result: {outcome.lost}")
        return
    result = outcome.result
    directory.mkdir(parents=True, exist_ok=True)
    output = result.get("output") or ""
    build = result.get("build")
    if build and build.get("output"):
        write_text(directory / "build.txt", build["output"])
        record["reports"]["build"] = (directory / "build.txt").relative_to(out).as_posix()
    if output:
        write_text(directory / "output.txt", output)
        record["reports"]["output"] = (directory / "output.txt").relative_to(out).as_posix()
    if result.get("stage") in ("version", "sandbox", "suite-files"):
        # Another suite on the worker, no sandbox there, or the suite's files changed: no verdict.
        record.update(verdict=LOST, reason=result.get("problem"))
        return
    if result.get("stage") == "build":
        if result.get("timed_out"):
            record.update(
                verdict=HUNG, reason=f"its build command ran past the job's deadline ({outcome.job.deadline_s:g} s)"
            )
        else:
            tail = first_lines("\n".join((build or {}).get("output", "").splitlines()[-6:]), 6)
            record.update(
                verdict=NOT_LOADED, reason=f"its build command exited {(build or {}).get('exit_status')}: {tail}"
            )
        return
    status = result.get("exit_status")
    record["exit_status"] = status
    report = result.get("report")
    if isinstance(report, dict):
        from elmo_conformance.conformance import record as report_file

        record.update(outcomes(report.get("tests") or []))
        report_file.write(report, directory / "report.json")
        record["reports"]["json"] = (directory / "report.json").relative_to(out).as_posix()
        if report.get("complete") and not report.get("refused"):
            try:
                from elmo_conformance.pages import render

                render.write(render.run_page(report), directory / "report.html")
                record["reports"]["html"] = (directory / "report.html").relative_to(out).as_posix()
            except Exception as exc:  # a page that cannot be rendered is noted, never the verdict
                record["page_error"] = f"{type(exc).__name__}: {exc}"
    tests, partial = observed_tests(result)
    if partial is not None and partial["finished"]:
        # The run did not finish: what its harness journaled, test by test, still counts.
        record.update(outcomes(tests))
    if partial is not None and partial["collected"] is not None:  # its tests were collected, not all finished
        record["partial"] = partial
    problem = result.get("problem")
    if result.get("timed_out"):
        counted = record.get("partial")
        done = f"; {counted['finished']} of {counted['collected']} tests had finished" if counted else ""
        record.update(
            verdict=HUNG,
            reason=f"the suite ran past the job's deadline ({outcome.job.deadline_s:g} s) and was stopped{done}",
        )
    elif status == 0:
        record.update(verdict=PASS, reason=None)
    elif status == 1:
        n = record.get("failures_total", 0)
        first = record["failures"][0]["nodeid"] if record["failures"] else "?"
        record.update(verdict=FAIL, reason=f"{n} test case(s) failed; first: {first}")
    elif status == 5:
        record.update(verdict=NO_TESTS, reason="no test was selected for it (check -k and the components it declares)")
    elif status == 4:
        record.update(verdict=NOT_LOADED, reason=_load_reason(problem, output))
    else:
        record.update(verdict=CRASHED, reason=f"exit status {status}: {problem or first_lines(output[-2000:], 3)}")


def _load_reason(problem: str | None, output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower() or "cannot" in line.lower()]
    detail = (errors or lines or [""])[-1][:500]
    return "the suite could not load it" + (f": {problem}" if problem else "") + (f" ({detail})" if detail else "")


def mutation_summary(mode: str, outcomes: list[Any], directory: Path, out: Path) -> dict[str, Any]:
    """The mutation record of a submission from its mutation jobs' outcomes (one per shard)."""
    merged: dict[str, Any] | None = None
    problems: list[str] = []
    statuses: list[Any] = []
    seconds = 0.0
    for outcome in outcomes:
        seconds += outcome.seconds
        result = outcome.result
        if result is None:
            problems.append(outcome.lost or "its worker died on both tries")
            continue
        statuses.append(result.get("exit_status"))
        if result.get("stage") == "build":
            problems.append("its build command failed")
            continue
        if result.get("timed_out"):
            problems.append(f"the mutation run ran past its deadline ({outcome.job.deadline_s:g} s)")
        report = result.get("report")
        if not isinstance(report, dict):
            tail = first_lines("\n".join((result.get("output") or "").splitlines()[-5:]), 5)
            problems.append(f"no mutation report (exit status {result.get('exit_status')}): {tail}")
            continue
        if merged is None:
            merged = report
        else:
            for key, entry in (report.get("files") or {}).items():
                target = merged.setdefault("files", {}).setdefault(key, {"mutants": []})
                known = {m.get("id") for m in target.get("mutants", [])}
                target.setdefault("mutants", []).extend(m for m in entry.get("mutants", []) if m.get("id") not in known)
    summary: dict[str, Any] = {
        "mode": mode,
        "jobs": len(outcomes),
        "exit_statuses": statuses,
        "duration_s": round(seconds, 3),
    }
    if merged is not None:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / "mutation-report.json"
        write_text(path, json.dumps(merged, indent=1) + "\n")
        counts = Counter(
            str(m.get("status")) for entry in (merged.get("files") or {}).values() for m in entry.get("mutants", [])
        )
        considered = sum(counts.get(status, 0) for status in VALID)
        detected = sum(counts.get(status, 0) for status in DETECTED)
        summary.update(
            counts=dict(counts),
            detected=detected,
            considered=considered,
            score=round(detected / considered, 4) if considered else None,
            report=path.relative_to(out).as_posix(),
        )
    if merged is not None and not summary.get("considered") and not problems:
        problems.append(
            "no mutant was checked: " + ("it declares none" if mode == "declared" else "none was generated")
        )
    if problems:
        summary["problem"] = "; ".join(problems)
    return summary


def summary_counts(records: list[dict[str, Any]]) -> dict[str, int]:
    counts = Counter(r["verdict"] for r in records)
    return {verdict: counts[verdict] for verdict in VERDICTS if counts[verdict]}


def write_batch(out: Path, records: list[dict[str, Any]], executor: dict[str, Any], options: dict[str, Any]) -> Path:
    from elmo_conformance.ground.resources import spec_version
    from elmo_conformance.ground.version import __version__

    data = {
        "batch_version": BATCH_VERSION,
        "suite_version": __version__,
        "spec_version": spec_version(),
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "executor": executor,
        "options": options,
        "summary": summary_counts(records),
        "submissions": records,
    }
    return write_text(out / BATCH_FILE, json.dumps(data, indent=1) + "\n")


def chapters(records: list[dict[str, Any]]) -> list[str]:
    found = {section.split(".")[0] for r in records for section in r.get("sections") or {}}
    return sorted(found, key=_section_key)


def chapter_cells(record: dict[str, Any], columns: list[str]) -> list[dict[str, Any]]:
    cells = []
    for chapter in columns:
        totals: Counter[str] = Counter()
        for section, counts in (record.get("sections") or {}).items():
            if section.split(".")[0] == chapter:
                totals.update(counts)
        ran = sum(totals[o] for o in ("passed", "failed", "error", "xpassed"))
        bad = sum(totals[o] for o in ("failed", "error", "xpassed"))
        if not totals:
            cells.append({"text": "–", "kind": "none"})
        elif not ran:
            cells.append({"text": "skip", "kind": "skip"})
        else:
            cells.append({"text": f"{totals['passed']}/{ran}", "kind": "FAIL" if bad else "pass"})
    return cells


def write_dashboard(
    out: Path, records: list[dict[str, Any]], executor: dict[str, Any], options: dict[str, Any]
) -> Path:
    """The class dashboard: a row per submission, linking its own page."""
    from elmo_conformance.ground.resources import spec_version
    from elmo_conformance.ground.version import __version__
    from elmo_conformance.pages import render

    columns = chapters(records)
    titles: dict[str, str] = {}
    try:
        from elmo_conformance.spec.catalog import sections

        titles = {k: v for k, v in sections().items() if k in columns}
    except Exception:
        pass
    from elmo_conformance.batch.grading import number

    rows = [
        {
            **r,
            "cells": chapter_cells(r, columns),
            "score_text": f"{number(r['grade']['score'])} / {number(r['grade']['max_score'])}"
            if r.get("grade")
            else "",
        }
        for r in records
    ]
    html = render._page(
        "batch.html.j2",
        rows=rows,
        grades=any(r.get("grade") for r in records),
        columns=columns,
        titles=titles,
        summary=summary_counts(records),
        verdicts=VERDICTS,
        executor=executor,
        options=options,
        suite_version=__version__,
        spec_version=spec_version(),
        created=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    )
    return render.write(html, out / DASHBOARD_FILE)
