"""The sandbox of code under test (elmo_conformance/processes/sandbox.py, issue 29): bubblewrap, with the
system read-only, its own working copy writable, a private /tmp, no network, its own PID
namespace, a clean environment and limits. Each attack of the issue is a test here, run with the
real `bwrap`; on a machine without it they are skipped, saying why (CI installs it, .ci/run)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

import elmo_conformance
from elmo_conformance.ground.resources import child_environment, package_dir
from elmo_conformance.processes import sandbox

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ROOT / "tests" / "hostile"

needs_bwrap = pytest.mark.skipif(
    sandbox.unavailable() is not None, reason=f"no sandbox here: {sandbox.unavailable()} (CI installs bubblewrap)"
)


def inside(tmp_path: Path, code: str, **kwargs) -> subprocess.CompletedProcess:
    """Python `code` run in the default sandbox with `tmp_path/work` as its working copy."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    env = sandbox.environment(child_environment())
    command = sandbox.Sandbox(**kwargs).command([sys.executable, "-c", textwrap.dedent(code)], cwd=work, env=env)
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)


def test_the_command_line_names_every_protection() -> None:
    """The flags docs/sandbox.md promises, in the order bwrap needs (a later mount covers an
    earlier one): the system read-only first, the suite read-only last."""
    command = sandbox.Sandbox(writable=(str(ROOT),)).command(["prog"], cwd=ROOT)
    joined = " ".join(command)
    for flag in ("--ro-bind / /", "--dev /dev", "--proc /proc", "--tmpfs /tmp", "--unshare-all", "--die-with-parent",
                 "--new-session", "--cap-drop ALL", f"--chdir {ROOT}"):  # fmt: skip
        assert flag in joined, flag
    assert "--share-net" not in command
    suite = str(package_dir("conformance"))
    assert joined.index(f"--bind {ROOT} {ROOT}") < joined.index(f"--ro-bind {suite} {suite}"), joined
    limiter = command[command.index("--") + 1 :]
    if shutil.which("prlimit"):  # util-linux's, then its own "--" before the program
        assert limiter[0] == shutil.which("prlimit") and "--core=0" in limiter and limiter[-2:] == ["--", "prog"]
    else:
        assert limiter[:2] == [sys.executable, "-S"] and limiter[-1] == "prog"


def test_limits_parse_and_apply() -> None:
    limits = sandbox.Limits().with_option("memory=4G").with_option("cpu=none").with_option("processes=64")
    assert limits.memory == 4 << 30 and limits.cpu_s is None and limits.processes == 64
    assert ("RLIMIT_NPROC", 64) in limits.rlimits() and ("RLIMIT_CORE", 0) in limits.rlimits()
    for bad in ("memory", "speed=3", "memory=lots", "memory=-1"):
        with pytest.raises(ValueError, match="--sandbox-limit"):
            sandbox.Limits().with_option(bad)


def test_the_environment_is_clean() -> None:
    env = sandbox.environment({"PATH": "/bin", "ELMO_CONFORMANCE_RUN_REPORT": "/tmp/x", "AWS_SECRET": "s"})
    assert env == {"PATH": "/bin", "LANG": "C.UTF-8", "HOME": "/tmp", "TMPDIR": "/tmp"}


@needs_bwrap
def test_a_sandboxed_process_sees_neither_the_harness_nor_other_jobs(tmp_path: Path) -> None:
    """Its /proc is its own PID namespace's; the temporary folder is its own (other jobs' folders,
    the harness's private report are not there); its environment holds none of the harness's
    variables."""
    (tmp_path / "other-job").mkdir()
    (tmp_path / "other-job" / "adapter.py").write_text("secret")
    done = inside(
        tmp_path,
        f"""
        import os
        print(sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
        print(os.path.exists({str(tmp_path / "other-job")!r}), sorted(os.listdir({str(tmp_path)!r})))
        print(os.path.exists("/proc/{os.getpid()}"), sorted(k for k in os.environ if k.startswith("ELMO")))
        """,
    )
    assert done.returncode == 0, done.stderr
    pids, hidden, harness = done.stdout.splitlines()
    assert pids == "[1, 2]", "only bwrap's init and the process itself"
    assert hidden == "False ['work']", "only its own working copy of the temporary folder"
    assert harness == "False []"


@needs_bwrap
def test_a_sandboxed_process_cannot_connect_to_127_0_0_1(tmp_path: Path) -> None:
    """No route to a Dask scheduler, the harness or anything else listening on this machine."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        done = inside(
            tmp_path,
            f"""
            import socket
            try:
                socket.create_connection(("127.0.0.1", {port}), timeout=5)
                print("connected")
            except OSError as exc:
                print("refused", exc.errno)
            """,
        )
    assert done.stdout.startswith("refused"), done.stdout + done.stderr


@needs_bwrap
def test_a_sandboxed_process_cannot_write_the_suite_even_inside_its_working_copy(tmp_path: Path) -> None:
    """The tamperer of issue 29 appended a hook to the installed suite's conftest.py; the system
    and the suite are read-only, the working copy is writable."""
    conftest = package_dir("conformance") / "conftest.py"
    before = conftest.read_bytes()
    code = f"""
        import os
        for path in ({str(conftest)!r}, "/usr/x", "own.txt"):
            try:
                open(path, "a").write("# tampered\\n")
                print("wrote", path)
            except OSError as exc:
                print("refused", path, exc.errno)
        """
    done = inside(tmp_path, code)
    assert conftest.read_bytes() == before
    assert done.stdout.splitlines() == [f"refused {conftest} 30", "refused /usr/x 30", "wrote own.txt"], done.stderr
    # A working copy that holds the suite (a checkout): the suite stays read-only in it.
    done = inside(tmp_path, code, writable=(str(package_dir("conformance").parent),))
    assert conftest.read_bytes() == before
    assert done.stdout.splitlines()[0] == f"refused {conftest} 30", done.stdout + done.stderr


@needs_bwrap
def test_a_sandboxed_process_cannot_signal_another_process(tmp_path: Path) -> None:
    """The saboteur killed the servers of the submissions beside it and the batch client."""
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        done = inside(
            tmp_path,
            f"""
            import os, signal
            for pid in ({victim.pid}, {os.getpid()}):
                try:
                    os.kill(pid, signal.SIGKILL)
                    print("killed")
                except OSError as exc:
                    print("refused", exc.errno)
            """,
        )
        assert victim.poll() is None, "the sandboxed process killed a process outside it"
        assert "killed" not in done.stdout, done.stdout + done.stderr
    finally:
        victim.kill()
        victim.wait()


def _gone(token: str, within: float = 5.0) -> bool:
    """Whether every process named `token` has ended within `within` seconds (the kernel ends a
    PID namespace's processes when its first one dies; a loaded machine takes its time)."""
    deadline = time.monotonic() + within
    while _processes(token):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@needs_bwrap
def test_no_process_of_a_sandbox_outlives_it(tmp_path: Path) -> None:
    """The escapee started `sh -c 'cmd &'` with an empty environment and a session of its own; in
    the sandbox's PID namespace it ends with the sandbox's first process, and when bwrap is killed."""
    token = f"escapee-{os.getpid()}-{time.monotonic_ns()}"
    escape = (
        f"import os, subprocess; subprocess.Popen(['setsid', 'bash', '-c', 'exec -a {token} sleep 300 &'], env={{}})"
    )
    done = inside(tmp_path, escape)
    assert done.returncode == 0, done.stderr
    assert _gone(token), "a process started in the sandbox outlived it"
    work = tmp_path / "work"
    command = sandbox.Sandbox().command([sys.executable, "-c", escape + "; import time; time.sleep(300)"], cwd=work)
    process = subprocess.Popen(command, env=sandbox.environment(), start_new_session=True)
    try:
        # The escapee itself (named by exec -a), not bwrap, whose command line holds the token
        # too: killed during its set-up, bwrap would test something else.
        for _ in range(200):
            if _processes(token, named=True):
                break
            time.sleep(0.05)
        assert _processes(token, named=True), "the escapee did not start"
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert _gone(token), "a process started in the sandbox outlived bwrap"


def _processes(token: str, named: bool = False) -> list[int]:
    """Processes whose command line holds `token` (`named`: whose name, argv[0], is `token`)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                command = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if (command.split(b"\0", 1)[0] == token.encode()) if named else token.encode() in command:
                found.append(int(entry))
    return found


@needs_bwrap
def test_limits_hold_inside(tmp_path: Path) -> None:
    """Memory, processes and file size: an allocation, a fork and a write past them fail (the
    processes only where the harness is not root: Linux exempts root from RLIMIT_NPROC)."""
    done = inside(
        tmp_path,
        """
        import os
        try:
            bytearray(64 << 20)
            print("allocated")
        except MemoryError:
            print("memory refused")
        try:
            open("big", "wb").write(b"x" * (2 << 20))
            print("wrote")
        except OSError as exc:
            print("file refused", exc.errno)
        """,
        limits=sandbox.Limits(memory=32 << 20, file_size=1 << 20),
    )
    assert done.stdout.splitlines() == ["memory refused", "file refused 27"], done.stdout + done.stderr
    if os.geteuid() == 0:  # Linux exempts root's processes from RLIMIT_NPROC: the limit is set, not enforced
        done = inside(
            tmp_path,
            "import resource; print(resource.getrlimit(resource.RLIMIT_NPROC))",
            limits=sandbox.Limits(processes=8),
        )
        assert done.stdout == "(8, 8)\n", done.stdout + done.stderr
        return
    done = inside(
        tmp_path,
        """
        import os
        children = []
        try:
            for _ in range(20):
                pid = os.fork()
                if pid == 0:
                    import time; time.sleep(5); os._exit(0)
                children.append(pid)
            print("forked", len(children))
        except OSError as exc:
            print("fork refused after", len(children))
        """,
        limits=sandbox.Limits(processes=8),
    )
    assert done.stdout.startswith("fork refused after"), done.stdout + done.stderr


# ------------------------------------------------------------------------------ through the harness


@needs_bwrap
def test_a_forged_pass_fails(tmp_path: Path) -> None:
    """The forger of issue 29 reads its parents' /proc/PID/environ for the console command's private
    report path and finished marker, writes a passing report there and hangs: on the code before
    the sandbox the run exited 0 with no test run. Sandboxed, it sees no parent of the harness; its
    wrong scalar_mix fails, and the verdict is what the harness observed."""
    result = elmo_conformance.run(
        str(HOSTILE / "forger.py"),
        ["-k", "test_hand_example_scalar_mix", "--dtype", "float64"],
        capture=True,
        deadline_s=120,
        cwd=tmp_path,
        env=child_environment(),
    )
    assert result.exit_status == 1, result.describe()
    assert result.counts == {"failed": 1}, result.describe()


@needs_bwrap
def test_a_scratch_folder_its_command_names_is_writable_and_nothing_else_of_tmp(tmp_path: Path) -> None:
    """A mutant's scratch copy, or an output the harness asks for, made in the temporary folder
    and named on the command line, is the process's working copy; a sibling folder stays hidden."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (tmp_path / "sibling").mkdir()
    code = "import os, sys; open(sys.argv[1], 'w').write('ok'); print(os.path.exists(os.path.normpath(sys.argv[1] + '/../../sibling')))"
    argv = [sys.executable, "-c", code, str(scratch / "out.txt")]
    env = sandbox.environment(child_environment())
    done = subprocess.run(sandbox.Sandbox().command(argv, cwd=ROOT, env=env), env=env, capture_output=True, text=True)
    assert done.stdout == "False\n", done.stdout + done.stderr
    assert (scratch / "out.txt").read_text() == "ok"


def test_no_word_of_a_command_shows_a_hidden_folder_whole(tmp_path: Path) -> None:
    """A word of the command line that normalizes to a path in a hidden folder (`-c` code with
    `..` segments, as a checkout in /tmp runs its own tests) never binds that folder whole: the
    other jobs' files in /tmp stay out of sight."""
    word = "print('x" + "/.." * 40 + "/tmp/y')"
    command = sandbox.Sandbox().command([sys.executable, "-c", word], cwd=tmp_path)
    bound = {command[i + 1] for i, arg in enumerate(command[:-1]) if arg in ("--ro-bind", "--bind")}
    assert "/tmp" not in bound, bound  # (the system itself is bound read-only as "/", always)


def test_a_word_whose_dots_leave_a_non_folder_names_no_path(tmp_path: Path) -> None:
    """`..` is followed as the kernel follows it: out of a folder that exists. `-c` code such as
    `print('x/../../sibling/f')` names no path, so a sibling job's folder in /tmp is not bound, while
    a real relative path with `..` (a program in ../build) still is."""
    (tmp_path / "work").mkdir()
    (tmp_path / "sibling").mkdir()
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "prog").write_text("", encoding="utf-8")
    argv = [sys.executable, "-c", "print('x/../../sibling/f')", "../build/prog"]
    command = sandbox.Sandbox().command(argv, cwd=tmp_path / "work")
    bound = {command[i + 1] for i, arg in enumerate(command[:-1]) if arg in ("--ro-bind", "--bind")}
    assert str(tmp_path / "sibling") not in bound, bound
    assert str(tmp_path / "build") in bound, bound


@needs_bwrap
def test_a_program_directly_in_the_temporary_folder_runs_and_cannot_change_itself(tmp_path: Path) -> None:
    """`--impl cmd:/tmp/prog`: a program saved directly in the temporary folder, which the sandbox
    hides, is bound by itself, read-only (the folder is never bound whole); it ran, saying "No such
    file or directory", before."""
    program = Path(tempfile.gettempdir()) / f"elmo-sandbox-test-{os.getpid()}-{time.time_ns()}.sh"
    program.write_text('#!/bin/sh\necho ran\necho more >> "$0" && echo wrote || echo refused\n', encoding="utf-8")
    program.chmod(0o755)
    before = program.read_bytes()
    try:
        env = sandbox.environment(child_environment())
        command = sandbox.Sandbox().command([str(program)], cwd=tmp_path, env=env)
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
        assert done.stdout == "ran\nrefused\n", done.stdout + done.stderr
        assert program.read_bytes() == before
        bound = {command[i + 1] for i, arg in enumerate(command[:-1]) if arg in ("--ro-bind", "--bind")}
        assert os.path.realpath(tempfile.gettempdir()) not in bound, "the temporary folder is never bound whole"
        assert f"--bind {program} " not in " ".join(command) + " ", "the program is bound read-only"
    finally:
        program.unlink()
