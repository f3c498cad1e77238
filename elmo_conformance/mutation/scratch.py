"""Where a generated mutant runs (spec §13.2): a scratch copy of the project, never the user's files.

The *project root* is the folder that is copied: `--root` when given; for a built-in
implementation, the folder of its own sources; otherwise the nearest folder, from the sources (and
a `.py` --impl file) upwards, that holds a project file (`pyproject.toml`, `setup.py`,
`Cargo.toml`, `Makefile`, `.git`, ... see PROJECT_FILES), or the sources' common folder when none
does. The copy leaves out hidden entries (`.git`, `.venv`, `.hypothesis`), bytecode, build
outputs (`build/`, `dist/`, `target/`, `node_modules/`, `*.o`), virtual environments, `--out` and
the temporary folder; it is written without following links: a linked file is copied as a plain
file, a link to a folder inside the root stays a link inside the copy, a link out of the root is
left out (and counted).

The run copies the root once (`scratch/clean`, built there when there is a `--build`); each mutant
gets a copy of that clean copy with its one file changed, built when there is a build, and run
from there. The *build folders* (the folders the clean build made at the top of the copy: cargo's
`target/`, a `build/`) are not copied for each mutant: each worker keeps its own, moved into the
mutant's copy for its check and build and out again before its tests run (`scratch/kept/PID`), so
an incremental build reuses what the worker's last build made (cargo's fingerprints, rustc's
incremental cache) and no mutant's run can write into it; the program (and the files beside it)
and the artifact are copied back into the copy. The files the kept folders were last built from
that differ from the clean copy (the last mutant's file) are restored, and stamped newer than that
build, so that a build that decides by times rebuilds them: a Python implementation through overlay.py, which serves it with the copy's files in
place of the user's (its `__file__`, its working folder and its import path are the copy's); a
program from the copy, with every word of its command that names a path inside the root mapped
into the copy and the copy's folder as its working folder. The folders are removed when the
mutant is done (and the run's folder when the run ends, however it ends but SIGKILL).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from elmo_conformance.mutation.copies import FromCopy
from elmo_conformance.mutation.generate import Generated
from elmo_conformance.mutation.programs import CLEAN, claim, compiled

OVERLAY = Path(__file__).resolve().parent / "overlay.py"
REGISTRY = "programs"  # the run's folder of built artifacts by hash, beside the clean copy
KEPT = "kept"  # the run's folder of each worker's build folders (KEPT/PID), beside the clean copy
RECORD = "built-from.json"  # in KEPT/PID: what the kept build folders were last built from
# A folder that holds one of these is a project's root (the nearest one above the sources wins).
PROJECT_FILES = (
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "Cargo.toml",
    "go.mod",
    "package.json",
    "Makefile",
    "makefile",
    "GNUmakefile",
    "CMakeLists.txt",
    "meson.build",
    "build.gradle",
    "pom.xml",
    ".git",
)
# A toolchain's homes a build reads (variable, folder under the home folder when it is not set):
# the sandbox hides the home folders, so these are bound back read-only and named to the build.
TOOLCHAIN_HOMES = (("RUSTUP_HOME", "rustup"), ("CARGO_HOME", "cargo"))
# Set for every build of a run unless this process's environment sets it: cargo compiles
# incrementally in release builds too (rustc reuses what the worker's kept `target/` holds; its
# programs are the same bytes for the same sources, so compiled equivalence still holds).
BUILD_DEFAULTS = {"CARGO_INCREMENTAL": "1"}
# Never copied: hidden entries, bytecode and build outputs.
SKIPPED_DIRS = {"__pycache__", "build", "dist", "target", "node_modules"}
SKIPPED_SUFFIXES = (".pyc", ".pyo", ".o", ".obj", ".egg-info")
OUTPUT_HEAD = 4000  # characters of a failed build's output kept from its start
OUTPUT_TAIL = 2000  # and from its end
LARGE_COPY = 50 << 20  # bytes: a copy larger than this is named in the run's first lines
# A launcher that runs a program in a given working folder (a program mutant's, in its copy):
# `sh -c IN_FOLDER sh FOLDER PROGRAM ARGS...`, a POSIX shell's start (about 1 ms; a Python's
# was about 20 ms, paid by every mutant's program start).
_IN_FOLDER = 'cd -- "$1" && shift && exec "$@"'


class UsageError(Exception):
    """The command line cannot be run as given (exit status 2)."""


class BuildFailed(Exception):
    """The build command failed on the mutated copy, did not finish, or did not produce the
    program: the mutant is a CompileError."""


class BuildTimedOut(BuildFailed):
    """The build or the check passed its deadline and was stopped: what it left half written
    in the build folders is not reused."""


@dataclass(frozen=True)
class ProgramCoverage:
    """How the baseline measures a program's lines per test (gcov.py): the shell command that
    builds the program instrumented for gcov in a fresh copy of the project (cwd: the copy), and
    the gcov that reads its counts (the compiler's own: `gcov` for GCC, `llvm-cov gcov` for clang)."""

    build: str
    gcov: str = "gcov"


@dataclass(frozen=True)
class Target:
    """The implementation under mutation: how to run a mutant of it."""

    impl: str  # the clean --impl argument
    python: bool  # a Python implementation (served through the overlay), else a program
    root: str  # the project root: the folder copied, the one source paths are relative to
    build: str | None = None  # shell command run in the copy after each mutation (programs)
    program: str | None = None  # for a program: its command, `cmd:` form
    template: str | None = None  # the clean copy of root (built, where there is a build) mutants copy
    cwd: str = ""  # the user's working folder: a mutant runs in the same folder of its copy
    import_path: tuple[str, ...] = ()  # a clean served run's PYTHONPATH (Python)
    build_timeout: float = 900.0  # seconds a mutant's build may take
    artifact: str | None = None  # what a build makes whose bytes decide the behaviour (programs.py)
    check: str | None = None  # a quick compile check of the mutated file before the build ({file})
    build_dirs: tuple[str, ...] = ()  # the folders the clean build made in the copy: kept per worker
    coverage: ProgramCoverage | None = None  # a program's lines per test, measured with gcov (gcov.py)

    def relative(self, file: str) -> str:
        """`file` named relative to the project root, with '/'."""
        return Path(os.path.relpath(os.path.abspath(file), os.path.abspath(self.root))).as_posix()


@dataclass
class Copied:
    """What a copy of the project root holds."""

    files: int = 0
    bytes: int = 0
    left_out: list[str] = field(default_factory=list)  # links out of the root, special files


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def find_root(paths: list[Path]) -> Path:
    """The project root of `paths` (absolute, not resolved): the nearest folder at or above their
    common folder that holds a project file, or the common folder itself. The search stops below
    a folder that holds the suite itself (its checkout): an implementation kept in it (the
    examples of tests/examples/) is its own project, not the suite's."""
    folders = [str(p if p.is_dir() else p.parent) for p in paths]
    common = Path(os.path.commonpath(folders))
    home = Path.home()
    for folder in [common, *common.parents]:
        if folder == home or folder == Path(folder.anchor) or holds_the_suite(folder):
            break
        if any((folder / name).exists() for name in PROJECT_FILES):
            return folder
    return common


def holds_the_suite(folder: Path) -> bool:
    """Whether `folder` holds the suite's own code (its checkout, or the installed package's
    folder): copied for a mutant, the harness that judges it would be imported from the copy."""
    from elmo_conformance.ground.resources import package_dir

    suite = os.path.realpath(package_dir("conformance"))
    return _inside(suite, os.path.realpath(folder))


def check_root(root: Path, sources: list[Path], out: Path) -> None:
    """Refuse a root that is not a project's: the filesystem's root, the home folder, a Python
    installation's packages, or one that does not hold every source."""
    if not root.is_dir():
        raise UsageError(f"--root {root}: not a folder")
    if root == Path(root.anchor) or root == Path.home():
        raise UsageError(
            f"--root {root}: the whole {'filesystem' if root == Path(root.anchor) else 'home folder'} "
            "would be copied for every mutant; name the project's folder with --root"
        )
    if root.name in ("site-packages", "dist-packages") or (root / "pyvenv.cfg").exists():
        raise UsageError(f"--root {root}: a Python environment, not a project; name the project's folder with --root")
    if holds_the_suite(root):
        raise UsageError(
            f"--root {root}: it holds the suite itself, whose harness would be copied with every mutant; "
            "name the folder of the implementation with --root"
        )
    for source in sources:
        if not _inside(os.path.abspath(source), str(root)):
            raise UsageError(f"--source {source}: outside the project root {root}; give --root a folder that holds it")
    if _inside(str(root), os.path.abspath(out)):
        raise UsageError(f"--out {out}: the project root {root} is inside it; choose another --out")


def copy_project(root: Path, dest: Path, skip: tuple[str, ...] = ()) -> Copied:
    """Copy `root` into `dest` (which must not exist) as the module docstring says, never
    following a link; `skip`: absolute folders never copied (--out, the temporary folder)."""
    copied = Copied()
    root_text = str(root)
    skip_all = (*skip, tempfile.gettempdir())

    def keep_dir(path: str, name: str) -> bool:
        if name.startswith(".") or name in SKIPPED_DIRS or name.endswith(SKIPPED_SUFFIXES):
            return False
        if any(_inside(path, s) or _inside(os.path.realpath(path), s) for s in skip_all if not _inside(root_text, s)):
            return False
        return not os.path.exists(os.path.join(path, "pyvenv.cfg"))

    dest.mkdir(parents=True)
    for folder, dirs, files in os.walk(root, followlinks=False):
        relative = os.path.relpath(folder, root)
        target = dest if relative == os.curdir else dest / relative
        kept = []
        for name in sorted(dirs):
            path = os.path.join(folder, name)
            if not keep_dir(path, name):
                continue
            if os.path.islink(path):
                _copy_link(path, target / name, root, copied)
                continue
            (target / name).mkdir()
            kept.append(name)
        dirs[:] = kept
        for name in sorted(files):
            path = os.path.join(folder, name)
            if name.startswith(".") or name.endswith(SKIPPED_SUFFIXES):
                continue
            if os.path.islink(path):
                _copy_link(path, target / name, root, copied)
                continue
            mode = os.lstat(path).st_mode
            if not stat.S_ISREG(mode):
                copied.left_out.append(f"{os.path.relpath(path, root)} (not a plain file)")
                continue
            shutil.copy2(path, target / name, follow_symlinks=False)
            copied.files += 1
            copied.bytes += os.path.getsize(path)
    return copied


def _copy_link(path: str, target: Path, root: Path, copied: Copied) -> None:
    """A link in the project: a file's content is copied as a plain file; a folder inside the
    root stays a (relative) link inside the copy; anything else is left out."""
    resolved = os.path.realpath(path)
    relative = os.path.relpath(path, root)
    if os.path.isfile(resolved):
        shutil.copyfile(resolved, target)  # the content, as a file of the copy's own
        shutil.copymode(resolved, target)
        copied.files += 1
        copied.bytes += os.path.getsize(resolved)
    elif os.path.isdir(resolved) and _inside(resolved, os.path.realpath(root)):
        inside = Path(os.path.realpath(root)) / os.path.relpath(resolved, os.path.realpath(root))
        os.symlink(os.path.relpath(inside, os.path.realpath(root / Path(relative).parent)), target)
    else:
        copied.left_out.append(f"{relative} (a link out of the project root, or broken)")


def describe_copy(root: Path, copied: Copied) -> str:
    size = copied.bytes / (1 << 20)
    line = f"project root {root}: {copied.files} files, {size:.1f} MB copied for each mutant"
    if copied.left_out:
        line += f"; left out: {', '.join(copied.left_out[:5])}" + (" ..." if len(copied.left_out) > 5 else "")
    if copied.bytes > LARGE_COPY:
        line += " (large: --root names a smaller folder)"
    return line


def write_mutant(copy_root: Path, relative: str, text: str) -> None:
    """Write the mutated file into the copy, replacing whatever is at that path (never writing
    through a link)."""
    path = copy_root / relative
    if not os.path.abspath(path).startswith(os.path.abspath(copy_root) + os.sep):
        raise ValueError(f"{relative}: not inside the copy")
    if path.is_symlink() or path.exists():
        path.unlink()
    with open(path, "x", encoding="utf-8", newline="") as handle:
        handle.write(text)


def prepare(target: Target, mutant: Generated | None, folder: Path) -> tuple[str, float]:
    """Make `folder/src` a copy of the clean copy with `mutant` applied (None: the clean
    implementation, run as every mutant is), build it where there is a build, and return the
    --impl argument that runs it and the build's duration in seconds."""
    assert target.template is not None, "the clean copy is made before any mutant"
    copy_root = folder / "src"
    kept = set(target.build_dirs) if target.build and not target.python else set()
    shutil.copytree(
        target.template,
        copy_root,
        symlinks=True,
        ignore=lambda where, names: kept & set(names) if where == target.template else set(),
    )
    changed = [target.relative(mutant.file)] if mutant is not None else []
    if mutant is not None:
        source = Path(mutant.file).read_text(encoding="utf-8")
        write_mutant(copy_root, changed[0], mutant.apply(source))
    if target.python:
        return served(target, copy_root, folder), 0.0
    program = program_path(target, copy_root)
    reusable = True
    if kept:
        take_build_folders(target, copy_root, changed)
    try:
        if mutant is not None:
            check(target, copy_root, changed[0], target.build_timeout)
        if target.build and program is not None and program.exists():
            program.unlink()  # the build must make it: a stale copy would run the clean program
        took = build(target, copy_root, target.build_timeout)
    except BuildTimedOut:
        reusable = False
        raise
    finally:
        if kept:
            keep_build_folders(target, copy_root, changed, reusable)
    if target.build and program is not None and not program.exists():
        raise BuildFailed(f"the build command exited 0 but did not produce the program {program.name}: {target.build}")
    if mutant is not None and target.artifact and target.template:
        made = copy_root / target.artifact
        if not made.is_file():
            raise BuildFailed(f"the build command exited 0 but did not make --artifact {target.artifact}")
        claim(Path(target.template).parent / REGISTRY, made, mutant.id)  # raises SameProgram
    return program_in(target, copy_root), took


def build_folders(copy_root: Path, before: set[str]) -> tuple[str, ...]:
    """The folders at the top of `copy_root` that its clean build made (not among `before`, the
    entries the copy had before it): each worker keeps its own (take_build_folders)."""
    return tuple(
        sorted(
            entry.name
            for entry in copy_root.iterdir()
            if entry.name not in before and entry.is_dir() and not entry.is_symlink()
        )
    )


def _kept(target: Target) -> Path:
    assert target.template is not None
    return Path(target.template).parent / KEPT / str(os.getpid())


def take_build_folders(target: Target, copy_root: Path, changed: list[str]) -> None:
    """Move this worker's kept build folders into `copy_root` (the clean build's, copied, the
    first time or when the last build could not be kept), and stamp the files they were last
    built from that differ from the clean copy (restored here) and the mutated ones with a time
    later than that build: a build that decides by times (make, cargo) rebuilds exactly those."""
    assert target.template is not None
    kept = _kept(target)
    record = kept / RECORD
    stale: list[str] = []
    built = 0.0
    try:
        state = json.loads(record.read_text(encoding="utf-8"))
        stale, built = [str(name) for name in state["changed"]], float(state["built"])
        record.unlink()  # in use: a worker that dies before keeping them leaves nothing to reuse
        usable = all((kept / name).is_dir() for name in target.build_dirs)
    except (OSError, ValueError, KeyError, TypeError):
        usable = False
    for name in target.build_dirs:
        if usable:
            os.rename(kept / name, copy_root / name)
        else:
            shutil.copytree(Path(target.template) / name, copy_root / name, symlinks=True)
    stamp = max(time.time(), built + 1.0)
    for name in dict.fromkeys([*stale, *changed]) if usable or changed else ():
        path = copy_root / name
        if path.is_file() and not path.is_symlink():
            os.utime(path, (stamp, stamp))


def keep_build_folders(target: Target, copy_root: Path, changed: list[str], reusable: bool) -> None:
    """After the check and the build: move the build folders out of `copy_root` into this
    worker's keeping (or drop them when the build was stopped half way), then copy back the
    files the mutant's run needs from them: the program and the files beside it, and the
    artifact. No later mutant reuses anything this mutant's run writes."""
    kept = _kept(target)
    kept.mkdir(parents=True, exist_ok=True)
    for name in target.build_dirs:
        if (kept / name).exists():
            shutil.rmtree(kept / name, ignore_errors=True)
        if (copy_root / name).is_dir() and not (copy_root / name).is_symlink():
            os.rename(copy_root / name, kept / name)
    if not reusable:
        for name in target.build_dirs:
            shutil.rmtree(kept / name, ignore_errors=True)
        return
    (kept / RECORD).write_text(json.dumps({"changed": changed, "built": time.time()}), encoding="utf-8")
    wanted: list[Path] = []
    program = program_path(target, copy_root)
    if program is not None:
        beside = kept / os.path.relpath(program.parent, copy_root)
        if _in_build_folders(target, os.path.relpath(program.parent, copy_root)) and beside.is_dir():
            wanted += [entry for entry in beside.iterdir() if entry.is_file() and not entry.is_symlink()]
    if target.artifact and _in_build_folders(target, target.artifact) and (kept / target.artifact).is_file():
        wanted.append(kept / target.artifact)
    for path in dict.fromkeys(wanted):
        into = copy_root / os.path.relpath(path, kept)
        into.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, into)


def _in_build_folders(target: Target, relative: str) -> bool:
    first = Path(relative).parts[0] if Path(relative).parts else ""
    return first in target.build_dirs


def find_artifact(target: Target, copy_root: Path) -> str | None:
    """After the clean build: the artifact whose bytes stand for the program (programs.py):
    --artifact, or the program when it is a compiled binary; recorded as the clean one's."""
    if target.artifact:
        made = copy_root / target.artifact
        if not made.is_file():
            raise BuildFailed(f"--artifact {target.artifact}: the clean build did not make it")
        artifact = target.artifact
    else:
        program = program_path(target, copy_root) if target.build else None
        if program is None or not compiled(program):
            return None
        artifact = Path(os.path.relpath(program, copy_root)).as_posix()
    claim(copy_root.parent / REGISTRY, copy_root / artifact, CLEAN)
    return artifact


def _in_copy(target: Target, copy_root: Path) -> tuple[str, str]:
    """The Python --impl argument and the working folder of a run from `copy_root`: a `.py`
    file and the working folder inside the project root are mapped into the copy."""
    root = os.path.abspath(target.root)
    copy = str(copy_root)

    def mapped(path: str) -> str:
        path = os.path.abspath(path)
        return os.path.join(copy, os.path.relpath(path, root)) if _inside(path, root) else path

    impl = target.impl
    if impl.endswith(".py") and os.path.isfile(os.path.join(target.cwd, impl)):
        impl = mapped(os.path.join(target.cwd, impl))
    cwd = mapped(target.cwd) if _inside(os.path.abspath(target.cwd), root) else copy
    return impl, cwd if os.path.isdir(cwd) else copy


def served(target: Target, copy_root: Path, folder: Path) -> str:
    """The `cmd:` argument that serves the Python implementation from its copy (overlay.py)."""
    root = os.path.abspath(target.root)
    impl, cwd = _in_copy(target, copy_root)
    config = {
        "root": root,
        "copy": str(copy_root),
        "cwd": cwd,
        "path": [
            os.path.join(str(copy_root), os.path.relpath(p, root)) if _inside(p, root) else p
            for p in target.import_path
        ],
        "impl": impl,
    }
    config_file = folder / "overlay.json"
    config_file.write_text(json.dumps(config), encoding="utf-8")
    return "cmd:" + shlex.join([sys.executable, str(OVERLAY), str(config_file)])


def baseline_copy(target: Target, folder: Path) -> tuple[FromCopy | None, str, str]:
    """A copy of the clean copy in `folder` for the baseline run: the import hook that loads the
    implementation's modules from it (Python), the --impl argument and the working folder."""
    assert target.template is not None, "the clean copy is made before the baseline"
    copy_root = folder / "src"
    shutil.copytree(target.template, copy_root, symlinks=True)
    if not target.python:
        return None, program_in(target, copy_root), str(copy_root)
    impl, cwd = _in_copy(target, copy_root)
    return FromCopy(target.root, str(copy_root)), impl, cwd


def program_path(target: Target, copy_root: Path) -> Path | None:
    """The program (its first word) inside the copy, when it is a path inside the root."""
    assert target.program is not None
    words = shlex.split(target.program[len("cmd:") :])
    if not words or "/" not in words[0]:
        return None  # a command found on PATH
    first = words[0] if os.path.isabs(words[0]) else os.path.join(target.cwd, words[0])
    root = os.path.abspath(target.root)
    if not (_inside(os.path.abspath(first), root) or _inside(os.path.realpath(first), os.path.realpath(root))):
        return None
    base = root if _inside(os.path.abspath(first), root) else os.path.realpath(root)
    return copy_root / os.path.relpath(os.path.abspath(first) if base == root else os.path.realpath(first), base)


def program_in(target: Target, copy_root: Path) -> str:
    """The program's `cmd:` argument with every word that is a path inside the project root
    mapped to the same path inside the copy, run with the copy's folder as its working folder."""
    assert target.program is not None
    root = os.path.abspath(target.root)
    real_root = os.path.realpath(root)
    words = shlex.split(target.program[len("cmd:") :])
    mapped = []
    for index, word in enumerate(words):
        candidate = word if os.path.isabs(word) else os.path.join(target.cwd, word)
        if index == 0 and "/" not in word:
            mapped.append(word)  # a command found on PATH
            continue
        if not os.path.exists(candidate) and index > 0:
            mapped.append(word)  # not a path (an option, a name); the program itself may be built
            continue
        absolute, real = os.path.abspath(candidate), os.path.realpath(candidate)
        if _inside(absolute, root):
            mapped.append(str(copy_root / os.path.relpath(absolute, root)))
        elif _inside(real, real_root):
            mapped.append(str(copy_root / os.path.relpath(real, real_root)))
        else:
            mapped.append(word)
    cwd = os.path.abspath(target.cwd)
    folder = copy_root / os.path.relpath(cwd, root) if _inside(cwd, root) else copy_root
    return "cmd:" + shlex.join(["/bin/sh", "-c", _IN_FOLDER, "sh", str(folder), *mapped])


def build(target: Target, copy_root: Path, timeout: float) -> float:
    """Run the build command in `copy_root`, contained: its own session, its output to a file
    (a background child that holds it open cannot make the build wait), a deadline, and every
    process it started ended when it is done. Returns its duration; raises BuildFailed."""
    if not target.build:
        return 0.0
    return contained(target.build, copy_root, timeout, "build")


def check(target: Target, copy_root: Path, relative: str, timeout: float) -> None:
    """Run the --check command (`{file}`: the mutated file, relative to the copy) in `copy_root`,
    contained as a build is: the cheapest way to learn that a mutant does not compile, before a
    build (for the built-in c, the compiler's -fsyntax-only). Raises BuildFailed."""
    if target.check:
        contained(target.check.replace("{file}", shlex.quote(relative)), copy_root, timeout, "check")


def contained(command: str, copy_root: Path, timeout: float, what: str) -> float:
    """Run a shell `command` of the build (`what`: build or check) in `copy_root` as `build` says."""
    from elmo_conformance.adapters.wire.client import MARKER_VARIABLE
    from elmo_conformance.processes import exits, sandbox

    marker = f"build-{uuid.uuid4().hex}"
    boxed = sandbox.active()
    argv, env = build_command(command, copy_root, {MARKER_VARIABLE: marker})
    started = time.perf_counter()
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(
            argv,
            cwd=copy_root,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )
        code = None
        try:
            code = exits.wait(process, timeout)
        finally:
            # In the sandbox, bwrap's exit ended its PID namespace and every process in it: there
            # is nothing left to look for (about 5 ms of /proc per command). Otherwise, or when
            # it is still running, its session, descendants and marked processes are ended.
            if code is None or not boxed:
                end_tree(process.pid, marker)
            process.wait()
        output.seek(0)
        text = output.read().decode("utf-8", errors="replace").strip()
    if code is None:
        raise BuildTimedOut(f"the {what} command timed out after {timeout:.0f} s: {command}\n{clip(text)}")
    if code != 0:
        raise BuildFailed(f"the {what} command exited with code {code}: {command}\n{clip(text)}")
    return time.perf_counter() - started


def build_command(command: str, copy_root: Path, extra: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of a build in `copy_root`: in the sandbox where it runs
    (elmo_conformance/processes/sandbox.py; docs/mutation.md), with the copy its only writable folder, the
    folders of PATH and a Rust toolchain's homes readable, and a clean environment; otherwise
    `sh -c COMMAND` with this process's environment. BUILD_DEFAULTS are set in both."""
    from elmo_conformance.processes import sandbox

    shell = ["/bin/sh", "-c", command]
    defaults = {name: os.environ.get(name, value) for name, value in BUILD_DEFAULTS.items()}
    if not sandbox.active():
        return shell, {**os.environ, **defaults, **extra}
    sandbox.announce()
    homes = {name: os.environ.get(name, os.path.expanduser(f"~/.{default}")) for name, default in TOOLCHAIN_HOMES}
    homes = {name: path for name, path in homes.items() if os.path.isdir(path)}
    on_path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if os.path.isabs(p) and os.path.isdir(p)]
    readable = (*on_path, *(os.path.realpath(p) for p in on_path), *homes.values())
    box = sandbox.Sandbox(writable=(str(copy_root),), readable=tuple(dict.fromkeys(readable)))
    env = box.environment(os.environ, {**defaults, **homes, **extra})
    return box.command(shell, cwd=copy_root, env=env), env


def end_tree(pid: int, marker: str) -> None:
    """End `pid` and every process it started: its session, its descendants, and whatever
    carries its marker in its environment (elmo_conformance/processes/kill.py)."""
    from elmo_conformance.adapters.wire.client import MARKER_VARIABLE
    from elmo_conformance.processes import kill

    kill.end_family(pid, MARKER_VARIABLE, marker)


def clip(text: str) -> str:
    """A long output's start and end (the first error is at the start)."""
    if len(text) <= OUTPUT_HEAD + OUTPUT_TAIL:
        return text
    return f"{text[:OUTPUT_HEAD]}\n[... {len(text) - OUTPUT_HEAD - OUTPUT_TAIL} characters ...]\n{text[-OUTPUT_TAIL:]}"
