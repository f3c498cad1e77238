"""What the plugin keeps on pytest's config for a run of the suite (pytest.StashKey), shared by the
plugin's modules: the adapters' cases, whether the plugin is active, and what the entry point
(elmo_conformance.runner.running) asked of this run."""

from __future__ import annotations

import pytest

DTYPES = ("float64", "float32")
CASES = pytest.StashKey[list]()  # the loaded adapters (adapters/loading.py)
ACTIVE = pytest.StashKey[bool]()  # the run targets the suite
FINISHED = pytest.StashKey[str]()  # the file to write when pytest has finished
RUN_ID = pytest.StashKey[str]()  # the entry point's id for this run
RUN_REPORT = pytest.StashKey[str]()  # the entry point's private copy of the report
