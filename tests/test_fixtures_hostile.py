"""Hostile fixtures are refused, naming the file, in bounded memory (spec §12).

A user's fixtures may be tampered with or made by a careless tool. Each case below builds one
such file in a temporary copy of fixtures/, with the manifest's hash updated to match it (what
is left to catch is the content) or not (the hash must be checked first, and the file not
parsed), and checks what the user needs:

- ``elmo-conformance fixtures`` exits 1 with one FAIL line naming the file, and no traceback;
- the harness refuses to start: a usage error naming the file, no test run, no traceback;
- neither uses more than ``PEAK_MB`` of memory (each runs with its address space limited, so a
  reader that believes a bomb fails at once instead of taking the machine).

The cases: an npz whose ``.npy`` header and zip directory claim 2**40 bytes, a valid zip bomb
(4 GiB of zeros in 4 MB), JSON nested 100,000 deep, and NaN, Infinity or 1e999 in JSON and in the
TSV of the learning bar. The directory checks of an npz, JSON nesting and the size limit are
also tested in process, case by case.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from fixture_copies import copy_fixtures, rehash
from hostile_fixtures import zips
from hostile_fixtures.bounded import run_bounded

from elmo_conformance.fixtures.manifest import verify_manifest
from elmo_conformance.fixtures.store import (
    FIXTURES_ENV,
    MANIFEST_NAME,
    MAX_COMPRESSION_RATIO,
    MAX_FIXTURE_BYTES,
    MAX_JSON_DEPTH,
    MAX_NPZ_MEMBERS,
    REPO_ROOT,
    FixtureError,
    load_json,
    load_npz,
    load_tsv,
    npz_headers,
    parse_json,
)
from elmo_conformance.fixtures.validate import FAIL, integrity

PEAK_MB = 300  # a refusal costs the interpreter, numpy and pytest: about 40-80 MB here
NPZ, JSON, TSV = "probe_separable.npz", "scalar_mix_examples.json", "learning_thresholds.tsv"
WRONG_HASH = r"sha256 [0-9a-f]{64} does not match the manifest's [0-9a-f]{64}"


# ------------------------------------------------------------------------------ hostile files


def replace_member(copy: Path, member: zips.Member) -> None:
    """Rewrite the copy's probe_separable.npz with ``member`` in place of the member of that name."""
    members = zips.members_of(copy / NPZ)
    zips.write_zip(copy / NPZ, [member if m.name == member.name else m for m in members])


def huge_claim(copy: Path) -> None:
    replace_member(copy, zips.huge_claim("features.npy"))


def zip_bomb(copy: Path) -> None:
    replace_member(copy, zips.zip_bomb("features.npy"))


def deep_json(copy: Path) -> None:
    depth = 100_000
    (copy / JSON).write_text('{"examples": ' + "[" * depth + "]" * depth + "}\n", encoding="utf-8")


def json_number(literal: str) -> Callable[[Path], None]:
    """The second example's gamma becomes ``literal``."""

    def build(copy: Path) -> None:
        text = (copy / JSON).read_text(encoding="utf-8")
        assert text.count('"gamma": [\n    1.5\n') == 1
        (copy / JSON).write_text(
            text.replace('"gamma": [\n    1.5\n', f'"gamma": [\n    {literal}\n'), encoding="utf-8"
        )

    return build


def tsv_bar(literal: str) -> Callable[[Path], None]:
    """The final loss's bar becomes ``literal``."""

    def build(copy: Path) -> None:
        lines = (copy / TSV).read_text(encoding="utf-8").split("\n")
        cells = lines[1].split("\t")
        assert cells[:2] == ["final_loss", "<="]
        lines[1] = "\t".join([*cells[:2], literal, *cells[3:]])
        (copy / TSV).write_text("\n".join(lines), encoding="utf-8")

    return build


@dataclass(frozen=True)
class Case:
    id: str
    file: str
    build: Callable[[Path], None]
    matching_hash: bool  # the manifest's hash updated to the hostile file's
    why: str  # a regular expression the refusal must match, after the file's name

    def make(self, tmp_path: Path) -> Path:
        copy = copy_fixtures(tmp_path)
        self.build(copy)
        if self.matching_hash:
            rehash(copy, self.file)
        return copy


DECLARES = r"member 'features.npy' declares \d+ bytes, more than the \d+-byte limit; refused unread"
CASES = [
    # item 8: an npz that claims a huge array, or a zip bomb
    Case("huge-claim", NPZ, huge_claim, True, DECLARES),
    Case("huge-claim-wrong-hash", NPZ, huge_claim, False, WRONG_HASH),
    Case("zip-bomb", NPZ, zip_bomb, True, DECLARES),
    Case("zip-bomb-wrong-hash", NPZ, zip_bomb, False, WRONG_HASH),
    # item 9: JSON nested deeper than any stack
    Case("deep-json", JSON, deep_json, True, rf"nested deeper than {MAX_JSON_DEPTH} levels at line 1, column "),
    Case("deep-json-wrong-hash", JSON, deep_json, False, WRONG_HASH),
    # item 10: numbers that are not finite
    Case("json-nan", JSON, json_number("NaN"), True, r"NaN at line 52, column 5 is not a finite number"),
    Case("json-infinity", JSON, json_number("-Infinity"), True, r"-Infinity at line 52, column 5 is not a finite"),
    Case("json-1e999", JSON, json_number("1e999"), True, r"1e999 at line 52, column 5 overflows to infinity"),
    Case("tsv-nan", TSV, tsv_bar("nan"), True, r"line 2 \(final_loss\), column 'bar': 'nan' is not a finite number"),
    Case("tsv-inf", TSV, tsv_bar("inf"), True, r"line 2 \(final_loss\), column 'bar': 'inf' is not a finite number"),
    Case("tsv-1e999", TSV, tsv_bar("1e999"), True, r"line 2 \(final_loss\), column 'bar': '1e999' is not a finite"),
]


def assert_bounded(outcome, case: Case) -> None:
    print(f"{case.id}: exit {outcome.returncode}, peak memory {outcome.peak_mb:.0f} MB")  # shown by pytest -rP
    assert "Traceback" not in outcome.output, outcome.output[-3000:]
    assert outcome.peak_mb < PEAK_MB, f"{case.id}: peak memory {outcome.peak_mb:.0f} MB"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_python_m_fixtures_refuses_a_hostile_file_with_one_line(tmp_path: Path, case: Case) -> None:
    copy = case.make(tmp_path)
    args = ["-m", "elmo_conformance", "fixtures", "--fixtures-dir", str(copy), "--skip", "regenerate"]
    args += ["--skip", "reference"]
    outcome = run_bounded([*args, "--skip", "mutants"], REPO_ROOT, {})
    assert_bounded(outcome, case)
    assert outcome.returncode == 1, outcome.output[-3000:]
    [line] = outcome.fail_lines()
    assert re.search(rf"FAIL  {re.escape(case.file)}: {case.why}", line), line
    assert "FIXTURES REFUSED" in outcome.output


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_harness_refuses_to_start_on_a_hostile_file(tmp_path: Path, case: Case) -> None:
    copy = case.make(tmp_path)
    args = ["-m", "elmo_conformance", "--impl", "numpy", "-q", "-p", "no:cacheprovider"]  # the console command
    outcome = run_bounded(args, REPO_ROOT, {FIXTURES_ENV: str(copy)})
    assert_bounded(outcome, case)
    assert outcome.returncode == pytest.ExitCode.USAGE_ERROR, outcome.output[-3000:]
    assert "fixtures refused, no test was run" in outcome.output
    assert re.search(rf"^  {re.escape(case.file)}: {case.why}", outcome.output, re.MULTILINE), outcome.output
    assert " passed" not in outcome.output and " failed" not in outcome.output


# ---------------------------------------------------------------------- the same, in process


def only_problem(copy: Path, name: str) -> str:
    problems = verify_manifest(copy)
    assert len(problems) == 1 and problems[0].startswith(f"{name}: "), problems
    _, results = integrity(copy)
    assert [r.detail for r in results if r.status == FAIL] == problems
    return problems[0]


def test_a_file_whose_hash_does_not_match_is_not_parsed(tmp_path: Path) -> None:
    """One line, the hash's: the content (here not JSON at all) is not looked at."""
    copy = copy_fixtures(tmp_path)
    (copy / JSON).write_text("{not json", encoding="utf-8")
    assert re.fullmatch(f"{JSON}: {WRONG_HASH}", only_problem(copy, JSON))


@pytest.mark.parametrize("matching_hash", [True, False])
def test_a_file_over_the_size_limit_is_refused_unread(tmp_path: Path, matching_hash: bool) -> None:
    copy = copy_fixtures(tmp_path)
    with open(copy / TSV, "r+b") as handle:
        handle.truncate(MAX_FIXTURE_BYTES + 1)  # sparse: nothing is written
    if matching_hash:
        rehash(copy, TSV)
    line = only_problem(copy, TSV)
    assert line == (
        f"{TSV}: {MAX_FIXTURE_BYTES + 1} bytes, more than the {MAX_FIXTURE_BYTES}-byte limit for a fixture; "
        "refused unread"
    )
    for load in (load_tsv, load_json, load_npz):
        with pytest.raises(FixtureError, match=f"^{TSV}: .* refused unread"):
            load(copy / TSV)


@pytest.mark.parametrize("case", [c for c in CASES if c.matching_hash and c.file != NPZ], ids=lambda c: c.id)
def test_verify_manifest_names_the_place(tmp_path: Path, case: Case) -> None:
    assert re.fullmatch(f"{re.escape(case.file)}: {case.why}.*", only_problem(case.make(tmp_path), case.file))


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (
            "[" * 100_000 + "]" * 100_000,
            f"nested deeper than {MAX_JSON_DEPTH} levels at line 1, column 65; refused unparsed",
        ),
        (
            '{"schema_version": NaN}',
            "NaN at line 1, column 20 is not a finite number; fixtures hold finite numbers only",
        ),
    ],
    ids=["deep", "nan"],
)
def test_a_hostile_manifest_gives_one_line(tmp_path: Path, text: str, why: str) -> None:
    copy = copy_fixtures(tmp_path)
    (copy / MANIFEST_NAME).write_text(text, encoding="utf-8")
    assert verify_manifest(copy) == [f"{MANIFEST_NAME}: {why}"]


# ------------------------------------------------------------------------ npz zip directories


def npz_of(members: list[zips.Member], tmp_path: Path) -> bytes:
    zips.write_zip(tmp_path / "x.npz", members)
    return (tmp_path / "x.npz").read_bytes()


def real(name: str, array: np.ndarray) -> zips.Member:
    return zips.stored(name, zips.npy_bytes(array))


def test_a_real_deflated_npz_is_read(tmp_path: Path) -> None:
    """The control: compression itself is allowed (np.savez_compressed)."""
    np.savez_compressed(tmp_path / "c.npz", a=np.arange(6.0).reshape(2, 3), b=np.int64(3))
    assert npz_headers("c.npz", (tmp_path / "c.npz").read_bytes()) == {
        "a": ((2, 3), np.dtype("float64")),
        "b": ((), np.dtype("int64")),
    }
    assert load_npz(tmp_path / "c.npz")["a"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


@pytest.mark.parametrize(
    ("members", "why"),
    [
        ([real("a.npy", np.zeros(2)), real("a.npy", np.ones(2))], "member 'a.npy' appears twice in the zip directory"),
        ([real("../a.npy", np.zeros(2))], r"member '../a.npy' has a path in its name"),
        ([real("sub/a.npy", np.zeros(2))], r"member 'sub/a.npy' has a path in its name"),
        ([real("sub\\a.npy", np.zeros(2))], r"member 'sub\\\\a.npy' has a path in its name"),
        ([real(".npy", np.zeros(2))], r"member '.npy' is not a .npy array"),
        ([zips.huge_claim("a.npy")], r"member 'a.npy' declares 1099511627904 bytes, more than the \d+-byte limit"),
        (
            [zips.deflated("a.npy", zips.npy_bytes(np.zeros(2**20)))],  # 8 MiB of zeros: 8 kB deflated
            rf"member 'a.npy' declares 8388736 bytes from \d+ compressed, more than {MAX_COMPRESSION_RATIO} times: a zip bomb",
        ),
        (
            [zips.deflated(f"a{i}.npy", zips.npy_bytes(np.arange(2.0**17))) for i in range(17)],  # 17 x 1 MiB
            r"its members declare \d+ bytes in all, more than the \d+-byte limit",
        ),
        (
            [zips.Member("a.npy", b"", 12, 0, 0)],  # bzip2: decompressed without a bound by zipfile
            r"member 'a.npy' uses compression method 12, expected stored \(0\) or deflated \(8\)",
        ),
        (
            [zips.Member("a.npy", b"x" * 8, zips.STORED, 8000, 0)],
            r"member 'a.npy' is stored, but its sizes disagree \(8 stored, 8000 declared\)",
        ),
        ([real("a.npy", np.zeros(2))] * (MAX_NPZ_MEMBERS + 1), rf"more than {MAX_NPZ_MEMBERS} members"),
    ],
    ids=[
        "duplicate",
        "dot-dot",
        "slash",
        "backslash",
        "no-name",
        "declares-2**40",
        "ratio",
        "total",
        "bzip2",
        "stored-sizes",
        "too-many",
    ],
)
def test_a_hostile_zip_directory_is_refused_before_any_data_is_read(
    tmp_path: Path, members: list[zips.Member], why: str
) -> None:
    data = npz_of(members, tmp_path)
    with pytest.raises(FixtureError, match=f"^x.npz: {why}"):
        npz_headers("x.npz", data)
    with pytest.raises(FixtureError, match=f"^x.npz: {why}"):
        load_npz(tmp_path / "x.npz")


def test_headers_are_checked_against_the_layout_before_any_data_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An array of another shape than the layout says is refused from its header: np.load,
    which would read the data, is never called."""
    copy = copy_fixtures(tmp_path)
    replace_member(copy, real("features.npy", np.zeros((90, 5, 1))))
    rehash(copy, NPZ)

    loaded: list[list[str]] = []
    real_load = np.load

    def recording_load(*args, **kwargs):
        npz = real_load(*args, **kwargs)
        loaded.append(sorted(npz.files))
        return npz

    monkeypatch.setattr(np, "load", recording_load)
    line = only_problem(copy, NPZ)
    assert line == f"{NPZ}: array 'features': shape [90, 5, 1], expected 2 dims ['N', 'D']"
    assert loaded and not any("features" in files for files in loaded)  # only the other npz files were loaded


def test_a_header_claiming_more_than_the_limit_is_refused(tmp_path: Path) -> None:
    """The zip directory is consistent with what the archive holds; the .npy header lies."""
    with zipfile.ZipFile(tmp_path / "y.npz", "w") as archive:
        archive.writestr("a.npy", zips.npy_header((MAX_FIXTURE_BYTES // 8 + 1,)))
    why = rf"array 'a' declares shape \[{MAX_FIXTURE_BYTES // 8 + 1}\] of float64 \({MAX_FIXTURE_BYTES + 8} bytes\)"
    with pytest.raises(FixtureError, match=f"^y.npz: {why}, more than the {MAX_FIXTURE_BYTES}-byte limit"):
        load_npz(tmp_path / "y.npz")


# --------------------------------------------------------------------------------------- JSON


def test_json_nesting_up_to_the_limit_is_read_and_beyond_it_refused() -> None:
    at_limit = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert parse_json("x.json", at_limit.encode()) is not None
    deeper = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)
    with pytest.raises(
        FixtureError, match=rf"^x.json: nested deeper than {MAX_JSON_DEPTH} levels at line 1, column 65"
    ):
        parse_json("x.json", deeper.encode())
    # brackets inside strings, escaped quotes included, do not nest
    text = '{"a": "' + '[\\"' * 1000 + '", "b": [' + ", ".join(['{"c": "]]]"}'] * 3) + "]}"
    assert parse_json("x.json", text.encode())["b"] == [{"c": "]]]"}] * 3


def test_a_million_brackets_give_one_line_not_a_recursion_error() -> None:
    depth = 10**6
    with pytest.raises(FixtureError, match=rf"nested deeper than {MAX_JSON_DEPTH} levels"):
        parse_json("x.json", ("{" * depth).encode())


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"a": NaN}', "NaN at line 1, column 7 is not a finite number"),
        ('{"a": [1, Infinity]}', "Infinity at line 1, column 11 is not a finite number"),
        ('{"a": -Infinity}', "-Infinity at line 1, column 7 is not a finite number"),
        ('{"NaN": "NaN",\n "b": 1E400}', "1E400 at line 2, column 7 overflows to infinity"),
        ('{"a": -1e999}', "-1e999 at line 1, column 7 overflows to infinity"),
        ('{"a": 99999999999999999999}', "99999999999999999999 at line 1, column 7 is outside the 64-bit integer range"),
    ],
)
def test_json_numbers_must_be_finite(text: str, why: str) -> None:
    with pytest.raises(FixtureError, match=f"^x.json: {re.escape(why)}; fixtures hold finite numbers only$"):
        parse_json("x.json", text.encode())


def test_finite_extremes_are_read() -> None:
    assert parse_json("x.json", b"[1.7976931348623157e308, 5e-324, 1e-400, -9223372036854775808]") == [
        1.7976931348623157e308,
        5e-324,
        0.0,
        -(2**63),
    ]
