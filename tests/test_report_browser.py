"""The report pages in headless Chromium (elmo_conformance/pages), driven by Playwright:
the page of a real run with failures and the dashboard of several real reports load with no
console error and no request beyond the file itself; a failing cell opens to its message, spec
sections and reproduce command; the filters hide passing rows; a hostile adapter's message stays
text; and full-page screenshots have a plausible size and content."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from elmo_conformance.conformance import record
from elmo_conformance.pages.browser import BrowserUnavailable, Chromium, find_chromium
from tests.suite_runs import run_args_here

ROOT = Path(__file__).resolve().parent.parent
# The module-scoped runs are shared: every test of this module on one pytest-xdist worker.
pytestmark = pytest.mark.xdist_group("report-browser")
RAISES = ROOT / "tests" / "broken" / "raises.py"
WIDTH = 1400
FAIL_BG, PASS_BG = (0xFF, 0xEB, 0xE9), (0xDA, 0xFB, 0xE1)  # report.css: --fail-bg, --pass-bg


def suite(report: Path, *args: str) -> subprocess.CompletedProcess:
    """The suite with ARGS in this process (each adapter served by its own child process), writing
    `report` and its page."""
    code, output = run_args_here("--report", str(report), *args)
    return subprocess.CompletedProcess(list(args), code, output, "")


def browser() -> Chromium:
    try:
        find_chromium()
        import playwright.sync_api  # noqa: F401
    except (BrowserUnavailable, ImportError) as exc:
        pytest.skip(f"no browser to drive: {exc}")
    return Chromium(width=WIDTH, height=1000)


def rows_shown(c: Chromium, table: str) -> int:
    return c.evaluate(f"document.querySelectorAll('#{table} tbody tr:not([hidden])').length")


def visible(c: Chromium, selector: str) -> bool:
    """Rendered: a closed <details>'s content is skipped (content-visibility), so it is not."""
    return c.evaluate(
        f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
        " return !!e && e.checkVisibility({contentVisibilityAuto: true, visibilityProperty: true}); })()"
    )


def check_screenshot(png: Path) -> None:
    """A PNG as wide as the window, as tall as a page, in many colours, with failing and passing cells."""
    image_module = pytest.importorskip("PIL.Image")
    with image_module.open(png) as image:
        assert image.format == "PNG" and image.width == WIDTH and 1000 <= image.height <= 60000, image.size
        rgb = image.convert("RGB")
        colours = rgb.getcolors(maxcolors=1 << 24)
    assert len(colours) > 100, f"only {len(colours)} colours: a blank or broken page"
    commonest = max(colours)[0]
    assert commonest < 0.9 * image.width * image.height, "one colour fills nine tenths of the page"
    present = {colour for _, colour in colours}
    assert FAIL_BG in present and PASS_BG in present, "failing and passing cells are drawn"


@pytest.fixture(scope="module")
def raises_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, Path]:
    out = tmp_path_factory.mktemp("raises")
    done = suite(out / "raises.json", "--impl", str(RAISES), "--dtype", "float64", "--html", str(out / "also.html"))
    return done, out


def test_a_run_with_failures_writes_its_page_beside_its_json(raises_run) -> None:
    done, out = raises_run
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    report = record.load(out / "raises.json")  # checked against spec/schemas/report.schema.json
    assert report["summary"]["failed"] > 0 and report["provenance"]["adapters"][0]["name"] == "raises"
    page = (out / "raises.html").read_text(encoding="utf-8")
    assert page == (out / "also.html").read_text(encoding="utf-8"), "--html writes the same page"
    assert f"report written to {out / 'raises.json'}, {out / 'raises.html'}, {out / 'also.html'}" in done.stdout
    margins = report["margins"]["raises"]["float64"]
    assert {"mix", "loss", "probe_weights"} <= set(margins), "the comparisons of the tests that ran are recorded"
    assert all(m["max_margin"] is not None and m["max_margin"] < 1 and m["failed"] == 0 for m in margins.values())
    [padding] = [t for t in report["tests"] if t["test"] == "test_padding_never_leaks"]
    assert (
        padding["reproduce"].startswith("nox -s conformance -- --impl") and "[raises-float64]" in padding["reproduce"]
    )


@pytest.mark.integration
def test_the_run_page_in_headless_chromium(raises_run, tmp_path: Path) -> None:
    _, out = raises_run
    page = out / "raises.html"
    with browser() as c:
        c.open(page)
        assert c.console_errors() == []
        assert c.requests() == [page.as_uri()], "the page loads nothing but itself"
        total = c.evaluate("document.querySelectorAll('#pass-table tbody tr').length")
        assert total >= 25 and rows_shown(c, "pass-table") == total

        cell = 'tr[data-test="test_padding_never_leaks"] td.k-FAIL'
        assert not visible(c, f"{cell} pre.message"), "a failing cell starts closed"
        c.click(f"{cell} summary")
        assert c.evaluate(f"document.querySelector('{cell} details').open") is True
        assert visible(c, f"{cell} pre.message")
        shown = c.evaluate(f"document.querySelector('{cell} details').innerText")
        assert "raises.bilm_layers raised RuntimeError: the layers are not implemented yet" in shown
        assert "§3.4 Layers and padding" in shown
        assert "nox -s conformance -- --impl" in shown and "test_padding_never_leaks[raises-float64]" in shown
        c.screenshot(tmp_path / "run.png")

        c.click('#run-filters input[value="pass"]')
        passing_only = c.evaluate("document.querySelectorAll('#pass-table tbody tr[data-kinds=\"pass\"]').length")
        assert passing_only > 0 and rows_shown(c, "pass-table") == total - passing_only
        assert c.evaluate(
            "[...document.querySelectorAll('#pass-table tbody tr:not([hidden])')]"
            ".every(r => r.dataset.kinds !== 'pass')"
        ), "a row whose every cell passed is hidden"
        assert c.evaluate(
            "[...document.querySelectorAll('#pass-table tbody tr[data-kinds*=\"FAIL\"]')].every(r => !r.hidden)"
        ), "a row with a failure stays shown"
        assert c.evaluate("document.querySelector('#run-filters .shown').textContent") == (
            f"{total - passing_only} of {total} rows shown"
        )
        c.evaluate(
            "(() => { const s = document.querySelector('#run-filters select');"
            " s.value = '7'; s.dispatchEvent(new Event('change', {bubbles: true})); })()"
        )
        assert rows_shown(c, "pass-table") == 0, "every §7 test passed, and passing rows are hidden"
        c.click('#run-filters button[data-action="all"]')
        assert rows_shown(c, "pass-table") == total
        assert c.console_errors() == []
    check_screenshot(tmp_path / "run.png")


HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)>"


@pytest.mark.integration
def test_a_hostile_error_message_is_text_in_the_browser(tmp_path: Path) -> None:
    adapter = tmp_path / "hostile.py"
    adapter.write_text(
        "from elmo_conformance.adapters.numpy import NumpyAdapter\n\n\n"
        "class Hostile(NumpyAdapter):\n"
        "    name = 'hostile'\n\n"
        "    def bilm_layers(self, params, ids, lengths):\n"
        f"        raise RuntimeError({HOSTILE!r})\n\n\n"
        "adapter = Hostile()\n",
        encoding="utf-8",
    )
    done = suite(tmp_path / "r.json", "--impl", str(adapter), "--dtype", "float64", "-k", "test_r0_repeats")
    assert done.returncode == 1, done.stdout[-3000:]
    page = tmp_path / "r.html"
    assert HOSTILE not in page.read_text(encoding="utf-8")
    with browser() as c:
        c.open(page)
        c.click("td.k-FAIL summary")
        text = c.evaluate("document.querySelector('td.k-FAIL details').innerText")
        assert HOSTILE in text, "the message is shown as it was raised"
        assert c.evaluate("document.querySelectorAll('img, script').length") == 1, "no tag came out of the message"
        assert c.dialogs == [], "no alert ran"
        assert c.console_errors() == [] and c.requests() == [page.as_uri()]


@pytest.fixture(scope="module")
def several(raises_run, tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, Path]:
    """The dashboard of numpy, torch (where installed), the broken adapter, numpy again as if from
    another machine, and a mutation report of numpy's mutants."""
    _, raises_out = raises_run
    out = tmp_path_factory.mktemp("dashboard")
    subset = ("--dtype", "float64", "-k", "scalar_mix or probe or padding or golden")
    reports = []
    for impl in ("numpy", "torch"):
        if impl == "torch" and not _installed("torch"):
            continue
        done = suite(out / f"{impl}.json", "--impl", impl, *subset)
        assert done.returncode == 0, done.stdout[-3000:]
        reports.append(out / f"{impl}.json")
    elsewhere = json.loads((out / "numpy.json").read_text(encoding="utf-8"))
    elsewhere["provenance"]["machine"]["host"] = "another-machine"
    elsewhere["provenance"]["commit"] = {"sha": "0123456789abcdef", "dirty": False}
    record.write(elsewhere, out / "numpy-elsewhere.json")
    reports += [raises_out / "raises.json", out / "numpy-elsewhere.json"]
    # A mutation report as elmo_conformance/mutation/stryker.py writes one: ids "<adapter>:<mutant id>".
    mutants = [
        {"id": f"numpy:{mid}", "mutatorName": mid, "description": mid, "status": status}
        for mid, status in {"s01": "Killed", "s02": "Killed", "s09": "Timeout", "x-extra": "Survived"}.items()
    ]
    stryker = {
        "schemaVersion": "2",
        "files": {"adapters/numpy/mutants.py": {"language": "python", "source": "", "mutants": mutants}},
        "config": {"notListed": []},
    }
    (out / "mutants").mkdir()
    (out / "mutants" / "mutation-report.json").write_text(json.dumps(stryker), encoding="utf-8")
    command = [sys.executable, "-m", "elmo_conformance.pages", "dashboard", *map(str, reports)]
    command += ["--mutants", str(out / "mutants" / "mutation-report.json"), "--out", str(out / "dashboard.html")]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300), out


def _installed(package: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(package) is not None


@pytest.mark.integration
def test_the_dashboard_of_several_reports_in_headless_chromium(several, tmp_path: Path) -> None:
    done, out = several
    assert done.returncode == 0, done.stdout + done.stderr
    page = out / "dashboard.html"
    with browser() as c:
        c.open(page)
        assert c.console_errors() == [] and c.requests() == [page.as_uri()]
        labels = c.evaluate("[...document.querySelectorAll('#provenance tbody th')].map(e => e.textContent)")
        numpys = [label for label in labels if label.startswith("numpy @ ")]
        assert len(numpys) == 2 and "numpy @ another-machine" in numpys, labels
        assert "raises" in labels and ("torch" in labels or not _installed("torch"))
        assert "0123456789" in c.evaluate("document.querySelector('#provenance').innerText"), "each result's commit"

        column = labels.index("raises") + 3  # the section table's columns: §, section, then the results
        cell = f'#section-table tr[data-section="3.4"] td:nth-child({column})'
        c.click(f"{cell} summary")
        text = c.evaluate(f"document.querySelector('{cell} details').innerText")
        assert "test_padding_never_leaks[raises-float64]" in text and "the layers are not implemented yet" in text
        total = c.evaluate("document.querySelectorAll('#section-table tbody tr').length")
        c.click('#dash-filters button[data-action="failures"]')
        failing = rows_shown(c, "section-table")
        assert 0 < failing < total
        c.click('#dash-filters button[data-action="all"]')

        mutants = c.evaluate(
            "[...document.querySelectorAll('#mutant-table tr[data-mutant=\"s01\"] td')].map(e => e.textContent.trim())"
        )
        statuses = dict(zip(labels, mutants[2:]))
        assert statuses["numpy @ another-machine"] == "Killed" and statuses[numpys[0]] == "Killed"
        assert statuses["raises"] == "", "no mutation report for raises"
        totals = c.evaluate("[...document.querySelectorAll('#mutant-table tfoot td')].map(e => e.textContent.trim())")
        totals = dict(zip(labels, totals[1:]))
        assert (
            totals["numpy @ another-machine"] == "3/10 catalog, 0/1 extra" and totals["raises"] == "no mutation report"
        )
        assert c.evaluate("document.querySelectorAll('#margins-chart svg').length") == 1
        c.screenshot(tmp_path / "dashboard.png")
        assert c.console_errors() == []
    check_screenshot(tmp_path / "dashboard.png")
