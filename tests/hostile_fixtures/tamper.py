"""A pytest plugin that changes fixture files in the middle of a conformance run, after the
harness's start-up check (``verify_manifest``, run at configure) and after collection, before
the first test reads anything.

Loaded with ``-p tamper`` (this folder on ``PYTHONPATH``). ``ELMO_TAMPER_FROM`` names a folder
of replacement files: each replaces the file of the same name in ``$ELMO_FIXTURES_DIR``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

TAMPER_ENV = "ELMO_TAMPER_FROM"


def pytest_collection_finish(session: pytest.Session) -> None:
    source = os.environ.get(TAMPER_ENV)
    if not source:
        return
    target = Path(os.environ["ELMO_FIXTURES_DIR"])
    for replacement in sorted(Path(source).iterdir()):
        shutil.copyfile(replacement, target / replacement.name)
