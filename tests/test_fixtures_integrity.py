"""Tampered and bad fixture files are refused with one line naming the file (spec §12), by
``elmo-conformance fixtures`` (checks 0-3) and by the conformance harness before any test runs.

Every test works on a temporary copy of fixtures/ (the schemas stay in spec/schemas)."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest
from fixture_copies import FIXTURE_NAMES, copy_fixtures, rehash

import elmo_conformance
from elmo_conformance.fixtures.manifest import SPEC_VERSION, verify_manifest
from elmo_conformance.fixtures.store import (
    FIXTURES_DIR,
    FIXTURES_ENV,
    MANIFEST_NAME,
    REPO_ROOT,
    FixtureError,
    check_npz_layout,
    dumps_json,
    inspect_npz,
    load_json,
    load_npz,
    sha256_file,
)
from elmo_conformance.fixtures.validate import FAIL, integrity
from elmo_conformance.maintain.fixtures import main as fixtures_main


def flip_byte(path: Path, position: int) -> None:
    data = bytearray(path.read_bytes())
    data[position] ^= 0xFF
    path.write_bytes(bytes(data))


def run_harness(copy: Path, *args: str) -> subprocess.CompletedProcess:
    """The suite on the reference with the fixtures in `copy`, through the one entry point."""
    env = dict(os.environ, **{FIXTURES_ENV: str(copy)})
    done = elmo_conformance.run("numpy", ["-q", "-p", "no:cacheprovider", *args], env=env, capture=True, deadline_s=300)
    return subprocess.CompletedProcess(done.command, done.exit_status, done.output or "", "")


SCHEMAS = sorted((REPO_ROOT / "spec" / "schemas").glob("*.schema.json"))


@pytest.mark.parametrize("path", SCHEMAS, ids=[p.name for p in SCHEMAS])
def test_every_schema_of_the_spec_is_a_valid_schema(path: Path) -> None:
    """§12: the harness validates fixtures, reports and manifests with these schemas and takes each
    as valid (fixtures/store.py): each passes its meta-schema, and a broken copy does not."""
    import jsonschema

    schema = json.loads(path.read_text(encoding="utf-8"))
    meta = jsonschema.validators.validator_for(schema)
    meta.check_schema(schema)
    with pytest.raises(jsonschema.SchemaError):
        meta.check_schema({**schema, "type": 5})


def test_the_committed_fixtures_pass_checks_0_to_4() -> None:
    manifest, results = integrity(FIXTURES_DIR)
    assert manifest is not None
    assert [r.line() for r in results if r.status == FAIL] == []
    # one result per check 1-4 per fixture, plus the manifest's own
    assert len(results) == 1 + 4 * len(FIXTURE_NAMES)
    assert verify_manifest(FIXTURES_DIR) == []


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_one_flipped_byte_anywhere_is_reported_with_both_hashes(tmp_path: Path, name: str) -> None:
    size = (FIXTURES_DIR / name).stat().st_size
    recorded = {e["path"]: e["sha256"] for e in load_json(FIXTURES_DIR / MANIFEST_NAME)["fixtures"]}[name]
    for position in (0, size // 2, size - 1):
        copy = copy_fixtures(tmp_path / str(position))
        flip_byte(copy / name, position)
        actual = sha256_file(copy / name)
        expected_line = f"{name}: sha256 {actual} does not match the manifest's {recorded}"
        assert expected_line in verify_manifest(copy)
        _, results = integrity(copy)
        assert [r.detail for r in results if r.check == "sha256" and r.status == FAIL] == [expected_line]


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_the_fixtures_command_refuses_a_flipped_byte_before_checks_5_to_7(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = copy_fixtures(tmp_path)
    flip_byte(copy / name, (copy / name).stat().st_size // 2)
    assert fixtures_main(["--fixtures-dir", str(copy)]) == 1
    out = capsys.readouterr().out
    assert f"] {name:<26} FAIL  {name}: sha256 {sha256_file(copy / name)} does not match" in out
    assert "FIXTURES REFUSED" in out
    assert "[5 regenerate]" not in out and "[6 reference ]" not in out and "[7 mutants   ]" not in out


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_the_harness_refuses_a_flipped_byte_before_any_test(tmp_path: Path, name: str) -> None:
    copy = copy_fixtures(tmp_path)
    flip_byte(copy / name, (copy / name).stat().st_size // 2)
    done = run_harness(copy)
    output = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, output
    assert "fixtures refused, no test was run" in output
    assert f"{name}: sha256 {sha256_file(copy / name)} does not match the manifest's" in output
    assert "passed" not in output and "failed" not in output


def test_the_harness_accepts_an_untouched_copy(tmp_path: Path) -> None:
    """The control for the test above: the copy itself is accepted and the tests are collected."""
    done = run_harness(copy_fixtures(tmp_path), "--collect-only")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "test_golden_torch[numpy-float64]" in done.stdout


# ------------------------------------------------------------------------------------ bad files


class Tripwire:
    """Unpickling this creates a file: proof that a pickle was loaded."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def one_problem(copy: Path, name: str) -> str:
    """The single problem line of ``copy`` (the test expects exactly one, naming ``name``)."""
    problems = verify_manifest(copy)
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"{name}: "), problems
    _, results = integrity(copy)
    assert [r.detail for r in results if r.status == FAIL] == problems
    return problems[0]


def test_an_npz_holding_a_pickle_is_refused_without_loading_it(tmp_path: Path) -> None:
    copy = copy_fixtures(tmp_path)
    marker = tmp_path / "unpickled"
    arrays = load_npz(copy / "probe_separable.npz")
    arrays["W"] = np.array([Tripwire(marker)], dtype=object)
    np.savez(copy / "probe_separable.npz", **arrays)  # np.savez pickles object arrays
    rehash(copy, "probe_separable.npz")
    line = one_problem(copy, "probe_separable.npz")
    assert "array 'W' holds Python objects" in line and "refused without loading" in line
    with pytest.raises(FixtureError, match="refused without loading"):
        load_npz(copy / "probe_separable.npz")
    assert not marker.exists(), "the pickle was loaded"


def test_a_pickle_file_named_npz_is_refused_without_loading_it(tmp_path: Path) -> None:
    copy = copy_fixtures(tmp_path)
    marker = tmp_path / "unpickled"
    (copy / "probe_separable.npz").write_bytes(pickle.dumps(Tripwire(marker)))
    rehash(copy, "probe_separable.npz")
    assert "not an npz archive" in one_problem(copy, "probe_separable.npz")
    assert not marker.exists(), "the pickle was loaded"


def test_an_npz_member_that_is_not_an_array_is_refused(tmp_path: Path) -> None:
    copy = copy_fixtures(tmp_path)
    with zipfile.ZipFile(copy / "probe_separable.npz", "a") as archive:
        archive.writestr("payload.pkl", pickle.dumps({"x": 1}))
    rehash(copy, "probe_separable.npz")
    assert "member 'payload.pkl' is not a .npy array" in one_problem(copy, "probe_separable.npz")


@pytest.mark.parametrize("keep", [0.5, 0.99])
def test_a_truncated_npz_gives_one_line(tmp_path: Path, keep: float) -> None:
    copy = copy_fixtures(tmp_path)
    data = (copy / "golden_bilm.npz").read_bytes()
    (copy / "golden_bilm.npz").write_bytes(data[: int(len(data) * keep)])
    rehash(copy, "golden_bilm.npz")
    assert "truncated" in one_problem(copy, "golden_bilm.npz")


def test_a_short_array_inside_an_intact_zip_is_refused(tmp_path: Path) -> None:
    """A member cut short but re-zipped: the zip is valid, the .npy header says more bytes."""
    copy = copy_fixtures(tmp_path)
    path = copy / "probe_separable.npz"
    with zipfile.ZipFile(path) as archive:
        members = {info.filename: archive.read(info) for info in archive.infolist()}
    members["W.npy"] = members["W.npy"][:-8]
    with zipfile.ZipFile(path, "w") as archive:
        for member, payload in members.items():
            archive.writestr(member, payload)
    rehash(copy, "probe_separable.npz")
    assert "array 'W' is" in one_problem(copy, "probe_separable.npz")


def test_a_json_syntax_error_gives_one_line_with_its_position(tmp_path: Path) -> None:
    copy = copy_fixtures(tmp_path)
    path = copy / "scalar_mix_examples.json"
    path.write_text(path.read_text(encoding="utf-8").replace('"examples"', '"examples",', 1), encoding="utf-8")
    rehash(copy, "scalar_mix_examples.json")
    assert "invalid JSON at line 2" in one_problem(copy, "scalar_mix_examples.json")


def test_a_json_schema_error_names_the_json_path(tmp_path: Path) -> None:
    copy = copy_fixtures(tmp_path)
    path = copy / "scalar_mix_examples.json"
    data = load_json(path)
    data["examples"][1]["gamma"] = [1.5, 2.0]
    path.write_text(dumps_json(data), encoding="utf-8")
    rehash(copy, "scalar_mix_examples.json")
    assert "at $.examples[1].gamma: " in one_problem(copy, "scalar_mix_examples.json")


def test_a_missing_file_gives_one_line(tmp_path: Path) -> None:
    copy = copy_fixtures(tmp_path)
    (copy / "learning_init.npz").unlink()
    assert (
        one_problem(copy, "learning_init.npz") == f"learning_init.npz: listed in manifest.json but missing from {copy}"
    )


def test_a_file_not_in_the_manifest_gives_one_line(tmp_path: Path) -> None:
    copy = copy_fixtures(tmp_path)
    shutil.copyfile(copy / "learning_init.npz", copy / "extra.npz")
    assert one_problem(copy, "extra.npz") == f"extra.npz: in {copy} but not in manifest.json"


def test_an_unknown_manifest_schema_version_gives_one_line(tmp_path: Path) -> None:
    copy = copy_fixtures(tmp_path)
    manifest = load_json(copy / MANIFEST_NAME)
    manifest["schema_version"] = 2
    (copy / MANIFEST_NAME).write_text(dumps_json(manifest), encoding="utf-8")
    assert verify_manifest(copy) == ["manifest.json: unknown schema_version 2; this suite reads version 1"]


def test_fixtures_made_for_another_spec_version_give_one_line(tmp_path: Path) -> None:
    copy = copy_fixtures(tmp_path)
    manifest = load_json(copy / MANIFEST_NAME)
    manifest["spec_version"] = "2.0"
    (copy / MANIFEST_NAME).write_text(dumps_json(manifest), encoding="utf-8")
    assert verify_manifest(copy) == [
        f"manifest.json: fixtures made for spec 2.0, this suite implements spec {SPEC_VERSION}"
    ]


def test_an_unknown_layout_schema_version_gives_one_line() -> None:
    layout = load_json(REPO_ROOT / "spec" / "schemas" / "probe_separable.layout.json")
    arrays = load_npz(FIXTURES_DIR / "probe_separable.npz")
    assert check_npz_layout(arrays, layout) == []
    layout["schema_version"] = 7
    assert check_npz_layout(arrays, layout) == ["layout schema: unknown schema_version 7; this suite reads version 1"]


def test_a_hand_edited_manifest_is_refused(tmp_path: Path) -> None:
    copy = copy_fixtures(tmp_path)
    manifest = load_json(copy / MANIFEST_NAME)
    (copy / MANIFEST_NAME).write_text(json.dumps(manifest), encoding="utf-8")  # same content, other form
    assert verify_manifest(copy) == [
        "manifest.json: not in the form python -m fixtures.generate writes it (edited by hand?)"
    ]


def test_a_missing_fixtures_directory_gives_one_line(tmp_path: Path) -> None:
    problems = verify_manifest(tmp_path / "nowhere")
    assert problems == [f"{tmp_path / 'nowhere'}: the fixtures directory does not exist (is {FIXTURES_ENV} right?)"]


def test_inspect_npz_reads_shapes_and_dtypes_from_headers() -> None:
    arrays = load_npz(FIXTURES_DIR / "golden_bilm.npz")
    headers = inspect_npz(FIXTURES_DIR / "golden_bilm.npz")
    assert headers == {key: (value.shape, value.dtype) for key, value in arrays.items()}
