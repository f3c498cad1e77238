"""Where a generated mutant runs (spec §13.2): a scratch copy, never the user's files.

A Python implementation (a .py adapter, `module:attr`, a built-in such as numpy) runs behind the
protocol server in a child process whose import hook (overlay.py) reads the mutated file from the
scratch folder in place of the original; nothing else is copied. A program (`cmd:PROGRAM`, the
built-in `c`) is copied whole (its source root, without build outputs and hidden folders) into the
scratch folder, the mutated file written there, `--build` run there (cwd = the copy), and the
program run from the copy: a program path inside the source root is mapped into it. Scratch
folders are made under one run folder in the system's temporary directory and removed when the
mutant is done (and the run folder when the run ends, however it ends but SIGKILL).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .generate import Generated

OVERLAY = Path(__file__).resolve().parent / "overlay.py"
SKIP = shutil.ignore_patterns(".*", "__pycache__", "build", "*.o", "*.pyc")
BUILD_OUTPUT_CHARS = 3000


@dataclass(frozen=True)
class Target:
    """The implementation under mutation: how to run a mutant of it."""

    impl: str  # the clean --impl argument
    python: bool  # a Python implementation (run with the overlay), else a program built in a copy
    root: str  # the folder the source paths are relative to (and, for a program, the one copied)
    build: str | None = None  # shell command run in the copy after each mutation (programs)
    program: str | None = None  # for a program: its command, `cmd:` form, paths inside root mapped
    import_path: tuple[str, ...] = ()  # prepended to a Python mutant's import path
    template: str | None = None  # a built clean copy of root that a program's mutants are copied from

    def relative(self, file: str) -> str:
        try:
            return Path(file).resolve().relative_to(Path(self.root).resolve()).as_posix()
        except ValueError:
            return Path(file).name


class BuildFailed(Exception):
    """The build command failed on the mutated copy: the mutant is a CompileError."""


def import_path() -> tuple[str, ...]:
    """The folders a child Python needs to import what this process imports (the checkout, a
    folder on sys.path that is not part of the Python installation)."""
    import elmo_conformance

    installed = {os.path.abspath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    package = str(Path(elmo_conformance.__file__).resolve().parent.parent)
    paths = [os.path.abspath(entry or os.curdir) for entry in sys.path if isinstance(entry, str)]
    extra = [p for p in paths if os.path.isdir(p) and not any(p.startswith(prefix + os.sep) for prefix in installed)]
    return tuple(dict.fromkeys([package, *extra]))


def prepare(target: Target, mutant: Generated, folder: Path) -> tuple[str, float]:
    """Write the mutant into `folder` (a fresh scratch folder), build it where there is a build,
    and return the --impl argument that runs it and the build's duration in seconds."""
    source = Path(mutant.file).read_text(encoding="utf-8")
    mutated = mutant.apply(source)
    if target.python:
        copy = folder / "mutated" / Path(mutant.file).name
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(mutated, encoding="utf-8")
        argv = [sys.executable, str(OVERLAY)]
        for path in target.import_path:
            argv += ["--path", path]
        argv += ["--file", mutant.file, str(copy), target.impl]
        return "cmd:" + shlex.join(argv), 0.0
    copy_root = folder / "src"
    if target.template:  # the clean copy with its build outputs: an incremental build redoes one file
        shutil.copytree(target.template, copy_root, symlinks=True)
    else:
        shutil.copytree(target.root, copy_root, ignore=SKIP, symlinks=True)
    (copy_root / target.relative(mutant.file)).write_text(mutated, encoding="utf-8")
    took = build(target, copy_root)
    return program_in(target, copy_root), took


def build(target: Target, copy_root: Path, timeout: float = 600.0) -> float:
    if not target.build:
        return 0.0
    started = time.perf_counter()
    try:
        done = subprocess.run(
            target.build,
            shell=True,
            cwd=copy_root,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        raise BuildFailed(f"the build command did not finish within {timeout:.0f} s: {target.build}") from exc
    if done.returncode != 0:
        output = (done.stdout + done.stderr).strip()[-BUILD_OUTPUT_CHARS:]
        raise BuildFailed(f"the build command exited with code {done.returncode}: {target.build}\n{output}")
    return time.perf_counter() - started


def program_in(target: Target, copy_root: Path) -> str:
    """The program's `cmd:` argument with every word that is a path inside the source root mapped
    to the same path inside the copy."""
    assert target.program is not None
    root = Path(target.root).resolve()
    words = shlex.split(target.program[len("cmd:") :])
    mapped = []
    for word in words:
        candidate = Path(word) if os.path.isabs(word) else Path.cwd() / word
        if not candidate.exists() and not os.path.isabs(word):
            candidate = Path(target.root) / word
        if not candidate.exists() and candidate.name != Path(target.program[4:].split()[0]).name:
            mapped.append(word)  # not a path (an option, a module name); the program itself may be built
            continue
        try:
            relative = candidate.resolve().relative_to(root)
        except (ValueError, OSError):
            mapped.append(word)
            continue
        mapped.append(str(copy_root / relative))
    return "cmd:" + shlex.join(mapped)
