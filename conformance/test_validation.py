"""§8 Input validation, clause by clause (spec/validation.json, spec/clauses.py): each bad
input is refused with a ValueError naming the argument, and its nearest valid neighbour is
accepted, for every function the row names (conformance/bad_inputs.py generates both)."""

from __future__ import annotations

import pytest

from elmo_conformance.conformance.bad_inputs import (
    ACCEPTS,
    BAD,
    CALLS,
    NEIGHBOURS,
    Bad,
    Neighbour,
    arguments,
    cast_inputs,
    unsent,
    valid_inputs,
)
from elmo_conformance.conformance.case import Case
from elmo_conformance.spec.catalog import validation_rows
from elmo_conformance.spec.clauses import clauses
from elmo_conformance.spec.protocol import protocol


def _case_id(row: str, function: str, why: str) -> str:
    return f"{row}-{function}-{why.replace(' ', '_')}"


def _marks(function: str) -> pytest.MarkDecorator:
    return pytest.mark.components(protocol().functions[function].component)


PARAMS = [pytest.param(bad, f, id=_case_id(bad.row, f, bad.why), marks=_marks(f)) for bad, f in CALLS]
NEAR = [pytest.param(near, f, id=_case_id("near", f, near.why), marks=_marks(f)) for near, f in ACCEPTS]


def _skip_without_grad(case: Case, function: str) -> None:
    if protocol().functions[function].grad and "grad" not in case.impl.capabilities:
        pytest.skip(f"{case.name} does not declare the capability 'grad' (§11)")


@pytest.mark.spec("1.3", "8")
@pytest.mark.parametrize("bad,function", PARAMS)
def test_rejects_bad_input(case: Case, bad: Bad, function: str) -> None:
    _skip_without_grad(case, function)
    args, kwargs = arguments(function, bad.change(cast_inputs(valid_inputs(), case.cast), case.dtype))
    case.rejects(function, bad.argument, f"{bad.why} ({bad.row})", ("8",), *args, **kwargs)


@pytest.mark.spec("8")
@pytest.mark.parametrize("near,function", NEAR)
def test_accepts_the_nearest_valid_input(case: Case, near: Neighbour, function: str) -> None:
    """The other side of each boundary of §8: the valid input a step inside it is computed, not
    refused (an integer array of any integer dtype, an id of V - 1, a length of T, N = 2 ...)."""
    _skip_without_grad(case, function)
    args, kwargs = arguments(function, near.change(cast_inputs(valid_inputs(), case.cast), case.dtype))
    rows = sorted({clause.row for clause, f in near.clauses if f == function})
    try:
        getattr(case, function)(*args, **kwargs)
    except pytest.fail.Exception as exc:
        pytest.fail(
            f"§8 ({', '.join(rows)}): {case.name}.{function} must accept {near.why}, a valid input next to "
            f"the bad inputs of those rows; do not refuse it:\n{exc}",
            pytrace=False,
        )


@pytest.mark.spec("8")
def test_every_clause_is_sent_from_both_sides() -> None:
    """Each clause of validation.json has, for each function its row names, a bad input that must
    be refused and a valid neighbour that must be accepted; every row names protocol functions."""
    for row in validation_rows():
        for function in row["functions"]:
            assert function in protocol().functions, f"§8 row {row['id']} names {function!r}, not a protocol function"
    problems = unsent(clauses(), BAD, NEIGHBOURS)
    assert not problems, "\n".join(problems)
