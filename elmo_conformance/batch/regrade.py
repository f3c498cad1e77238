"""Regrades: a submission's suite result, kept under ``--out/cache/`` and keyed by all it depends on
(docs/grading.md, "Regrades"): the submission's content (its files' names, executable bits and
bytes, its --impl argument and build command), the suite's version and installed files
(``resources.suite_digest``), the spec's version, and the options that change a run (the suite's
arguments, the job's deadline, the time factor and floor, the sandbox). A second batch over the
same class re-uses every result whose key did not change and runs only the others; ``--regrade``
runs them all. The grading file is not part of the key: grades are computed on the client from
the kept outcomes, so a changed grading file regrades a class without running it.

Only results with a verdict are kept: a job that was lost, or whose worker died, runs again.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path
from typing import Any

from elmo_conformance.batch.submissions import Submission

CACHE_DIR = "cache"
CACHE_VERSION = 1


def content_hash(submission: Submission) -> str:
    """SHA-256 of what a submission is: its files (names, executable bits, bytes, in name order;
    not their times, nor the packing's), its --impl argument and its build command."""
    digest = hashlib.sha256()
    digest.update(json.dumps([submission.kind, submission.impl, submission.build]).encode())
    if submission.files is not None:
        with tarfile.open(fileobj=io.BytesIO(submission.files), mode="r:gz") as tar:
            members = sorted((m for m in tar.getmembers() if m.isfile()), key=lambda m: m.name)
            for member in members:
                handle = tar.extractfile(member)
                data = handle.read() if handle is not None else b""
                digest.update(json.dumps([member.name, bool(member.mode & 0o111), len(data)]).encode())
                digest.update(data)
    return digest.hexdigest()


def key(submission: Submission, options: dict[str, Any]) -> str:
    """The key of a submission's result: its content, the suite (version, installed files, spec
    version) and `options`."""
    from elmo_conformance.ground.resources import spec_version, suite_digest
    from elmo_conformance.ground.version import __version__

    material = {
        "cache_version": CACHE_VERSION,
        "submission": content_hash(submission),
        "suite_version": __version__,
        "suite_digest": options.get("suite_digest") or suite_digest(),
        "spec_version": spec_version(),
        "options": {k: v for k, v in sorted(options.items()) if k != "suite_digest"},
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


class Cache:
    """The results kept under DIR/cache/, one JSON file per key."""

    def __init__(self, out: Path) -> None:
        self.folder = out / CACHE_DIR

    def path(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            data = json.loads(self.path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("key") != key or not isinstance(data.get("result"), dict):
            return None
        return data

    def put(self, key: str, entry: dict[str, Any]) -> None:
        from elmo_conformance.conformance.record import write_text

        self.folder.mkdir(parents=True, exist_ok=True)
        write_text(self.path(key), json.dumps({**entry, "key": key}) + "\n")
