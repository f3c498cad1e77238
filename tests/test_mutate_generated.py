"""`elmo-conformance mutate` (spec §13.2): mutants generated from an implementation's own source.

On a copy of tests/examples/outside_mix.py, with a few chosen mutants and `-k` selecting the few
tests that judge them (the whole suite would take minutes): the statuses (Killed, Timeout,
Survived, NoCoverage, CompileError), the reports, the incremental cache, a survivor's rerun
command reproducing it, a program built and run from its scratch copy, and the user's sources
byte for byte as they were after a run, an interrupted run and a killed one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from elmo_conformance.mutation.generate import generate
from elmo_conformance.mutation.reach import EVERY, ONE, ProgramMap, python_reach

ROOT = Path(__file__).resolve().parent.parent
# The module-scoped runs are shared: every test of this module on one pytest-xdist worker.
pytestmark = pytest.mark.xdist_group("mutate-generated")
EXAMPLE = ROOT / "tests" / "examples" / "outside_mix.py"
FAST = "hand_example or stable_for_large_s"  # the tests that judge the chosen mutants
LABELS = {
    "k += 1 -> pass": "Timeout",  # the softmax's loop never ends
    "e = np.exp(s) -> pass": "NoCoverage",  # in softmax_unshifted, which nothing calls
    "e / total -> None": "Killed",
    "max -> min": "Killed",  # shifted by min(s): only test_scalar_mix_is_stable_for_large_s sees it
    "softmax_unshifted -> softmin_unshifted": "Survived",  # renames a function nothing calls
}


def mutate(*args: str, cwd: Path = ROOT, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "elmo_conformance", "mutate", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def digest(folder: Path) -> dict[str, str]:
    """Every source file under `folder` (bytecode caches aside) and its hash."""
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def ids_by_label(path: Path) -> dict[str, str]:
    """The generated mutants' ids, by their change (`original -> replacement`)."""
    return {m.label().split("  ", 1)[1]: m.id for m in generate(path)}


@pytest.fixture(scope="module")
def user(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("user")
    shutil.copy(EXAMPLE, folder / "outside_mix.py")
    return folder


def chosen(path: Path) -> list[str]:
    ids = ids_by_label(path)
    return [arg for label in LABELS for arg in ("--mutant", ids[label])]


@pytest.fixture(scope="module")
def first_run(user: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, dict, Path]:
    out = tmp_path_factory.mktemp("report")
    before = digest(user)
    impl = str(user / "outside_mix.py")
    args = ["--impl", impl, "-k", FAST, "--out", str(out), "--no-html", "--timeout-min", "4", "--timeout-factor", "2"]
    done = mutate(*args, *chosen(user / "outside_mix.py"))
    assert digest(user) == before, "the user's sources changed"
    return done, json.loads((out / "mutation-report.json").read_text(encoding="utf-8")), out


def statuses(report: dict) -> dict[str, str]:
    return {m["description"].split("  ", 1)[1]: m["status"] for f in report["files"].values() for m in f["mutants"]}


def test_statuses_reports_and_the_survivors_lines(first_run) -> None:
    done, report, out = first_run
    assert done.returncode == 0, done.stdout + done.stderr
    assert statuses(report) == LABELS
    [entry] = report["files"].values()
    assert entry["language"] == "python" and "def softmax(s):" in entry["source"], "the user's own source"
    by_label = {m["description"].split("  ", 1)[1]: m for m in entry["mutants"]}
    hung = by_label["k += 1 -> pass"]
    assert hung["duration"] >= 4000, "a Timeout's duration is the time it ran before it was stopped (--timeout-min 4)"
    killed = by_label["max -> min"]
    assert killed["replacement"] == "min" and killed["location"]["start"] == {"line": 14, "column": 21}
    assert all("test_scalar_mix_is_stable_for_large_s" in test for test in killed["killedBy"])
    names = {t["id"]: t["name"] for f in report["testFiles"].values() for t in f["tests"]}
    assert "§5.4" in names[killed["killedBy"][0]], "a killer's name carries the spec sections it checks"
    assert "outside_mix.py:24:5  softmax_unshifted -> softmin_unshifted" in done.stdout
    assert f"--rerun {by_label['softmax_unshifted -> softmin_unshifted']['id']}" in done.stdout
    assert "score 60.0 %" in done.stdout
    assert "### Survivors" in (out / "summary.md").read_text(encoding="utf-8")


def test_the_incremental_run_reuses_a_status_only_while_nothing_it_depends_on_changed(first_run, user: Path) -> None:
    _, _, out = first_run
    impl = str(user / "outside_mix.py")
    args = ["--impl", impl, "-k", FAST, "--out", str(out), "--no-html", "--timeout-min", "4", "--timeout-factor", "2"]
    again = mutate(*args, *chosen(user / "outside_mix.py"))
    report = json.loads((out / "mutation-report.json").read_text(encoding="utf-8"))
    assert again.returncode == 0 and statuses(report) == LABELS
    reasons = {
        m["description"].split("  ", 1)[1]: m["statusReason"] for f in report["files"].values() for m in f["mutants"]
    }
    assert all("from the cache" in reason for reason in reasons.values()), reasons
    # An edit anywhere in the project, here the docstring of a function nothing calls: every
    # mutant is run again, the kills in softmax included (a status depends on the callers and
    # helpers of the mutated code as much as on the code itself).
    source = user / "outside_mix.py"
    source.write_text(source.read_text().replace("An early version", "The first version"), encoding="utf-8")
    third = mutate(*args, *chosen(source))
    report = json.loads((out / "mutation-report.json").read_text(encoding="utf-8"))
    assert third.returncode == 0 and statuses(report) == LABELS
    reasons = {
        m["description"].split("  ", 1)[1]: m["statusReason"] for f in report["files"].values() for m in f["mutants"]
    }
    cached = {label for label, reason in reasons.items() if "from the cache" in reason}
    assert cached == set(), reasons


def test_a_survivors_rerun_command_reproduces_it(first_run, user: Path) -> None:
    ids = ids_by_label(user / "outside_mix.py")
    impl = str(user / "outside_mix.py")
    survivor = mutate("--impl", impl, "-k", "hand_example", "--rerun", ids["softmax_unshifted -> softmin_unshifted"])
    assert survivor.returncode == 0 and "it survives" in survivor.stdout, survivor.stdout + survivor.stderr
    killed = mutate("--impl", impl, "-k", "hand_example", "--rerun", ids["e / total -> None"])
    assert killed.returncode == 1 and "the suite kills this mutant" in killed.stdout
    assert "test_hand_example_scalar_mix" in killed.stdout, "the suite's own output, failures and all"


def test_a_program_is_built_and_run_from_its_scratch_copy(tmp_path: Path) -> None:
    """A `cmd:` program with a build: a mutant the build refuses is a CompileError, not a kill; one
    that builds is killed, so the program ran from the mutated copy, not from the user's folder."""
    shutil.copy(EXAMPLE, tmp_path / "outside_mix.py")
    before = digest(tmp_path)
    ids = ids_by_label(tmp_path / "outside_mix.py")
    impl = f"cmd:{sys.executable} -m elmo_conformance.adapters.wire.server outside_mix.py"
    done = mutate(
        "--impl", impl, "--source", "outside_mix.py", "--build", "grep -q 'return e / total' outside_mix.py",
        "-k", "hand_example", "--out", str(tmp_path / "report"), "--no-html", "--timeout-min", "4",
        "--mutant", ids["e / total -> None"], "--mutant", ids["k += 1 -> pass"],
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "report" / "mutation-report.json").read_text(encoding="utf-8"))
    assert statuses(report) == {"e / total -> None": "CompileError", "k += 1 -> pass": "Timeout"}
    compile_error = next(m for f in report["files"].values() for m in f["mutants"] if m["status"] == "CompileError")
    assert "the build command exited with code 1" in compile_error["statusReason"]
    assert {k: v for k, v in digest(tmp_path).items() if k in before} == before, "the user's sources changed"


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL])
def test_an_interrupted_run_leaves_the_users_sources_as_they_were(how: signal.Signals, tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to the whole process group) and a crash (SIGKILL) while mutants run."""
    user = tmp_path / "user"
    user.mkdir()
    shutil.copy(EXAMPLE, user / "outside_mix.py")
    before = digest(user)
    ids = ids_by_label(user / "outside_mix.py")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "elmo_conformance", "mutate", "--impl", str(user / "outside_mix.py")]
    command += ["-k", "hand_example", "--out", str(tmp_path / "report"), "--no-html", "--timeout-min", "300"]
    command += ["--test-timeout-min", "300"]  # the hanging mutant hangs until the signal, past no deadline
    command += ["--mutant", ids["k += 1 -> pass"], "--mutant", ids["e / total -> None"]]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)  # fmt: skip
    output: list[str] = []
    try:
        assert process.stdout is not None
        for line in process.stdout:  # wait for the mutants to start
            output.append(line)
            if line.startswith("baseline"):
                break
        # The rest is read as it comes, so that the run never blocks on a full pipe.
        threading.Thread(target=lambda: output.extend(process.stdout or ()), daemon=True).start()
        time.sleep(4)
        os.killpg(process.pid, how)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            group = subprocess.run(["ps", "-o", "pid,stat,wchan:24,args", "--sid", str(process.pid)],
                                   capture_output=True, text=True).stdout  # fmt: skip
            pytest.fail(
                f"the run did not end within 60 s of {how.name}; its processes:\n{group}\n{''.join(output)[-3000:]}"
            )
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # whatever a SIGKILLed parent left running
        except ProcessLookupError:
            pass
    assert digest(user) == before


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_a_runner_ended_by_a_signal_leaves_no_process_behind(how: signal.Signals, tmp_path: Path) -> None:
    """§11.1, no process outlives the run: SIGTERM (a cancelled CI job, `timeout`) or SIGKILL sent
    to the runner alone, not to its group, while a worker is in the middle of a mutant that hangs.
    SIGTERM ends the run as Ctrl-C does (status 130, a partial report); after either, every process
    the runner had started (workers, their forked children, the mutant's served process) is gone
    within seconds, not when the hanging mutant would have ended (300 s)."""
    from elmo_conformance.processes import tree

    user = tmp_path / "user"
    user.mkdir()
    shutil.copy(EXAMPLE, user / "outside_mix.py")
    ids = ids_by_label(user / "outside_mix.py")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "elmo_conformance", "mutate", "--impl", str(user / "outside_mix.py")]
    command += ["-k", "hand_example", "--out", str(tmp_path / "report"), "--no-html", "--timeout-min", "300"]
    command += ["--test-timeout-min", "300", "--workers", "1", "--mutant", ids["k += 1 -> pass"]]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)  # fmt: skip
    output: list[str] = []
    started: dict[int, int] = {}
    try:
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line)
            if line.startswith("baseline"):
                break
        threading.Thread(target=lambda: output.extend(process.stdout or ()), daemon=True).start()
        time.sleep(4)  # the mutant's test hangs by now
        started = {pid: stat.started for pid in tree.descendants(process.pid) if (stat := tree.stat(pid)) is not None}
        assert len(started) >= 2, f"expected a worker and the mutant's processes under the runner: {started}"
        os.kill(process.pid, how)
        code = process.wait(60)
        deadline = time.monotonic() + 15
        left = started
        while left and time.monotonic() < deadline:
            time.sleep(0.2)
            left = {
                pid: t for pid, t in started.items() if (now := tree.stat(pid)) and now.started == t and not now.zombie
            }
        assert not left, (
            f"{how.name}: processes the runner started outlived it: {sorted(left)}\n{''.join(output)[-2000:]}"
        )
    finally:
        for pid in started:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    if how == signal.SIGTERM:
        assert code == 130, "".join(output)[-3000:]
        report = json.loads((tmp_path / "report" / "mutation-report.json").read_text(encoding="utf-8"))
        assert report["files"] is not None
        assert "interrupted" in "".join(output), "".join(output)[-3000:]
    else:
        assert code == -signal.SIGKILL


def test_generated_ids_survive_edits_elsewhere_and_comments_are_not_mutated(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text('"""doc: a + b"""\n\n\ndef f(a, b):\n    # a - b\n    return a + b\n', encoding="utf-8")
    first = {m.label(): m.id for m in generate(source)}
    assert {m.line for m in generate(source)} == {4, 6}, "code lines only: not the docstring, not the comment"
    source.write_text("import os\n" + source.read_text(), encoding="utf-8")
    assert set(first.values()) == {m.id for m in generate(source)}, "ids do not depend on line numbers"
    c = tmp_path / "p.c"
    c.write_text("/* a + b\n   c - d */\nint f(int a) { return a + 1; } // x * y\n", encoding="utf-8")
    assert {m.line for m in generate(c)} == {3}


def test_an_inserted_statement_is_located_at_its_point_of_insertion(tmp_path: Path) -> None:
    """A mutant that adds a statement after a line (universalmutator's `break;` and `continue;`)
    marks no character of the original: its location is the empty range at the line's end (the
    Stryker report's start equals its end), and a replacement marks exactly what it replaced."""
    source = tmp_path / "loop.c"
    lines = ["int first(const int *a, int n) {", "    for (int i = 0; i < n; i++) {", "        if (a[i]) {",
             "            return i;", "        }", "    }", "    return -1;", "}"]  # fmt: skip
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    mutants = generate(source, relative="loop.c")
    inserted = [m for m in mutants if m.label().endswith("(nothing) -> break;") and m.line == 4]
    assert inserted, sorted(m.label() for m in mutants)
    end = len(lines[3]) + 1
    assert inserted[0].columns == (end, end)
    assert inserted[0].label(tmp_path).startswith(f"loop.c:4:{end}  ")
    replaced = next(m for m in mutants if m.line == 2 and m.changed == ("<", "<="))
    start = lines[1].index("<") + 1
    assert replaced.columns == (start, start + 1)


def test_what_reaches_a_mutant() -> None:
    lines = {str(EXAMPLE): {17: ["t1"], 20: ["t1", "t2"]}}
    assert python_reach(str(EXAMPLE), 20, lines) == {"t1", "t2"}
    assert python_reach(str(EXAMPLE), 26, lines) == set(), "a line in a function no test ran"
    # A function's header runs on import, but what a mutant of it changes shows where the function
    # is called: the tests that run its body (softmax's, lines 13-21), or the cheapest test alone
    # when none does (softmax_unshifted: a header that breaks the import fails it).
    assert python_reach(str(EXAMPLE), 12, lines) == {"t1", "t2"}, "softmax's def line"
    assert python_reach(str(EXAMPLE), 24, lines) == ONE, "the def line of a function no test calls"
    assert python_reach(str(EXAMPLE), 52, {str(EXAMPLE): {53: ["t3"]}}) == {"t3"}, "a method's def line"
    assert python_reach(str(EXAMPLE), 47, lines) is EVERY, "a class's decorator: every use of the class"
    c = ROOT / "adapters" / "c"
    program = ProgramMap(sorted(c.glob("*.c")), ["scalar_mix", "scalar_mix_vjp", "bilm_layers"])
    scalar_mix = next(first for name, first, _ in program.functions[str(c / "scalar_mix.c")] if name == "scalar_mix")
    assert program.protocol_functions(str(c / "scalar_mix.c"), scalar_mix + 1) == {"scalar_mix"}
    main = next(first for name, first, _ in program.functions[str(c / "main.c")] if name == "main")
    assert program.protocol_functions(str(c / "main.c"), main + 1) is EVERY, "what every request runs"


@pytest.mark.parametrize("impl, declared", [("c", "mutants.c"), ("torch", "mutants.py"), ("numpy", "mutants.py")])
def test_a_builtins_default_sources_leave_out_its_declared_mutants(impl: str, declared: str) -> None:
    """§13.2: by default a built-in's own sources are mutated, less its declared mutants' code
    (§13.1), which a generated run never calls; numpy's are the reference's."""
    from elmo_conformance.mutation.mutate import parse, resolve

    _, files = resolve(parse(["--impl", impl]))
    names = {path.name for path in files}
    assert declared not in names and names, names
    suffix = ".c" if impl == "c" else ".py"
    assert all(path.suffix == suffix for path in files)
    if impl == "numpy":
        assert all(path.parent.name == "reference" for path in files), files


def test_a_missing_package_of_the_mutate_extra_is_named_before_the_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Installed without the `mutate` extra, the command says what to install and exits 2, rather
    than failing with a traceback in the engine or in a worker's coverage."""
    import importlib.util

    from elmo_conformance.mutation.mutate import main

    found = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name in ("universalmutator", "coverage") else found(name, *a),
    )
    assert main(["--impl", str(EXAMPLE), "--list"]) == 2
    assert (
        "error: elmo-conformance mutate needs universalmutator, coverage, not installed: "
        "pip install 'elmo-conformance[mutate]'"
    ) in capsys.readouterr().err


RUST = """\
use std::io;

pub fn mix_weights(s: &[f64]) -> Vec<f64> {
    let m = s.iter().cloned().fold(f64::MIN, f64::max);
    s.iter().map(|x| (x - m).exp()).collect()
}

impl Server {
    pub(crate) fn call_scalar_mix<T: Into<f64>>(&self, s: &[T]) -> Result<(), String> {
        let w = mix_weights(&[]);
        Ok(())
    }
}

fn main() {
    let table = [("scalar_mix", Server::call_scalar_mix)];
    read_frame();
}

fn read_frame() { /* { a brace in a comment } */ }
"""
GO = """\
package main

func mixWeights(s []float64) []float64 {
\treturn s
}

func (srv *Server) callScalarMix(s []float64) error {
\tmixWeights(s)
\treturn nil
}

func main() {
\thandlers := map[string]any{"scalar_mix": callScalarMix}
\t_ = handlers
}
"""
JS = """\
export function mixWeights(s) {
  if (s.length) { return s; }
  return [];
}
const callScalarMix = async (args) => {
  return mixWeights(args.s);
};
class Server {
  static handle(name) {
    const table = { "scalar_mix": callScalarMix };
    return table[name];
  }
}
"""


@pytest.mark.parametrize(
    "language, text, expected",
    [
        ("rust", RUST, [("mix_weights", 3, 6), ("call_scalar_mix", 9, 12), ("main", 15, 18), ("read_frame", 20, 20)]),
        ("go", GO, [("mixWeights", 3, 5), ("callScalarMix", 7, 10), ("main", 12, 15)]),
        ("javascript", JS, [("mixWeights", 1, 4), ("callScalarMix", 5, 7), ("handle", 9, 12)]),
    ],
)
def test_the_functions_of_a_program_in_each_brace_language(language: str, text: str, expected: list) -> None:
    """reach.c_functions finds each function definition and its lines (counted by hand): Rust's
    in an `impl`, with generics and a return type; Go's with a receiver; JavaScript's functions,
    arrow functions and class methods; an `if` block is not a function."""
    from elmo_conformance.mutation.reach import c_functions

    assert [(name, first, last) for name, first, last, _, _ in c_functions(text, language)] == expected


def test_a_programs_call_graph_is_read_from_every_source(tmp_path: Path) -> None:
    """A helper that a handler calls in one file and main calls in another is reached by every
    test: the map must read both files even when only the helper's file has mutants to run (read
    from that file alone, it would run only the handler's tests: a false survivor)."""
    (tmp_path / "mix.rs").write_text(
        "fn call_scalar_mix() { helper(); }\nfn helper() {\n    let x = 1;\n}\n"
        'const T: [(&str, fn()); 1] = [("scalar_mix", call_scalar_mix)];\n',
        encoding="utf-8",
    )
    (tmp_path / "main.rs").write_text("fn main() {\n    helper();\n}\n", encoding="utf-8")
    names = ["scalar_mix"]
    alone = ProgramMap([tmp_path / "mix.rs"], names)
    assert alone.protocol_functions(str(tmp_path / "mix.rs"), 3) == {"scalar_mix"}
    both = ProgramMap([tmp_path / "mix.rs", tmp_path / "main.rs"], names)
    assert both.protocol_functions(str(tmp_path / "mix.rs"), 3) is EVERY


def test_the_progress_line_counts_timeouts_as_detected_and_names_them_apart() -> None:
    """The progress line's first count is what the score counts as detected (Killed and Timeout,
    spec §13.2), each named: a long run's line once said "killed" for both."""
    import io

    from elmo_conformance.mutation.model import MutantRun
    from elmo_conformance.mutation.mutate import Progress

    out = io.StringIO()
    progress = Progress(True, out)
    progress.PLAIN_EVERY = 0.0
    progress.start(4)
    for status in ("Killed", "Timeout", "Survived", "NoCoverage"):
        progress.done(MutantRun("c", status.lower(), status))
    last = out.getvalue().strip().splitlines()[-1]
    assert "4/4 mutants run (detected 2 (killed 1, timeout 1), survived 1, no coverage 1)" in last, last
