"""Render the parts of the docs that restate a machine-readable source, or check that they agree.

    python scripts/render_docs.py           # rewrite whatever is stale
    python scripts/render_docs.py --check   # exit 1, naming each stale part, when any is

Each fact has one source; what restates it is produced from it here:

- spec/elmo.md §8, the validation table and the clauses of each row: from spec/validation.json
  (groups of functions named as spec/protocol.json names them, clauses in the words of
  spec/clauses.py), between the markers `<!-- begin validation-table -->` and
  `<!-- end validation-table -->`;
- spec/elmo.md §13, the mutant catalog: from spec/mutants.json, between `mutant-table` markers;
- spec/schemas/tolerances.schema.json, the `enum` of quantity names: from the quantities
  spec/tolerances.json gives CPU values for (spec/tolerances.py QUANTITIES);
- docs/adapters.md, the hello frame of the wire protocol example (the line `harness: ELMO ...` and the
  bytes under it): from the very bytes the harness sends (adapters/wire/client.py), captured from
  a process started the way `--impl 'cmd:...'` starts one.

tests/test_rendered_docs.py runs the check, so CI fails on a stale part with this command in the
message.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

COMMAND = "python scripts/render_docs.py"
SPEC = "spec/elmo.md"
SCHEMA = "spec/schemas/tolerances.schema.json"
WIRE_EXAMPLE = "docs/adapters.md"  # the wire example
SOURCES = ("spec/validation.json", "spec/mutants.json", "spec/protocol.json", "spec/tolerances.json")
TARGETS = (SPEC, SCHEMA, WIRE_EXAMPLE)


class RenderError(ValueError):
    """A target lacks the place its rendered part goes (markers, a line)."""


def _code(text: str) -> str:
    return f"`{text}`"


def validation_table(validation: Mapping, protocol: Mapping) -> str:
    """The §8 table: a row per entry of validation.json; a function list that is a whole group of
    protocol.json is given by the group's name."""
    groups: dict[tuple[str, ...], str] = {}
    by_group: dict[str, list[str]] = {}
    for function in protocol["functions"]:
        by_group.setdefault(function["group"], []).append(function["name"])
    for group in protocol["groups"]:
        groups[tuple(sorted(by_group.get(group["name"], [])))] = group["name"]
    lines = ["| Row | Functions | Argument | Raised when |", "|---|---|---|---|"]
    for row in validation["rows"]:
        functions = groups.get(tuple(sorted(row["functions"]))) or ", ".join(map(_code, row["functions"]))
        argument = "the entry's name" if row["argument"] == "<entry name>" else _code(row["argument"])
        lines.append(f"| {row['id']} | {functions} | {argument} | {row['raised_when']} |")
    return "\n".join(lines) + "\n\n" + clause_list(validation)


def clause_list(validation: Mapping) -> str:
    """The clauses of each row, in the words of spec/clauses.py: one line per row."""
    from elmo_conformance.spec.clauses import clauses

    by_row: dict[str, list[str]] = {}
    for clause in clauses(dict(validation)):
        by_row.setdefault(clause.row, []).append(clause.text())
    lines = [
        "The clauses of each row, each sent as a bad input next to its nearest valid input, which must be "
        "accepted (`conformance/bad_inputs.py`):",
        "",
    ]
    lines += [f"- {row}: " + "; ".join(texts) + "." for row, texts in by_row.items()]
    return "\n".join(lines)


def mutant_table(mutants: Mapping) -> str:
    """The §13 table: a row per catalog mutant of mutants.json."""
    lines = ["| Id | Section | The change | Killed by |", "|---|---|---|---|"]
    for mutant in mutants["mutants"]:
        killers = ", ".join(map(_code, mutant["expected_killers"]))
        lines.append(f"| {mutant['id']} | §{mutant['section']} | {mutant['title']} | {killers} |")
    return "\n".join(lines)


def between_markers(text: str, name: str, body: str, where: str) -> str:
    """`text` with what stands between `<!-- begin NAME ... -->` and `<!-- end NAME -->` replaced."""
    pattern = re.compile(rf"(<!-- begin {re.escape(name)}\b[^\n]*-->\n)(.*?)(<!-- end {re.escape(name)} -->)", re.S)
    if len(pattern.findall(text)) != 1:
        raise RenderError(f"{where} needs one pair of markers `<!-- begin {name} -->` ... `<!-- end {name} -->`")
    return pattern.sub(lambda m: m.group(1) + body + "\n" + m.group(3), text)


def schema_with_quantities(schema_text: str, names: list[str]) -> str:
    """tolerances.schema.json with the enum of quantity names set to `names` (its one line)."""
    schema = json.loads(schema_text)
    current = schema["$defs"]["by_dtype"]["additionalProperties"]["propertyNames"]["enum"]
    old, new = json.dumps(current), json.dumps(names)
    if schema_text.count(old) != 1:
        raise RenderError(f"{SCHEMA}: the enum of quantity names must stand on one line, as {old}")
    return schema_text.replace(old, new)


_RECORDER = """
import struct, sys
head = sys.stdin.buffer.read(8)
body = sys.stdin.buffer.read(struct.unpack("<4sI", head)[1]) if len(head) == 8 else b""
open(sys.argv[1], "wb").write(head + body)
"""


def hello_frame() -> bytes:
    """The first frame the harness sends a process (§15.4), as it sends it: captured from a process
    that records it and exits (the harness then reports a failed handshake, which is expected)."""
    from elmo_conformance.adapters.wire.client import ProcessAdapter, ProcessStartError

    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "hello.bin"
        try:
            ProcessAdapter("cmd:recorder", [sys.executable, "-c", _RECORDER, str(out)]).stop()
        except ProcessStartError:
            pass
        return out.read_bytes()


def _show(value: object) -> str:
    if isinstance(value, Mapping):
        return "m{" + ", ".join(f"{key}: {_show(item)}" for key, item in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(map(_show, value)) + "]"
    return json.dumps(value)


HELLO_LINE = re.compile(r"^harness: ELMO [0-9a-f]{8} m\{.*\}\n {9}(?:[0-9a-f]{2} )+\.\.\.$", re.M)
SHOWN_BYTES = 31


def hello_lines(frame: bytes) -> str:
    """`harness: ELMO <u32 length, as sent> m{...}` and the frame's first bytes under it."""
    from elmo_conformance.adapters.wire import codec

    message = codec.decode(frame[codec.HEADER.size :])
    shown = " ".join(f"{byte:02x}" for byte in frame[:SHOWN_BYTES])
    return f"harness: ELMO {frame[4:8].hex()} {_show(message)}\n         {shown} ..."


def page_with_hello(page_text: str, frame: bytes) -> str:
    if len(HELLO_LINE.findall(page_text)) != 1:
        raise RenderError(
            f"{WIRE_EXAMPLE} needs one wire example starting `harness: ELMO <length> m{{...}}` and its bytes"
        )
    return HELLO_LINE.sub(lambda m: hello_lines(frame), page_text)


def render(texts: Mapping[str, str], frame: bytes) -> dict[str, str]:
    """Every target's text rendered from the sources in `texts` (path relative to the root -> text)."""
    from elmo_conformance.spec.tolerances import quantities

    validation, mutants, protocol, tolerances = (json.loads(texts[path]) for path in SOURCES)
    spec = between_markers(texts[SPEC], "validation-table", validation_table(validation, protocol), SPEC)
    spec = between_markers(spec, "mutant-table", mutant_table(mutants), SPEC)
    return {
        SPEC: spec,
        SCHEMA: schema_with_quantities(texts[SCHEMA], list(quantities(tolerances))),
        WIRE_EXAMPLE: page_with_hello(texts[WIRE_EXAMPLE], frame),
    }


def read(root: Path = ROOT) -> dict[str, str]:
    return {path: (root / path).read_text(encoding="utf-8") for path in (*SOURCES, *TARGETS)}


def stale(texts: Mapping[str, str], frame: bytes) -> list[str]:
    """One line per target that differs from its rendering, with the command that renders it."""
    try:
        rendered = render(texts, frame)
    except RenderError as exc:
        return [f"{exc}; then run `{COMMAND}`"]
    what: dict[str, str] = {
        SPEC: "the §8 or §13 table does not match spec/validation.json or spec/mutants.json",
        SCHEMA: "the enum of quantity names does not match the quantities of spec/tolerances.json",
        WIRE_EXAMPLE: "the wire example's hello frame is not what the harness sends",
    }
    return [f"{path}: {what[path]}; run `{COMMAND}`" for path, text in rendered.items() if text != texts[path]]


def main(argv: list[str] | None = None, root: Path = ROOT, frame: Callable[[], bytes] = hello_frame) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when a rendered part is stale")
    args = parser.parse_args(argv)
    texts = read(root)
    if args.check:
        problems = stale(texts, frame())
        for line in problems:
            print(line, file=sys.stderr)
        return 1 if problems else 0
    for path, text in render(texts, frame()).items():
        if text != texts[path]:
            (root / path).write_text(text, encoding="utf-8")
            print(f"rendered {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
