"""The commands that rerun one failed test, printed under every failure and kept in the report."""

from __future__ import annotations

import shlex

import pytest

from elmo_conformance.conformance.case import Case
from elmo_conformance.ground.resources import PLUGIN, project_relative


def reproduce_commands(item: pytest.Item) -> str:
    """The commands that rerun this one test, one a line: through nox in a checkout, through the
    console command, and with plain pytest from the user's own directory (where nox would not
    install the packages their adapter needs)."""
    case = getattr(item, "callspec", None) and item.callspec.params.get("case")  # type: ignore[attr-defined]
    impl = f" --impl {shlex.quote(case.impl.arg)}" if isinstance(case, Case) else ""
    mutant = item.config.getoption("mutant", None)
    impl += f" --mutant {shlex.quote(mutant)}" if mutant else ""
    test = item.nodeid.partition("::")[2]
    try:  # the same test id whatever the rootdir: conformance/test_bilm.py::...
        module = project_relative(item.path)
    except ValueError:
        module = item.nodeid.partition("::")[0]
    nodeid = f"{module}::{test}"
    pyarg = "elmo_conformance." + module.removesuffix(".py").replace("/", ".") + f"::{test}"
    return "\n".join(
        [
            f"nox -s conformance --{impl} {shlex.quote(nodeid)}",
            f"elmo-conformance{impl} {shlex.quote(nodeid)}",
            f"python -m pytest -p {PLUGIN}{impl} --pyargs {shlex.quote(pyarg)}",
        ]
    )
