"""What the docs restate is rendered from its one source (scripts/render_docs.py), and CI fails,
naming the command that renders it, when a rendered part is stale: the §8 and §13 tables of
spec/elmo.md, the enum of tolerance quantities in spec/schemas/tolerances.schema.json and the
hello frame of the wire example in docs/adapters.md.

Each check is first shown to fail on a drifted copy, then to pass on the real thing."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from elmo_conformance.adapters.wire import codec
from elmo_conformance.spec.tolerances import QUANTITIES

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("render_docs", ROOT / "scripts" / "render_docs.py")
render_docs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(render_docs)

COMMAND = "run `python scripts/render_docs.py`"


@pytest.fixture(scope="module")
def frame() -> bytes:
    """The hello frame the harness sends, captured from a process."""
    return render_docs.hello_frame()


@pytest.fixture()
def texts() -> dict[str, str]:
    return render_docs.read(ROOT)


def edited(texts: dict[str, str], path: str, change) -> dict[str, str]:
    data = json.loads(texts[path])
    change(data)
    return {**texts, path: json.dumps(data)}


def test_the_tables_of_sections_8_and_13_are_the_json(texts, frame) -> None:
    def reword(data: dict) -> None:
        data["rows"][0]["raised_when"] = "not a 3-D integer array"

    def add_killer(data: dict) -> None:
        data["mutants"][0]["expected_killers"].append("test_scalar_mix_matches_reference")

    for path, change in (("spec/validation.json", reword), ("spec/mutants.json", add_killer)):
        assert render_docs.stale(edited(texts, path, change), frame) == [
            "spec/elmo.md: the §8 or §13 table does not match spec/validation.json or spec/mutants.json; " + COMMAND
        ]
    hand_edited = texts["spec/elmo.md"].replace("| V02 | biLM functions |", "| V02 | `bilm_layers` |")
    assert render_docs.stale({**texts, "spec/elmo.md": hand_edited}, frame)[0].startswith("spec/elmo.md:")
    assert render_docs.stale(texts, frame) == []


def test_a_table_without_its_markers_says_where_they_go(texts, frame) -> None:
    unmarked = texts["spec/elmo.md"].replace("<!-- end mutant-table -->\n", "")
    assert render_docs.stale({**texts, "spec/elmo.md": unmarked}, frame) == [
        "spec/elmo.md needs one pair of markers `<!-- begin mutant-table -->` ... `<!-- end mutant-table -->`; "
        "then " + COMMAND
    ]


def test_the_schema_names_the_quantities_of_tolerances_json(texts, frame) -> None:
    def add_quantity(data: dict) -> None:
        data["dtypes"]["float64"]["perplexity"] = data["dtypes"]["float64"]["loss"]

    assert render_docs.stale(edited(texts, "spec/tolerances.json", add_quantity), frame) == [
        "spec/schemas/tolerances.schema.json: the enum of quantity names does not match the quantities of "
        "spec/tolerances.json; " + COMMAND
    ]
    schema = json.loads(texts["spec/schemas/tolerances.schema.json"])
    assert tuple(schema["$defs"]["by_dtype"]["additionalProperties"]["propertyNames"]["enum"]) == QUANTITIES


def test_the_wire_example_is_the_hello_the_harness_sends(texts, frame) -> None:
    older = codec.frame({"type": "hello", "protocol": "1.0"})  # the hello before the suite's version was sent
    assert render_docs.stale(texts, older) == [
        "docs/adapters.md: the wire example's hello frame is not what the harness sends; " + COMMAND
    ]
    assert render_docs.stale(texts, frame) == []
    # and, read back from the page: the header's length is the body's, the bytes are the frame's
    line = re.search(
        r"^harness: ELMO ([0-9a-f]{8}) (m\{.*\})\n +((?:[0-9a-f]{2} )+)\.\.\.$", texts["docs/adapters.md"], re.M
    )
    assert line is not None
    length = int.from_bytes(bytes.fromhex(line.group(1)), "little")
    assert codec.HEADER.unpack(frame[:8]) == (codec.MAGIC, length) and len(frame) == 8 + length
    shown = bytes.fromhex(line.group(3))
    assert frame.startswith(shown)
    message = codec.decode(frame[8:])
    assert line.group(2) == "m{" + ", ".join(f"{key}: {json.dumps(value)}" for key, value in message.items()) + "}"
    assert list(message) == ["type", "protocol", "suite"] and shown[8:13] == b"m" + len(message).to_bytes(4, "little")


def test_the_check_exits_1_and_names_the_command(tmp_path, capsys) -> None:
    for path in (*render_docs.SOURCES, *render_docs.TARGETS):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text((ROOT / path).read_text(encoding="utf-8"), encoding="utf-8")
    page = (tmp_path / "docs" / "adapters.md").read_text(encoding="utf-8")
    (tmp_path / "docs" / "adapters.md").write_text(
        re.sub(r"ELMO [0-9a-f]{8} m", "ELMO 2b000000 m", page), encoding="utf-8"
    )
    sent = render_docs.hello_frame()
    assert render_docs.main(["--check"], root=tmp_path, frame=lambda: sent) == 1
    assert COMMAND in capsys.readouterr().err
    assert render_docs.main([], root=tmp_path, frame=lambda: sent) == 0
    assert render_docs.main(["--check"], root=tmp_path, frame=lambda: sent) == 0
