"""Temporary copies of fixtures/ for tests that damage or regenerate fixtures."""

from __future__ import annotations

import shutil
from pathlib import Path

from elmo_conformance.fixtures.manifest import fixture_files
from elmo_conformance.fixtures.store import FIXTURES_DIR, MANIFEST_NAME, dumps_json, load_json, sha256_file

FIXTURE_NAMES = fixture_files(FIXTURES_DIR)


def copy_fixtures(tmp_path: Path) -> Path:
    """The data files and the manifest of fixtures/, without the package's code."""
    copy = tmp_path / "fixtures"
    copy.mkdir(parents=True)
    for name in [*FIXTURE_NAMES, MANIFEST_NAME]:
        shutil.copyfile(FIXTURES_DIR / name, copy / name)
    return copy


def rehash(copy: Path, name: str) -> None:
    """Record a changed file's new hash, as a maintainer who edited it would: what is left to
    catch is then the content itself."""
    manifest = load_json(copy / MANIFEST_NAME)
    for entry in manifest["fixtures"]:
        if entry["path"] == name:
            entry["sha256"] = sha256_file(copy / name)
    (copy / MANIFEST_NAME).write_text(dumps_json(manifest), encoding="utf-8")
