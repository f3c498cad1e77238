"""What a batch checks: submissions, each an ``--impl`` argument or a folder holding one.

A submission is, on the command line,

- a folder with an ``elmo-submission.json`` manifest (spec/schemas/submission.schema.json): the
  ``--impl`` argument to check it with, and optionally the command that builds it first;
- a folder with an ``adapter.py`` (and no manifest): the file adapter ``adapter.py``;
- a ``.py`` file that defines ``adapter``: that file alone;
- anything else ``--impl`` takes: a built-in name (``numpy``), an installed adapter's name,
  ``package.module:attr`` or ``cmd:PROGRAM ARGS`` (these must exist on the machine that runs the job).

A folder's files (or the one file) are packed here into a gzipped tar that travels with the job and
is unpacked into a temporary folder where it runs, so that a job needs no shared file system. A
submission that cannot be checked (no such folder, a manifest that is not valid, a folder too large)
becomes a ``Submission`` with a ``problem``: a red row of the dashboard, never a job.
"""

from __future__ import annotations

import io
import json
import re
import tarfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

MANIFEST = "elmo-submission.json"
# The batch's own files under --out; each submission's go under SUBMISSIONS/NAME/, so that no
# submission's name can be one of them.
BATCH_FILE, DASHBOARD_FILE, SUBMISSIONS = "batch.json", "index.html", "submissions"
ADAPTER_FILE = "adapter.py"
SCHEMA = "submission.schema.json"
# What is not shipped from a submission's folder: version control, caches, environments.
SKIPPED = frozenset({".git", ".hg", ".svn", "__pycache__", ".venv", "venv", "node_modules", ".mypy_cache", ".nox"})
MAX_PACKED_BYTES = 64 * 1024 * 1024  # a folder larger than this once packed is refused


@dataclass
class Submission:
    """One submission: its name (a folder under --out), what was given on the command line, the
    --impl argument the job runs (relative to the unpacked folder when it has files), the packed
    files, the build command, and why it cannot be checked (None when it can)."""

    name: str
    given: str
    kind: str  # folder, file, name (a built-in, installed or module adapter), command
    claimed: bool = False  # the name comes from the submission's own manifest, not from its path
    impl: str | None = None
    files: bytes | None = None
    build: str | None = None
    description: str | None = None
    problem: str | None = None

    def public(self) -> dict[str, Any]:
        """What batch.json records about the submission itself."""
        return {
            "name": self.name,
            "submission": self.given,
            "kind": self.kind,
            "impl": self.impl,
            "build": self.build,
            "description": self.description,
            "packed_bytes": len(self.files) if self.files is not None else None,
        }


@cache
def schema() -> dict[str, Any]:
    from elmo_conformance.ground.resources import package_dir

    return json.loads((package_dir("spec") / "schemas" / SCHEMA).read_text(encoding="utf-8"))


def manifest_problems(data: Any) -> list[str]:
    """What makes `data` not a valid manifest, one line per problem naming its field."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema())
    found = []
    for error in sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path)):
        where = "/".join(str(p) for p in error.absolute_path)
        if error.validator == "required":
            missing = [field for field in error.validator_value if field not in (error.instance or {})]
            found.append(f"field '{missing[0] if missing else where}': required, missing")
        elif error.validator == "additionalProperties":
            extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
            found.append(
                f"field '{', '.join(extra)}': not a field of {MANIFEST} (expected {', '.join(schema()['properties'])})"
            )
        elif where:
            found.append(f"field '{where}': {error.message}")
        else:
            found.append(error.message)
    return found


def safe_name(text: str) -> str:
    """A folder name for `text`: letters, digits, '.', '_' and '-'."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")
    return name[:64] or "submission"


def pack(path: Path) -> bytes:
    """The gzipped tar of a folder's files (or of one file), named relative to it."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=6) as tar:
        if path.is_file():
            tar.add(path, arcname=path.name, recursive=False)
        else:
            for item in sorted(path.rglob("*")):
                relative = item.relative_to(path)
                if SKIPPED & set(relative.parts) or item.is_symlink() and not item.exists():
                    continue
                if item.is_file():
                    tar.add(item, arcname=relative.as_posix(), recursive=False)
                if buffer.tell() > MAX_PACKED_BYTES:
                    raise ValueError(f"the folder is larger than {MAX_PACKED_BYTES // 2**20} MiB packed")
    return buffer.getvalue()


def unpack(data: bytes, into: Path) -> None:
    """Unpack `pack`'s bytes into a folder, refusing anything outside it (tarfile's 'data' filter)."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(into, filter="data")


def _folder(path: Path, given: str) -> Submission:
    name = safe_name(path.resolve().name)
    manifest = path / MANIFEST
    build = description = None
    if manifest.is_file():
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            return Submission(name, given, "folder", problem=f"{MANIFEST}: not a JSON file: {exc}")
        found = manifest_problems(data)
        if found:
            return Submission(name, given, "folder", problem=f"{MANIFEST} (spec/schemas/{SCHEMA}): " + "; ".join(found))
        claimed = "name" in data
        name = data.get("name", name)
        impl, build, description = data["impl"], data.get("build"), data.get("description")
        if impl.endswith(".py") and not impl.startswith("cmd:") and not build:  # a build may make it
            target = (path / impl).resolve()
            if not target.is_file() or path.resolve() not in target.parents:
                return Submission(
                    name, given, "folder", problem=f"{MANIFEST}: field 'impl': {impl} is not a file in the folder"
                )
    elif (path / ADAPTER_FILE).is_file():
        impl = ADAPTER_FILE
        claimed = False
    else:
        return Submission(
            name,
            given,
            "folder",
            problem=f"the folder has neither {MANIFEST} (spec/schemas/{SCHEMA}) nor {ADAPTER_FILE}",
        )
    try:
        files = pack(path)
    except (OSError, ValueError) as exc:
        return Submission(name, given, "folder", claimed, impl=impl, problem=f"its files cannot be shipped: {exc}")
    return Submission(name, given, "folder", claimed, impl, files, build, description)


def resolve(given: str) -> Submission:
    """The submission a command-line argument names."""
    path = Path(given)
    if given.startswith("cmd:"):
        words = given[4:].split()
        return Submission(safe_name(Path(words[0]).name if words else "command"), given, "command", impl=given)
    if path.is_dir():
        return _folder(path, given)
    if given.endswith(".py"):
        if not path.is_file():
            return Submission(safe_name(path.stem), given, "file", problem=f"{given}: no such file")
        return Submission(safe_name(path.stem), given, "file", impl=path.name, files=pack(path))
    if "/" in given or given.startswith("."):
        return Submission(safe_name(path.name), given, "folder", problem=f"{given}: no such folder or file")
    return Submission(safe_name(given.replace(":", "-")), given, "name", impl=given)


def resolve_all(given: list[str]) -> list[Submission]:
    """Every argument's submission, with names made unique, compared without case (a second
    'mine' is 'mine-2'). A name a submission's manifest claims never takes a name from another
    submission's path: the names from paths are given first, whatever the order of the arguments."""
    submissions = [resolve(arg) for arg in given]
    taken: set[str] = set()
    for submission in sorted(submissions, key=lambda s: s.claimed):  # stable: in order within each
        base, count = submission.name, 1
        while submission.name.lower() in taken:
            count += 1
            submission.name = f"{base}-{count}"
        taken.add(submission.name.lower())
    return submissions
