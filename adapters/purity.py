"""§1.4: a function MUST NOT modify its inputs. A snapshot of a call's arguments, and the first
change a call made to them: an array's values, shape or dtype, or an entry added to or removed from
a dict or a list. Used by the harness around every in-process call (conformance/case.py) and by the
protocol server around every call it serves (adapters/wire/server.py).

The check is exact and cheap: an array is first compared bit for bit (its bytes, or its elements
as unsigned integers of its item size), which settles the usual case, an unchanged input, without
the floating comparison; only arrays whose bits differ are compared by value (NaN equal to NaN, -0.0
to 0.0), so that the verdict is that of a comparison by value. The protocol server copies nothing:
its snapshot of an array is a read-only view of the request bytes the array was decoded from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


def snapshot(value: Any, sources: Mapping[int, np.ndarray] | None = None) -> Any:
    """A deep copy of the containers and arrays of `value`; other objects are kept as they are.
    An array found in `sources` (by id, as wire.decode gives them) is not copied: its source, the
    bytes it was decoded from, stands for it."""
    kind = type(value)
    if kind is np.ndarray or isinstance(value, np.ndarray):
        if sources is not None:
            source = sources.get(id(value))
            if source is not None:  # wire.decode keeps only sources of the array's dtype and shape
                return source
        return value.copy()
    if kind is dict or (kind is not list and kind is not tuple and isinstance(value, Mapping)):
        return {key: snapshot(item, sources) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [snapshot(item, sources) for item in value]
    return value


_SMALL = 4096  # bytes: below this, comparing two arrays' bytes is cheaper than any ufunc
_UINTS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _same_bits(old: np.ndarray, new: np.ndarray) -> bool:
    if old.nbytes <= _SMALL:
        return old.tobytes() == new.tobytes()
    uint = _UINTS.get(old.dtype.itemsize)
    if uint is None:
        return old.tobytes() == new.tobytes()
    return bool((old.view(uint) == new.view(uint)).all())


def _same_array(old: np.ndarray, new: Any) -> bool:
    if (type(new) is not np.ndarray and not isinstance(new, np.ndarray)) or new.shape != old.shape:
        return False
    if new.dtype != old.dtype:
        return False
    if new is old or _same_bits(old, new):
        return True
    return bool(np.array_equal(new, old, equal_nan=old.dtype.kind in "fc"))


def first_change(before: Any, after: Any, path: str) -> str | None:
    """The path of the first thing that differs between a snapshot and the value now, or None."""
    if type(before) is np.ndarray or isinstance(before, np.ndarray):
        return None if _same_array(before, after) else path
    if isinstance(before, dict):
        if not isinstance(after, Mapping):
            return path
        if list(after) != list(before):
            added = [key for key in after if key not in before]
            removed = [key for key in before if key not in after]
            what = [
                f"{', '.join(map(repr, keys))} {verb}"
                for keys, verb in ((added, "added"), (removed, "removed"))
                if keys
            ]
            return f"{path} ({'; '.join(what) or 'entries reordered'})"
        return next((c for key in before if (c := first_change(before[key], after[key], f"{path}[{key!r}]"))), None)
    if isinstance(before, list):
        if not isinstance(after, list | tuple):
            return path
        if len(after) != len(before):
            return f"{path} (length {len(before)}, now {len(after)})"
        return next(
            (c for i, (b, a) in enumerate(zip(before, after)) if (c := first_change(b, a, f"{path}[{i}]"))), None
        )
    return None  # scalars and other objects cannot be modified in place
