"""Reports people can look at: the HTML page of a conformance run and the dashboard across runs.

- `margins`: how much of its tolerance (§10) each comparison used, recorded by `assert_close`.
- `provenance`: where a result comes from (suite and spec version, commit, libraries, machine).
- `document`: the JSON report (version 2, spec/schemas/report.schema.json), read and checked.
- `runpage` and `dashboard`: the data of each page; `charts`: the margins chart (matplotlib SVG);
  `render`: the pages (Jinja2 templates in `templates/`, one self-contained HTML file each).
- `browser`: headless Chromium, for screenshots and the browser tests.

`python -m elmo_conformance.pages dashboard REPORT.json ... --out PAGE.html` writes
the dashboard; `... page REPORT.json --out PAGE.html` re-renders one run's page.

This package is imported by the harness (`margins`), so it imports nothing heavy at import time:
Jinja2 and matplotlib are loaded only when a page is written.
"""

from __future__ import annotations

from elmo_conformance.conformance.record import REPORT_VERSION

__all__ = ["REPORT_VERSION"]
