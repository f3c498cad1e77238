"""§8 Input validation: every row of the table, for every function it names (conformance/bad_inputs.py)."""

from __future__ import annotations

import pytest

from elmo_conformance.conformance.bad_inputs import CALLS, Bad, arguments, cast_inputs, valid_inputs
from elmo_conformance.conformance.case import Case
from elmo_conformance.conformance.protocol import protocol
from elmo_conformance.conformance.spec import validation_rows


def _case_id(bad: Bad, function: str) -> str:
    return f"{bad.row}-{function}-{bad.why.replace(' ', '_')}"


PARAMS = [
    pytest.param(
        bad,
        function,
        id=_case_id(bad, function),
        marks=pytest.mark.components(protocol().functions[function].component),
    )
    for bad, function in CALLS
]


@pytest.mark.spec("1.3", "8")
@pytest.mark.parametrize("bad,function", PARAMS)
def test_rejects_bad_input(case: Case, bad: Bad, function: str) -> None:
    if protocol().functions[function].grad and "grad" not in case.impl.capabilities:
        pytest.skip(f"{case.name} does not declare the capability 'grad' (§11)")
    args, kwargs = arguments(function, bad.change(cast_inputs(valid_inputs(), case.cast), case.dtype))
    case.rejects(function, bad.argument, f"{bad.why} ({bad.row})", ("8",), *args, **kwargs)


@pytest.mark.spec("8")
def test_every_validation_row_is_checked() -> None:
    """Each row of validation.json has a bad case for each function it names, and names only
    protocol functions (spec/protocol.json)."""
    covered = {(bad.row, function) for bad, function in CALLS}
    for row in validation_rows():
        for function in row["functions"]:
            assert function in protocol().functions, f"§8 row {row['id']} names {function!r}, not a protocol function"
            assert (row["id"], function) in covered, f"§8 row {row['id']} has no bad case for {function}"
