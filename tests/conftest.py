"""Runs of the whole suite shared by the tests that read them (session-scoped).

One whole-suite run of the reference through the protocol, with the fixtures' usage recorded
(fixtures check 6, §12.5), serves both tests/test_fixtures_parts.py's check 6 and the numpy side
"through the protocol" of tests/test_parity.py. The tests that share it carry the xdist group
``numpy-reference-run`` (``tests.suite_runs.NUMPY_REFERENCE_RUN``), so that `nox -s tests` (pytest-xdist with ``--dist loadgroup``) runs them
on one worker and the run happens once.
"""

from __future__ import annotations

import pytest

from elmo_conformance.fixtures.store import FIXTURES_DIR
from elmo_conformance.maintain.fixture_suite import ReferenceRun, run_reference


@pytest.fixture(scope="session")
def numpy_reference_run() -> ReferenceRun:
    """The whole suite on `--impl numpy` (served by a child process, §11.1) with the committed
    fixtures, each test's outcome and the fixtures each test read."""
    return run_reference(FIXTURES_DIR, "numpy")
