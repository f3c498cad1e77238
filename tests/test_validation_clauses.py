"""§8 as clauses (spec/validation.json, spec/clauses.py, conformance/bad_inputs.py): every
clause is sent from both sides, a bad input refused and its nearest valid input accepted; the
clauses cover every kind of defect the protocol's arguments admit; the §8 list of clauses is
rendered from them. Each check is shown failing on a copy with a clause removed, or on an adapter
that is too strict, before it passes on the real thing."""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path

import pytest

from elmo_conformance.conformance.bad_inputs import BAD, NEIGHBOURS, generated, unsent
from elmo_conformance.spec.catalog import checked
from elmo_conformance.spec.clauses import clauses, implied_but_missing, validation
from tests.suite_runs import run_suite_here

ROOT = Path(__file__).resolve().parent.parent
BROKEN = ROOT / "tests" / "broken"


def without_clause(row: str, kind: str, **fields: object) -> dict:
    """A copy of validation.json without the clause `kind` (with `fields`) of `row`."""
    data = copy.deepcopy(validation())
    [entry] = [r for r in data["rows"] if r["id"] == row]
    before = len(entry["clauses"])
    entry["clauses"] = [
        c for c in entry["clauses"] if not (c["kind"] == kind and all(c.get(k) == v for k, v in fields.items()))
    ]
    assert len(entry["clauses"]) == before - 1
    return data


def test_every_clause_has_a_refused_input_and_an_accepted_neighbour() -> None:
    rows = clauses()
    assert unsent(rows, BAD, NEIGHBOURS) == []
    # the cases of one clause left out: the check names it, per function and side
    [lengths_short] = [c for c in rows if c.row == "V04" and c.kind == "dim_below"]
    bad = [b for b in BAD if b.clause != lengths_short]
    problems = unsent(rows, bad, NEIGHBOURS)
    assert len(problems) == 5 and all("§8 V04 clause 6 (dim_below: lengths of shape [B - 1])" in p for p in problems)
    assert problems[0].endswith("for bilm_layers has no bad input; teach conformance/bad_inputs.py to send it")
    [id_below] = [c for c in rows if c.row == "V03" and c.kind == "below" and c.at is None]
    near = [n for n in NEIGHBOURS if not any(clause == id_below for clause, _ in n.clauses)]
    problems = unsent(rows, BAD, near)
    assert len(problems) == 5 and all("§8 V03 clause 1 (below: an id of -1)" in p for p in problems)
    assert problems[0].endswith("has no valid neighbour; teach conformance/bad_inputs.py its nearest valid input")


def test_a_clause_the_generator_cannot_send_is_named() -> None:
    data = copy.deepcopy(validation())
    [v16] = [r for r in data["rows"] if r["id"] == "V16"]
    v16["clauses"].append({"kind": "no_targets"})  # a kind that means nothing for features
    rows = clauses(data)
    bad, near = generated(rows)
    problems = unsent(rows, bad, near)
    assert problems and all("§8 V16 clause 9 (no_targets" in p for p in problems)


@pytest.mark.parametrize(
    "row,kind,fields,expected",
    [
        ("V04", "dim_below", {"axis": 0}, "bilm_layers: lengths has no clause off by one or empty on axis 0"),
        ("V13", "zero_d", {}, "scalar_mix: s has no clause 'zero_d'"),
        ("V17", "bool", {}, "fit_linear_probe: labels has no clause 'bool'"),
        ("V10", "stacked", {}, "bilm_layers_vjp: g_layers has no clause 'stacked'"),
        ("V21", "bool", {}, "fit_linear_probe: steps has no clause 'bool'"),
        ("V06", "no_layers", {}, "bilm_layers: params has no clause 'no_layers'"),
        ("V08", "dim_above", {"entry": "out.bias"}, "bilm_layers: no params entry of shape ['V'] has a clause"),
    ],
)
def test_validation_json_states_every_clause_the_protocol_implies(row, kind, fields, expected) -> None:
    assert implied_but_missing() == []
    problems = implied_but_missing(without_clause(row, kind, **fields))
    assert any(p.startswith(expected) for p in problems), problems


def test_validation_json_matches_its_schema() -> None:
    assert checked("validation") == validation()
    import json

    import jsonschema

    schema = json.loads((ROOT / "spec" / "schemas" / "validation.schema.json").read_text(encoding="utf-8"))
    data = copy.deepcopy(validation())
    data["rows"][0]["clauses"].append({"kind": "dim_above"})  # no axis
    with pytest.raises(jsonschema.ValidationError, match="'axis' is a required property"):
        jsonschema.validate(data, schema)
    data["rows"][0]["clauses"][-1] = {"kind": "off_by_two"}
    with pytest.raises(jsonschema.ValidationError, match="is not one of"):
        jsonschema.validate(data, schema)


def test_the_section_8_clause_list_is_rendered_from_validation_json() -> None:
    spec = importlib.util.spec_from_file_location("render_docs", ROOT / "scripts" / "render_docs.py")
    render_docs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(render_docs)
    texts = render_docs.read(ROOT)
    listing = render_docs.clause_list(validation())
    assert listing in texts["spec/elmo.md"]
    assert "- V04: lengths not an array; float lengths; boolean lengths; 0-d lengths; 2-D lengths; lengths" in listing
    assert "lengths of shape [B - 1]" not in render_docs.clause_list(without_clause("V04", "dim_below", axis=0))


def test_an_adapter_that_refuses_a_valid_neighbour_fails_naming_it(tmp_path: Path) -> None:
    code, report, output = run_suite_here(
        tmp_path, str(BROKEN / "strict_ids.py"), "--dtype", "float64", "-k", "accepts_the_nearest and bilm_layers-"
    )
    assert code == 1, output
    failed = {t["nodeid"].split("[", 1)[1]: t["message"] for t in report["tests"] if t["outcome"] == "failed"}
    assert set(failed) == {
        *(
            f"strict-ids-float64-near-bilm_layers-ids_as_{t}]"
            for t in ("int8", "int16", "int32", "uint8", "uint16", "uint32", "uint64")
        ),
        "strict-ids-float64-near-bilm_layers-an_id_of_V_-_1]",
        "strict-ids-float64-near-bilm_layers-an_id_of_V_-_1_at_a_padded_position]",
        "strict-ids-float64-near-bilm_layers-a_biLM_with_V_=_1]",
    }, sorted(failed)
    message = failed["strict-ids-float64-near-bilm_layers-an_id_of_V_-_1]"]
    assert "§8 (V03): strict-ids.bilm_layers must accept an id of V - 1" in message
    assert "do not refuse it" in message and "ids: expected values in [0, V - 1)" in message
