"""Where a result comes from: the suite and spec versions, the commit, the libraries, the machine
and the adapters (spec §11: name, --impl argument, device, capabilities). Written into the JSON
report's `provenance` and shown in the pages' headers, so that results from many machines, suite
versions and implementations can be told apart (and §10's tolerances judged per machine)."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from collections.abc import Iterable
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from elmo_conformance.ground.resources import package_dir
from elmo_conformance.ground.version import __version__

LIBRARIES = ("numpy", "torch", "jax", "jaxlib", "pytest", "hypothesis", "jsonschema")


def checkout_root() -> Path | None:
    """The repository root when the suite runs from a git checkout, else None."""
    root = package_dir().parent
    return root if (root / ".git").exists() else None


def git_commit(root: Path | None = None) -> dict[str, Any] | None:
    """{'sha', 'dirty'} of the checkout the suite runs from; None outside one or without git."""
    root = root or checkout_root()
    if root is None:
        return None
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return {"sha": sha, "dirty": bool(status.strip())} if sha else None


def library_versions(names: Iterable[str] = LIBRARIES) -> dict[str, str]:
    """Python's version and that of each library installed (read from its metadata, not imported)."""
    versions = {"python": platform.python_version()}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip() or None
    except OSError:
        pass
    return platform.processor() or None


@cache
def machine() -> dict[str, Any]:
    """The host, OS, architecture, CPU model and count: what a float64 rounding depends on (§10)."""
    return {
        "host": platform.node(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "python_implementation": platform.python_implementation(),
    }


def suite_version() -> str:
    return __version__


def spec_version() -> str:
    """The spec's version, from spec/protocol.json (§11)."""
    from elmo_conformance.spec.protocol import protocol

    return protocol().spec_version


def provenance(adapters: Iterable[dict[str, Any]], args: Iterable[str] = ()) -> dict[str, Any]:
    """The `provenance` object of the JSON report (spec/schemas/report.schema.json)."""
    return {
        "suite_version": suite_version(),
        "spec_version": spec_version(),
        "commit": git_commit(),
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "args": list(args),
        "libraries": library_versions(),
        "machine": machine(),
        "adapters": list(adapters),
    }
