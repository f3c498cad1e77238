"""The equivalence pre-check (spec §13.1): does a mutant change any output of its adapter?

Both adapters are called on the same fixed inputs, chosen so that every catalog defect shows:
three layers (§3.2 acts from layer 2), rows shorter than T (§3.3, §3.4), rows of length >= 2 (§4.1),
γ ≠ 1 and s far from softmax(s) (§5), and probe features far from the origin with a constant
column (§7.4), in every dtype the adapter declares. The calls are every protocol function the
adapter's capabilities require (spec/protocol.json), on those valid inputs and then on every bad
input of §8 (conformance/bad_inputs.py, the validation tests' table), so that a mutant that only
stops rejecting one kind of bad input is not taken for an equivalent one. Outputs are compared
bitwise, types and dtypes included; an exception counts as an output (its type and message), so a
mutant that returns where the clean adapter raises changes an output. A mutant that changes none
is equivalent on these inputs and is not run.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from elmo_conformance.conformance.bad_inputs import CALLS, bad_call
from elmo_conformance.conformance.bad_inputs import valid_arguments as _inputs  # the one table of valid inputs
from elmo_conformance.spec.protocol import protocol

Call = tuple[str, tuple, dict]


def _calls(dtype: np.dtype, capabilities: frozenset[str]) -> Iterator[tuple[str, Call]]:
    """(what, call): every protocol function the capabilities require (§11), on the inputs above,
    then on every bad input of §8 that names it."""
    inputs = _inputs(dtype)
    required = protocol().required_methods(capabilities)
    for name in required:
        function = protocol().functions[name]
        args, kwargs = function.split_call({argument: inputs[argument] for argument in function.argument_names})
        yield f"{name}() in {dtype}", (name, args, kwargs)
    for bad, name in CALLS:
        if name in required:
            yield f"{name}() in {dtype} given {bad.why} ({bad.row})", (name, *bad_call(bad, name, dtype))


class Raised(NamedTuple):
    """An exception as an output: its type's name and its message."""

    kind: str
    message: str


def _outcome(function: Callable, args: tuple, kwargs: dict) -> Any:
    try:
        return function(*args, **kwargs)
    except Exception as exc:  # an exception is an output too
        return Raised(type(exc).__name__, str(exc))


def first_difference(a: Any, b: Any, path: str) -> str | None:
    """Where two outputs differ, bitwise, or None when identical."""
    if isinstance(a, Raised) != isinstance(b, Raised):
        if isinstance(b, Raised):
            return f"{path}: returned where the clean adapter raised {b.kind}"
        return f"{path}: raised {a.kind} ({a.message}) where the clean adapter returned"
    if isinstance(a, Raised):
        return None if a == b else f"{path}: raised {a.kind}: {a.message!r} instead of {b.kind}: {b.message!r}"
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} instead of {type(b).__name__}"
    if isinstance(a, np.ndarray):
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"{path}: {a.dtype}{list(a.shape)} instead of {b.dtype}{list(b.shape)}"
        same = np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
        return None if same else f"{path}: values differ"
    if isinstance(a, Mapping):
        if set(a) != set(b):
            return f"{path}: keys differ"
        return next((d for k in sorted(a) if (d := first_difference(a[k], b[k], f"{path}[{k!r}]"))), None)
    if isinstance(a, Sequence) and not isinstance(a, str):
        if len(a) != len(b):
            return f"{path}: length {len(a)} instead of {len(b)}"
        return next((d for i, (x, y) in enumerate(zip(a, b)) if (d := first_difference(x, y, f"{path}[{i}]"))), None)
    same = a == b or (isinstance(a, float) and a != a and b != b)
    return None if same else f"{path}: {a!r} instead of {b!r}"


def changed_output(clean: object, mutant: object, capabilities: frozenset[str]) -> str | None:
    """The first output the mutant changes, described; None when it is equivalent on these inputs.
    Every declared dtype is tried: a mutant may be broken in float32 only."""
    for dtype in (np.dtype(name) for name in protocol().dtypes if name in capabilities):
        for what, (method, args, kwargs) in _calls(dtype, capabilities):
            expected = _outcome(getattr(clean, method), copy.deepcopy(args), dict(kwargs))
            given = copy.deepcopy(args)
            got = _outcome(getattr(mutant, method), given, dict(kwargs))
            difference = first_difference(got, expected, what) or first_difference(
                given, args, f"{method}'s inputs after the call"
            )
            if difference:
                return difference
    return None
