"""spec/protocol.json is the one source of the adapter protocol (§11): everything that restates it
is derived from it or checked here, so that a function or an argument is added in one place.

Each check is first shown to fail on a drifted copy, then to pass on the real thing."""

from __future__ import annotations

import inspect
import json
import re
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest

from elmo_conformance import reference
from elmo_conformance.adapters.numpy import NumpyAdapter
from elmo_conformance.adapters.protocol import Adapter
from elmo_conformance.adapters.wire import codec
from elmo_conformance.adapters.wire.client import ProcessAdapter, message_problem
from elmo_conformance.conformance.case import Case
from elmo_conformance.spec.catalog import SPEC_DIR, validation_rows
from elmo_conformance.spec.protocol import Function, Protocol, protocol

ROOT = Path(__file__).resolve().parent.parent
FIT_DEFAULTS = {a.name: a.default for a in protocol().functions["fit_linear_probe"].arguments if a.has_default}


def listing(spec_text: str) -> list[str]:
    """The function lines of §11's code block."""
    section = spec_text.split("## 11. The adapter protocol", 1)[1].split("\n## 12.", 1)[0]
    block = section.split("```\n", 2)[1]
    return [line for line in block.splitlines() if re.match(r"^[a-z_]+\(", line)]


def listing_problems(spec_text: str, source: Protocol | None = None) -> list[str]:
    derived = [function.signature() for function in (source or protocol()).functions.values()]
    written = listing(spec_text)
    problems = [f"§11 lists {line!r}, protocol.json gives no such line" for line in written if line not in derived]
    problems += [f"§11 does not list {line!r} (protocol.json)" for line in derived if line not in written]
    return problems


def test_the_listing_of_section_11_is_the_protocol() -> None:
    text = (SPEC_DIR / "elmo.md").read_text(encoding="utf-8")
    drifted = text.replace("lr=0.5) -> (W, b)", "lr=0.1) -> (W, b)")
    assert listing_problems(drifted) == [
        "§11 lists 'fit_linear_probe(features, labels, n_classes, l2=1e-3, steps=200, lr=0.1) -> (W, b)', "
        "protocol.json gives no such line",
        "§11 does not list 'fit_linear_probe(features, labels, n_classes, l2=1e-3, steps=200, lr=0.5) -> (W, b)' "
        "(protocol.json)",
    ]
    assert listing_problems(text) == []


def test_protocol_json_matches_its_schema() -> None:
    data = json.loads((SPEC_DIR / "protocol.json").read_text(encoding="utf-8"))
    schema = json.loads((SPEC_DIR / "schemas" / "protocol.schema.json").read_text(encoding="utf-8"))
    broken = json.loads(json.dumps(data))
    broken["functions"][0]["arguments"][0]["kind"] = "tensor"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)
    jsonschema.validate(data, schema)


def signature_problems(name: str, function: object, spec: Function, skip_self: bool = True) -> list[str]:
    """Where a Python function's parameters differ from spec/protocol.json: names in order, and
    the defaults the protocol gives."""
    parameters = list(inspect.signature(function).parameters.values())
    if skip_self and parameters and parameters[0].name == "self":
        parameters = parameters[1:]
    problems = []
    names = [p.name for p in parameters]
    if names != list(spec.argument_names):
        problems.append(f"{name}: arguments {names}, protocol.json says {list(spec.argument_names)}")
    for parameter in parameters:
        argument = next((a for a in spec.arguments if a.name == parameter.name), None)
        if argument is not None and argument.has_default and parameter.default != argument.default:
            problems.append(f"{name}: {parameter.name}={parameter.default!r}, protocol.json says {argument.default!r}")
    return problems


def test_the_python_protocol_class_is_the_protocol() -> None:
    """adapters/protocol.py's typing.Protocol: the same methods, arguments and defaults."""

    class Drifted:
        def fit_linear_probe(self, features, labels, n_classes, l2=1e-2, steps=200, lr=0.5): ...

    spec = protocol().functions["fit_linear_probe"]
    assert signature_problems("fit_linear_probe", Drifted.fit_linear_probe, spec) == [
        "fit_linear_probe: l2=0.01, protocol.json says 0.001"
    ]
    members = [name for name, value in vars(Adapter).items() if inspect.isfunction(value) and not name.startswith("_")]
    assert members == list(protocol().methods)
    for name, spec in protocol().functions.items():
        assert signature_problems(name, getattr(Adapter, name), spec) == []


def test_the_probe_defaults_of_the_reference_and_built_in_adapters_are_the_protocols() -> None:
    """§7's defaults appear in every Python implementation's signature; they must be §11's."""
    spec = protocol().functions["fit_linear_probe"]
    implementations = {"reference.fit_linear_probe": reference.fit_linear_probe}
    implementations["numpy adapter"] = NumpyAdapter.fit_linear_probe
    for module, attr in (("torch", "TorchAdapter"), ("jax", "JaxAdapter")):
        found = pytest.importorskip(f"elmo_conformance.adapters.{module}.adapter")
        implementations[f"{module} adapter"] = getattr(found, attr).fit_linear_probe
    for label, function in implementations.items():
        assert signature_problems(label, function, spec) == []


def test_every_protocol_function_is_a_guarded_call_and_a_process_method() -> None:
    for name in protocol().methods:
        assert callable(getattr(Case, name, None)), f"Case has no guarded call {name}"
        assert callable(getattr(ProcessAdapter, name, None)), f"ProcessAdapter has no method {name}"


def test_validation_groups_name_protocol_functions() -> None:
    """§8's rows name functions of protocol.json, and each group is the functions of one component."""
    for row in validation_rows():
        assert set(row["functions"]) <= set(protocol().methods), row["id"]
    groups = {name: protocol().group(name) for name in protocol().groups}
    assert sorted(f for functions in groups.values() for f in functions) == sorted(protocol().methods)
    assert set(protocol().groups.values()) == set(protocol().components)


def test_binding_arguments_fills_the_defaults_and_refuses_unknown_names() -> None:
    spec = protocol().functions["fit_linear_probe"]
    assert spec.bind_arguments(("X", "y", 2), {"steps": 3}) == {
        "features": "X",
        "labels": "y",
        "n_classes": 2,
        "l2": FIT_DEFAULTS["l2"],
        "steps": 3,
        "lr": FIT_DEFAULTS["lr"],
    }
    assert spec.split_call({"features": "X", "labels": "y", "n_classes": 2, "l2": 0.0, "steps": 1, "lr": 0.1}) == (
        ("X", "y", 2),
        {"l2": 0.0, "steps": 1, "lr": 0.1},
    )
    with pytest.raises(TypeError, match="has no argument 'momentum'"):
        spec.bind_arguments(("X", "y", 2), {"momentum": 0.9})
    with pytest.raises(TypeError, match="missing its argument 'n_classes'"):
        spec.bind_arguments(("X", "y"), {})


def test_the_messages_the_harness_sends_match_the_wire_schema() -> None:
    """§15: hello and call, as adapters/wire/client.py builds them, against codec.schema.json."""
    hello = {"type": "hello", "protocol": protocol().version, "suite": "elmo-conformance"}
    assert message_problem(hello, "hello_request") is None
    assert message_problem({**hello, "protocol": "one"}, "hello_request") is not None
    call = {"type": "call", "id": 1, "function": "bilm_loss", "mutant": None, "args": {"params": {}}}
    assert message_problem(codec.decode(codec.encode(call)), "call") is None
    assert message_problem({**call, "id": "1"}, "call") is not None


def test_a_function_added_to_protocol_json_is_required_and_must_be_listed() -> None:
    """What one source buys: a function declared once is a method every adapter must have, and a
    line §11 must list (the listing check fails until §11 is updated)."""
    original = protocol()
    extra = replace(original.functions["bilm_loss"], name="bilm_perplexity")
    drifted = replace(original, functions={**original.functions, "bilm_perplexity": extra})
    assert "bilm_perplexity" in drifted.required_methods(frozenset({"float64"}))
    text = (SPEC_DIR / "elmo.md").read_text(encoding="utf-8")
    assert listing_problems(text, drifted) == [
        "§11 does not list 'bilm_perplexity(params, ids, lengths) -> float' (protocol.json)"
    ]


def test_numpy_scalars_travel_as_the_python_value_they_stand_for() -> None:
    """§15.3: a NumPy integer of any dtype is `i`, a NumPy bool `t` or `f`, np.float64 `d`, and a
    NumPy float of another dtype a 0-d array of its dtype (tags and payloads written from the table)."""
    import struct

    import numpy as np

    for scalar in (np.int8(-3), np.uint64(3), np.int64(-3)):
        assert codec.encode(scalar) == b"i" + struct.pack("<q", int(scalar))
    assert codec.encode(np.True_) == b"t" and codec.encode(np.False_) == b"f"
    assert codec.encode(np.float64(0.5)) == b"d" + struct.pack("<d", 0.5)
    assert codec.encode(np.float32(0.5)) == b"af4" + bytes([0]) + struct.pack("<f", 0.5)
