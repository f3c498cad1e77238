"""The bad inputs of spec §8: one valid input of every kind, and every row of the validation table
(spec/validation.json) as changes of it, for every function the row names.

`valid_arguments` is the one table of valid inputs by argument name (spec/protocol.json's names):
the bad cases change it, and the mutation runner's equivalence pre-check calls every function on it
as it is. The bad cases are written relative to its sizes (`V + 1`, `D + 1` rows), so the table can
change without rewriting them; only V07's extra layer names its `L`.

The validation tests (test_validation.py) call each function on each bad input and expect a
ValueError naming the argument; the mutation runner's equivalence pre-check (§13.1) calls the
clean adapter and each mutant on the same bad inputs, so that a mutant that only stops rejecting
one of them is not taken for an equivalent one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from elmo_conformance.conformance.data import probe_separable, random_bilm
from elmo_conformance.spec.clauses import SINGULAR, WHERE, Clause, clauses, entry_shape
from elmo_conformance.spec.protocol import protocol

N_LAYERS = 3  # L of the valid biLM below

# The function groups §8 names, from spec/protocol.json.
BILM = protocol().group("biLM functions")
MIX = protocol().group("ScalarMix functions")
PROBE = protocol().group("probe functions")


@dataclass(frozen=True)
class Inputs:
    """One valid input of every kind, in float64; a bad case replaces one of them (with anything:
    a bad value may be of any type, hence `Any`)."""

    params: dict[str, Any]
    ids: Any
    lengths: Any
    g_layers: list[Any]
    s: Any
    gamma: Any
    layers: list[Any]
    g_out: Any
    features: Any
    labels: Any
    n_classes: Any
    W: Any
    b: Any
    settings: dict[str, Any]


def valid_arguments(dtype: np.dtype) -> dict[str, Any]:
    """One valid value for every argument name of spec/protocol.json, float arguments in `dtype`.

    Chosen so that every catalog defect of §13 changes an output (the equivalence pre-check,
    §13.1): three layers (§3.2 acts from layer 2), rows shorter than T (§3.3, §3.4), rows of length
    >= 2 (§4.1), γ ≠ 1 and s far from softmax(s) (§5), and probe features far from the origin with
    a constant column (§7.4)."""

    def cast(x: np.ndarray) -> np.ndarray:
        return x.astype(dtype)

    rng = np.random.default_rng(13)
    params, ids, lengths = random_bilm(13, 9, 4, N_LAYERS, [6, 4, 2, 7])
    probe = probe_separable()
    features, n_classes = cast(probe["features"]), int(probe["n_classes"])
    return {
        "params": {name: cast(value) for name, value in params.items()},
        "ids": ids,
        "lengths": lengths,
        "g_layers": [cast(rng.standard_normal((*ids.shape, 8))) for _ in range(N_LAYERS + 1)],
        "s": cast(np.array([0.2, 0.8, 1.8])),
        "gamma": cast(np.array([1.5])),
        "layers": [cast(rng.standard_normal((2, 3, 4))) for _ in range(3)],
        "g_out": cast(rng.standard_normal((2, 3, 4))),
        "features": features,
        "labels": probe["labels"],
        "n_classes": n_classes,
        "l2": float(probe["l2"]),
        "steps": int(probe["steps"]),
        "lr": float(probe["lr"]),
        "W": np.eye(features.shape[1], n_classes, dtype=dtype),  # only the first columns score: accuracy < 1
        "b": np.zeros(n_classes, dtype=dtype),
    }


SETTINGS = ("l2", "steps", "lr")


def valid_inputs() -> Inputs:
    """valid_arguments in float64, the probe's settings gathered in `settings`."""
    values = valid_arguments(np.dtype(np.float64))
    return Inputs(**{k: v for k, v in values.items() if k not in SETTINGS}, settings={k: values[k] for k in SETTINGS})


def arguments(function: str, x: Inputs) -> tuple[tuple, dict]:
    """The call of `function` on inputs x: each argument of spec/protocol.json by its name (the
    probe's settings from `x.settings`), passed as the harness passes them (§11)."""
    spec = protocol().functions[function]
    bound = {name: x.settings[name] if name in x.settings else getattr(x, name) for name in spec.argument_names}
    return spec.split_call(bound)


def other_float(dtype: np.dtype) -> type:
    return np.float32 if dtype == np.float64 else np.float64


Change = Callable[[Inputs, np.dtype], Inputs]


@dataclass(frozen=True)
class Bad:
    """One bad input: `change` turns the valid inputs into it; the message must name `argument`
    ("a|b": either). `clause` is the clause of spec/validation.json it sends."""

    row: str
    functions: tuple[str, ...]
    argument: str
    why: str
    change: Change
    clause: Clause | None = None


@dataclass(frozen=True)
class Neighbour:
    """A valid input next to the bad inputs of `clauses`: every function of `functions` accepts it."""

    why: str
    functions: tuple[str, ...]
    change: Change
    clauses: tuple[tuple[Clause, str], ...] = ()  # (clause, function) it is the neighbour of


INTEGER_DTYPES = tuple(
    np.dtype(name) for name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
)
LOSS = ("bilm_loss", "bilm_loss_grad")  # the functions V11 applies to: a single token has no target
NON_FINITE = (("a NaN", np.nan), ("+infinity", np.inf), ("-infinity", -np.inf))


# -- reading and writing the one thing a clause changes ---------------------------------------------


def _get(x: Inputs, c: Clause) -> Any:
    if c.entry is not None:
        return x.params[c.entry]
    value = x.settings[c.argument] if c.argument in x.settings else getattr(x, c.argument)
    return value[c.item] if c.item is not None else value


def _set(x: Inputs, c: Clause, new: Any) -> Inputs:
    if c.entry is not None:
        return replace(x, params={**x.params, c.entry: new})
    if c.item is not None:
        items = list(getattr(x, c.argument))
        items[c.item] = new
        new = items
    if c.argument in x.settings:
        return replace(x, settings={**x.settings, c.argument: new})
    return replace(x, **{c.argument: new})


def _sized(a: np.ndarray, axis: int, size: int) -> np.ndarray:
    """`a` with `size` entries along `axis`: cut, or grown by repeating its last slice."""
    if size <= a.shape[axis]:
        return np.take(a, np.arange(size), axis=axis)
    extra = np.repeat(np.take(a, [-1], axis=axis), size - a.shape[axis], axis=axis)
    return np.concatenate([a, extra], axis=axis)


def _with_ids(x: Inputs, ids: Any) -> Inputs:
    """x with these ids, and what depends on their shape following them: lengths absent when ids
    are not a [B, T] array of the same B and T (the defect is the ids'), g_layers cut to [B, T]."""
    same = isinstance(ids, np.ndarray) and ids.ndim >= 2 and ids.shape[:2] == x.ids.shape[:2]
    if same or not isinstance(ids, np.ndarray):
        return replace(x, ids=ids)
    g_layers = x.g_layers
    if ids.ndim == 2:
        g_layers = [g[: ids.shape[0], : ids.shape[1]] for g in g_layers]
    return replace(x, ids=ids, lengths=None, g_layers=g_layers)


def _with_features(x: Inputs, features: Any) -> Inputs:
    """x with these features, labels and W following N and D (their defect is the features')."""
    if not (isinstance(features, np.ndarray) and features.ndim == 2):
        return replace(x, features=features)
    n, d = features.shape
    return replace(x, features=features, labels=_sized(x.labels, 0, n), W=_sized(x.W, 0, d))


def _with_params_size(x: Inputs, vocab: int | None = None, d: int | None = None) -> Inputs:
    """x with a biLM of vocabulary `vocab` or width `d`, every entry (§2.1), ids and g_layers following."""
    V, width = x.params["embedding"].shape
    vocab, d = (V if vocab is None else vocab), (width if d is None else d)
    params = {}
    for name, value in x.params.items():
        sizes = {"V": vocab, "d": d, "4d": 4 * d}
        shape = entry_shape(name)
        params[name] = value[tuple(slice(0, sizes[dim]) for dim in shape)]
    ids = np.minimum(x.ids, max(vocab - 1, 0))
    return replace(x, params=params, ids=ids, g_layers=[g[..., : 2 * d] for g in x.g_layers])


def _value(expression: str, x: Inputs) -> float:
    """A clause's value in the spec's symbols ("V", "T + 1", "V - 1", "-1", "5e-324") for the inputs
    x (C is both n_classes and the columns of W: valid_arguments makes them one number)."""
    symbols = {"V": vocab(x), "T": x.ids.shape[1], "C": int(x.n_classes)}
    total = 0.0
    for term in expression.replace(" - ", " + -").split(" + "):
        total += symbols[term] if term in symbols else float(term)
    return total


def vocab(x: Inputs) -> int:
    return int(x.params["embedding"].shape[0])


def padded_position(x: Inputs) -> tuple[int, int]:
    """The last position of the shortest row, a padded one."""
    assert x.lengths is not None
    return int(np.argmin(x.lengths)), x.ids.shape[1] - 1


def _position(c: Clause, x: Inputs) -> tuple[int, int] | int:
    """Where a below or above clause puts its value: a padded position, the last element, or the
    first (flat order)."""
    if c.at == "padded":
        return padded_position(x)
    return -1 if c.at == "last" else 0


def _with_element(a: np.ndarray, where: tuple[int, ...] | int, value: float) -> np.ndarray:
    out = a.copy()
    if isinstance(where, int):
        out.flat[where] = value
    else:
        out[where] = value
    return out


# -- a clause as bad inputs and valid neighbours -------------------------------------------------


def _set_middle(value: float) -> Callable[[Any, np.dtype], Any]:
    """The array with its middle element (not the first: a check of a[0] alone misses it) `value`."""
    return lambda a, dt: _with_element(a, a.size // 2, value)


def _array_defects(c: Clause) -> list[tuple[str, Callable[[Any, np.dtype], Any]]]:
    """(why, the array's change) for each bad input of an array clause."""
    kind, axis, text = c.kind, c.axis, c.text()
    if kind == "non_finite":
        return [(f"{c.subject()} with {name}", _set_middle(value)) for name, value in NON_FINITE]
    ax = -1 if axis is None else axis  # dim_below, dim_above and empty have an axis (the schema)
    changes: dict[str, Callable[[Any, np.dtype], Any]] = {
        "not_array": lambda a, dt: a.tolist(),
        "float": lambda a, dt: a.astype(np.float64),
        "int": lambda a, dt: a.astype(np.int64),
        "bool": lambda a, dt: a.astype(bool),
        "other_float": lambda a, dt: a.astype(other_float(dt)),
        "zero_d": lambda a, dt: np.asarray(a.flat[0]),
        "ndim_below": lambda a, dt: a[0],
        "ndim_above": lambda a, dt: a[..., None],
        "transposed": lambda a, dt: a.T.copy(),
        "dim_below": lambda a, dt: _sized(a, ax, a.shape[ax] - 1),
        "dim_above": lambda a, dt: _sized(a, ax, a.shape[ax] + 1),
        "empty": lambda a, dt: _sized(a, ax, 0),
    }
    return [(text, changes[kind])] if kind in changes else []


def _set_array(x: Inputs, c: Clause, new: Any) -> Inputs:
    if c.argument == "ids":
        return _with_ids(x, new)
    if c.argument == "features":
        return _with_features(x, new)
    if c.entry == "embedding" and c.kind == "empty":
        return _with_params_size(x, **{("vocab" if c.axis == 0 else "d"): 0})
    return _set(x, c, new)


# Kinds that mean something for some arguments only; a clause of one elsewhere is not sent.
ONLY = {
    "no_targets": {"lengths", "ids"},
    "single_class": {"labels"},
    "missing": {"params"},
    "extra": {"params"},
    "no_layers": {"params"},
    "stacked": {"g_layers", "layers"},
    "length_below": {"g_layers"},
    "length_above": {"g_layers"},
}


def _bad_inputs(c: Clause) -> list[tuple[str, Change]]:
    """(why, change) for each bad input of the clause `c`; none for a clause it cannot send."""
    kind, text = c.kind, c.text()
    if c.argument not in ONLY.get(kind, {c.argument}) or (
        kind in ("below", "above") and not c.scalar and c.argument not in SINGULAR
    ):
        return []
    if c.scalar:
        scalar: dict[str, list[tuple[str, Change]]] = {
            "float": [(text, lambda x, dt: _set(x, c, float(_get(x, c))))],
            "bool": [(text, lambda x, dt: _set(x, c, True))],
            "string": [(text, lambda x, dt: _set(x, c, str(_get(x, c))))],
            "below": [(text, lambda x, dt: _set(x, c, _number(c.value or "", x)))],
            "non_finite": [
                (f"{c.argument} = {value}", _setting(c, value)) for value in (float("nan"), float("inf"), float("-inf"))
            ],
        }
        return scalar[kind]
    if kind in ("below", "above"):

        def out_of_range(x: Inputs, dt: np.dtype) -> Inputs:
            return _set(x, c, _with_element(_get(x, c), _position(c, x), _value(c.value or "", x)))

        return [(text, out_of_range)]
    if kind == "not_dict":
        return [(text, lambda x, dt: replace(x, params=list(x.params.values())))]
    if kind == "missing":
        return [(text, lambda x, dt: replace(x, params={k: v for k, v in x.params.items() if k != c.entry}))]
    if kind == "no_layers":
        return [
            (
                text,
                lambda x, dt: replace(
                    x, params={k: v for k, v in x.params.items() if "." not in k or k.startswith("out.")}
                ),
            )
        ]
    if kind == "extra":
        key = c.key or ""
        return [(text, lambda x, dt: replace(x, params={**x.params, key: x.params["fwd.0.weight_hh"]}))]
    if kind == "stacked":
        return [(text, lambda x, dt: _set(x, c, np.stack(_get(x, c))))]
    if kind in ("length_below", "length_above"):
        grow = kind == "length_above"
        return [(text, lambda x, dt: _set(x, c, [*_get(x, c), _get(x, c)[-1]] if grow else _get(x, c)[:-1]))]
    if kind == "empty" and c.argument == "layers":
        return [(text, lambda x, dt: replace(x, layers=[], s=x.s[:0]))]
    if kind == "no_targets":
        if c.at == "absent":
            return [(text, lambda x, dt: _with_ids(x, x.ids[:, :1]))]
        return [(text, lambda x, dt: replace(x, lengths=np.ones_like(x.lengths)))]
    if kind == "single_class":
        if c.at == "one row":
            return [(text, lambda x, dt: _with_features(x, x.features[:1]))]
        return [(text, lambda x, dt: replace(x, labels=np.ones_like(x.labels)))]
    return [(why, _changing(c, change)) for why, change in _array_defects(c)]


def _setting(c: Clause, value: Any) -> Change:
    return lambda x, dt: _set(x, c, value)


def _changing(c: Clause, change: Callable[[Any, np.dtype], Any]) -> Change:
    """The inputs with the array the clause is about passed through `change`; for a list of arrays
    (layers, g_layers) with no item named, every one of them."""

    def changed(value: Any, dt: np.dtype) -> Any:
        return [change(item, dt) for item in value] if isinstance(value, list) else change(value, dt)

    return lambda x, dt: _set_array(x, c, changed(_get(x, c), dt))


def _as_dtype(dtype: np.dtype) -> Callable[[Any, np.dtype], Any]:
    return lambda a, dt: a.astype(dtype)


def _number(expression: str, x: Inputs) -> int | float:
    value = _value(expression, x)
    return int(value) if value == int(value) and "e" not in expression else value


VALID = "the valid inputs"


def _neighbours(c: Clause) -> list[tuple[str, tuple[str, ...], Change]]:
    """(why, functions, change) for each valid neighbour of the clause `c`: the valid input a step
    inside the boundary the clause's bad input is a step outside of."""
    valid: list[tuple[str, tuple[str, ...], Change]] = [(VALID, c.functions, lambda x, dt: x)]
    kind, fs = c.kind, c.functions
    if c.scalar:
        if kind == "below":
            inside = c.neighbour or (str(int(c.value or "0") + 1))
            if c.argument == "n_classes":  # two classes: the labels 0 and 1 only
                return [
                    (f"n_classes = {inside}", fs, lambda x, dt: replace(_set(x, c, int(inside)), labels=x.labels % 2))
                ]
            return [(f"{c.argument} = {inside}", fs, lambda x, dt: _set(x, c, _number(inside, x)))]
        if kind == "string" or (kind == "bool" and c.argument in ("lr", "l2")):
            return [(f"{c.argument} = 1, a Python int", fs, lambda x, dt: _set(x, c, 1))]
        if kind in ("float", "bool"):
            return [(f"{c.argument} as a NumPy int64", fs, lambda x, dt: _set(x, c, np.int64(_get(x, c))))]
        return valid
    if kind == "float" and c.argument in SINGULAR:
        return [(f"{c.argument} as {dtype}", fs, _changing(c, _as_dtype(dtype))) for dtype in INTEGER_DTYPES]
    if kind == "int" and c.argument in CONVERTED and c.entry is None:
        # §8: a float argument of the other float dtype is converted, not refused
        return [
            (
                f"{c.argument} in the other float dtype",
                fs,
                lambda x, dt: replace(x, **{c.argument: _other_float_of(getattr(x, c.argument), dt)}),
            )
        ]
    if kind in ("below", "above"):
        # §8: the value a step inside the range, or the clause's own neighbour ("V - 1" for "V + 1")
        shown = c.neighbour or _stepped(c.value or "", 1 if kind == "below" else -1)
        where_text = WHERE.get(c.at or "", "")

        def step_inside(x: Inputs, dt: np.dtype) -> Inputs:
            return _set(x, c, _with_element(_get(x, c), _position(c, x), _value(shown, x)))

        one = SINGULAR[c.argument]
        return [(f"a{'n' if one[0] in 'aeiou' else ''} {one} of {shown}{where_text}", fs, step_inside)]
    if kind == "empty" and c.entry == "embedding":
        which = "vocab" if c.axis == 0 else "d"
        name = "V = 1" if c.axis == 0 else "d = 1"
        return [(f"a biLM with {name}", fs, lambda x, dt: _with_params_size(x, **{which: 1}))]
    if kind == "empty" and c.argument == "ids":
        if c.axis == 0:
            return [("ids with B = 1", fs, lambda x, dt: replace(_with_ids(x, x.ids[:1]), lengths=x.lengths[:1]))]
        short = tuple(f for f in fs if f not in LOSS)
        return [
            ("ids with T = 1", short, lambda x, dt: _with_ids(x, x.ids[:, :1])),
            ("ids with T = 2", tuple(f for f in fs if f in LOSS), lambda x, dt: _with_ids(x, x.ids[:, :2])),
        ]
    if kind == "empty" and c.argument == "features":
        if c.axis == 1:
            return [("features with D = 1", fs, lambda x, dt: _with_features(x, x.features[:, :1]))]
        return [
            ("features with N = 1", ("probe_accuracy",), lambda x, dt: _with_features(x, x.features[:1])),
            (
                "features with N = 2, two classes",
                ("fit_linear_probe",),
                lambda x, dt: _with_features(x, x.features[:2]),
            ),
        ]
    if kind == "empty" and c.argument == "layers":
        return [("a single layer", fs, lambda x, dt: replace(x, layers=x.layers[:1], s=x.s[:1]))]
    if kind == "no_layers":
        return [("a biLM with L = 1", fs, lambda x, dt: _one_layer(x))]
    if kind == "no_targets":
        if c.at == "absent":
            return [("T = 2, lengths absent", fs, lambda x, dt: _with_ids(x, x.ids[:, :2]))]
        return [
            (
                "every length 1 but one of 2",
                fs,
                lambda x, dt: replace(x, lengths=np.where(np.arange(len(x.lengths)) == 0, 2, 1)),
            )
        ]
    if kind == "single_class":
        if c.at == "one row":
            return [("two rows of two classes", fs, lambda x, dt: _with_features(x, x.features[:2]))]
        return [
            ("two classes", fs, lambda x, dt: replace(x, labels=x.labels % 2)),
            ("labels without class 0", fs, lambda x, dt: replace(x, labels=np.maximum(x.labels, 1))),
        ]
    if kind == "non_finite" and c.argument == "s":
        return [
            (
                "s with the largest finite value (§5.4)",
                fs,
                lambda x, dt: replace(x, s=_with_element(x.s, 1, np.finfo(dt).max)),
            ),
            (
                "s with the lowest finite value (§5.4)",
                fs,
                lambda x, dt: replace(x, s=_with_element(x.s, 1, np.finfo(dt).min)),
            ),
        ]
    return valid


def _stepped(expression: str, step: int) -> str:
    """`expression` + `step` in words: "-1" + 1 is "0", "V" - 1 is "V - 1", "T + 1" - 1 is "T"."""
    if expression.lstrip("-").isdigit():
        return str(int(expression) + step)
    if expression.endswith(" + 1") and step == -1:
        return expression[: -len(" + 1")]
    return f"{expression} {'+' if step > 0 else '-'} {abs(step)}"


CONVERTED = ("g_layers", "g_out", "s", "gamma", "W", "b")  # §8: converted to the computing dtype


def _other_float_of(value: Any, dt: np.dtype) -> Any:
    if isinstance(value, list):
        return [item.astype(other_float(dt)) for item in value]
    return value.astype(other_float(dt))


def _one_layer(x: Inputs) -> Inputs:
    params = {k: v for k, v in x.params.items() if not k.startswith(("fwd.", "bwd.")) or k.split(".")[1] == "0"}
    return replace(x, params=params, g_layers=x.g_layers[:2])


def generated(rows: list[Clause]) -> tuple[list[Bad], list[Neighbour]]:
    """The bad inputs and the valid neighbours of the clauses `rows`, neighbours shared between
    clauses that have the same one (the valid inputs themselves, most often)."""
    bad: list[Bad] = []
    near: dict[str, Neighbour] = {}
    for clause in rows:
        c = clause.resolved(N_LAYERS)
        for why, change in _bad_inputs(c):
            bad.append(Bad(c.row, c.functions, c.names, why, change, clause))
        for why, functions, change in _neighbours(c):
            known = near.get(why)
            near[why] = Neighbour(
                why,
                tuple(dict.fromkeys((*(known.functions if known else ()), *functions))),
                known.change if known else change,
                (*(known.clauses if known else ()), *((clause, f) for f in functions)),
            )
    return bad, list(near.values())


def unsent(rows: list[Clause], bad: list[Bad], near: list[Neighbour]) -> list[str]:
    """A line for each clause and function with no bad input refused, or no valid neighbour
    accepted, among `bad` and `near`: both sides of each boundary of §8 must be sent."""
    refused = {(b.clause, f) for b in bad for f in b.functions}
    accepted = {pair for n in near for pair in n.clauses}
    lines = []
    for clause in rows:
        for f in clause.functions:
            where = f"§8 {clause.row} clause {clause.index} ({clause.kind}: {clause.text()}) for {f}"
            if (clause, f) not in refused:
                lines.append(f"{where} has no bad input; teach conformance/bad_inputs.py to send it")
            if (clause, f) not in accepted:
                lines.append(f"{where} has no valid neighbour; teach conformance/bad_inputs.py its nearest valid input")
    return lines


BAD, NEIGHBOURS = generated(clauses())


CALLS = [(bad, function) for bad in BAD for function in bad.functions]
ACCEPTS = [(near, function) for near in NEIGHBOURS for function in near.functions]


def cast_inputs(x: Inputs, cast: Callable[[Any], Any]) -> Inputs:
    """The inputs with every float argument passed through `cast` (to a case's dtype)."""
    names = ("params", "g_layers", "s", "gamma", "layers", "g_out", "features", "W", "b")
    return replace(x, **{name: cast(getattr(x, name)) for name in names})


def bad_call(bad: Bad, function: str, dtype: np.dtype) -> tuple[tuple, dict]:
    """The call of `function` on the bad input `bad`, every float argument in `dtype` (§1.2)."""

    def cast(value: object) -> object:
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            return value.astype(dtype)
        if isinstance(value, dict):
            return {key: cast(item) for key, item in value.items()}
        if isinstance(value, list):
            return [cast(item) for item in value]
        return value

    return arguments(function, bad.change(cast_inputs(valid_inputs(), cast), dtype))
