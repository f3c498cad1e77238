"""The report pages without a browser (elmo_conformance/pages): the JSON report's schema, a hostile
adapter's message shown as text, pages that load nothing, the dashboard's labels, pass counts and
mutants, and the command that refuses a report that is not one."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from elmo_conformance.conformance import record
from elmo_conformance.conformance.record import ReportError
from elmo_conformance.pages import dashboard, render

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = "<script>alert(1)</script>"


def result(test: str, case: str | None, outcome: str, sections: list[str], message: str | None = None) -> dict:
    """One entry as the plugin's Recorder writes it."""
    nodeid = f"conformance/test_x.py::{test}" + (f"[{case}]" if case else "")
    return {
        "nodeid": nodeid,
        "test": test,
        "case": case,
        "sections": sections,
        "outcome": outcome,
        "when": "call",
        "duration_s": 0.01,
        "message": message,
        "reproduce": f"nox -s conformance -- '{nodeid}'" if outcome == "failed" else None,
    }


def margin(value: float | None, worst: str = "R^1") -> dict:
    return {
        "max_margin": value,
        "comparisons": 3,
        "values": 30,
        "failed": int(value is None or value > 1),
        "worst": worst,
        "worst_test": "conformance/test_x.py::test_layers[mine-float64]",
        "rtol": 1e-12,
        "atol": 1e-12,
        "device": "cpu",
    }


def made_report(name: str = "mine", message: str = "§3.4 Layers and padding\nboom", host: str | None = None) -> dict:
    adapters = [{"impl": f"{name}.py", "name": name, "capabilities": ["float64", "grad"], "device": "cpu"}]
    tests = [
        result("test_layers", f"{name}-float64", "passed", ["3.4"]),
        result("test_padding", f"{name}-float64", "failed", ["3.4"], message),
        result("test_mix", f"{name}-float64", "skipped", ["5.2"], "Skipped: no grad"),
        result("test_table", None, "passed", ["8"]),
    ]
    margins = {name: {"float64": {"layers": margin(0.9), "mix": margin(0.0), "logits": margin(None, worst=HOSTILE)}}}
    report = record.build(adapters, tests, 1, 1.5, margins, ["conformance", "--impl", f"{name}.py"])
    if host:
        report["provenance"]["machine"]["host"] = host
    return report


def test_a_built_report_matches_its_schema_and_a_broken_one_is_refused_by_name(tmp_path: Path) -> None:
    report = made_report()
    assert record.problems(report) == []
    assert report["report_version"] == 2 and report["complete"] is True
    assert report["section_titles"] == {
        "3": "The biLM",
        "3.4": "Layers and padding",
        "5": "ScalarMix",
        "5.2": "The mix",
        "8": "Input validation",
    }
    prov = report["provenance"]
    assert prov["suite_version"] and prov["spec_version"] == report["spec_version"]
    assert {"python", "numpy", "pytest"} <= set(prov["libraries"]) and prov["machine"]["cpu_count"]
    path = record.write(report, tmp_path / "ok.json")
    assert record.load(path)["tests"] == report["tests"]

    broken = json.loads(json.dumps(report))
    broken["tests"][1]["outcome"] = "exploded"
    del broken["margins"]
    (tmp_path / "broken.json").write_text(json.dumps(broken), encoding="utf-8")
    with pytest.raises(ReportError) as refused:
        record.load(tmp_path / "broken.json")
    text = str(refused.value)
    assert str(tmp_path / "broken.json") in text and "'margins' is a required property" in text
    assert "tests/1/outcome: 'exploded' is not one of" in text


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("{not json", "not JSON"),
        ('{"suite": "elmo-conformance", "complete": false}', "did not finish"),
        ('{"suite": "elmo-conformance", "complete": true, "refused": "fixtures refused", "tests": []}', "refused"),
        ('{"suite": "other"}', "not a conformance report"),
    ],
)
def test_what_is_not_a_finished_runs_report_is_refused(tmp_path: Path, content: str, says: str) -> None:
    path = tmp_path / "r.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ReportError, match=says) as refused:
        record.load(path)
    assert str(refused.value).startswith(f"{path}: ")


def test_a_version_1_report_is_still_read() -> None:
    old = {k: v for k, v in made_report().items() if k in ("suite", "spec_version", "adapters", "summary", "tests")}
    for test in old["tests"]:
        del test["reproduce"]
    assert record.problems(old) == [] and record.version(old) == 1
    page = render.run_page(old)
    assert "a version 1 report has no margins" in page and "test_padding" in page


class Page(HTMLParser):
    """Every tag with its attributes, every script's text and the visible text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.scripts: list[str] = []
        self.text: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        (self.scripts if self._in_script else self.text).append(data)


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    return page


def loads_nothing(html: str) -> None:
    """No tag refers to anything outside the page, and the policy forbids loading anything."""
    page = parse(html)
    for tag, attrs in page.tags:
        assert tag not in ("link", "iframe", "img", "object", "embed"), tag
        for attr in ("src", "href", "xlink:href", "action", "srcset"):
            value = attrs.get(attr)
            assert value is None or value.startswith("#"), f"<{tag} {attr}={value!r}>"
    assert not re.search(r"url\(\s*['\"]?(https?:|//)", html) and "@import" not in html
    [csp] = [a["content"] for t, a in page.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert "default-src 'none'" in csp
    [script] = page.scripts
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"'sha256-{digest}'" in csp, "the page's one script is allowed by its hash, and nothing else"


def test_a_hostile_message_is_shown_as_text_and_the_page_loads_nothing() -> None:
    html = render.run_page(made_report(message=f"§3.4 Layers and padding\n{HOSTILE} and \"quotes\" & 'more'"))
    assert HOSTILE not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    page = parse(html)
    assert len([t for t, _ in page.tags if t == "script"]) == 1
    assert any(HOSTILE in text for text in page.text), "the message is there, as text"
    loads_nothing(html)


def test_the_run_page_has_the_pass_table_failures_filters_and_margins() -> None:
    html = render.run_page(made_report())
    page = parse(html)
    rows = {a["data-test"]: a for t, a in page.tags if t == "tr" and "data-test" in a}
    assert set(rows) == {"test_layers", "test_padding", "test_mix", "test_table"}
    assert rows["test_padding"]["data-kinds"] == "FAIL" and rows["test_padding"]["data-chapters"] == "3"
    assert rows["test_mix"]["data-kinds"] == "skip" and rows["test_table"]["data-kinds"] == "pass"
    assert "nox -s conformance -- &#39;conformance/test_x.py::test_padding[mine-float64]&#39;" in html
    assert '<option value="3">§3 The biLM</option>' in html
    cells = {a["data-margin"] for t, a in page.tags if t == "td" and "data-margin" in a}
    assert cells == {"0.9", "0.0", "inf"}
    assert 'class="num m-tight"' in html and 'class="num m-over"' in html and 'class="num m-exact"' in html
    assert "<svg" in html and "tolerance: fails beyond 1" in html


def test_the_dashboard_keeps_one_adapter_from_two_machines_apart(tmp_path: Path) -> None:
    paths = []
    for i, (name, host) in enumerate([("mine", "alpha"), ("mine", "beta"), ("other", "alpha")]):
        path = tmp_path / f"r{i}.json"
        record.write(made_report(name, host=host), path)
        paths.append(path)
    results = dashboard.read(paths)
    assert [r.label for r in results] == ["mine @ alpha", "mine @ beta", "other"]
    table = dashboard.section_table(results)
    by_section = {row["section"]: row["cells"] for row in table["rows"]}
    assert [c["text"] for c in by_section["3.4"]] == ["1/2"] * 3
    assert by_section["3.4"][0]["worst"] == "FAIL" and by_section["5.2"][0]["text"] == "skipped"
    assert "8" not in by_section, "a test without an adapter belongs to no implementation"
    html = render.dashboard_page(results)
    assert html.count("mine @ beta") >= 3 and HOSTILE not in html
    loads_nothing(html)


def stryker(adapter: str, statuses: dict[str, str], not_declared: tuple[str, ...] = ()) -> dict:
    mutants = [
        {"id": f"{adapter}:{mid}", "mutatorName": mid, "description": mid, "status": status}
        for mid, status in statuses.items()
    ]
    unlisted = [{"adapter": adapter, "impl": adapter, "mutant": m, "status": "not declared"} for m in not_declared]
    return {
        "schemaVersion": "2",
        "files": {"adapters/x/mutants.py": {"language": "python", "source": "", "mutants": mutants}},
        "config": {"notListed": unlisted},
    }


def test_mutants_killed_per_implementation(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    record.write(made_report("mine"), report)
    statuses = {f"s{n:02}": "Killed" for n in range(1, 9)} | {"s09": "Timeout", "x-extra": "Survived"}
    mutants = tmp_path / "mutation-report.json"
    mutants.write_text(json.dumps(stryker("mine", statuses, ("s10",))), encoding="utf-8")
    [mine] = dashboard.read([report], [mutants])
    table = dashboard.mutant_table([mine])
    assert table["totals"] == [{"text": "9/10 catalog, 0/1 extra", "complete": False}]
    rows = {row["id"]: row for row in table["rows"]}
    assert rows["s10"]["cells"][0]["status"] == "not declared" and rows["s09"]["cells"][0]["detected"]
    assert not rows["x-extra"]["catalog"] and rows["s01"]["title"].startswith("ScalarMix uses the raw s")

    (tmp_path / "bad.json").write_text('{"schemaVersion": "2", "files": {"f": {"mutants": [{"id": "s01"}]}}}')
    with pytest.raises(ReportError, match=r"bad.json: files/f: a mutant without"):
        dashboard.load_mutation_report(tmp_path / "bad.json")


def test_a_report_of_generated_mutants_is_matched_by_impl_and_summed(tmp_path: Path) -> None:
    """A report of `mutate` (docs/mutation.md: ids without an adapter, config.impls its one
    --impl) attaches to the run of that --impl; the total is detected over judged (Killed and
    Timeout over those and Survived and NoCoverage: 2 of 3 here, RuntimeError and CompileError out
    of it); only the mutant the suite let through gets a row."""
    report = tmp_path / "r.json"
    record.write(made_report("mine"), report)
    statuses = {"a1": "Killed", "b2": "Timeout", "c3": "Survived", "d4": "RuntimeError", "e5": "CompileError"}
    mutants = [
        {"id": mid, "status": st, "description": f"mine.py:{n}:1  + -> -", "location": {}}
        for n, (mid, st) in enumerate(statuses.items(), 1)
    ]
    generated = {"schemaVersion": "2", "files": {"mine.py": {"mutants": mutants}}, "config": {"impls": ["mine.py"]}}
    path = tmp_path / "mutation-report.json"
    path.write_text(json.dumps(generated), encoding="utf-8")
    [mine] = dashboard.read([report], [path])
    table = dashboard.mutant_table([mine])
    assert table["totals"] == [{"text": "generated: 2/3 detected (66.7 %)", "complete": False}]
    assert [row["id"] for row in table["rows"] if not row["catalog"]] == ["c3"]

    generated["config"]["impls"] = ["mine.py", "other.py"]  # which implementation the ids are of is unknown
    path.write_text(json.dumps(generated), encoding="utf-8")
    with pytest.raises(ReportError, match=r"files/mine.py: a mutant without an '<adapter>:<mutant id>' id"):
        dashboard.load_mutation_report(path)


def test_the_command_writes_the_dashboard_and_refuses_a_bad_report(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    record.write(made_report(), good)
    bad.write_text(json.dumps({"suite": "elmo-conformance", "adapters": [], "summary": {}}), encoding="utf-8")
    command = [sys.executable, "-m", "elmo_conformance.pages", "dashboard"]
    done = subprocess.run(
        [*command, str(good), "--out", str(tmp_path / "d.html")], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "d.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    done = subprocess.run(
        [*command, str(good), str(bad), "--out", str(tmp_path / "e.html")], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 2 and not (tmp_path / "e.html").exists()
    assert f"error: {bad}: not a conformance report" in done.stderr and "'tests' is a required property" in done.stderr


def test_provenance_tolerates_no_checkout_and_no_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from elmo_conformance.conformance import provenance

    assert provenance.git_commit(tmp_path) is None, "not a git checkout"
    monkeypatch.setenv("PATH", str(tmp_path))  # no git program at all
    assert provenance.git_commit(ROOT) is None
