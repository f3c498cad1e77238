"""Loads the harness plugin for `pytest conformance`."""

from elmo_conformance.conformance.plugin import (  # noqa: F401  (pytest finds hooks by name)
    pytest_addoption,
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_generate_tests,
    pytest_report_header,
    pytest_runtest_makereport,
)
