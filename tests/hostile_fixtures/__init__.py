"""Helpers for the hostile-fixture self-tests (spec §12): zip archives that lie about their
members (``zips``), a runner that bounds and measures a subprocess's memory (``bounded``), and a
pytest plugin that replaces fixture files in the middle of a conformance run (``tamper``)."""
