"""One adapter in one dtype, and guarded calls into it.

Every call the tests make goes through `Case`, so that an adapter that raises, hangs, modifies
its inputs, or returns the wrong type, shape, dtype or a non-finite value fails the test with a
message naming the spec section, and never crashes the harness.

A call that did not return in time, or whose process died, raises `CallAbandoned`: the plugin
fails the test with its message, and Hypothesis, which retries a failing example while it
shrinks, lets it through at once (it is not an exception Hypothesis treats as a test failure).
"""

from __future__ import annotations

import re
import signal
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from elmo_conformance.adapters.loading import LoadedAdapter
from elmo_conformance.adapters.purity import first_change, snapshot
from elmo_conformance.adapters.wire.client import InputModified, ProcessFailure, ProcessTimeout, RemoteError
from elmo_conformance.conformance.checks import fail
from elmo_conformance.conformance.margins import Tolerance
from elmo_conformance.spec.catalog import describe
from elmo_conformance.spec.protocol import Function, ResultChecker, bind_symbols, protocol
from elmo_conformance.spec.tolerances import tolerance


class CallTimeout(BaseException):
    """Raised inside a hung adapter call; a BaseException so `except Exception` cannot swallow it."""


class CallAbandoned(BaseException):
    """A call that timed out or whose process died: the test fails with this message, once.

    Not an Exception, nor pytest's Failed: Hypothesis would take either for a failing example and
    run it again, and smaller ones, while it shrinks, each waiting out the call timeout. The
    plugin's pytest_runtest_call turns it into an ordinary failure with this message."""


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    usable = seconds > 0 and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return

    def on_alarm(signum: int, frame: object) -> None:
        raise CallTimeout

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def names_argument(message: str, argument: str) -> bool:
    """Whether `message` names `argument` (§1.3) as a whole identifier: a parameter name (`s`,
    `lengths`) or a canonical entry name (`fwd.0.weight_ih`) not preceded or followed by a letter,
    a digit, an underscore, or a dot that joins it to more of an identifier. "cannot reshape array
    of size 3" does not name `s`, nor "bad vector" `b`; "s: expected ..." and "'out.bias'" do."""
    pattern = rf"(?<![\w.])(?<!\w\.){re.escape(argument)}(?!\w)(?!\.\w)"
    return re.search(pattern, message) is not None


def _short_traceback(exc: BaseException) -> str:
    # chain=False: the adapter's own "During handling of the above exception" chains stay out of the message.
    frames = traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-3, chain=False)
    return "".join(frames).rstrip()


@dataclass(frozen=True)
class Case:
    impl: LoadedAdapter
    dtype: np.dtype
    call_timeout: float = 120.0

    if TYPE_CHECKING:  # the guarded calls, one per protocol function, are set below the class

        def __getattr__(self, function: str) -> Any: ...

    @property
    def name(self) -> str:
        return self.impl.name

    def __str__(self) -> str:
        return f"{self.impl.name}-{self.dtype.name}"

    def tol(self, quantity: str) -> Tolerance:
        """{'rtol', 'atol'} for this dtype and the adapter's device (§10, spec/tolerances.json), a
        dict that also names the quantity, adapter, dtype and device, so that `assert_close` records
        the comparison's tolerance margin for the report."""
        values = tolerance(self.dtype.name, self.impl.device, quantity)
        return Tolerance(values, quantity, self.impl.name, self.dtype.name, self.impl.device)

    def cast(self, value: Any) -> Any:
        """Floating arrays (also inside dicts and lists) to this case's dtype; others unchanged."""
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            return value.astype(self.dtype)
        if isinstance(value, Mapping):
            return {key: self.cast(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.cast(item) for item in value]
        return value

    # -- guarded calls ---------------------------------------------------------------------------

    def _invoke(self, method: str, args: tuple, kwargs: dict) -> Any:
        """The adapter's method, under the call timeout: a process adapter enforces it itself
        (§15.7); an in-process one gets an alarm, which interrupts Python code only."""
        adapter: Any = self.impl.adapter
        if getattr(adapter, "enforces_call_timeout", False):
            adapter.call_timeout = self.call_timeout
            return getattr(adapter, method)(*args, **kwargs)
        with deadline(self.call_timeout):
            return getattr(adapter, method)(*args, **kwargs)

    def _remote(self) -> bool:
        return bool(getattr(self.impl.adapter, "enforces_call_timeout", False))

    def call(self, method: str, sections: Sequence[str], *args: Any, **kwargs: Any) -> Any:
        """Call adapter.method; turn an exception, a hang or a modified input into a failure."""
        __tracebackhide__ = True
        before = snapshot([list(args), kwargs])
        problem = None
        try:
            result = self._invoke(method, args, kwargs)
        except BaseException as exc:  # noqa: B036  (CallTimeout is a BaseException on purpose)
            problem = self._raised(method, exc, sections)
        if problem is not None:  # outside the except block, so the failure carries no exception chain
            fail(*problem)
        self.check_inputs_unchanged(method, before, args, kwargs)
        return result

    def _raised(
        self, method: str, exc: BaseException, sections: Sequence[str], why: str | None = None
    ) -> tuple[tuple[str, ...], str]:
        """(sections, message) for an exception out of a call; `why` is the bad input of a call
        that should have raised ValueError. Re-raises what is not the adapter's doing, and raises
        CallAbandoned for a call that did not return in time or whose process died."""
        if not isinstance(exc, Exception | CallTimeout):
            raise exc  # KeyboardInterrupt, SystemExit, pytest's own outcomes
        sections = tuple(sections)
        given = f" given {why}" if why else ""
        if isinstance(exc, CallTimeout | ProcessTimeout):
            detail = f"\n{exc}" if str(exc) else ""
            message = f"{self.name}.{method}{given} did not return within {self.call_timeout:g} s (--call-timeout)"
            raise CallAbandoned(f"{describe(sections)}\n{message}{detail}")
        if isinstance(exc, ProcessFailure):
            raise CallAbandoned(f"{describe(sections)}\n{self.name}.{method}{given}: {exc}")
        if isinstance(exc, InputModified):
            return ("1.4",), f"{self.name}.{method} modified its input {exc}; functions must not modify inputs"
        kind, message = (exc.kind, exc.message) if isinstance(exc, RemoteError) else (type(exc).__name__, str(exc))
        if why:
            return sections, f"{self.name}.{method}{given} raised {kind} instead of ValueError: {message}"
        trace = "" if self._remote() or isinstance(exc, RemoteError) else f"\n{_short_traceback(exc)}"
        return sections, f"{self.name}.{method} raised {kind}: {message}{trace}"

    def rejects(self, method: str, argument: str, why: str, sections: Sequence[str], *args: Any, **kwargs: Any) -> None:
        """The call raises ValueError naming `argument` (§1.3, §8), and leaves its inputs alone.

        `argument` may list alternatives as "a|b" where one bad value necessarily breaks two rules.
        """
        __tracebackhide__ = True
        before = snapshot([list(args), kwargs])
        problem = None
        try:
            self._invoke(method, args, kwargs)
        except ValueError as exc:
            if not any(names_argument(str(exc), name) for name in argument.split("|")):
                problem = (
                    tuple(sections),
                    f"{self.name}.{method} given {why} raised ValueError, but its message does not name "
                    f"{argument!r} (as a whole word): {exc}",
                )
        except BaseException as exc:  # noqa: B036
            problem = self._raised(method, exc, sections, why)
        else:
            problem = (tuple(sections), f"{self.name}.{method} accepted {why}; expected ValueError naming {argument!r}")
        if problem is not None:
            fail(*problem)
        self.check_inputs_unchanged(method, before, args, kwargs)

    def _modified(self, method: str, path: str) -> None:
        __tracebackhide__ = True
        fail(("1.4",), f"{self.name}.{method} modified its input {path}; functions must not modify inputs")

    def check_inputs_unchanged(self, method: str, before: Any, args: tuple, kwargs: dict) -> None:
        """§1.4: no array of the inputs changed, and no entry was added to or removed from a
        dict or list of them."""
        __tracebackhide__ = True
        changed = first_change(before, [list(args), kwargs], "args")
        if changed:
            self._modified(method, changed)

    def checked(self, function: Function, *args: Any, **kwargs: Any) -> Any:
        """The protocol function, guarded (`call`) and its result checked against its `returns`
        in spec/protocol.json: structure, types, shapes, dtype (§1.2), finiteness; arrays copied."""
        __tracebackhide__ = True
        bound = function.bind_arguments(args, kwargs)
        result = self.call(function.name, (function.section,), *args, **kwargs)
        params = bound.get("params") if isinstance(bound.get("params"), Mapping) else None
        return ResultChecker(function, bind_symbols(function, bound), self.dtype, params, fail).check(result)


def _guarded(function: Function) -> Callable[..., Any]:
    def method(self: Case, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        return self.checked(function, *args, **kwargs)

    method.__name__ = method.__qualname__ = function.name
    method.__doc__ = f"{function.signature()}, guarded and checked (§{function.section})."
    return method


# Case.scalar_mix, Case.bilm_layers, ...: one guarded call per protocol function, named as
# spec/protocol.json names it.
for _function in protocol().functions.values():
    setattr(Case, _function.name, _guarded(_function))
