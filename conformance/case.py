"""One adapter in one dtype, and guarded calls into it.

Every call the tests make goes through `Case`, so that an adapter that raises, hangs, modifies
its inputs, or returns the wrong type, shape, dtype or a non-finite value fails the test with a
message naming the spec section, and never crashes the harness.
"""

from __future__ import annotations

import math
import signal
import threading
import traceback
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from .checks import fail
from .loading import LoadedAdapter
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


def _arrays_in(value: Any, path: str) -> Iterator[tuple[str, np.ndarray]]:
    if isinstance(value, np.ndarray):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _arrays_in(item, f"{path}[{key!r}]")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _arrays_in(item, f"{path}[{i}]")


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

    def call(self, method: str, sections: Sequence[str], *args: Any, **kwargs: Any) -> Any:
        """Call adapter.method; turn an exception, a hang or a modified input into a failure."""
        __tracebackhide__ = True
        before = [(path, array.copy()) for path, array in _arrays_in((args, kwargs), "args")]
        try:
            with deadline(self.call_timeout):
                result = getattr(self.impl.adapter, method)(*args, **kwargs)
        except CallTimeout:
            fail(sections, f"{self.name}.{method} did not return within {self.call_timeout:g} s (--call-timeout)")
        except Exception as exc:
            fail(sections, f"{self.name}.{method} raised {type(exc).__name__}: {exc}\n{_short_traceback(exc)}")
        self.check_inputs_unchanged(method, before, args, kwargs)
        return result

    def rejects(self, method: str, argument: str, why: str, sections: Sequence[str], *args: Any, **kwargs: Any) -> None:
        """The call raises ValueError naming `argument` (§1.3, §8), and leaves its inputs alone.

        `argument` may list alternatives as "a|b" where one bad value necessarily breaks two rules.
        """
        __tracebackhide__ = True
        before = [(path, array.copy()) for path, array in _arrays_in((args, kwargs), "args")]
        try:
            with deadline(self.call_timeout):
                getattr(self.impl.adapter, method)(*args, **kwargs)
        except CallTimeout:
            fail(sections, f"{self.name}.{method} given {why} did not return within {self.call_timeout:g} s")
        except ValueError as exc:
            if not any(name in str(exc) for name in argument.split("|")):
                fail(
                    sections,
                    f"{self.name}.{method} given {why} raised ValueError, but its message does not name {argument!r}: {exc}",
                )
        except Exception as exc:
            fail(sections, f"{self.name}.{method} given {why} raised {type(exc).__name__} instead of ValueError: {exc}")
        else:
            fail(sections, f"{self.name}.{method} accepted {why}; expected ValueError naming {argument!r}")
        self.check_inputs_unchanged(method, before, args, kwargs)

    def check_inputs_unchanged(self, method: str, before: list, args: tuple, kwargs: dict) -> None:
        __tracebackhide__ = True
        after = dict(_arrays_in((args, kwargs), "args"))
        for path, old in before:
            new = after.get(path)
            same = new is not None and new.shape == old.shape and new.dtype == old.dtype
            if not same or not np.array_equal(new, old, equal_nan=old.dtype.kind in "fc"):
                fail(("1.4",), f"{self.name}.{method} modified its input {path}; functions must not modify inputs")

    def array(
        self, value: Any, what: str, shape: tuple[int, ...], sections: Sequence[str], dtype: Any = None
    ) -> np.ndarray:
        """Check a returned array's type, shape, dtype (§1.2) and finiteness."""
        __tracebackhide__ = True
        dtype = np.dtype(dtype or self.dtype)
        if not isinstance(value, np.ndarray):
            fail(sections, f"{what}: expected a NumPy array, got {type(value).__name__}")
        if value.shape != shape:
            fail(sections, f"{what}: expected shape {list(shape)}, got {list(value.shape)}")
        if value.dtype != dtype:
            fail((*sections, "1.2"), f"{what}: expected dtype {dtype}, got {value.dtype}")
        if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
            first = tuple(int(i) for i in np.argwhere(~np.isfinite(value))[0])
            fail(
                sections,
                f"{what}: {int((~np.isfinite(value)).sum())} non-finite values, first {float(value[first])!r} at {list(first)}",
            )
        return value

    def scalar(self, value: Any, what: str, sections: Sequence[str]) -> float:
        __tracebackhide__ = True
        if isinstance(value, np.ndarray) and value.shape in ((), (1,)):
            value = value.reshape(())[()]
        if not isinstance(value, int | float | np.floating | np.integer) or isinstance(value, bool):
            fail(sections, f"{what}: expected a Python float, got {type(value).__name__}")
        if not math.isfinite(float(value)):
            fail(sections, f"{what}: expected a finite number, got {value!r}")
        return float(value)

    def _grad_dict(self, value: Any, what: str, params: Mapping[str, np.ndarray], sections: Sequence[str]) -> dict:
        __tracebackhide__ = True
        if not isinstance(value, Mapping):
            fail(sections, f"{what}: expected a dict of canonical names to arrays, got {type(value).__name__}")
        missing = sorted(set(params) - set(value))
        extra = sorted(set(value) - set(params))
        if missing or extra:
            fail(sections, f"{what}: names differ from the parameters (missing {missing}, unexpected {extra})")
        return {name: self.array(value[name], f"{what}[{name!r}]", params[name].shape, sections) for name in params}

    # -- the protocol, checked -------------------------------------------------------------------

    def layers(self, params: Mapping, ids: np.ndarray, lengths: np.ndarray | None) -> list[np.ndarray]:
        __tracebackhide__ = True
        n_layers = sum(1 for name in params if name.endswith(".weight_ih")) // 2
        d = params["embedding"].shape[1]
        out = self.call("bilm_layers", ("3.4",), params, ids, lengths)
        if not isinstance(out, Sequence) or len(out) != n_layers + 1:
            got = len(out) if isinstance(out, Sequence) else type(out).__name__
            fail(("3.4",), f"bilm_layers: expected a list of L+1 = {n_layers + 1} arrays, got {got}")
        return [
            self.array(layer, f"bilm_layers()[{k}] (R^{k})", (*ids.shape, 2 * d), ("3.4",))
            for k, layer in enumerate(out)
        ]

    def logits(self, params: Mapping, ids: np.ndarray, lengths: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        __tracebackhide__ = True
        out = self.call("bilm_logits", ("3.5",), params, ids, lengths)
        if not isinstance(out, Sequence) or len(out) != 2:
            fail(("3.5",), f"bilm_logits: expected a pair (fwd, bwd), got {type(out).__name__}")
        shape = (*ids.shape, params["embedding"].shape[0])
        return self.array(out[0], "bilm_logits()[0] (fwd)", shape, ("3.5",)), self.array(
            out[1], "bilm_logits()[1] (bwd)", shape, ("3.5",)
        )

    def loss(self, params: Mapping, ids: np.ndarray, lengths: np.ndarray | None) -> float:
        __tracebackhide__ = True
        return self.scalar(self.call("bilm_loss", ("4.2",), params, ids, lengths), "bilm_loss", ("4.2",))

    def loss_grad(self, params: Mapping, ids: np.ndarray, lengths: np.ndarray | None) -> dict[str, np.ndarray]:
        __tracebackhide__ = True
        return self._grad_dict(
            self.call("bilm_loss_grad", ("6.1",), params, ids, lengths), "bilm_loss_grad", params, ("6.1",)
        )

    def layers_vjp(
        self, params: Mapping, ids: np.ndarray, lengths: np.ndarray | None, g_layers: list
    ) -> dict[str, np.ndarray]:
        __tracebackhide__ = True
        out = self.call("bilm_layers_vjp", ("6.2",), params, ids, lengths, g_layers)
        return self._grad_dict(out, "bilm_layers_vjp", params, ("6.2",))

    def mix(self, s: np.ndarray, gamma: np.ndarray, layers: Sequence[np.ndarray]) -> np.ndarray:
        __tracebackhide__ = True
        out = self.call("scalar_mix", ("5.2",), s, gamma, layers)
        return self.array(out, "scalar_mix", layers[0].shape, ("5.2",))

    def mix_vjp(
        self, s: np.ndarray, gamma: np.ndarray, layers: Sequence[np.ndarray], g_out: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        __tracebackhide__ = True
        out = self.call("scalar_mix_vjp", ("6.3",), s, gamma, layers, g_out)
        if not isinstance(out, Sequence) or len(out) != 3:
            fail(("6.3",), f"scalar_mix_vjp: expected (g_s, g_gamma, g_layers), got {type(out).__name__}")
        g_s = self.array(out[0], "scalar_mix_vjp g_s", s.shape, ("6.3",))
        g_gamma = self.array(out[1], "scalar_mix_vjp g_gamma", (1,), ("6.3",))
        if not isinstance(out[2], Sequence) or len(out[2]) != len(layers):
            fail(("6.3",), f"scalar_mix_vjp: expected {len(layers)} layer gradients")
        g_layers = [
            self.array(g, f"scalar_mix_vjp g_layers[{k}]", layers[0].shape, ("6.3",)) for k, g in enumerate(out[2])
        ]
        return g_s, g_gamma, g_layers

    def probe(
        self, features: np.ndarray, labels: np.ndarray, n_classes: int, **settings: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        __tracebackhide__ = True
        out = self.call("fit_linear_probe", ("7.4",), features, labels, n_classes, **settings)
        if not isinstance(out, Sequence) or len(out) != 2:
            fail(("7.4",), f"fit_linear_probe: expected a pair (W, b), got {type(out).__name__}")
        W = self.array(out[0], "fit_linear_probe W", (features.shape[1], n_classes), ("7.4",))
        return W, self.array(out[1], "fit_linear_probe b", (n_classes,), ("7.4",))

    def accuracy(self, W: np.ndarray, b: np.ndarray, features: np.ndarray, labels: np.ndarray) -> float:
        __tracebackhide__ = True
        value = self.scalar(self.call("probe_accuracy", ("7.5",), W, b, features, labels), "probe_accuracy", ("7.5",))
        if not 0.0 <= value <= 1.0:
            fail(("7.5",), f"probe_accuracy: expected a fraction in [0, 1], got {value!r}")
        return value
