"""The sandbox of code under test: bubblewrap (``bwrap``), one command line per process.

Every process the harness starts to run code under test (a served Python adapter, a ``cmd:``
program, a mutant, a batch job's build or mutation run) starts through ``Sandbox.command``: spec
§11.1 ("the judge and the judged"), docs/sandbox.md (what it stops, what it does not, how to run
without it). The tool is bubblewrap, the unprivileged sandbox Flatpak uses (the Debian and Ubuntu
package ``bubblewrap``): maintained, a single small setuid-free binary, and it works as root and as
a user. Inside, the code under test sees

- the system read-only (``--ro-bind / /``), with the folders where other people's files live
  (``HIDDEN``: the temporary folders, /run, the home folders) replaced by empty ones, and only what
  it needs bound back read-only: the Python installation and import path, the suite, its own code;
- its own working copy writable (``writable``, its working folder by default), the suite's files
  bound read-only again on top when they lie inside it;
- a private ``/tmp``, a fresh ``/dev`` (and the GPU's device nodes, where there are any), a /proc of
  its own PID namespace: not the harness's, nor another job's;
- no network (``--unshare-net``: a loopback of its own, so no route to 127.0.0.1's scheduler, the
  harness or anything else), no capabilities (``--cap-drop ALL``), a session of its own
  (``--new-session``);
- its own PID namespace (``--unshare-pid``): when its first process ends, or bwrap is killed, or
  the harness dies (``--die-with-parent``), the kernel ends every process in it; a double fork or
  a new session cannot escape it;
- an environment built here (``environment``), none of the harness's variables but ``KEPT``;
- limits set inside it before the program starts (``Limits``: memory, processes, file size, CPU
  time, no core dumps), PrairieLearn's defaults as a start, by util-linux's ``prlimit`` (or a
  Python that does the same where there is none).

Where bwrap is missing or cannot run (macOS, a kernel without user namespaces), ``unavailable()``
says why, the run says so once (``announce``), and code under test runs with the user's rights.
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

BWRAP = "bwrap"
# Folders where the files of the harness, of other jobs and of the machine's users live: empty in
# the sandbox (a tmpfs), with only what the code under test needs bound back read-only.
HIDDEN = ("/tmp", "/var/tmp", "/run", "/home", "/root")
# Variables of the harness's environment that the code under test gets (nothing else: the
# harness's private paths, tokens and ids stay out); the caller adds its own with `env`.
KEPT = (
    "PATH",
    "PYTHONPATH",
    "VIRTUAL_ENV",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TERM",
    "NO_COLOR",
    "PYTHONHASHSEED",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONUNBUFFERED",
    "LD_LIBRARY_PATH",
    "CC",
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "JAX_PLATFORMS",
    "JAX_ENABLE_X64",
    "XLA_FLAGS",
    "ASAN_OPTIONS",
    "UBSAN_OPTIONS",
    "LSAN_OPTIONS",
)
# Device nodes bound into the sandbox where they exist: the GPU (the cuda adapter).
DEVICES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset", "/dev/dri")
# The variable that turns the sandbox off for a process and what it starts (--no-sandbox).
OFF_ENV = "ELMO_CONFORMANCE_NO_SANDBOX"

GiB = 1 << 30


@dataclass(frozen=True)
class Limits:
    """Resource limits of every process in the sandbox (setrlimit, soft = hard, so that the code
    under test cannot raise them); None: no limit. PrairieLearn's defaults as a start: 2 GiB of
    memory, 1,024 processes, 1 GiB of disk (here: the largest file), no core dumps.

    `memory` is RLIMIT_DATA (the private writable memory: the heap, anonymous maps, thread stacks),
    not the address space, which numpy's, torch's and jax's reservations would exhaust; an
    AddressSanitizer build needs `memory=None`. `processes` (RLIMIT_NPROC) counts the processes and
    threads of the sandbox's own user namespace. `cpu_s` is CPU seconds of each process."""

    memory: int | None = 2 * GiB
    processes: int | None = 1024
    file_size: int | None = 1 * GiB
    cpu_s: int | None = 3600
    core: int | None = 0

    NAMES = ("memory", "processes", "file-size", "cpu")

    def rlimits(self) -> list[tuple[str, int]]:
        """(RLIMIT_ name, value) for each limit set."""
        pairs = [
            ("RLIMIT_DATA", self.memory),
            ("RLIMIT_NPROC", self.processes),
            ("RLIMIT_FSIZE", self.file_size),
            ("RLIMIT_CPU", self.cpu_s),
            ("RLIMIT_CORE", self.core),
        ]
        return [(name, int(value)) for name, value in pairs if value is not None]

    def with_option(self, text: str) -> Limits:
        """These limits with one `NAME=VALUE` of --sandbox-limit changed (memory=4G, processes=256,
        file-size=100M, cpu=600, or NAME=none); ValueError naming what is expected."""
        name, sep, value = text.partition("=")
        name = name.strip().lower()
        if not sep or name not in self.NAMES:
            raise ValueError(f"--sandbox-limit {text}: expected NAME=VALUE with NAME one of {', '.join(self.NAMES)}")
        number = None if value.strip().lower() in ("none", "unlimited") else _size(value, text)
        return replace(self, **{{"file-size": "file_size", "cpu": "cpu_s"}.get(name, name): number})


def _size(value: str, text: str) -> int:
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    value = value.strip().upper().removesuffix("IB").removesuffix("B")
    unit = value[-1:] if value[-1:] in units else ""
    try:
        number = float(value[: len(value) - len(unit)])
    except ValueError:
        raise ValueError(f"--sandbox-limit {text}: {value!r} is not a number (such as 4G, 512M, 600)") from None
    if number <= 0:
        raise ValueError(f"--sandbox-limit {text}: expected a positive number, or none")
    return int(number * units[unit])


# The first process inside the sandbox: sets the limits, then becomes the program. The limits are
# set inside the sandbox's user namespace, so that RLIMIT_NPROC counts its processes only.
_LIMITER = (
    "import os, resource, sys\n"
    "for item in sys.argv[1].split(','):\n"
    "    if item:\n"
    "        name, value = item.split('=')\n"
    "        resource.setrlimit(getattr(resource, name), (int(value), int(value)))\n"
    "try:\n"
    "    os.execvp(sys.argv[2], sys.argv[2:])\n"
    "except OSError as exc:\n"
    "    sys.stderr.write(f'cannot run {sys.argv[2]!r}: {exc.strerror}\\n')\n"
    "    os._exit(127)\n"
)


# prlimit's option for each limit (util-linux): it sets the limits and execs the program.
PRLIMIT_OPTIONS = {
    "RLIMIT_DATA": "--data",
    "RLIMIT_NPROC": "--nproc",
    "RLIMIT_FSIZE": "--fsize",
    "RLIMIT_CPU": "--cpu",
    "RLIMIT_CORE": "--core",
}


@functools.cache
def _prlimit() -> str | None:
    return shutil.which("prlimit")


def limiter(rlimits: Sequence[tuple[str, int]]) -> list[str]:
    """The command line that sets `rlimits` (soft and hard) inside the sandbox and then execs the
    program after it: util-linux's `prlimit` (a C program: about 5 ms), else a Python that does
    the same (`_LIMITER`: about 15 ms more, paid by every sandboxed start, a mutant's check, build
    and program each)."""
    found = _prlimit()
    if found is not None:
        return [found, *(f"{PRLIMIT_OPTIONS[name]}={value}" for name, value in rlimits), "--"]
    setting = ",".join(f"{name}={value}" for name, value in rlimits)
    return [sys.executable, "-S", "-c", _LIMITER, setting]


@dataclass(frozen=True)
class Sandbox:
    """How one process runs sandboxed: what it may write and read beyond the read-only system, its
    limits, and whether it has a network (never by default).

    `writable`: its working copy (the working folder when empty; a folder in the temporary folder
    that its command line names is writable too); `readable`: paths under the hidden folders it needs (its program, its data, a scratch copy under the temporary folder);
    `keep`: names of variables it gets from the environment it is given, beyond ``KEPT``."""

    writable: tuple[str, ...] = ()
    readable: tuple[str, ...] = ()
    limits: Limits | None = None  # None: the limits set by ``configure``
    network: bool = False
    keep: tuple[str, ...] = ()  # variables of its environment it gets beyond KEPT

    def environment(
        self, env: Mapping[str, str] | None = None, extra: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        """Its environment: ``environment`` with the variables of `keep` from `env` too."""
        source = os.environ if env is None else env
        return environment(source, {**{name: source[name] for name in self.keep if name in source}, **(extra or {})})

    def command(
        self,
        argv: Sequence[str],
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> list[str]:
        """The bwrap command line that runs `argv` in this sandbox, in `cwd` (default: this
        process's working folder), which is writable unless `writable` names other folders; the
        folders of the files `argv` names are readable, writable when they lie in the temporary
        folder (a scratch copy made for it); those on the PYTHONPATH of `env` (the environment it
        will get) are readable."""
        cwd = os.path.abspath(cwd or os.getcwd())
        own = cwd not in ("/", *HIDDEN)  # never the whole system, nor the whole of a hidden folder
        writable = [os.path.abspath(p) for p in self.writable] or ([cwd] if own else [])
        named = _path_words(argv, cwd)
        # A folder the harness made for it in the temporary folder (a mutant's scratch copy, a
        # job's unpacked submission), named on its command line, is its working copy too.
        scratch = os.path.realpath(tempfile.gettempdir())
        writable += [
            p for p in named if _inside(p, scratch) and p != scratch and p not in HIDDEN and os.path.isdir(p)
        ]  # a folder: a file named directly in the temporary folder (a program) is bound read-only
        suite = _suite_paths()
        imports = [p for p in (env or {}).get("PYTHONPATH", "").split(os.pathsep) if p]
        readable = [*_python_paths(), *imports, *suite, *self.readable, *named, cwd]
        # Never a hidden folder as a whole (nor the root), whatever a word names: bound, /tmp would
        # show every other job's files.
        readable = [p for p in readable if p not in (*HIDDEN, "/")]
        args = [bwrap() or BWRAP, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        for hidden in HIDDEN:
            if os.path.isdir(hidden) and not os.path.islink(hidden):
                args += ["--tmpfs", hidden]
        shown = _outermost(
            p for p in readable if _under_hidden(p) and os.path.exists(p) and not any(_inside(p, w) for w in writable)
        )
        for path in shown:
            args += ["--ro-bind", path, path]
        for path in _outermost(p for p in writable if os.path.exists(p)):
            args += ["--bind", path, path]
        for path in _outermost(s for s in suite if any(_inside(s, w) for w in writable)):
            args += ["--ro-bind", path, path]  # the suite stays read-only inside a writable folder
        for device in DEVICES:
            if os.path.exists(device):
                args += ["--dev-bind", device, device]
        if os.path.exists("/dev/nvidia0"):
            args += [arg for node in sorted(glob.glob("/dev/nvidia[0-9]*")) for arg in ("--dev-bind", node, node)]
        args += ["--unshare-all", *(["--share-net"] if self.network else [])]
        args += ["--die-with-parent", "--new-session", "--cap-drop", "ALL", "--chdir", cwd]
        rlimits = (self.limits or limits()).rlimits()
        return [str(a) for a in args] + ["--", *limiter(rlimits), *argv]


def environment(env: Mapping[str, str] | None = None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a sandboxed process: the variables of `env` (default: this process's)
    named in KEPT, a HOME and TMPDIR in its private /tmp, and `extra`."""
    source = os.environ if env is None else env
    clean = {name: source[name] for name in KEPT if name in source}
    clean.setdefault("PATH", os.defpath)
    clean.setdefault("LANG", "C.UTF-8")
    clean.update(HOME="/tmp", TMPDIR="/tmp")
    clean.update(extra or {})
    return clean


# ------------------------------------------------------------------------------ whether it runs here


@functools.cache
def bwrap() -> str | None:
    """The bwrap executable on PATH, or None."""
    return shutil.which(BWRAP)


@functools.cache
def unavailable() -> str | None:
    """Why the sandbox cannot run on this machine, or None when it can: bwrap is missing, or it
    cannot make its namespaces here (tried once per process, about 5 ms)."""
    if not sys.platform.startswith("linux"):
        return f"bubblewrap (bwrap) runs on Linux only, and this is {sys.platform}"
    found = bwrap()
    if found is None:
        return "bwrap is not installed (Debian and Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)"
    probe = [found, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all"]
    probe += ["--die-with-parent", "--cap-drop", "ALL", "--", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=30, env={"PATH": os.defpath})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{found} cannot run here: {exc}"
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"{found} cannot make its namespaces here: {said[-1] if said else f'exit status {done.returncode}'}"
    return None


_SETTINGS: dict[str, object] = {"off": None, "limits": None}


def configure(off: bool | None = None, limits: Limits | None = None) -> None:
    """This process's settings for the processes it starts from now on (the plugin calls this
    with --no-sandbox and --sandbox-limit at the start of every run): None for the defaults
    (OFF_ENV in the environment; ``Limits()``)."""
    _SETTINGS.update(off=off, limits=limits)


def limits() -> Limits:
    """The limits set by ``configure``, or the defaults."""
    found = _SETTINGS["limits"]
    return found if isinstance(found, Limits) else Limits()


def turned_off(env: Mapping[str, str] | None = None) -> bool:
    """Whether --no-sandbox turned the sandbox off (``configure``, or OFF_ENV in the environment)."""
    if env is None and isinstance(_SETTINGS["off"], bool):
        return _SETTINGS["off"]
    return bool((os.environ if env is None else env).get(OFF_ENV))


def active(env: Mapping[str, str] | None = None) -> bool:
    """Whether code under test started now runs sandboxed: not turned off, and bwrap works here."""
    return not turned_off(env) and unavailable() is None


_ANNOUNCED: set[str] = set()


def status_line(env: Mapping[str, str] | None = None) -> str | None:
    """One line saying the sandbox is off and why, or None when it is on."""
    if turned_off(env):
        return "sandbox: off (--no-sandbox): the code under test runs with your rights"
    why = unavailable()
    if why:
        return f"sandbox: off: {why}; the code under test runs with your rights (docs/sandbox.md)"
    return None


def announce(write: object = None) -> None:
    """Say once per process that the sandbox is off, and why (nothing when it is on)."""
    line = status_line()
    if line and line not in _ANNOUNCED:
        _ANNOUNCED.add(line)
        print(f"elmo-conformance: {line}", file=sys.stderr if write is None else write, flush=True)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ paths


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _under_hidden(path: str) -> bool:
    return any(_inside(path, hidden) for hidden in HIDDEN)


def _outermost(paths: Iterable[str]) -> list[str]:
    """The paths without those inside another of them, parents first."""
    kept: list[str] = []
    for path in sorted({os.path.abspath(p) for p in paths}, key=lambda p: (p.count("/"), p)):
        if not any(_inside(path, k) for k in kept):
            kept.append(path)
    return kept


def _python_paths() -> tuple[str, ...]:
    """What the Python interpreter needs: its prefixes, its executable's folder, its import path."""
    found = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(sys.executable)}
    found.add(os.path.dirname(os.path.realpath(sys.executable)))
    found.update(p for p in sys.path if isinstance(p, str) and p)
    found.update(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)
    return tuple(sorted(os.path.abspath(p) for p in found if os.path.exists(p)))


@functools.cache
def _suite_paths() -> tuple[str, ...]:
    """The suite's installed files: its package folders (read-only in the sandbox)."""
    from elmo_conformance.ground.resources import SUBPACKAGES, package_dir

    return tuple(str(package_dir(top)) for top in ("", *SUBPACKAGES))


def _walk(cwd: str, word: str) -> str | None:
    """`word` joined to `cwd` as the kernel follows it: each `..` steps out of a folder that
    exists, or the word is not a path (None). abspath's lexical `..` would turn `-c` code such as
    `print(x + '/../../y')` into a folder it never names."""
    path = "/" if os.path.isabs(word) else os.path.abspath(cwd)
    for part in word.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not os.path.isdir(path):
                return None
            path = os.path.dirname(path)
        else:
            path = os.path.join(path, part)
    return path


def _path_words(argv: Sequence[str], cwd: str) -> list[str]:
    """The folders of the words of `argv` that name existing files or folders (a program, its
    script, its data) or files to be made in an existing folder (an output): bound into the
    sandbox when they lie under a hidden folder. An existing file that lies directly in a hidden
    folder (`/tmp/prog`) is named itself, since the hidden folder is never bound as a whole."""
    found = []
    for word in argv:
        if "/" not in word and not word.startswith("."):
            continue
        path = _walk(cwd, word)
        if path is None:
            continue  # not a path the kernel would follow (`-c` code whose `..` leaves a non-folder)
        if os.path.isdir(path):
            found.append(path)
        elif os.path.exists(path) and os.path.dirname(path) in HIDDEN:
            found.append(path)
        elif os.path.exists(path) or os.path.isdir(os.path.dirname(path)):
            found.append(os.path.dirname(path))
    return found


__all__ = [
    "BWRAP",
    "HIDDEN",
    "KEPT",
    "OFF_ENV",
    "Limits",
    "Sandbox",
    "active",
    "announce",
    "bwrap",
    "configure",
    "environment",
    "limits",
    "status_line",
    "turned_off",
    "unavailable",
]
