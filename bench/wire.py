"""The wire protocol's encoding (spec §15.8) against the two JSON encodings one might use instead.

The messages are those of one `bilm_loss_grad` call at the benchmark size (§15.5): the request
(parameters, ids, lengths) and the result (a gradient per parameter). Each contender encodes both
to bytes and decodes them back to NumPy arrays:

- the protocol's frames: tagged binary values, arrays as their raw little-endian bytes
  (adapters/wire/codec.py);
- JSON with each array's bytes in base64 ({"dtype", "shape", "base64"});
- JSON with each array as a list of numbers ({"dtype", "shape", "data"}), the plainest for a
  language with a JSON library and no base64.

The timings are interleaved (bench/timing.py), and the byte counts of each encoding are reported.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from elmo_conformance.adapters.wire import codec

from .bilm import BiLMSize, make_inputs
from .timing import interleaved


def messages(size: BiLMSize, dtype: str) -> tuple[dict, dict]:
    """The request and the result of one bilm_loss_grad call: the gradients have the parameters'
    shapes, so the parameters stand in for them."""
    params, ids, lengths = make_inputs(size, dtype)
    request = {"type": "call", "id": 1, "function": "bilm_loss_grad", "mutant": None}
    request["args"] = {"params": params, "ids": ids, "lengths": lengths}
    result = {"type": "result", "id": 1, "value": {name: value.copy() for name, value in params.items()}}
    return request, result


def _to_json(value: Any, array: Callable[[np.ndarray], dict]) -> Any:
    if isinstance(value, np.ndarray):
        return array(value)
    if isinstance(value, dict):
        return {key: _to_json(item, array) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_to_json(item, array) for item in value]
    return value


def _from_json(value: Any) -> Any:
    if isinstance(value, dict) and "shape" in value and "dtype" in value:
        if "base64" in value:
            flat = np.frombuffer(base64.b64decode(value["base64"]), dtype=value["dtype"])
        else:
            flat = np.array(value["data"], dtype=value["dtype"])
        return flat.reshape(value["shape"]).copy()
    if isinstance(value, dict):
        return {key: _from_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_from_json(item) for item in value]
    return value


def _base64(array: np.ndarray) -> dict:
    data = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    return {"dtype": data.dtype.str, "shape": list(array.shape), "base64": base64.b64encode(data.tobytes()).decode()}


def _numbers(array: np.ndarray) -> dict:
    return {"dtype": array.dtype.str, "shape": list(array.shape), "data": array.ravel().tolist()}


ENCODINGS: dict[str, tuple[Callable[[dict], bytes], Callable[[bytes], Any]]] = {
    "frames (§15.3)": (codec.frame, lambda data: codec.decode(memoryview(data)[codec.HEADER.size :])),
    "JSON + base64": (lambda m: json.dumps(_to_json(m, _base64)).encode(), lambda d: _from_json(json.loads(d))),
    "JSON numbers": (lambda m: json.dumps(_to_json(m, _numbers)).encode(), lambda d: _from_json(json.loads(d))),
}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return isinstance(b, list) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def compare(size: BiLMSize, dtype: str, repeats: int) -> dict:
    """Encode and decode one call's request and result with each encoding, side by side."""
    request, result = messages(size, dtype)
    sizes, contenders = {}, {}
    for name, (encode, decode) in ENCODINGS.items():
        encoded = [encode(request), encode(result)]
        if not all(_same(message, decode(data)) for message, data in zip((request, result), encoded)):
            raise AssertionError(f"{name} does not give back the arrays it was given")
        sizes[name] = sum(len(data) for data in encoded)
        contenders[name] = lambda e=encode, d=decode: [d(e(request)), d(e(result))]
    timings, errors = interleaved(contenders, repeats)
    fastest = min(t.median for t in timings.values())
    return {
        "dtype": dtype,
        "size": size.as_json(),
        "bytes": sizes,
        "timings": {name: t.as_json() for name, t in timings.items()},
        "ratio_to_fastest": {name: t.median / fastest for name, t in timings.items()},
        "errors": errors,
    }


# ---------------------------------------------------------------------------------- one call


def _tiny_inputs(dtype: str = "float64") -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """A ScalarMix call of two layers of [2, 3, 4]: as cheap as a protocol call gets."""
    layers = [np.full((2, 3, 4), float(k), dtype=dtype) for k in range(3)]
    return np.zeros(3, dtype=dtype), np.ones(1, dtype=dtype), layers


def per_call(impl: str, calls: int = 200, repeats: int = 7) -> dict:
    """The cost of one call through the child process (the default, §11.1) against in-process:
    a tiny `scalar_mix` call, and one answered with an error (a bad `s`, the ValueError of §8),
    each the median over `repeats` interleaved blocks of `calls` calls, in microseconds a call.
    The difference is what the wire, the pipes and the server's purity check cost each call."""
    from elmo_conformance.adapters.loading import load_adapter

    served = load_adapter(impl, isolate=True).adapter
    local = load_adapter(impl).adapter
    s, gamma, layers = _tiny_inputs()
    bad = s[:2]

    def ok(adapter: Any) -> Callable[[], None]:
        def block() -> None:
            for _ in range(calls):
                adapter.scalar_mix(s, gamma, layers)

        return block

    def refused(adapter: Any) -> Callable[[], None]:
        def block() -> None:
            for _ in range(calls):
                try:
                    adapter.scalar_mix(bad, gamma, layers)
                except ValueError:
                    pass
                else:
                    raise AssertionError(f"{impl}.scalar_mix accepted s of length 2 for 3 layers")

        return block

    server = getattr(getattr(served, "_connection", None), "process", None)

    def cpu_per_call(block: Callable[[], None], repeats_: int = 3) -> float | None:
        """CPU microseconds a call takes, this process's and the server's together: hardly
        changed by what else the machine runs, unlike wall time. None without /proc."""
        best = None
        for _ in range(repeats_):
            before = time.process_time(), _cpu_ns(server)
            block()
            after = time.process_time(), _cpu_ns(server)
            if before[1] is None or after[1] is None:
                return None
            spent = (after[0] - before[0]) * 1e6 + (after[1] - before[1]) / 1e3
            best = spent if best is None else min(best, spent)
        return best / calls if best is not None else None

    contenders = {
        "tiny call, child process": ok(served),
        "tiny call, in-process": ok(local),
        "error call, child process": refused(served),
        "error call, in-process": refused(local),
    }
    try:
        timings, errors = interleaved(contenders, repeats)
        cpu = {name: cpu_per_call(block) for name, block in contenders.items() if name not in errors}
    finally:
        stop = getattr(served, "stop", None)
        if stop is not None:
            stop()
    us = {name: t.median / calls * 1e6 for name, t in timings.items()}
    result: dict = {"impl": impl, "calls_per_block": calls, "us_per_call": us, "cpu_us_per_call": cpu, "errors": errors}
    for kind in ("tiny call", "error call"):
        child, local_ = us.get(f"{kind}, child process"), us.get(f"{kind}, in-process")
        if child is not None and local_:
            result[f"{kind}: overhead_us"] = child - local_
            result[f"{kind}: ratio"] = child / local_
    return result


def _cpu_ns(process: Any) -> int | None:
    """Nanoseconds a process has run on a CPU (/proc/PID/schedstat); 0 for none, None unknown."""
    if process is None:
        return 0
    try:
        with open(f"/proc/{process.pid}/schedstat", encoding="ascii") as file:
            return int(file.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
