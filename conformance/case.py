"""One adapter in one dtype, and guarded calls into it.

Every call the tests make goes through `Case`, so that an adapter that raises, hangs, modifies
its inputs, or returns the wrong type, shape, dtype or a non-finite value fails the test with a
message naming the spec section, and never crashes the harness.
"""

from __future__ import annotations

import signal
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from .checks import fail
from .loading import LoadedAdapter
from .process import InputModified, ProcessFailure, ProcessTimeout, RemoteError
from .protocol import Function, ResultChecker, bind_symbols, protocol
from .purity import first_change, snapshot
from .tolerances import tolerance


class CallTimeout(BaseException):
    """Raised inside a hung adapter call; a BaseException so `except Exception` cannot swallow it."""


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


def _short_traceback(exc: BaseException) -> str:
    frames = traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-3)
    return "".join(frames).rstrip()


@dataclass(frozen=True)
class Case:
    impl: LoadedAdapter
    dtype: np.dtype
    call_timeout: float = 120.0

    @property
    def name(self) -> str:
        return self.impl.name

    def __str__(self) -> str:
        return f"{self.impl.name}-{self.dtype.name}"

    def tol(self, quantity: str) -> dict[str, float]:
        """{'rtol', 'atol'} for this dtype and the adapter's device (§10, spec/tolerances.json)."""
        return tolerance(self.dtype.name, self.impl.device, quantity)

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
        adapter = self.impl.adapter
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
        that should have raised ValueError. Re-raises what is not the adapter's doing."""
        if not isinstance(exc, Exception | CallTimeout):
            raise exc  # KeyboardInterrupt, SystemExit, pytest's own outcomes
        sections = tuple(sections)
        given = f" given {why}" if why else ""
        if isinstance(exc, CallTimeout | ProcessTimeout):
            detail = f"\n{exc}" if str(exc) else ""
            return (
                sections,
                f"{self.name}.{method}{given} did not return within {self.call_timeout:g} s (--call-timeout){detail}",
            )
        if isinstance(exc, ProcessFailure):
            return sections, f"{self.name}.{method}{given}: {exc}"
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
            if not any(name in str(exc) for name in argument.split("|")):
                problem = (
                    tuple(sections),
                    f"{self.name}.{method} given {why} raised ValueError, but its message does not name {argument!r}: {exc}",
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
