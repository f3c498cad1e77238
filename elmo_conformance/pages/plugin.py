"""The pytest plugin of the report pages: the harness's ``pytest_conformance_run_page`` hook
(conformance/hooks.py), so that a run's ``--report`` and ``--html`` come with their HTML page.

Registered under this module's name by the ``pytest11`` entry point of an installed package, and by
``conformance/conftest.py``'s ``pytest_plugins`` in a checkout (pytest registers a name once).
"""

from __future__ import annotations

from typing import Any

import pytest


@pytest.hookimpl
def pytest_conformance_run_page(report: dict[str, Any]) -> str:
    from elmo_conformance.pages import render  # Jinja2 and matplotlib: loaded only when a page is written

    return render.run_page(report)
