"""Returns the same array object from every call of one function, refilled in place, and the
refill differs by one unit in the last place from call to call: a second call changes the first
result, so a harness that keeps the adapter's arrays compares each with itself and sees no
difference (§1.4). The function is $ELMO_BROKEN_FUNCTION (default bilm_layers)."""

import os

import numpy as np

from elmo_conformance.adapters.numpy import NumpyAdapter

FUNCTION = os.environ.get("ELMO_BROKEN_FUNCTION", "bilm_layers")


class ReusesBuffer(NumpyAdapter):
    name = "reuses-buffer"

    def __init__(self) -> None:
        self.buffers: dict[tuple, np.ndarray] = {}
        self.calls = 0

    def _into(self, key: tuple, value: np.ndarray) -> np.ndarray:
        """value, written into this key's buffer, its first element one ulp off on every other call."""
        buffer = self.buffers.get(key)
        if buffer is None or buffer.shape != value.shape or buffer.dtype != value.dtype:
            buffer = self.buffers[key] = np.empty_like(value)
        buffer[...] = value
        if buffer.size and self.calls % 2:
            flat = buffer.reshape(-1)
            flat[0] = np.nextafter(flat[0], np.inf)
        return buffer

    def _reused(self, key: str, value):
        if isinstance(value, np.ndarray):
            return self._into((key,), value)
        if isinstance(value, dict):
            return {name: self._into((key, name), item) for name, item in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self._reused(f"{key}[{i}]", item) for i, item in enumerate(value))
        return value


def _broken(name: str):
    def method(self, *args, **kwargs):
        value = getattr(NumpyAdapter, name)(*args, **kwargs)
        self.calls += 1
        return self._reused(name, value)

    method.__name__ = name
    return method


setattr(ReusesBuffer, FUNCTION, _broken(FUNCTION))
adapter = ReusesBuffer()
