"""Find an adapter from an `--impl` argument (§11)."""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import os
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from elmo_conformance.ground.resources import ADAPTERS_GROUP
from elmo_conformance.spec.protocol import protocol

# Built-in name -> (module holding `adapter`, packages it needs).
BUILTINS: dict[str, tuple[str, tuple[str, ...]]] = {
    "numpy": ("elmo_conformance.adapters.numpy", ()),
    "torch": ("elmo_conformance.adapters.torch", ("torch",)),
    "jax": ("elmo_conformance.adapters.jax", ("jax",)),
    "cuda": ("elmo_conformance.adapters.cuda", ("torch",)),
    "c": ("elmo_conformance.adapters.c.build", ()),
}
# Built-ins that are programs speaking the wire protocol (§15): their module's `build()` returns
# the executable (compiling it when its sources changed), which then runs as `cmd:EXECUTABLE`.
PROGRAMS = ("c",)
# Built-ins that also need a device: available only where their adapter is not `unavailable` (§11).
DEVICE_BOUND = ("cuda",)


class AdapterLoadError(Exception):
    """The --impl argument does not lead to a usable adapter; the message is one line."""


class AdapterNameClash(UserWarning):
    """An installed package registers an adapter under a built-in name; the built-in is used."""


def adapter_entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    """Adapters that installed packages register by name (§11): the entry points of the group
    `elmo_conformance.adapters`, name -> entry point (`package.module:attr`, an adapter or a
    zero-argument factory of one), the first found for each name."""
    found: dict[str, importlib.metadata.EntryPoint] = {}
    for entry in importlib.metadata.entry_points(group=ADAPTERS_GROUP):
        found.setdefault(entry.name, entry)
    return found


def _warn_if_shadowed(arg: str) -> None:
    """Built-in names win a clash with an installed adapter's name, with a warning."""
    entry = adapter_entry_points().get(arg) if arg in BUILTINS else None
    if entry is not None:
        dist = getattr(getattr(entry, "dist", None), "name", None)
        warnings.warn(
            f"--impl {arg}: the built-in adapter {arg!r} is used; the installed adapter of the same name "
            f"({entry.value}{f', from {dist}' if dist else ''}; entry point group {ADAPTERS_GROUP}) is not "
            "(register it under another name)",
            AdapterNameClash,
            stacklevel=3,
        )


@dataclass(frozen=True)
class LoadedAdapter:
    arg: str  # the --impl argument, for reproduce commands
    adapter: object = field(compare=False)
    name: str
    capabilities: frozenset[str]
    device: str = "cpu"  # where it computes; selects the tolerances (§10, §11)
    unavailable: str | None = None  # why it cannot run here: every test is skipped with it (§11)


def missing_packages(name: str) -> list[str]:
    """What a built-in needs and this machine lacks: Python packages, or a C compiler for `c`."""
    missing = [pkg for pkg in BUILTINS[name][1] if importlib.util.find_spec(pkg) is None]
    if name in PROGRAMS:
        try:
            importlib.import_module(BUILTINS[name][0]).compiler()
        except RuntimeError:
            missing.append("a C compiler")
    return missing


def available_builtins() -> list[str]:
    """Built-in names whose packages are installed and, for a device-bound one, whose device is here."""
    names = [name for name in BUILTINS if not missing_packages(name)]
    return [name for name in names if name not in DEVICE_BOUND or not load_adapter(name).unavailable]


def _import_file(path: Path) -> object:
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    module_name = f"_elmo_adapter_{path.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise AdapterLoadError(f"--impl {path}: cannot import this file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    if not hasattr(module, "adapter"):
        raise AdapterLoadError(f"--impl {path}: the file defines no attribute 'adapter'")
    return module.adapter


def _missing(arg: str) -> None:
    missing = missing_packages(arg)
    if missing == ["a C compiler"]:
        raise AdapterLoadError(f"--impl {arg}: needs a C compiler: `cc` (or $CC) is not on PATH")
    if missing:
        raise AdapterLoadError(
            f"--impl {arg}: needs the package {missing[0]!r}, which is not installed (pip install {missing[0]})"
        )


def _find_object(arg: str) -> object:
    if arg in BUILTINS:
        _missing(arg)
        return importlib.import_module(BUILTINS[arg][0]).adapter
    entry = adapter_entry_points().get(arg)
    if entry is not None:  # an installed package's adapter (§11)
        try:
            return entry.load()
        except Exception as exc:
            raise AdapterLoadError(
                f"--impl {arg}: loading the installed adapter {entry.value} ({ADAPTERS_GROUP}) raised "
                f"{type(exc).__name__}: {exc}"
            ) from exc
    if arg.endswith(".py") or Path(arg).is_file():
        path = Path(arg).resolve()
        if not path.is_file():
            raise AdapterLoadError(f"--impl {arg}: no such file")
        return _import_file(path)
    if ":" in arg:
        module_name, _, attr = arg.partition(":")
        module = importlib.import_module(module_name)
        if not hasattr(module, attr):
            raise AdapterLoadError(f"--impl {arg}: module {module_name!r} has no attribute {attr!r}")
        return getattr(module, attr)
    names = ", ".join(BUILTINS)
    installed = ", ".join(sorted(adapter_entry_points())) or f"none: no package registers one in {ADAPTERS_GROUP}"
    raise AdapterLoadError(
        f"--impl {arg}: expected a built-in name ({names}), an installed adapter's name ({installed}), "
        "a .py file, package.module:attr, or cmd:PROGRAM ARGS"
    )


def as_adapter(obj: object, where: str) -> LoadedAdapter:
    """Accept an adapter or a zero-argument factory of one, and check it has the protocol."""
    if not hasattr(obj, "bilm_layers") and callable(obj):
        obj = obj()
    name = getattr(obj, "name", None)
    if not isinstance(name, str) or not name:
        raise AdapterLoadError(f"{where}: the adapter has no 'name' string (§11)")
    capabilities = getattr(obj, "capabilities", None)
    if capabilities is None or isinstance(capabilities, str) or not all(isinstance(c, str) for c in capabilities):
        raise AdapterLoadError(f"{where}: 'capabilities' must be a set of strings such as {{'float64', 'grad'}} (§11)")
    capabilities = frozenset(capabilities)
    missing = [m for m in protocol().required_methods(capabilities) if not callable(getattr(obj, m, None))]
    if missing:
        raise AdapterLoadError(f"{where}: adapter {name!r} lacks the protocol method(s) {', '.join(missing)} (§11)")
    if not capabilities & {"float64", "float32"}:
        raise AdapterLoadError(f"{where}: adapter {name!r} declares neither 'float64' nor 'float32' (§11)")
    device, unavailable = _device_of(obj, name, where)
    return LoadedAdapter(where, obj, name, capabilities, device, unavailable)


def _device_of(obj: object, name: str, where: str) -> tuple[str, str | None]:
    """The optional `device` (default "cpu") and `unavailable` (default None) of §11."""
    device = getattr(obj, "device", "cpu")
    if not isinstance(device, str) or not device:
        raise AdapterLoadError(f"{where}: adapter {name!r} has a 'device' that is not a name such as 'cpu' (§11)")
    unavailable = getattr(obj, "unavailable", None)
    if unavailable is not None and (not isinstance(unavailable, str) or not unavailable):
        raise AdapterLoadError(f"{where}: adapter {name!r}: 'unavailable' must be None or a reason (§11)")
    return device, unavailable


def _program(arg: str) -> list[str]:
    """The command of a built-in program (`c`): built first when its sources changed."""
    _missing(arg)
    try:
        return [str(importlib.import_module(BUILTINS[arg][0]).build())]
    except RuntimeError as exc:
        raise AdapterLoadError(f"--impl {arg}: {exc}") from None


SERVER = "elmo_conformance.adapters.wire.server"  # the protocol server (§11, §15): python -m SERVER ARG


def served_command(arg: str) -> list[str]:
    """The command that serves the Python adapter `arg` over the wire protocol (§15)."""
    return [sys.executable, "-m", SERVER, arg]


def _child_environment() -> dict[str, str]:
    """This process's environment, with its import path on PYTHONPATH, so that a served adapter
    imports what the harness would (the checkout, a folder pytest put on sys.path)."""
    installed = {os.path.abspath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    paths = [os.path.abspath(entry or os.curdir) for entry in sys.path if isinstance(entry, str)]
    # Site directories (this environment's, or another's that a .pth file adds) reach the child
    # through the same site processing, after the standard library; on PYTHONPATH they would come
    # before it, and a backport installed there (the `typing` package) would shadow the stdlib.
    extra = [
        p
        for p in paths
        if os.path.isdir(p)
        and not any(p.startswith(prefix + os.sep) for prefix in installed)
        and os.path.basename(p) not in ("site-packages", "dist-packages")
    ]
    env = dict(os.environ)
    given = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys([*extra, *given]))
    return env


def _load_served(arg: str) -> LoadedAdapter:
    """A Python adapter in a child process behind the protocol server: nothing of it is imported
    here, and a call that hangs or kills its process fails one test (§11, §15.7)."""
    from elmo_conformance.adapters.wire.client import ProcessAdapter, ProcessStartError

    key = ("served", arg)
    if key not in _PROCESSES:
        try:
            _PROCESSES[key] = ProcessAdapter(arg, served_command(arg), env=_child_environment(), served=True)
        except ProcessStartError as exc:
            raise AdapterLoadError(exc.refusal or str(exc)) from None
    return as_adapter(_PROCESSES[key], arg)


def _load_process(arg: str) -> LoadedAdapter:
    """`cmd:PROGRAM ARGS` or a built-in program: a process speaking the wire protocol (§15), one
    per argument and harness process; started here, and stopped when the harness exits."""
    from elmo_conformance.adapters.wire.client import ProcessAdapter, ProcessStartError, command_of

    if arg not in _PROCESSES:
        try:
            argv = _program(arg) if arg in PROGRAMS else command_of(arg)
            _PROCESSES[arg] = ProcessAdapter(arg, argv)
        except ProcessStartError as exc:
            raise AdapterLoadError(str(exc)) from None
    return as_adapter(_PROCESSES[arg], arg)


_PROCESSES: dict[object, object] = {}


def stop_processes() -> None:
    """Stop every adapter process of this run and forget it (when a run ends): a later run in the
    same Python process (``elmo_conformance.run(..., where="here")``, the mutation workers) starts its
    own, with its own options, rather than calling a process that was stopped."""
    for adapter in list(_PROCESSES.values()):
        adapter.stop()  # type: ignore[attr-defined]
    _PROCESSES.clear()


def load_adapter(arg: str, isolate: bool = False) -> LoadedAdapter:
    """The adapter of an --impl argument (§11). A process (`cmd:`, a built-in program) always
    runs as one; with `isolate`, so does a Python adapter, served by the protocol server in a
    child process. Without it, a Python adapter is imported and called in this process."""
    _warn_if_shadowed(arg)
    if arg.startswith("cmd:") or arg in PROGRAMS:
        return _load_process(arg)
    if isolate:
        return _load_served(arg)
    try:
        obj = _find_object(arg)
    except AdapterLoadError:
        raise
    except Exception as exc:  # an adapter module that fails to import is the user's error to read
        raise AdapterLoadError(f"--impl {arg}: importing it raised {type(exc).__name__}: {exc}") from exc
    try:
        return as_adapter(obj, arg)
    except AdapterLoadError:
        raise
    except Exception as exc:
        raise AdapterLoadError(f"--impl {arg}: creating the adapter raised {type(exc).__name__}: {exc}") from exc


def load_mutant(loaded: LoadedAdapter, mutant_id: str) -> LoadedAdapter:
    """The adapter's mutant `mutant_id` (§11, §13) in place of the adapter.

    The mutant keeps the adapter's name and --impl argument, so its test ids (and reproduce
    commands) are those of the clean run and killers can be compared test by test.
    """
    if not mutant_id.strip():
        raise AdapterLoadError(f"--mutant {mutant_id!r}: expected a mutant id such as s01, got an empty one")
    where = f"--mutant {mutant_id}: adapter {loaded.name!r} (--impl {loaded.arg})"
    mutants = getattr(loaded.adapter, "mutants", None)
    if not isinstance(mutants, Mapping) or not mutants:
        raise AdapterLoadError(f"{where} declares no mutants (an adapter MAY expose `mutants`, §11)")
    if mutant_id not in mutants:
        raise AdapterLoadError(f"{where} does not declare it; it declares {', '.join(sorted(map(str, mutants)))}")
    factory = mutants[mutant_id]
    if not callable(factory):
        raise AdapterLoadError(f"{where}: mutants[{mutant_id!r}] must be a zero-argument factory, got {factory!r}")
    try:
        mutant = as_adapter(factory(), where)
    except AdapterLoadError:
        raise
    except Exception as exc:
        raise AdapterLoadError(f"{where}: creating the mutant raised {type(exc).__name__}: {exc}") from exc
    return replace(mutant, arg=loaded.arg, name=loaded.name)
