"""The clauses of spec §8, read from their one source, spec/validation.json.

A row of §8 (V01 ... V25) says when a function raises; its clauses say, one by one, which defects
of its argument that covers: a wrong dtype class, a bool for an integer, one dimension too few or
too many, 0-d, each dimension off by one in both directions, an empty dimension, a value out of
range below or above, a non-finite value, a missing or extra params entry, and so on. Each clause
is sent as a bad input next to its nearest valid neighbour (conformance/bad_inputs.py), and the
§8 table of spec/elmo.md lists them in the words of `Clause.text` (scripts/render_docs.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from elmo_conformance.spec.catalog import checked
from elmo_conformance.spec.protocol import protocol

ENTRY = "<entry name>"  # the row argument of V08 and V09: the entry's own name

# The shapes of §2.1 by entry, in the spec's symbols (for the clauses' text).
ENTRY_SHAPES = {"embedding": ("V", "d"), "out.weight": ("V", "d"), "out.bias": ("V",)}
LSTM_SHAPES = {"weight_ih": ("4d", "d"), "weight_hh": ("4d", "d"), "bias_ih": ("4d",), "bias_hh": ("4d",)}

# One element of an integer array argument, for "an id of V".
SINGULAR = {"ids": "id", "lengths": "length", "labels": "label"}

# Where an out-of-range value is put (`at` of below and above), in words: the first element unless
# said; "last" is there because a check of the first element alone passes every first-element case.
WHERE = {"padded": " at a padded position", "last": " as the last element"}


def entry_shape(entry: str) -> tuple[str, ...]:
    return ENTRY_SHAPES.get(entry) or LSTM_SHAPES[entry.rsplit(".", 1)[-1]]


@dataclass(frozen=True)
class Clause:
    """One clause of one row of spec/validation.json."""

    row: str
    index: int  # its place in the row's list of clauses, from 1
    functions: tuple[str, ...]
    argument: str  # the protocol argument the defect is in: ids, params, g_layers, ...
    kind: str
    axis: int | None = None
    entry: str | None = None
    item: int | None = None
    key: str | None = None
    value: str | None = None
    neighbour: str | None = None
    at: str | None = None
    names: str = ""  # what the message must name; "a|b" for alternatives

    def resolved(self, n_layers: int) -> Clause:
        """The clause for a biLM of `n_layers` layers: `{L}` and `{L-1}` in its names replaced."""

        def fill(text: str | None) -> str | None:
            return None if text is None else text.replace("{L}", str(n_layers)).replace("{L-1}", str(n_layers - 1))

        return replace(self, entry=fill(self.entry), key=fill(self.key), names=fill(self.names) or "")

    @property
    def shape(self) -> tuple[str, ...] | None:
        """The shape of what the defect changes (an entry, a list's item, an argument), in the
        spec's symbols; None for a scalar, "S" shapes (a layer's) as ("S",)."""
        if self.entry is not None:
            return entry_shape(self.entry)
        spec = next(a for a in protocol().functions[self.functions[0]].arguments if a.name == self.argument)
        if spec.shape is None:
            return None
        return (spec.shape,) if isinstance(spec.shape, str) else tuple(str(dim) for dim in spec.shape)

    @property
    def scalar(self) -> bool:
        return self.entry is None and self.shape is None and self.argument not in ("params", "layers", "g_layers")

    def subject(self) -> str:
        """What the defect is in: `ids`, `out.bias`, `layers[1]`, `g_layers[-1]`."""
        if self.entry is not None:
            return self.entry.replace("{L-1}", "L-1").replace("{L}", "L")
        if self.item is not None:
            return f"{self.argument}[{self.item}]"
        return self.argument

    def changed_shape(self, change: int | None) -> str:
        """The shape with `self.axis` changed by `change` (-1, +1) or set to 0 (change None)."""
        shape = list(self.shape or ())
        assert self.axis is not None
        dim = shape[self.axis]
        if change is None:
            shape[self.axis] = "0"
        elif dim.isdigit():
            shape[self.axis] = str(int(dim) + change)
        elif dim == "L + 1":
            shape[self.axis] = "L" if change == -1 else "L + 2"
        else:
            shape[self.axis] = f"{dim} {'-' if change == -1 else '+'} 1"
        return "[" + ", ".join(shape) + "]"

    def text(self) -> str:
        """The clause in words, as the §8 table lists it and the bad case's test id reads."""
        subject, kind = self.subject(), self.kind
        if kind in ("dim_below", "dim_above") and self.shape == ("S",):
            than = "layer 0's" if self.argument == "layers" else "a layer's"
            return f"{subject} with axis {self.axis} one {'shorter' if kind == 'dim_below' else 'longer'} than {than}"
        if kind in ("dim_below", "dim_above", "empty") and (self.axis is not None):
            return f"{subject} of shape {self.changed_shape({'dim_below': -1, 'dim_above': 1}.get(kind))}"
        if kind == "empty":
            return f"no {subject}" if self.argument == "layers" else f"empty {subject}"
        if self.scalar:
            return {
                "float": f"{subject} as a float",
                "bool": f"{subject} = True",
                "string": f"{subject} as a string",
                "below": f"{subject} = {self.value}",
                "non_finite": f"{subject} not finite",
            }[kind]
        if kind in ("below", "above"):
            one = SINGULAR[subject]
            return f"a{'n' if one[0] in 'aeiou' else ''} {one} of {self.value}{WHERE.get(self.at or '', '')}"
        shape = self.shape or ()
        ndim = len(shape) if shape != ("S",) else None
        simple = {
            "not_array": f"{subject} not an array",
            "float": f"float {subject}",
            "int": f"integer {subject}",
            "bool": f"boolean {subject}",
            "other_float": f"{subject} in the other float dtype",
            "zero_d": f"0-d {subject}",
            "ndim_below": f"{ndim - 1}-D {subject}" if ndim else f"{subject} with an axis fewer",
            "ndim_above": f"{ndim + 1}-D {subject}" if ndim else f"{subject} with an axis more",
            "transposed": f"{subject} transposed",
            "non_finite": f"{subject} not finite",
            "not_dict": f"{subject} as a list of its arrays, not a dict",
            "missing": f"params without {subject}",
            "no_layers": "params without any LSTM entry",
            "stacked": f"{subject} as one stacked array",
            "length_below": f"{subject} of L arrays",
            "length_above": f"{subject} of L + 2 arrays",
            "no_targets": "T = 1, lengths absent" if self.at == "absent" else "every length 1",
            "single_class": "a single row" if self.at == "one row" else "a single class",
        }
        if kind == "extra":
            return f"an extra entry {_show_key(self.key or '')}"
        return simple[kind]


def _show_key(key: str) -> str:
    """A key as the text shows it: short printable ASCII quoted, anything else described."""
    if key.isascii() and key.isprintable() and len(key) <= 24:
        return repr(key.replace("{L}", "L"))
    what = f"of {len(key)} characters"
    if not key.isascii():
        what += ", not ASCII"
    if any(ord(ch) > 0xFFFF for ch in key):
        what += ", up to U+10FFFF"
    if "\x00" in key:
        what += ", one a NUL"
    return what


def row_clauses(row: dict) -> list[Clause]:
    argument = row["argument"]
    found = []
    for index, item in enumerate(row["clauses"], 1):
        entry = item.get("entry")
        protocol_argument = "params" if entry is not None or argument == ENTRY else argument
        names = item.get("names") or (entry if entry is not None else argument)
        found.append(
            Clause(
                row=row["id"],
                index=index,
                functions=tuple(row["functions"]),
                argument=protocol_argument,
                kind=item["kind"],
                axis=item.get("axis"),
                entry=entry,
                item=item.get("item"),
                key=item.get("key"),
                value=item.get("value"),
                neighbour=item.get("neighbour"),
                at=item.get("at"),
                names=names,
            )
        )
    return found


@cache
def validation() -> dict:
    """spec/validation.json, checked against its schema."""
    return checked("validation")


def clauses(data: dict | None = None) -> list[Clause]:
    """Every clause of every row of spec/validation.json (or of `data`, a copy of it), in order."""
    rows = (data or validation())["rows"]
    return [clause for row in rows for clause in row_clauses(row)]


# Axes a clause need not cover: C of W in probe_accuracy is whatever W has (§7.5), so W can only
# be off by one in its rows (D, V24) and b in its length (C, V25).
FREE_AXES = {("probe_accuracy", "W", 1)}


def _axes_covered(found: set[tuple[str, int | None]], ndim: int) -> list[int]:
    """The axes of an `ndim`-D array with neither both dim_below and dim_above nor empty among `found`."""
    return [
        axis
        for axis in range(ndim)
        if not ({("dim_below", axis), ("dim_above", axis)} <= found or ("empty", axis) in found)
    ]


def implied_but_missing(data: dict | None = None) -> list[str]:
    """A line for each clause that the protocol's arguments imply (spec/protocol.json: each
    argument's kind, dtype and shape) and validation.json (or `data`, a copy of it) lacks: an array
    of the wrong dtype class, 0-d, with an axis more (and fewer, from 2-D), each axis off by one
    both ways or empty, an integer array's bool and values out of range below and above; a list
    stacked into one array and of the wrong length or empty; params not a dict, with an entry missing,
    extra, no LSTM entry at all, and entries of each shape off by one on each axis, integer and of the other
    float dtype; an integer scalar as a float, as True and too small; a real one as a string, too
    small and not finite."""
    found: dict[tuple[str, str], set[tuple[str, int | None]]] = {}
    entries: dict[tuple[str, tuple[str, ...]], set[tuple[str, int | None]]] = {}
    for clause in clauses(data):
        for named in clause.functions:
            where = (named, clause.argument + ("[]" if clause.item is not None else ""))
            found.setdefault(where, set()).add((clause.kind, clause.axis))
            if clause.entry is not None:
                entries.setdefault((named, entry_shape(clause.entry)), set()).add((clause.kind, clause.axis))
    lines = []

    def need(function: str, argument: str, kinds: set[tuple[str, int | None]], what: str = "") -> None:
        have = found.get((function, argument), set())
        for kind, axis in sorted(kinds - have, key=str):
            on = f" on axis {axis}" if axis is not None else ""
            lines.append(f"{function}: {what or argument} has no clause {kind!r}{on} in spec/validation.json")

    for function in protocol().functions.values():
        for argument in function.arguments:
            name, kinds = argument.name, set[tuple[str, int | None]]()
            if argument.kind == "int":
                kinds = {("float", None), ("bool", None), ("below", None)}
            elif argument.kind == "real":
                kinds = {("string", None), ("below", None), ("non_finite", None)}
            elif argument.kind == "params":
                kinds = {("not_dict", None), ("missing", None), ("extra", None), ("no_layers", None)}
                kinds |= {("int", None), ("other_float", None)}
                for shape in {("V", "d"), ("4d", "d"), ("4d",), ("V",)}:
                    have = entries.get((function.name, shape), set())
                    for axis in _axes_covered(have, len(shape)):
                        lines.append(
                            f"{function.name}: no params entry of shape {list(shape)} has a clause off by one "
                            f"or empty on axis {axis} in spec/validation.json"
                        )
            elif argument.kind == "array_list":
                kinds = {("stacked", None)}
                whole = found.get((function.name, name), set())
                if ("empty", None) not in whole:
                    kinds |= {("length_below", None), ("length_above", None)}
                need(function.name, name, kinds)
                item_kinds: set[tuple[str, int | None]] = {("int", None), ("zero_d", None), ("ndim_above", None)}
                need(function.name, name + "[]", item_kinds, f"an item of {name}")
                if isinstance(argument.shape, tuple):
                    have = found.get((function.name, name + "[]"), set())
                    for axis in _axes_covered(have, len(argument.shape)):
                        lines.append(
                            f"{function.name}: an item of {name} has no clause off by one or empty on axis {axis} "
                            "in spec/validation.json"
                        )
                continue
            elif argument.kind == "array":
                integer = argument.dtype == "int"
                kinds = {("zero_d", None), ("ndim_above", None), ("not_array", None) if integer else ("int", None)}
                if integer:
                    kinds |= {("float", None), ("bool", None), ("below", None), ("above", None)}
                if isinstance(argument.shape, tuple):
                    if len(argument.shape) >= 2:
                        kinds.add(("ndim_below", None))
                    have = found.get((function.name, name), set())
                    for axis in _axes_covered(have, len(argument.shape)):
                        if (function.name, name, axis) not in FREE_AXES:
                            lines.append(
                                f"{function.name}: {name} has no clause off by one or empty on axis {axis} "
                                "in spec/validation.json"
                            )
            need(function.name, name, kinds)
    return lines
