"""§15 The wire protocol, from the process's side: what a program answers to a request it cannot
read, to a call of a function it does not implement or of a mutant it does not declare, and to
bytes that are not a frame (§15.6).

The harness sends only well-formed calls in a conformance run, so without these tests a program
could answer anything to the rest, or crash on it. Each test starts a fresh process as the
harness starts it, completes the handshake, sends one request written byte by byte
(conformance/raw_process.py) and reads one answer with the harness's own reader. What is checked
is what §15.6 requires and nothing more: the kind of the error, and its `id` (the request's when
the request's id could be read as an integer, null otherwise). Whether the process goes on after
a `ProtocolError` is its choice (the harness replaces it, §15.7), except after bytes that are not
a frame: it then exits with a non-zero status.

A Python adapter skips: the harness's own protocol server speaks §15 for it, and the harness's
tests hold the server to these tests (tests/test_wire_server.py).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest

from elmo_conformance.conformance.bad_inputs import valid_arguments
from elmo_conformance.conformance.case import Case
from elmo_conformance.conformance.checks import fail
from elmo_conformance.conformance.raw_process import (
    exchange,
    framed,
    fresh_process,
    mapping,
    string,
    u32,
    value,
)
from elmo_conformance.spec.protocol import Function, protocol

ID = 7  # the request id of every request here that has one
EXIT_WAIT = 10.0  # seconds a process gets to exit after bytes that are not a frame
U64_ONE = (1).to_bytes(8, "little")  # one dimension of length 1 (§15.3)

# No component: every request names a function the implementation has (`called`).
pytestmark = pytest.mark.components()


def called(case: Case) -> Function:
    """The function the requests name: one the implementation implements (§11), scalar_mix when
    it does, so that a program that looks a function up before reading the rest of a call never
    answers for a function it lacks."""
    capabilities = case.impl.capabilities
    have = protocol().components_of(capabilities)
    functions = [
        f for f in protocol().functions.values() if f.component in have and (not f.grad or "grad" in capabilities)
    ]
    if not functions:
        pytest.skip(f"{case.name} implements no protocol function")
    return next((f for f in functions if f.name == "scalar_mix"), functions[0])


def call(case: Case, leave_out: int = 0, **fields: bytes) -> bytes:
    """A call's body (§15.5) of `called(case)` with valid arguments in the case's dtype (its last
    `leave_out` arguments left out); `fields` replace the call's fields by encoded values, and
    b"" leaves one out."""
    function = called(case)
    valid = valid_arguments(case.dtype)
    names = function.argument_names[: len(function.argument_names) - leave_out]
    message = {
        "type": string("call"),
        "id": value(ID),
        "function": string(function.name),
        "mutant": value(None),
        "args": value({name: valid[name] for name in names}),
    }
    message.update(fields)
    return mapping(*((key, data) for key, data in message.items() if data))


def check_error(answer: dict, sent: str, sections: tuple[str, ...], kind: str | None, ids: tuple) -> None:
    """`answer` is an error (§15.6) of `kind` (None: any kind but ValueError) whose id is one of `ids`."""
    if answer.get("type") != "error":
        fail(sections, f"sent {sent}: expected an error (§15.6), got a message of type {answer.get('type')!r}")
    got = answer.get("kind")
    if kind is not None and got != kind:
        fail(
            sections,
            f"sent {sent}: expected an error of kind {kind!r}, got {got!r} ({str(answer.get('message'))[:200]})",
        )
    if kind is None and got == "ValueError":
        fail(
            sections,
            f"sent {sent}: got an error of kind 'ValueError'; a function the program does not implement, or a "
            "mutant it does not declare, is answered with another kind (ValueError is §1.3's refusal of an "
            "argument, which the suite takes as a correct refusal)",
        )
    found = answer.get("id")
    if found not in ids or isinstance(found, bool):
        wanted = " or ".join("null" if i is None else str(i) for i in ids)
        fail(sections, f"sent {sent}: the error's id is {found!r}, expected {wanted}")


def send_one(case: Case, body: bytes, what: str, sections: tuple[str, ...], kind: str | None, ids: tuple) -> None:
    with fresh_process(case, "15.6") as (_, connection):
        answer = exchange(case, connection, framed(body), what, sections)
        check_error(answer, what, sections, kind, ids)


Body = Callable[[Case], bytes]

# Bodies that are not exactly one value of §15.3: (what it is, the body).
UNDECODABLE: list[tuple[str, Body]] = [
    ("a value with the unknown tag 'x'", lambda case: mapping(("id", value(ID)), ("type", b"x"))),
    ("a string that is not UTF-8", lambda case: call(case, type=string(b"\xffcall"))),
    ("a map key that is not UTF-8", lambda case: mapping(("id", value(ID)), (b"ty\xc3pe", string("call")))),
    ("a map with the key 'type' twice", lambda case: mapping(("id", value(ID)), ("type", string("call")), ("type", string("call")))),
    ("a bool array holding the byte 2", lambda case: call(case, mutant=b"ab1\x01" + U64_ONE + b"\x02")),
    ("an array of the unknown dtype 'q9'", lambda case: call(case, mutant=b"aq9\x01" + U64_ONE + b"\x00")),
    ("a list that says it holds 3 items and holds 1", lambda case: call(case, mutant=b"l" + u32(3) + b"n")),
    ("a body with a byte after its value", lambda case: call(case) + b"n"),
    ("a body that ends inside its value", lambda case: call(case)[:-5]),
]  # fmt: skip


@pytest.mark.spec("15.2", "15.3", "15.6")
@pytest.mark.parametrize("what,body", UNDECODABLE, ids=[w for w, _ in UNDECODABLE])
def test_a_body_that_does_not_decode_is_a_protocol_error(case: Case, what: str, body: Body) -> None:
    """A frame whose body is not exactly one value of §15.3 is answered with a ProtocolError; its
    id is null, or the request's when the process read it before the defect."""
    send_one(case, body(case), what, ("15.2", "15.3", "15.6"), "ProtocolError", (None, ID))


# Values that decode but are not a call of §15.5: (what it is, the body, the id of the answer).
NOT_A_CALL: list[tuple[str, Body, int | None]] = [
    ("a list, not a map", lambda case: value([1, 2]), None),
    ("an integer, not a map", lambda case: value(ID), None),
    ("a map without 'type'", lambda case: call(case, type=b""), ID),
    ("a map of the unknown type 'bye'", lambda case: call(case, type=string("bye")), ID),
    ("a call without 'id'", lambda case: call(case, id=b""), None),
    ("a call whose 'id' is a string", lambda case: call(case, id=string("7")), None),
    ("a call whose 'id' is a float", lambda case: call(case, id=value(7.0)), None),
    ("a call without 'function'", lambda case: call(case, function=b""), ID),
    ("a call whose 'function' is an integer", lambda case: call(case, function=value(3)), ID),
    ("a call without 'args'", lambda case: call(case, args=b""), ID),
    ("a call whose 'args' is a list", lambda case: call(case, args=value([1.0])), ID),
    ("a call whose 'args' lack the function's last argument", lambda case: call(case, leave_out=1), ID),
]


@pytest.mark.spec("15.5", "15.6")
@pytest.mark.parametrize("what,body,request_id", NOT_A_CALL, ids=[w for w, _, _ in NOT_A_CALL])
def test_a_message_without_the_fields_of_a_call_is_a_protocol_error(
    case: Case, what: str, body: Body, request_id: int | None
) -> None:
    """A value that decodes but is neither a hello nor a call of §15.5 (a map with its `type`, an
    integer `id`, a string `function` and a map `args` holding every argument) is answered with
    a ProtocolError, whose id is the request's when it has an integer one and null otherwise."""
    send_one(case, body(case), what, ("15.5", "15.6"), "ProtocolError", (request_id,))


UNKNOWN: list[tuple[str, Body]] = [
    ("a call of the function 'no_such_function'", lambda case: call(case, function=string("no_such_function"))),
    ("a call for the mutant 'no-such-mutant'", lambda case: call(case, mutant=string("no-such-mutant"))),
]


@pytest.mark.spec("15.6")
@pytest.mark.parametrize("what,body", UNKNOWN, ids=["unknown function", "undeclared mutant"])
def test_an_unknown_function_or_mutant_is_an_error_other_than_value_error(case: Case, what: str, body: Body) -> None:
    """A call of a function the program does not implement, or for a mutant it does not declare,
    is answered with an error of a kind other than ValueError, with the request's id."""
    send_one(case, body(case), what, ("15.6",), None, (ID,))


@pytest.mark.spec("15.2", "15.6")
def test_bytes_that_are_not_a_frame_get_a_protocol_error_and_the_process_exits_non_zero(case: Case) -> None:
    """Bytes that do not start with `ELMO` leave no way to find the next frame: the process
    answers with a ProtocolError (id null) and exits with a non-zero status."""
    sections = ("15.2", "15.6")
    what = "8 bytes that do not start with 'ELMO' (b'HELO\\x00\\x00\\x00\\x00')"
    with fresh_process(case, "15.6") as (_, connection):
        answer = exchange(case, connection, b"HELO\x00\x00\x00\x00", what, sections)
        check_error(answer, what, sections, "ProtocolError", (None,))
        try:
            code = connection.process.wait(EXIT_WAIT)
        except subprocess.TimeoutExpired:
            fail(sections, f"sent {what}: the process answered, then was still running {EXIT_WAIT:g} s later; it exits")
        if code == 0:
            fail(sections, f"sent {what}: the process exited with status 0; it exits with a non-zero status")
