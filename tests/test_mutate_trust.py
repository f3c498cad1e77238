"""Mutation verdicts that can be trusted (spec §13.2, docs/mutation.md): a kill names the test that
killed it, a mutant that could not be judged is a RuntimeError and stays out of the score, and the
user's files are only read, whatever a mutant, a build or a link does.

Each test runs `elmo-conformance mutate` as a user does, through a launcher script like the one pip
installs (the first entry of the import path is then the launcher's folder, not the user's), on a
small implementation written here that nobody else's test uses, with a few chosen mutants and the
tests that judge them.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from elmo_conformance.mutation.generate import generate
from elmo_conformance.processes import sandbox

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.xdist_group("mutate-trust")
JUDGING = "hand_example or stable_for_large_s"  # the suite's tests that judge the chosen mutants

HELPER = '''
"""The softmax of ScalarMix (§5.1, §5.4), in a module beside the adapter that imports it."""

import numpy as np

assert np.exp(0.0) == 1.0  # checked at import: a mutant of this line stops the module from loading
TOUCH = False


def softmax(s):
    if TOUCH:
        with open(__file__, "a", encoding="utf-8") as handle:  # a mutant turns TOUCH on: it writes here
            handle.write("# written by a mutant\\n")
        with open("scribble.txt", "w", encoding="utf-8") as handle:  # and in its working folder
            handle.write("written by a mutant\\n")
    shifted = s - s.max()
    e = np.exp(shifted)
    return e / e.sum()
'''

ADAPTER = '''
"""ScalarMix (§5) as an outside implementer writes it, its softmax imported from helper.py beside it."""

import numpy as np
from helper import softmax

from elmo_conformance.adapters.input_checks import with_input_checks


def mix(s, gamma, layers):
    w = softmax(s)
    out = np.zeros_like(layers[0])
    for weight, layer in zip(w, layers):
        out = out + weight * layer
    return gamma[0] * out


@with_input_checks
class Mine:
    name = "mine"
    capabilities = frozenset({"float64", "float32", "scalar_mix"})

    def scalar_mix(self, s, gamma, layers):
        dtype = layers[0].dtype
        return np.asarray(mix(s.astype(dtype), gamma.astype(dtype), layers), dtype=dtype)


adapter = Mine()
'''

# The chosen mutants, by file and change, and what each must be.
EXPECTED = {
    ("helper.py", "max -> min"): "Killed",  # shifted by min(s): only the large-s test sees it (§5.4)
    ("adapter.py", "+ -> -"): "Killed",  # out - weight * layer
    ("helper.py", "TOUCH -> not (TOUCH)"): "Survived",  # writes to its own file and its folder, same outputs
    ("helper.py", "== -> >"): "RuntimeError",  # the module fails at import: the harness cannot start it
    ("adapter.py", "adapter = Mine() -> pass"): "RuntimeError",  # no `adapter`: the harness refuses it
}


def launcher(folder: Path) -> Path:
    """A console script as pip writes it: `elmo-conformance` in a folder of its own."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "elmo-conformance"
    script.write_text(
        f"#!{sys.executable}\nimport sys\nfrom elmo_conformance.cli import main\n"
        "if __name__ == '__main__':\n    sys.exit(main())\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    return script


def mutate(script: Path, *args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [str(script), "mutate", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env
    )


def digest(folder: Path, leave_out: tuple[str, ...] = ()) -> dict[str, str]:
    """Every entry under `folder` (but the top-level names in `leave_out`): a file's hash, a link's target."""
    found = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if relative.parts[0] in leave_out:
            continue
        if path.is_symlink():
            found[relative.as_posix()] = "-> " + os.readlink(path)
        elif path.is_file():
            found[relative.as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            found[relative.as_posix()] = "folder"
    return found


def ids(folder: Path, names: tuple[str, ...]) -> dict[tuple[str, str], str]:
    """The generated mutants' ids, by (file, change)."""
    return {(name, m.label().split("  ", 1)[1]): m.id for name in names for m in generate(folder / name)}


def statuses(report: dict) -> dict[tuple[str, str], str]:
    return {
        (file, m["description"].split("  ", 1)[1]): m["status"]
        for file, entry in report["files"].items()
        for m in entry["mutants"]
    }


def leftover(marker: str) -> list[str]:
    """Processes whose command line holds `marker`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                command = handle.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in command and int(pid) != os.getpid():
            found.append(f"{pid}: {command}")
    return found


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess, dict, dict]:
    """The user's project: adapter.py imports helper.py beside it; both are mutated, from a
    working folder with nothing else in it, the report in the default --out inside it."""
    tmp = tmp_path_factory.mktemp("trust")
    user = tmp / "mine"
    user.mkdir()
    (user / "helper.py").write_text(HELPER.lstrip(), encoding="utf-8")
    (user / "adapter.py").write_text(ADAPTER.lstrip(), encoding="utf-8")
    (user / "notes.txt").write_text("the implementer's own notes\n", encoding="utf-8")
    before = digest(user)
    found = ids(user, ("helper.py", "adapter.py"))
    chosen = [arg for key in EXPECTED for arg in ("--mutant", found[key])]
    script = launcher(tmp / "bin")
    args = ["--impl", "adapter.py", "--source", "adapter.py", "--source", "helper.py", "-k", JUDGING, "--no-html"]
    done = mutate(script, *args, *chosen, cwd=user)
    report = json.loads((user / "reports" / "mutate" / "mutation-report.json").read_text(encoding="utf-8"))
    return user, done, report, before


def test_a_kill_names_the_test_that_failed_and_nothing_else_is_a_kill(project) -> None:
    user, done, report, _ = project
    assert statuses(report) == EXPECTED, done.stdout + done.stderr
    tests = {t["id"] for entry in report["testFiles"].values() for t in entry["tests"]}
    for entry in report["files"].values():
        for mutant in entry["mutants"]:
            if mutant["status"] == "Killed":
                assert mutant["killedBy"] and set(mutant["killedBy"]) <= tests, mutant
            else:
                assert not mutant["killedBy"], mutant
    by_change = {
        key[1]: m for key, m in zip(statuses(report), [m for e in report["files"].values() for m in e["mutants"]])
    }
    assert all("stable_for_large_s" in test for test in by_change["max -> min"]["killedBy"])
    assert "AssertionError" in by_change["== -> >"]["statusReason"], "the harness's own words say why"
    assert "defines no attribute 'adapter'" in by_change["adapter = Mine() -> pass"]["statusReason"]


def test_runtime_errors_stay_out_of_the_score_and_too_many_fail_the_run(project) -> None:
    """2 Killed, 1 Survived: 66.7 %; 2 of 5 mutants could not be judged, more than 20 %: exit 1."""
    _, done, report, _ = project
    assert report["config"]["figures"]["score"] == 66.7
    assert "score 66.7 %" in done.stdout
    assert done.returncode == 1, done.stdout + done.stderr
    assert "40.0 % of the mutants run could not be judged (RuntimeError), more than --max-errors 20 %" in done.stderr


def test_the_users_folder_is_only_read(project) -> None:
    """The mutant that appends to its own `__file__` and writes a file in its working folder wrote
    into its scratch copy; the run left nothing in the user's folder but its --out."""
    user, _, _, before = project
    assert digest(user, leave_out=("reports",)) == before
    assert sorted(p.name for p in (user / "reports" / "mutate").iterdir()) == [
        ".mutate.lock",
        "mutate-cache.json",
        "mutation-report.json",
        "summary.md",
    ]


def test_the_report_names_files_from_the_project_root(project) -> None:
    user, done, report, _ = project
    assert report["projectRoot"] == user.as_posix()
    assert sorted(report["files"]) == ["adapter.py", "helper.py"]
    assert f"project root {user}: 3 files" in done.stdout, "notes.txt is copied too; reports/ is not"
    assert "helper.py" in done.stdout and "adapter.py" in done.stdout, "the per-file figures"


PROGRAM_BUILD = (
    "printf '#!/bin/sh\\nexec {python} -m elmo_conformance.adapters.wire.server mix.py\\n' > prog && chmod +x prog"
)


def program_project(tmp: Path) -> tuple[Path, dict[tuple[str, str], str]]:
    """A program built from mix.py by a build command: `./prog` serves the mix.py of its folder."""
    user = tmp / "prog-project"
    user.mkdir()
    shutil.copy(ROOT / "tests" / "examples" / "outside_mix.py", user / "mix.py")
    (user / "Makefile").write_text("# the project's build: see the --build command\n", encoding="utf-8")
    return user, ids(user, ("mix.py",))


def test_a_build_that_makes_no_program_stops_the_run_before_any_mutant(tmp_path: Path) -> None:
    """A --build that exits 0 without making the program is refused on the clean copy (exit 2),
    rather than every mutant being counted as killed."""
    user, found = program_project(tmp_path)
    done = mutate(
        launcher(tmp_path / "bin"), "--impl", "cmd:./prog", "--source", "mix.py", "--build", "true",
        "-k", JUDGING, "--no-html", "--mutant", found[("mix.py", "e / total -> None")], cwd=user,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--build fails on a clean copy of the project" in done.stderr
    assert "did not produce the program prog" in done.stderr


def test_a_build_is_contained_timed_and_leaves_no_process(tmp_path: Path) -> None:
    """A build that leaves a child holding its output does not make the run wait for it; a
    mutant whose build hangs is a CompileError that says it timed out, not a detection; no
    process of either outlives the run."""
    user, found = program_project(tmp_path)
    marker = f"{time.time_ns() % 10**9}.25"
    build = f"(sleep {marker} &); grep -q 'total = total + e' mix.py || exec sleep 1{marker}; " + PROGRAM_BUILD.format(
        python=sys.executable
    )
    started = time.monotonic()
    done = mutate(
        launcher(tmp_path / "bin"), "--impl", "cmd:./prog", "--source", "mix.py", "--build", build,
        "-k", JUDGING, "--no-html", "--timeout-min", "3", "--out", str(tmp_path / "out"),
        "--mutant", found[("mix.py", "e / total -> None")],
        "--mutant", found[("mix.py", "total = total + e[k] -> pass")],
        cwd=user, timeout=300,
    )  # fmt: skip
    took = time.monotonic() - started
    report = json.loads((tmp_path / "out" / "mutation-report.json").read_text(encoding="utf-8"))
    assert statuses(report) == {
        ("mix.py", "e / total -> None"): "Killed",
        ("mix.py", "total = total + e[k] -> pass"): "CompileError",
    }, done.stdout + done.stderr
    hung = next(m for e in report["files"].values() for m in e["mutants"] if m["status"] == "CompileError")
    assert "the build command timed out after" in hung["statusReason"]
    assert took < 120, f"the run waited on the build's background child: {took:.0f} s"
    assert not leftover(marker), leftover(marker)


def test_a_source_that_links_out_of_the_project_is_never_written_through(tmp_path: Path) -> None:
    """mix.py in the project is a link to a file elsewhere: the mutants are written into the
    copy as files of their own, the linked file stays as it was, and the kill is real."""
    user, _ = program_project(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (user / "mix.py").rename(elsewhere / "real_mix.py")
    (user / "mix.py").symlink_to(elsewhere / "real_mix.py")
    before, linked = digest(user), digest(elsewhere)
    found = ids(user, ("mix.py",))
    done = mutate(
        launcher(tmp_path / "bin"), "--impl", "cmd:./prog", "--source", "mix.py",
        "--build", PROGRAM_BUILD.format(python=sys.executable), "-k", JUDGING, "--no-html",
        "--out", str(tmp_path / "out"), "--mutant", found[("mix.py", "e / total -> None")],
        "--mutant", found[("mix.py", "max -> min")],
        cwd=user,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "out" / "mutation-report.json").read_text(encoding="utf-8"))
    assert set(statuses(report).values()) == {"Killed"}, done.stdout + done.stderr
    assert list(report["files"]) == ["mix.py"], "named as the user names it, inside the project"
    assert digest(elsewhere) == linked and digest(user) == before


def test_an_implementation_that_behaves_differently_in_its_copy_fails_the_run(tmp_path: Path) -> None:
    """An implementation that tells a mutant's run from a clean one (here: by its path) and fails
    there would have every mutant killed; the control run (the clean copy, run as every mutant
    is) and the baseline, which run from copies too, see the difference, and the run fails saying
    so rather than reporting kills."""
    user = tmp_path / "sly"
    user.mkdir()
    source = (ROOT / "tests" / "examples" / "outside_mix.py").read_text(encoding="utf-8")
    source = source.replace(
        "def mix(s, gamma, layers):\n",
        "def mix(s, gamma, layers):\n    if 'elmo-mutate' in __file__:\n        return layers[0]\n",
    )
    (user / "sly.py").write_text(source, encoding="utf-8")
    found = ids(user, ("sly.py",))
    done = mutate(
        launcher(tmp_path / "bin"), "--impl", "sly.py", "-k", JUDGING, "--no-html", "--out", str(tmp_path / "out"),
        "--mutant", found[("sly.py", "e / total -> None")], cwd=user,
    )  # fmt: skip
    report = json.loads((tmp_path / "out" / "mutation-report.json").read_text(encoding="utf-8"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the clean baseline run must pass, but 4 test(s) failed" in done.stderr
    assert "the baseline ran the implementation from a scratch copy of the project root" in done.stderr
    assert "Killed" not in statuses(report).values()


def test_a_file_whose_name_starts_with_a_dash_is_served(tmp_path: Path) -> None:
    shutil.copy(ROOT / "tests" / "examples" / "outside_mix.py", tmp_path / "-mix.py")
    found = ids(tmp_path, ("-mix.py",))
    done = mutate(
        launcher(tmp_path / "bin"), "--impl=-mix.py", "-k", JUDGING, "--no-html", "--out", str(tmp_path / "out"),
        "--mutant", found[("-mix.py", "e / total -> None")], cwd=tmp_path,
    )  # fmt: skip
    report = json.loads((tmp_path / "out" / "mutation-report.json").read_text(encoding="utf-8"))
    assert done.returncode == 0 and statuses(report) == {("-mix.py", "e / total -> None"): "Killed"}, done.stderr


def test_two_runs_on_one_out_folder_are_refused(tmp_path: Path) -> None:
    from elmo_conformance.mutation.cache import OutLocked, lock_out

    held = lock_out(tmp_path)
    try:
        with pytest.raises(OutLocked, match=rf"another elmo-conformance mutate run \(pid {os.getpid()}\)"):
            lock_out(tmp_path)
    finally:
        held.close()
    lock_out(tmp_path).close()  # free again once the first is done


def test_the_cache_keys_everything_a_status_depends_on_and_refuses_a_bad_entry(tmp_path: Path) -> None:
    from elmo_conformance.mutation.cache import VERSION, Cache
    from elmo_conformance.mutation.model import MutantRun, TestOutcome

    options = {"select": None, "timeout_factor": 3.0, "timeout_min": 20.0, "build_timeout": 900.0, "root": None}
    context = Cache.context("project", "suite", "mine.py", None, options)
    for changed in (
        Cache.context("project2", "suite", "mine.py", None, options),  # any file of the project
        Cache.context("project", "suite2", "mine.py", None, options),  # the suite
        Cache.context("project", "suite", "mine.py", "make", options),  # the build
        Cache.context("project", "suite", "mine.py", None, {**options, "timeout_min": 1.0}),  # a timeout
        Cache.context("project", "suite", "mine.py", None, {**options, "select": "hand"}),  # -k
    ):
        assert changed != context
    key = Cache.key("abc", "x = 1", context)
    killer = TestOutcome("t[mine-float64]", "t", "failed", 0.1, "t.py", 1)
    cache = Cache(tmp_path / "cache.json", enabled=True)
    cache.put(key, MutantRun("mine.py", "abc", "Killed", {killer.nodeid: killer}))
    cache.put("no-killer", MutantRun("mine.py", "def", "Killed"))  # a kill with no test is never kept
    cache.put("error", MutantRun("mine.py", "ghi", "RuntimeError", reason="broke"))  # always run again
    cache.save()
    again = Cache(tmp_path / "cache.json", enabled=True)
    assert set(again.entries) == {key} and again.rejected == 0
    data = json.loads((tmp_path / "cache.json").read_text(encoding="utf-8"))
    data["entries"]["bad-type"] = ["Killed"]
    data["entries"]["bad-status"] = {**data["entries"][key], "status": "Sunk"}
    data["entries"]["kill-without-test"] = {**data["entries"][key], "killers": ["elsewhere"]}
    (tmp_path / "cache.json").write_text(json.dumps(data), encoding="utf-8")
    read = Cache(tmp_path / "cache.json", enabled=True)
    assert set(read.entries) == {key} and read.rejected == 3
    (tmp_path / "cache.json").write_text(json.dumps({"version": VERSION - 1, "entries": {}}), encoding="utf-8")
    assert Cache(tmp_path / "cache.json", enabled=True).rejected == -1


def test_the_project_root_is_the_nearest_folder_with_a_project_file(tmp_path: Path) -> None:
    from elmo_conformance.mutation.scratch import UsageError, check_root, copy_project, find_root

    crate = tmp_path / "crate"
    (crate / "src" / "deep").mkdir(parents=True)
    (crate / "Cargo.toml").write_text("[package]\n", encoding="utf-8")
    (crate / "src" / "deep" / "lib.rs").write_text("fn f() {}\n", encoding="utf-8")
    (crate / "target" / "release").mkdir(parents=True)
    (crate / "target" / "release" / "big").write_bytes(b"\0" * 4096)
    (crate / ".git").mkdir()
    (crate / ".git" / "HEAD").write_text("ref\n", encoding="utf-8")
    (tmp_path / "unrelated.bin").write_bytes(b"\0" * 4096)
    assert find_root([crate / "src"]) == crate, "--source src in a cargo project: its Cargo.toml is copied"
    copied = copy_project(crate, tmp_path / "copy", skip=(str(crate / "reports"),))
    assert sorted(digest(tmp_path / "copy")) == ["Cargo.toml", "src", "src/deep", "src/deep/lib.rs"]
    assert copied.files == 2
    with pytest.raises(UsageError, match="outside the project root"):
        check_root(crate / "src", [crate / "Cargo.toml"], tmp_path / "out")
    with pytest.raises(UsageError, match="home folder"):
        check_root(Path.home(), [], tmp_path / "out")


def test_ctrl_c_writes_a_partial_report_and_exits_130(tmp_path: Path) -> None:
    """SIGINT to the whole process group while a mutant hangs: the run stops its workers, writes
    the report of what it judged (saying it is partial) and exits 130."""
    shutil.copy(ROOT / "tests" / "examples" / "outside_mix.py", tmp_path / "mix.py")
    found = ids(tmp_path, ("mix.py",))
    script = launcher(tmp_path / "bin")
    command = [str(script), "mutate", "--impl", "mix.py", "-k", JUDGING, "--no-html", "--timeout-min", "300"]
    command += ["--test-timeout-min", "300"]  # the mutant hangs until the interrupt, past no deadline
    command += ["--out", str(tmp_path / "out"), "--workers", "1", "--mutant", found[("mix.py", "k += 1 -> pass")]]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        lines = []
        for line in process.stdout:
            lines.append(line)
            if line.startswith("control"):
                break
        time.sleep(2)
        os.killpg(process.pid, signal.SIGINT)
        rest, _ = process.communicate(timeout=60)
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    output = "".join(lines) + rest
    assert process.returncode == 130, output
    assert "INTERRUPTED: a partial result" in output
    report = json.loads((tmp_path / "out" / "mutation-report.json").read_text(encoding="utf-8"))
    assert report["config"]["partial"] is True
    assert "interrupted (partial)" in (tmp_path / "out" / "summary.md").read_text(encoding="utf-8")
    assert "Traceback" not in output


def test_a_survivors_rerun_runs_in_a_copy_and_says_what_killed(tmp_path: Path) -> None:
    """--rerun ID: the whole suite on one mutant, from a copy; a kill names its first killing
    test, and the user's folder is unchanged."""
    shutil.copy(ROOT / "tests" / "examples" / "outside_mix.py", tmp_path / "mix.py")
    before = digest(tmp_path)
    found = ids(tmp_path, ("mix.py",))
    script = launcher(tmp_path.parent / f"{tmp_path.name}-bin")
    killed = mutate(script, "--impl", "mix.py", "-k", "hand_example", "--rerun", found[("mix.py", "e / total -> None")],
                    cwd=tmp_path)  # fmt: skip
    assert killed.returncode == 1, killed.stdout + killed.stderr
    assert "the suite kills this mutant: 2 test(s) failed, the first: conformance/test_scalar_mix.py::" in killed.stdout
    shown = mutate(script, "--impl", "mix.py", "--show", found[("mix.py", "e / total -> None")], cwd=tmp_path)
    assert shown.returncode == 0 and "-    return e / total\n+    return None\n" in shown.stdout, shown.stdout
    assert digest(tmp_path) == before


@pytest.mark.skipif(sandbox.unavailable() is not None, reason="bubblewrap cannot run here")
def test_a_build_runs_in_the_sandbox_and_writes_only_its_copy(tmp_path: Path) -> None:
    """A --build that writes beside the project (an absolute path in the user's folder and one
    in the user's home) writes nothing there: the build runs in the sandbox (docs/sandbox.md),
    its copy the only folder it can write; with --no-sandbox the same build does write."""
    user, found = program_project(tmp_path)
    escape = tmp_path / "escaped"
    build = f"(echo built > {escape}) 2>/dev/null; (echo built > {user}/escaped) 2>/dev/null; "
    build += PROGRAM_BUILD.format(python=sys.executable)
    before = digest(user)
    args = [
        "--impl", "cmd:./prog", "--source", "mix.py", "--build", build, "-k", JUDGING, "--no-html",
        "--out", str(tmp_path / "out"), "--mutant", found[("mix.py", "e / total -> None")],
    ]  # fmt: skip
    done = mutate(launcher(tmp_path / "bin"), *args, cwd=user)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not escape.exists(), "the build wrote outside its copy"
    assert digest(user) == before, "the build wrote into the user's project"
    done = mutate(launcher(tmp_path / "bin"), *args, "--no-sandbox", "--no-cache", cwd=user)
    assert done.returncode == 0, done.stdout + done.stderr
    assert escape.read_text() == "built\n", "without the sandbox the build's write lands: the check above can fail"


def test_a_mutant_marked_equivalent_is_ignored_with_its_reason_and_out_of_the_score(tmp_path: Path) -> None:
    """docs/mutation.md, "Equivalent mutants": the user's equivalent-mutants.toml marks the survivor
    (its writes change no output); it is Ignored, not run, with the reason in the terminal, the
    summary and the report, and the score is 2 detected of 2 judged; an entry that names no mutant
    is listed as stale; a file without a reason is refused by name."""
    user = tmp_path / "mine"
    user.mkdir()
    (user / "helper.py").write_text(HELPER.lstrip(), encoding="utf-8")
    (user / "adapter.py").write_text(ADAPTER.lstrip(), encoding="utf-8")
    found = ids(user, ("helper.py", "adapter.py"))
    wanted = [("helper.py", "max -> min"), ("adapter.py", "+ -> -"), ("helper.py", "TOUCH -> not (TOUCH)")]
    chosen = [arg for key in wanted for arg in ("--mutant", found[key])]
    survivor = found[("helper.py", "TOUCH -> not (TOUCH)")]
    marks = user / "equivalent-mutants.toml"
    marks.write_text(
        f'[{survivor}]\nreason = "its writes change no output"\n\n[0123456789]\nreason = "a line since changed"\n'
        '\n[abcdefabcd]\nreason = "a file not mutated in this run"\nchange = "other.py:3:4  + -> -"\n',
        encoding="utf-8",
    )
    script = launcher(tmp_path / "bin")
    args = ["--impl", "adapter.py", "--source", "adapter.py", "--source", "helper.py", "-k", JUDGING, "--no-html"]
    done = mutate(script, *args, *chosen, "--out", str(tmp_path / "out"), cwd=user)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "out" / "mutation-report.json").read_text(encoding="utf-8"))
    assert statuses(report) == {wanted[0]: "Killed", wanted[1]: "Killed", wanted[2]: "Ignored"}
    ignored = next(m for e in report["files"].values() for m in e["mutants"] if m["status"] == "Ignored")
    assert ignored["statusReason"] == "marked equivalent: its writes change no output"
    assert not ignored["coveredBy"] and not ignored["killedBy"]
    assert report["config"]["figures"]["score"] == 100.0
    assert "ignored 1 (marked equivalent 1)" in done.stdout and "score 100.0 %" in done.stdout
    assert "stale entries (no generated mutant has these ids; remove them): 0123456789\n" in done.stdout
    assert "abcdefabcd" not in done.stdout + done.stderr, "an entry of a file not mutated here is not stale"
    summary = (tmp_path / "out" / "summary.md").read_text(encoding="utf-8")
    assert "### Marked equivalent" in summary and "its writes change no output" in summary

    shown = mutate(script, *args, "--show", survivor, cwd=user)
    assert shown.returncode == 0 and "marked equivalent in" in shown.stdout, shown.stdout + shown.stderr
    shown = mutate(script, *args, "--show", found[wanted[0]], cwd=user)
    assert f"[{found[wanted[0]]}]\nreason = " in shown.stdout, shown.stdout

    marks.write_text(f'[{survivor}]\nchange = "helper.py"\n', encoding="utf-8")
    refused = mutate(script, *args, *chosen, "--out", str(tmp_path / "out"), cwd=user)
    assert refused.returncode == 2
    assert f'{marks}: [{survivor}]: needs reason = "..."' in refused.stderr, refused.stderr


GEN_C = "int f(int x) {\n    int unused = 3;\n    (void)unused;\n    return x - 1;\n}\n"
COMPILE = "cc -O2 -c {name} -o {out}"


@pytest.mark.integration  # about 15 s: in CI's integration run, out of nox -s tests' fast feedback
def test_mutants_whose_compiled_artifact_is_one_already_built_are_set_aside(tmp_path: Path) -> None:
    """docs/mutation.md, "Mutants set aside": with --artifact gen.o, a mutant whose object is the
    clean one's byte for byte is Ignored as equivalent; of mutants with the same object, one runs
    and the others are Ignored as its duplicates; none is in the score. The groups expected are
    found here by compiling each mutant with the build's own command."""
    user, _ = program_project(tmp_path)
    (user / "gen.c").write_text(GEN_C, encoding="utf-8")
    found = ids(user, ("gen.c",))
    chosen = ["3 -> 0", "3 -> 1", "- -> +", "(nothing) -> -", "- -> *", "- -> /", "1 -> 0", "1 -> (1-1)", "- -> %"]
    by_id = {found[("gen.c", change)]: change for change in chosen}
    mutants = {m.id: m for m in generate(user / "gen.c") if m.id in by_id}

    def object_of(text: str) -> bytes:
        work = tmp_path / "compile"
        work.mkdir(exist_ok=True)
        (work / "m.c").write_text(text, encoding="utf-8")
        subprocess.run(COMPILE.format(name="m.c", out="m.o"), shell=True, cwd=work, check=True)
        return (work / "m.o").read_bytes()

    clean = object_of(GEN_C)
    groups: dict[bytes, list[str]] = {}
    for mid, m in mutants.items():
        groups.setdefault(object_of(m.apply(GEN_C)), []).append(mid)
    assert len(groups) >= 3 and any(len(g) > 1 for b, g in groups.items() if b != clean), "the case tests nothing"
    build = COMPILE.format(name="gen.c", out="gen.o") + " && " + PROGRAM_BUILD.format(python=sys.executable)
    args = ["--impl", "cmd:./prog", "--source", "gen.c", "--build", build, "--artifact", "gen.o", "-k", JUDGING]
    args += ["--no-html", "--out", str(tmp_path / "out"), *(a for mid in by_id for a in ("--mutant", mid))]
    done = mutate(launcher(tmp_path / "bin"), *args, cwd=user)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "out" / "mutation-report.json").read_text(encoding="utf-8"))
    judged = {m["id"]: m for e in report["files"].values() for m in e["mutants"]}
    for made, members in groups.items():
        if made == clean:
            for mid in members:
                assert judged[mid]["status"] == "Ignored", (by_id[mid], judged[mid])
                assert judged[mid]["statusReason"].startswith("equivalent (compiled)"), judged[mid]
            continue
        ran = [mid for mid in members if judged[mid]["status"] != "Ignored"]
        assert len(ran) == 1, [(by_id[m], judged[m]["status"]) for m in members]
        assert judged[ran[0]]["status"] == "Survived"  # gen.o is not what ./prog runs: nothing can kill it
        for mid in set(members) - set(ran):
            assert judged[mid]["statusReason"].startswith(f"duplicate (compiled) of mutant {ran[0]}"), judged[mid]
    aside = sum(len(g) if made == clean else len(g) - 1 for made, g in groups.items())
    assert report["config"]["figures"]["Ignored"] == aside
    assert report["config"]["figures"]["score"] == 0.0, "the set-aside mutants are not in the score"
    assert f"ignored {aside} (" in done.stdout


def test_a_mutant_the_check_refuses_is_a_compile_error_without_a_build(tmp_path: Path) -> None:
    """--check runs before --build in the mutant's copy ({file}: the mutated file): a mutant the
    compiler's front end refuses is a CompileError that names the check, and no build runs for it;
    one that passes the check is built and judged."""
    user, _ = program_project(tmp_path)
    (user / "gen.c").write_text(GEN_C, encoding="utf-8")
    found = ids(user, ("gen.c",))
    refused, passes = found[("gen.c", "(nothing) -> break;")], found[("gen.c", "- -> +")]
    build = COMPILE.format(name="gen.c", out="gen.o") + " && " + PROGRAM_BUILD.format(python=sys.executable)
    args = ["--impl", "cmd:./prog", "--source", "gen.c", "--build", build, "--check", "cc -fsyntax-only {file}"]
    args += ["-k", JUDGING, "--no-html", "--out", str(tmp_path / "out"), "--mutant", refused, "--mutant", passes]
    done = mutate(launcher(tmp_path / "bin"), *args, cwd=user)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "out" / "mutation-report.json").read_text(encoding="utf-8"))
    judged = {m["id"]: m for e in report["files"].values() for m in e["mutants"]}
    assert judged[refused]["status"] == "CompileError"
    assert judged[refused]["statusReason"].startswith("the check command exited with code 1: cc -fsyntax-only gen.c")
    assert judged[passes]["status"] == "Survived"


@pytest.mark.integration  # about 15 s: in CI's integration run, out of nox -s tests' fast feedback
def test_a_programs_mutants_get_the_same_status_and_killer_warm_as_fresh(tmp_path: Path) -> None:
    """A `cmd:` program with a --build runs warm too (built in the worker's slot, started from
    there): each mutant of a seeded sample, and mutmut's two checks (every mutant off survives, a
    mutant forced to fail is seen failing), gets the status and first killer that a fresh process
    per mutant gives (tests/mutate_modes.py: one clean copy, one test order for both)."""
    from tests.test_mutate_warm import differences

    user, _ = program_project(tmp_path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    build = PROGRAM_BUILD.format(python=sys.executable)
    command = [sys.executable, str(ROOT / "tests" / "mutate_modes.py"), "cmd:./prog", "-k", JUDGING]
    command += ["--sample", "6", "--seed", "1", "--timeout", "20", "--forced", "--mutate-arg=--source"]
    command += ["--mutate-arg=mix.py", "--mutate-arg=--build", f"--mutate-arg={build}"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env, cwd=user)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout)
    assert differences(found) == []
    warm = {key: result["status"] for key, result in found["warm"].items()}
    assert warm["forced-off"] == "Survived" and warm["forced-fail"] == "Killed"
    assert all(r["warm"] for r in found["warm"].values()), found["warm"]  # judged in a warm worker's fork
    assert not any(r["warm"] for r in found["fresh"].values())


def test_a_folder_that_holds_the_suite_is_never_the_project_root(tmp_path: Path) -> None:
    """An implementation kept in the suite's checkout (tests/examples/) has its own folder as its
    root, not the checkout (whose pyproject.toml is the suite's: its harness would be copied and
    imported with every mutant, and the baseline refused); --root naming such a folder is refused."""
    from elmo_conformance.mutation.scratch import UsageError, check_root, find_root

    example = ROOT / "tests" / "examples" / "outside_mix.py"
    assert find_root([example]) == example.parent
    with pytest.raises(UsageError, match=r"--root .*: it holds the suite itself"):
        check_root(ROOT, [example], tmp_path / "out")
