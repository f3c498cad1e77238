"""Temporary copies of fixtures/ for tests that damage or regenerate fixtures."""

from __future__ import annotations

import shutil
from pathlib import Path

from elmo_conformance.fixtures.manifest import fixture_files
from elmo_conformance.fixtures.store import FIXTURES_DIR, MANIFEST_NAME

FIXTURE_NAMES = fixture_files(FIXTURES_DIR)


def copy_fixtures(tmp_path: Path) -> Path:
    """The data files and the manifest of fixtures/, without the package's code."""
    copy = tmp_path / "fixtures"
    copy.mkdir(parents=True)
    for name in [*FIXTURE_NAMES, MANIFEST_NAME]:
        shutil.copyfile(FIXTURES_DIR / name, copy / name)
    return copy
