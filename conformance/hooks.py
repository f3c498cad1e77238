"""The harness's own pytest hooks, implemented by the packages above it (pytest's plugin system:
the harness names what it needs, a plugin provides it, and the harness imports nothing above it).

- ``pytest_conformance_run_page(report)``: the HTML page of a run's JSON report (spec §11.1), for
  ``--report`` (the page beside the JSON) and ``--html``. Implemented by ``elmo_conformance.pages``'
  plugin (``elmo_conformance/pages/plugin.py``), which pytest loads through its ``pytest11`` entry
  point when the package is installed and through ``conformance/conftest.py`` in a checkout.
"""

from __future__ import annotations

from typing import Any

import pluggy

hookspec = pluggy.HookspecMarker("pytest")


@hookspec(firstresult=True)
def pytest_conformance_run_page(report: dict[str, Any]) -> str | None:  # type: ignore[empty-body]
    """The run's page as one self-contained HTML document, or None when no plugin writes pages.

    May raise ImportError when what the page needs (Jinja2, matplotlib) is not installed."""
