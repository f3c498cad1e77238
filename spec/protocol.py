"""The adapter protocol of spec §11, read from its one machine-readable source, spec/protocol.json.

Everything that needs the protocol's functions, arguments, defaults, return structures,
capabilities or validation groups takes them from here: the harness's guarded calls
(conformance/case.py), the validation tests' argument lists, the mutation runner's equivalence
calls, the method check when an adapter is loaded, the wire protocol's client and server (§15),
and the Python `Protocol` of adapters/protocol.py, which tests/test_protocol.py checks against it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from elmo_conformance.spec.catalog import checked

Shape = tuple[int, ...]
_DIM = re.compile(r"^(?P<factor>[0-9]*)(?P<symbol>[A-Za-z])?(?:\s*\+\s*(?P<offset>[0-9]+))?$")
_LAYER_KEY = re.compile(r"fwd\.(\d+)\.weight_ih")


@dataclass(frozen=True)
class Argument:
    name: str
    kind: str  # array, array_list, params, int, real
    dtype: str | None = None  # float, int (arrays)
    shape: tuple[str | int, ...] | str | None = None  # dims, or a shape symbol such as "S"
    length: str | None = None  # array_list: its length, e.g. "L + 1"
    nullable: bool = False  # may be None (`lengths`)
    default: Any = None
    default_text: str | None = None  # how §11 writes the default
    binds: str | None = None  # a scalar argument that binds a symbol (n_classes -> C)

    @property
    def has_default(self) -> bool:
        return self.default_text is not None


@dataclass(frozen=True)
class Function:
    name: str
    section: str
    group: str
    component: str
    grad: bool
    dtype_from: str
    arguments: tuple[Argument, ...]
    returns: Mapping[str, Any]

    @property
    def argument_names(self) -> tuple[str, ...]:
        return tuple(argument.name for argument in self.arguments)

    def signature(self) -> str:
        """The line §11 lists for this function, e.g. `bilm_loss(params, ids, lengths) -> float`."""
        args = ", ".join(f"{a.name}={a.default_text}" if a.has_default else a.name for a in self.arguments)
        return f"{self.name}({args}) -> {self.returns['text']}"

    def bind_arguments(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """Positional and keyword arguments as a dict by protocol name, defaults filled in (§11)."""
        names = self.argument_names
        if len(args) > len(names):
            raise TypeError(f"{self.name}() takes {len(names)} arguments, got {len(args)}")
        bound = dict(zip(names, args))
        for key, value in kwargs.items():
            if key not in names:
                raise TypeError(f"{self.name}() has no argument {key!r}; its arguments are {', '.join(names)}")
            if key in bound:
                raise TypeError(f"{self.name}() got {key!r} twice")
            bound[key] = value
        for argument in self.arguments:
            if argument.name not in bound:
                if not argument.has_default:
                    raise TypeError(f"{self.name}() is missing its argument {argument.name!r}")
                bound[argument.name] = argument.default
        return {name: bound[name] for name in names}

    def split_call(self, bound: Mapping[str, Any]) -> tuple[tuple, dict]:
        """The Python call of §11 for arguments by name: required ones positional, defaulted ones
        (the probe's settings) by keyword, as the harness calls an in-process adapter."""
        args = tuple(bound[a.name] for a in self.arguments if not a.has_default)
        kwargs = {a.name: bound[a.name] for a in self.arguments if a.has_default and a.name in bound}
        return args, kwargs


@dataclass(frozen=True)
class Capability:
    name: str
    kind: str  # dtype, feature, component
    section: str
    description: str


@dataclass(frozen=True)
class Protocol:
    version: str
    spec_version: str
    symbols: Mapping[str, str]
    capabilities: tuple[Capability, ...]
    groups: Mapping[str, str]  # group name -> component
    functions: Mapping[str, Function]

    @property
    def methods(self) -> tuple[str, ...]:
        return tuple(self.functions)

    @property
    def grad_methods(self) -> tuple[str, ...]:
        return tuple(name for name, function in self.functions.items() if function.grad)

    @property
    def capability_names(self) -> frozenset[str]:
        return frozenset(c.name for c in self.capabilities)

    @property
    def components(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.capabilities if c.kind == "component")

    @property
    def dtypes(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.capabilities if c.kind == "dtype")

    def group(self, name: str) -> tuple[str, ...]:
        """The functions of a validation group of §8 ("biLM functions", ...), in protocol order."""
        if name not in self.groups:
            raise KeyError(f"spec/protocol.json has no group {name!r}; it has {', '.join(self.groups)}")
        return tuple(f.name for f in self.functions.values() if f.group == name)

    def components_of(self, capabilities: frozenset[str]) -> frozenset[str]:
        """The components an adapter implements: those it declares, or all when it declares none (§11)."""
        declared = capabilities & set(self.components)
        return frozenset(declared or self.components)

    def required_methods(self, capabilities: frozenset[str]) -> tuple[str, ...]:
        """The methods an adapter with these capabilities must have (§11)."""
        components = self.components_of(capabilities)
        return tuple(
            f.name
            for f in self.functions.values()
            if f.component in components and (not f.grad or "grad" in capabilities)
        )


def _argument(entry: Mapping[str, Any]) -> Argument:
    shape = entry.get("shape")
    return Argument(
        name=entry["name"],
        kind=entry["kind"],
        dtype=entry.get("dtype"),
        shape=tuple(shape) if isinstance(shape, list) else shape,
        length=entry.get("length"),
        nullable=bool(entry.get("nullable", False)),
        default=entry.get("default"),
        default_text=entry.get("default_text"),
        binds=entry.get("binds"),
    )


@cache
def protocol() -> Protocol:
    """spec/protocol.json, checked against spec/schemas/protocol.schema.json."""
    data = checked("protocol")  # the schema itself: tests/test_fixtures_integrity.py
    groups = {group["name"]: group["component"] for group in data["groups"]}
    functions = {
        entry["name"]: Function(
            name=entry["name"],
            section=entry["section"],
            group=entry["group"],
            component=groups[entry["group"]],
            grad=entry["grad"],
            dtype_from=entry["dtype_from"],
            arguments=tuple(_argument(a) for a in entry["arguments"]),
            returns=entry["returns"],
        )
        for entry in data["functions"]
    }
    capabilities = tuple(Capability(c["name"], c["kind"], c["section"], c["description"]) for c in data["capabilities"])
    return Protocol(data["protocol_version"], data["spec_version"], data["symbols"], capabilities, groups, functions)


# ------------------------------------------------------------------------------ shapes and symbols


def _parse_dim(expr: str | int) -> tuple[int, str | None, int]:
    """'2d' -> (2, 'd', 0); 'L + 1' -> (1, 'L', 1); 4 -> (0, None, 4): value = factor·symbol + offset."""
    if isinstance(expr, int):
        return 0, None, expr
    match = _DIM.match(expr.strip())
    if match is None:
        raise ValueError(f"spec/protocol.json: cannot read the dimension {expr!r}")
    symbol = match.group("symbol")
    factor = int(match.group("factor") or 1) if symbol else 0
    offset = int(match.group("offset") or 0) + (0 if symbol else int(match.group("factor") or 0))
    return factor, symbol, offset


def evaluate(expr: str | int, symbols: Mapping[str, Any]) -> int:
    factor, symbol, offset = _parse_dim(expr)
    return offset if symbol is None else factor * int(symbols[symbol]) + offset


def _bind_dim(expr: str | int, actual: int, symbols: dict[str, Any]) -> None:
    factor, symbol, offset = _parse_dim(expr)
    if symbol is not None and symbol not in symbols and factor and (actual - offset) % factor == 0:
        symbols[symbol] = (actual - offset) // factor


def _bind_shape(shape: tuple | str | None, actual: Shape, symbols: dict[str, Any]) -> None:
    if isinstance(shape, str):
        symbols.setdefault(shape, tuple(actual))
    elif shape is not None and len(shape) == len(actual):
        for expr, n in zip(shape, actual):
            _bind_dim(expr, n, symbols)


def bind_symbols(function: Function, bound: Mapping[str, Any]) -> dict[str, Any]:
    """The spec's symbols (V, d, L, B, T, S, N, D, C) as the valid arguments of a call give them."""
    symbols: dict[str, Any] = {}
    for argument in function.arguments:
        value = bound.get(argument.name)
        if argument.kind == "params" and isinstance(value, Mapping):
            embedding = value.get("embedding")
            if isinstance(embedding, np.ndarray) and embedding.ndim == 2:
                symbols.setdefault("V", embedding.shape[0])
                symbols.setdefault("d", embedding.shape[1])
            symbols.setdefault("L", sum(1 for key in value if isinstance(key, str) and _LAYER_KEY.fullmatch(key)))
        elif argument.kind == "array" and isinstance(value, np.ndarray):
            _bind_shape(argument.shape, value.shape, symbols)
        elif argument.kind == "array_list" and isinstance(value, Sequence) and not isinstance(value, str):
            if argument.length is not None:
                _bind_dim(argument.length, len(value), symbols)
            if value and isinstance(value[0], np.ndarray):
                _bind_shape(argument.shape, value[0].shape, symbols)
        elif argument.binds and isinstance(value, int | np.integer) and not isinstance(value, bool):
            symbols.setdefault(argument.binds, int(value))
    return symbols


def shape_of(shape: tuple | str, symbols: Mapping[str, Any]) -> Shape:
    if isinstance(shape, str):
        return tuple(symbols[shape])
    return tuple(evaluate(expr, symbols) for expr in shape)


def params_shapes(params: Mapping[str, np.ndarray]) -> dict[str, Shape]:
    """A gradient dict's names and shapes: those of `params` (§6.1, §6.2)."""
    return {name: tuple(value.shape) for name, value in params.items()}


def expected_result_bytes(function: Function, bound: Mapping[str, Any]) -> int | None:
    """The bytes of the result the spec gives for these arguments, at 8 bytes an element (float64),
    or None when the arguments do not say (a bad input). Bounds what a process's answer may be
    (§11.1)."""
    symbols = bind_symbols(function, bound)
    params = bound.get("params")

    def size(spec: Mapping[str, Any]) -> int:
        kind = spec["kind"]
        if kind == "array":
            count = 1
            for n in shape_of(spec["shape"], symbols):
                count *= max(int(n), 0)
            return 8 * count
        if kind == "float":
            return 8
        if kind == "params":
            if not isinstance(params, Mapping):
                raise KeyError("params")
            return sum(8 * int(np.size(value)) for value in params.values())
        if kind == "tuple":
            return sum(size(item) for item in spec["items"])
        if kind == "list":
            return max(evaluate(spec["length"], symbols), 0) * size(spec["item"])
        raise KeyError(kind)

    try:
        return size(function.returns)
    except (KeyError, TypeError, ValueError, IndexError):
        return None


# ------------------------------------------------------------------------------ checking results

Fail = Callable[[Sequence[str], str], None]


@dataclass
class ResultChecker:
    """Checks a returned value against `returns` of protocol.json: its structure, the type, shape
    and dtype of every array (§1.2; in either byte order, §15.3), finiteness, and Python floats for
    scalars. Returns the value with every array copied, in the machine's byte order, so that an
    adapter that reuses its output buffers cannot make two results the same object (§1.4), and a
    big-endian result is compared by value as it would be after the wire (§15.3)."""

    function: Function
    symbols: Mapping[str, Any]
    dtype: np.dtype
    params: Mapping[str, np.ndarray] | None
    fail: Fail

    @property
    def sections(self) -> tuple[str, ...]:
        return (self.function.section,)

    def check(self, value: Any) -> Any:
        __tracebackhide__ = True
        return self._value(self.function.returns, value, f"{self.function.name}()", None)

    def _value(self, spec: Mapping[str, Any], value: Any, path: str, name: str | None) -> Any:
        """Check `value` against `spec`; `path` locates it in the result (`bilm_layers()[1]`),
        `name` says what it is in the spec's words (`R^1`)."""
        __tracebackhide__ = True
        what = f"{path} ({name})" if name else path
        kind = spec["kind"]
        if kind == "array":
            return self.array(value, what, shape_of(spec["shape"], self.symbols))
        if kind == "float":
            return self.scalar(value, what, spec.get("range"))
        if kind == "params":
            return self.grad_dict(value, what)
        if kind == "tuple":
            items = spec["items"]
            if not isinstance(value, list | tuple) or len(value) != len(items):
                got = f"{len(value)} items" if isinstance(value, list | tuple) else type(value).__name__
                names = ", ".join(item["name"] for item in items)
                self.fail(self.sections, f"{what}: expected a tuple ({names}), got {got}")
            return tuple(
                self._value(item, part, f"{path}[{i}]", item["name"])
                for i, (item, part) in enumerate(zip(items, value))
            )
        if kind == "list":
            n = evaluate(spec["length"], self.symbols)
            if not isinstance(value, list | tuple) or len(value) != n:
                got = str(len(value)) if isinstance(value, list | tuple) else type(value).__name__
                length = spec["length"].replace(" ", "")
                self.fail(self.sections, f"{what}: expected a list of {length} = {n} arrays, got {got}")
            item = spec["item"]
            return [
                self._value(item, part, f"{path}[{i}]", self._item_name(item, name, i)) for i, part in enumerate(value)
            ]
        raise ValueError(f"spec/protocol.json: unknown return kind {kind!r}")

    @staticmethod
    def _item_name(item: Mapping[str, Any], parent: str | None, index: int) -> str | None:
        if "name" in item:
            return item["name"].replace("{index}", str(index))
        return f"{parent}[{index}]" if parent else None

    def array(self, value: Any, what: str, shape: Shape) -> np.ndarray:
        __tracebackhide__ = True
        if type(value) is not np.ndarray:
            fail_why = type(value).__name__
            if isinstance(value, np.ndarray):
                fail_why += " (an ndarray subclass; return a plain numpy.ndarray)"
            self.fail(self.sections, f"{what}: expected a NumPy array, got {fail_why}")
        if value.shape != shape:
            self.fail(self.sections, f"{what}: expected shape {list(shape)}, got {list(value.shape)}")
        if value.dtype != self.dtype and value.dtype.newbyteorder("=") != self.dtype:  # either byte order (§15.3)
            self.fail((*self.sections, "1.2"), f"{what}: expected dtype {self.dtype}, got {value.dtype}")
        finite = np.isfinite(value)
        if not finite.all():
            first = tuple(int(i) for i in np.argwhere(~finite)[0])
            self.fail(
                self.sections,
                f"{what}: {int((~finite).sum())} non-finite values, first {float(value[first])!r} at {list(first)}",
            )
        return value.astype(self.dtype)  # a copy, in the machine's byte order

    def scalar(self, value: Any, what: str, bounds: Sequence[float] | None = None) -> float:
        __tracebackhide__ = True
        if not isinstance(value, float):  # np.float64 is a float; int, np.float32 and 0-d arrays are not (§1.2)
            self.fail((*self.sections, "1.2"), f"{what}: expected a Python float, got {type(value).__name__} {value!r}")
        if value != value or value in (float("inf"), float("-inf")):
            self.fail(self.sections, f"{what}: expected a finite number, got {value!r}")
        if bounds is not None and not bounds[0] <= value <= bounds[1]:
            self.fail(self.sections, f"{what}: expected a fraction in [{bounds[0]}, {bounds[1]}], got {value!r}")
        return float(value)

    def grad_dict(self, value: Any, what: str) -> dict[str, np.ndarray]:
        __tracebackhide__ = True
        shapes = params_shapes(self.params or {})
        if not isinstance(value, Mapping):
            self.fail(
                self.sections, f"{what}: expected a dict of canonical names to arrays, got {type(value).__name__}"
            )
        missing = sorted(set(shapes) - set(value))
        extra = sorted(str(key) for key in set(value) - set(shapes))
        if missing or extra:
            self.fail(
                self.sections, f"{what}: names differ from the parameters (missing {missing}, unexpected {extra})"
            )
        return {name: self.array(value[name], f"{what}[{name!r}]", shape) for name, shape in shapes.items()}
