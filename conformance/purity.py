"""§1.4: a function MUST NOT modify its inputs. A snapshot of a call's arguments, and the first
change a call made to them: an array's values, shape or dtype, or an entry added to or removed from
a dict or a list. Used by the harness around every in-process call (conformance/case.py) and by the
protocol server around every call it serves (conformance/serve.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


def snapshot(value: Any) -> Any:
    """A deep copy of the containers and arrays of `value`; other objects are kept as they are."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, Mapping):
        return {key: snapshot(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [snapshot(item) for item in value]
    return value


def _same_array(old: np.ndarray, new: Any) -> bool:
    if not isinstance(new, np.ndarray) or new.shape != old.shape or new.dtype != old.dtype:
        return False
    return bool(np.array_equal(new, old, equal_nan=old.dtype.kind in "fc"))


def first_change(before: Any, after: Any, path: str) -> str | None:
    """The path of the first thing that differs between a snapshot and the value now, or None."""
    if isinstance(before, np.ndarray):
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
