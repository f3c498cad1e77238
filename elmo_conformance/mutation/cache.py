"""The incremental cache of `elmo-conformance mutate` (spec §13.2), and the lock on its --out folder.

A cached status is reused only when nothing it depends on changed. Its key holds the mutant (its
id and its changed line), every file of the project as copied (so a change to a caller, a helper
or a build file re-runs every mutant), the build command, the suite (its version and the hash of
its tests, harness and spec files), the options that change a verdict (`-k`, the timeouts, the sandbox) and the
Python and package versions of this environment. Only verdicts are kept: Killed, Timeout,
Survived, NoCoverage and CompileError; a RuntimeError is always run again. An entry that does not
have the shape of one (a hand-edited or truncated file) is run again, never trusted; a Killed
entry must name the tests that killed it.

One run at a time may use an --out folder: a second is refused while the first holds its lock.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

from elmo_conformance.mutation.model import MutantRun, TestOutcome

VERSION = 2
CACHED = ("Killed", "Timeout", "Survived", "NoCoverage", "CompileError")
LOCK = ".mutate.lock"


def digest(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part if isinstance(part, bytes) else part.encode())
        h.update(b"\0")
    return h.hexdigest()


def tree_digest(folder: Path) -> str:
    """Every file under `folder` (names and contents) and every link's target, in one hash."""
    parts: list[str | bytes] = []
    for current, dirs, files in os.walk(folder, followlinks=False):
        dirs.sort()
        for name in sorted(files + [d for d in dirs if os.path.islink(os.path.join(current, d))]):
            path = os.path.join(current, name)
            parts.append(os.path.relpath(path, folder))
            if os.path.islink(path):
                parts.append("-> " + os.readlink(path))
            else:
                with open(path, "rb") as handle:
                    parts.append(hashlib.sha256(handle.read()).hexdigest())
    return digest(*parts)


def environment_digest() -> str:
    """This Python and every installed distribution with its version."""
    packages = sorted(
        f"{(dist.metadata['Name'] or '').lower()}=={dist.version}" for dist in importlib.metadata.distributions()
    )
    return digest(sys.version, *packages)


def _valid(entry: Any) -> bool:
    if not isinstance(entry, dict) or entry.get("status") not in CACHED:
        return False
    killers, tests = entry.get("killers", []), entry.get("tests", {})
    if not isinstance(killers, list) or not all(isinstance(k, str) for k in killers):
        return False
    if not isinstance(tests, dict) or not isinstance(entry.get("duration", 0.0), int | float):
        return False
    try:
        outcomes = {name: TestOutcome(**value) for name, value in tests.items()}
    except TypeError:
        return False
    if entry["status"] == "Killed" and (
        not killers or not all(outcomes.get(k, None) and outcomes[k].killed for k in killers)
    ):
        return False
    return isinstance(entry.get("selected", []), list) and isinstance(entry.get("reason"), str | None)


class Cache:
    """Results of earlier runs (Stryker's incremental mode), keyed as the module docstring says."""

    def __init__(self, path: Path, enabled: bool) -> None:
        self.path, self.enabled = path, enabled
        self.entries: dict[str, dict] = {}
        self.rejected = 0  # entries that were not valid and are run again
        if enabled and path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                data = None
            if isinstance(data, dict) and data.get("version") == VERSION and isinstance(data.get("entries"), dict):
                for key, entry in data["entries"].items():
                    if _valid(entry):
                        self.entries[key] = entry
                    else:
                        self.rejected += 1
            elif data is not None:
                self.rejected = -1  # another version's or a broken file: nothing of it is used

    @staticmethod
    def key(mutant_id: str, replacement: str, context: str) -> str:
        """`context`: the digest of everything else a status depends on (see `context`)."""
        return digest(mutant_id, replacement, context)

    @staticmethod
    def context(project: str, suite: str, impl: str, build: str | None, options: dict[str, Any]) -> str:
        return digest(project, suite, impl, build or "", json.dumps(options, sort_keys=True), environment_digest())

    def get(self, key: str) -> dict | None:
        return self.entries.get(key) if self.enabled else None

    def put(self, key: str, run: MutantRun) -> None:
        if run.status in CACHED and (run.status != "Killed" or run.killers):
            self.entries[key] = {
                "status": run.status,
                "reason": run.reason,
                "killers": run.killers,
                "tests": {n: asdict(t) for n, t in run.tests.items() if t.killed},
                "tested": len(run.tests),
                "selected": run.selected,
                "running": run.running,
                "duration": run.duration,
            }

    def save(self) -> None:
        if not self.enabled:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
        partial.write_text(json.dumps({"version": VERSION, "entries": self.entries}) + "\n", encoding="utf-8")
        os.replace(partial, self.path)


def from_cache(impl: str, mutant: str, entry: dict) -> MutantRun:
    tests = {n: TestOutcome(**t) for n, t in entry.get("tests", {}).items()}
    run = MutantRun(impl, mutant, entry["status"], tests, list(entry.get("selected", [])), reason=entry.get("reason"))
    run.running = entry.get("running")
    run.duration, run.cached = float(entry.get("duration", 0.0)), True
    return run


class OutLocked(Exception):
    """Another run holds the --out folder."""


def lock_out(out: Path) -> IO[str]:
    """Hold the --out folder for this run (released when the process ends); OutLocked when
    another run holds it."""
    import fcntl

    out.mkdir(parents=True, exist_ok=True)
    handle = open(out / LOCK, "a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        holder = handle.read().strip() or "unknown"
        handle.close()
        raise OutLocked(
            f"--out {out}: another elmo-conformance mutate run (pid {holder}) is writing there; "
            "wait for it to end, or choose another --out"
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    return handle
