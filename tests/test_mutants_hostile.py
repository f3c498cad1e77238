"""The mutation runner against careless and hostile input (spec §13.1): an adapter name pytest
escapes in node ids, a baseline that hangs where no alarm reaches, empty mutant ids, deadlines of
inf, a run in which no mutant ran, two adapters of one name, ids and titles that are markdown or
shell syntax. The gate must never pass a run it did not check, and every run must end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from elmo_conformance.mutation.__main__ import parse
from elmo_conformance.mutation.model import Baseline, MutantInfo, MutantRun, TestOutcome
from elmo_conformance.mutation.runner import Options, Results
from elmo_conformance.mutation.summary import escape, markdown
from elmo_conformance.mutation.table import terminal
from elmo_conformance.mutation.verdicts import judge, session_failures

ROOT = Path(__file__).resolve().parent.parent
BROKEN = ROOT / "tests" / "broken"
EXAMPLES = ROOT / "tests" / "examples"


def run_mutants(out: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "elmo_conformance.mutation", "--out", str(out), "--no-html", *args]
    try:
        return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the mutation run did not finish within {timeout} s\n{exc.stdout}\n{exc.stderr}")


def statuses(out: Path) -> dict[str, str]:
    report = json.loads((out / "mutation-report.json").read_text(encoding="utf-8"))
    return {m["id"]: m["status"] for entry in report["files"].values() for m in entry["mutants"]}


def test_an_adapter_named_in_non_ascii_has_its_mutants_run_and_killed(tmp_path: Path) -> None:
    """pytest writes `mïne` as `m\\xefne` in node ids: before, the runner found no test of the
    adapter, judged it not testable and passed the gate without running its mutant."""
    done = run_mutants(tmp_path, "--impl", str(EXAMPLES / "non_ascii_name.py"), "--mutant", "s01", "--workers", "2")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "mïne s01: Killed by" in output
    assert statuses(tmp_path) == {"mïne:s01": "Killed"}
    report = json.loads((tmp_path / "mutation-report.json").read_text(encoding="utf-8"))
    [mutant] = [m for entry in report["files"].values() for m in entry["mutants"]]
    assert any("test_hand_example_scalar_mix[m\\xefne-float64]" in test for test in mutant["killedBy"])


def test_a_baseline_that_hangs_beyond_any_alarm_is_stopped_and_fails_the_run(tmp_path: Path) -> None:
    """The adapter swallows the call timeout's alarm and retries forever: before, the runner
    waited for its baseline forever."""
    args = ["--impl", str(BROKEN / "retries.py"), "--workers", "1", "--baseline-timeout", "10"]
    done = run_mutants(tmp_path, *args, timeout=180)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "the clean baseline run hung and its worker was stopped: it did not finish within 10 s" in output
    assert "it was running conformance/test_" in output and "(--baseline-timeout)" in output
    assert (tmp_path / "summary.md").read_text(encoding="utf-8").startswith("## Mutation testing (spec §13): ❌ failed")


def test_an_empty_mutant_id_in_a_declaration_fails_the_run(tmp_path: Path) -> None:
    """Before, the empty id selected no mutant: the clean adapter ran and was reported Survived."""
    impl = tmp_path / "empty_id.py"
    impl.write_text(
        "from elmo_conformance.adapters.numpy import MUTANTS, NumpyAdapter\n\n"
        "adapter = NumpyAdapter()\n"
        "adapter.mutants = {'': MUTANTS['s01']}\n",
        encoding="utf-8",
    )
    done = run_mutants(tmp_path / "out", "--impl", str(impl), "--workers", "1")
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert f"--impl {impl}: `mutants` declares an empty id" in output
    assert "Survived" not in output


def test_a_run_in_which_no_mutant_ran_never_passes(tmp_path: Path) -> None:
    """forward_only.py declares no mutant: the gate has checked nothing and must say so."""
    done = run_mutants(tmp_path, "--impl", str(BROKEN / "forward_only.py"), "--mutant", "s01", "--workers", "1")
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "no mutant was run, so nothing was checked (forward-only: 1 not declared)" in output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--timeout-min", "inf"],
            "argument --timeout-min: expected a number > 0 and <= 604800 seconds (a week), got inf",
        ),
        (["--timeout-factor", "nan"], "argument --timeout-factor: expected a number > 0 and <= 1000, got nan"),
        (
            ["--baseline-timeout", "inf"],
            "argument --baseline-timeout: expected a number > 0 and <= 604800 seconds (a week), got inf",
        ),
        (["--timeout-min", "0"], "argument --timeout-min: expected a number > 0 and <= 604800 seconds (a week), got 0"),
        (["--mutant", ""], "--mutant: expected a mutant id such as s01, got an empty one"),
        (["--mutant", "  "], "--mutant: expected a mutant id such as s01, got an empty one"),
    ],
)
def test_bad_options_are_refused_before_anything_runs(
    capsys: pytest.CaptureFixture, args: list[str], message: str
) -> None:
    """Before, `--timeout-min inf` crashed the runner after its baseline (OverflowError)."""
    with pytest.raises(SystemExit) as exited:
        parse(["--impl", "numpy", *args])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


# -- on hand-made results ----------------------------------------------------------------------------

CATALOG = [{"id": "s01", "title": "raw s as weights", "expected_killers": ["test_mix"]}]


def outcome(nodeid: str, name: str, result: str = "passed", adapter: str | None = None) -> TestOutcome:
    return TestOutcome(nodeid, name, result, 0.5, "conformance/test_x.py", 1, adapter=adapter)


def test_the_tests_of_an_adapter_are_found_by_its_case_not_by_its_id() -> None:
    escaped = outcome("conformance/test_x.py::test_mix[m\\xefne-float64]", "test_mix", adapter="mïne")
    suite = outcome("conformance/test_v.py::test_rows", "test_rows")
    other = outcome("conformance/test_x.py::test_mix[mine-float64]", "test_mix", adapter="mine")
    base = Baseline("mine.py", "mïne", tests={t.nodeid: t for t in (escaped, suite, other)})
    assert base.cases == [escaped] and base.ran == [escaped]
    plain = Baseline("mine.py", "mine", tests={other.nodeid: other})
    assert plain.ran == [other]


def test_a_baseline_with_no_test_of_its_adapter_fails_the_session() -> None:
    suite = outcome("conformance/test_v.py::test_rows", "test_rows")
    base = Baseline("mine.py", "mine", mutants=[MutantInfo("s01", "t", None, 1, 1, 1, None)])
    base.tests = {suite.nodeid: suite}
    results = Results(Options(("mine.py",)), CATALOG)
    results.baselines["mine.py"] = base
    [problem] = session_failures(results, judge(results))
    assert "the clean baseline run cannot judge a mutant: none of its 1 tests checks the adapter 'mine'" in problem


def test_two_adapters_of_one_name_fail_the_session() -> None:
    results = Results(Options(("a.py", "b dir/b.py")), CATALOG)
    for impl in results.options.impls:
        mix = outcome(f"conformance/test_x.py::test_mix[same-float64]-{impl}", "test_mix", adapter="same")
        results.baselines[impl] = Baseline(impl, "same", tests={mix.nodeid: mix})
        results.runs[(impl, "s01")] = MutantRun(impl, "s01", "Killed", {mix.nodeid: outcome(mix.nodeid, "test_mix")})
    problems = session_failures(results, judge(results))
    assert "--impl a.py and --impl 'b dir/b.py': both adapters are named 'same'" in problems[0]


HOSTILE_ID = "x|`rm -rf ~`<img src=x onerror=alert(1)>*"


def hostile_results() -> tuple[Results, list]:
    """An extra mutant whose id and title are markdown, HTML and shell syntax, and a catalog
    mutant that survives, for an adapter whose --impl path holds a space and a quote."""
    impl = "my adapters/it's.py"
    mix = outcome("conformance/test_x.py::test_mix[mine-float64]", "test_mix", adapter="mine")
    infos = [MutantInfo(i, "**bold** | <b>x</b> `code`", None, 1, 1, 1, None) for i in ("s01", HOSTILE_ID)]
    results = Results(Options((impl,)), CATALOG)
    results.baselines[impl] = Baseline(impl, "mine", mutants=infos, tests={mix.nodeid: mix})
    for mutant in ("s01", HOSTILE_ID):
        results.runs[(impl, mutant)] = MutantRun(impl, mutant, "Survived", {mix.nodeid: mix}, [mix.nodeid])
    return results, judge(results)


def test_the_markdown_summary_shows_ids_and_titles_as_text() -> None:
    results, verdicts = hostile_results()
    summary = markdown(results, verdicts)
    row = next(line for line in summary.splitlines() if line.startswith("| x"))
    assert row == (
        "| x\\|\\`rm -rf \\~\\`&lt;img src=x onerror=alert(1)&gt;\\* | (extra) \\*\\*bold\\*\\* \\| &lt;b&gt;x&lt;/b&gt; "
        "\\`code\\` | SURVIVED |"
    )
    assert row.count(" | ") == 2, "the id's and title's pipes stay inside their cells"
    assert "<img" not in summary and "<b>" not in summary
    assert escape("probe_accuracy _x_") == "probe_accuracy \\_x\\_", "an underscore inside a word is text"


def test_reproduce_commands_are_shell_quoted() -> None:
    results, verdicts = hostile_results()
    hostile = next(v for v in verdicts if v.mutant == HOSTILE_ID)
    first = hostile.reproduce("test_mix").splitlines()[0]
    assert first == (
        "nox -s conformance -- --impl 'my adapters/it'\"'\"'s.py' --mutant 'x|`rm -rf ~`<img src=x onerror=alert(1)>*' "
        "-k test_mix"
    )
    table = terminal(results, verdicts)
    assert "reproduce: nox -s conformance -- --impl 'my adapters/it'\"'\"'s.py' --mutant s01" in table
