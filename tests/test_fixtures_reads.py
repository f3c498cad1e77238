"""The harness verifies what it reads, not only what it checked at start-up (spec §12).

The harness checks every fixture once, before collecting tests (``verify_manifest``), and reads
each one later, when a test first needs it (``conformance/data.py`` through
``fixtures.manifest.load_fixture``). A file changed in between, by accident or on purpose, must
be refused by the read, naming the file: each read hashes the bytes it is about to parse and
compares them with the manifest entry the start-up check verified.

Every test works on a temporary copy of fixtures/.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from fixture_copies import FIXTURE_NAMES, copy_fixtures, rehash

import elmo_conformance
from elmo_conformance.fixtures.manifest import load_fixture, verify_manifest
from elmo_conformance.fixtures.store import (
    FIXTURES_DIR,
    FIXTURES_ENV,
    MANIFEST_NAME,
    REPO_ROOT,
    FixtureError,
    load_json,
    load_npz,
    save_npz,
    sha256_file,
)

HOSTILE = Path(__file__).parent / "hostile_fixtures"


def recorded(name: str) -> str:
    return {e["path"]: e["sha256"] for e in load_json(FIXTURES_DIR / MANIFEST_NAME)["fixtures"]}[name]


def change(path: Path) -> None:
    """A change that keeps the file well-formed: an npz with one value off in the last bits, a
    JSON or TSV file with a space added at the end."""
    if path.suffix == ".npz":
        arrays = load_npz(path)
        key = next(k for k, v in sorted(arrays.items()) if v.dtype.kind == "f")
        arrays[key] = np.nextafter(arrays[key], np.inf)
        save_npz(path, arrays)
    else:
        path.write_bytes(path.read_bytes() + b" ")


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_a_fixture_changed_after_the_start_up_check_is_refused_when_read(tmp_path: Path, name: str) -> None:
    copy = copy_fixtures(tmp_path)
    assert verify_manifest(copy) == []
    load_fixture(name, copy)  # reads
    change(copy / name)
    with pytest.raises(FixtureError) as refused:
        load_fixture(name, copy)
    assert (
        str(refused.value)
        == f"{name}: sha256 {sha256_file(copy / name)} does not match the manifest's {recorded(name)}"
    )


def test_rewriting_the_manifest_after_the_check_does_not_help(tmp_path: Path) -> None:
    """The reads trust the manifest entries the start-up check verified, not the manifest file."""
    copy = copy_fixtures(tmp_path)
    assert verify_manifest(copy) == []
    change(copy / "golden_bilm.npz")
    rehash(copy, "golden_bilm.npz")
    with pytest.raises(
        FixtureError, match=f"^golden_bilm.npz: sha256 .* does not match the manifest's {recorded('golden_bilm.npz')}$"
    ):
        load_fixture("golden_bilm.npz", copy)


def test_a_read_opens_the_file_once_and_parses_the_bytes_it_hashed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No gap between check and use: the file is opened once per read, so the bytes that are
    hashed are the bytes that are parsed."""
    copy = copy_fixtures(tmp_path)
    assert verify_manifest(copy) == []
    opened: list[str] = []
    real_open = os.open

    def counting_open(path, *args, **kwargs):
        if Path(path).parent == copy:
            opened.append(Path(path).name)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting_open)
    for name in FIXTURE_NAMES:
        load_fixture(name, copy)
    assert opened == FIXTURE_NAMES


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_pipe_in_place_of_a_fixture_is_refused_not_waited_on(tmp_path: Path) -> None:
    copy = copy_fixtures(tmp_path)
    assert verify_manifest(copy) == []
    (copy / "learning_thresholds.tsv").unlink()
    os.mkfifo(copy / "learning_thresholds.tsv")
    with pytest.raises(FixtureError, match="^learning_thresholds.tsv: not a regular file; refused unread$"):
        load_fixture("learning_thresholds.tsv", copy)


def test_a_fixture_not_in_the_manifest_is_refused(tmp_path: Path) -> None:
    copy = copy_fixtures(tmp_path)
    assert verify_manifest(copy) == []
    with pytest.raises(FixtureError, match="^extra.npz: not listed in manifest.json; refused$"):
        load_fixture("extra.npz", copy)


# ------------------------------------------------------------------- through a conformance run


def test_a_fixture_changed_during_a_run_fails_the_tests_that_read_it(tmp_path: Path) -> None:
    """A real run: golden_bilm.npz gets one value off in the last bit (well within tolerance: the
    old harness passed it silently) and the learning bar is raised to 1e9 (any implementation
    would pass) after the start-up check. The tests that read them fail, naming the file; the
    others pass; the run finishes and writes its report."""
    copy = copy_fixtures(tmp_path)
    replacements = tmp_path / "replacements"
    replacements.mkdir()
    (replacements / "golden_bilm.npz").write_bytes((copy / "golden_bilm.npz").read_bytes())
    change(replacements / "golden_bilm.npz")
    text = (copy / "learning_thresholds.tsv").read_text(encoding="utf-8")
    bar = re.search(r"^final_loss\t<=\t([^\t]+)\t", text, re.MULTILINE).group(1)
    (replacements / "learning_thresholds.tsv").write_text(text.replace(bar, "1000000000.0", 1), encoding="utf-8")
    report = tmp_path / "report.json"
    env = dict(os.environ, **{FIXTURES_ENV: str(copy), "ELMO_TAMPER_FROM": str(replacements)})
    env["PYTHONPATH"] = os.pathsep.join([str(HOSTILE), env.get("PYTHONPATH", "")])
    args = ["-q", "-p", "tamper", "-k", "golden or learning or scalar_mix"]
    done = elmo_conformance.run("numpy", args, report=report, env=env, cwd=REPO_ROOT, capture=True, deadline_s=600)
    assert done.exit_status == pytest.ExitCode.TESTS_FAILED, done.describe()
    assert (copy / "golden_bilm.npz").read_bytes() == (replacements / "golden_bilm.npz").read_bytes()  # tampered
    tests = json.loads(report.read_text(encoding="utf-8"))["tests"]
    reading = {"test_golden.py": "golden_bilm.npz", "test_learning.py": "learning_thresholds.tsv"}
    checked = {file: 0 for file in reading.values()}
    for test in tests:
        module = test["nodeid"].split("::")[0].rsplit("/", 1)[-1]
        if test["outcome"] == "skipped":
            continue
        if module in reading:
            file = reading[module]
            assert test["outcome"] == "failed", test
            assert f"{file}: sha256 " in test["message"] and "does not match the manifest's" in test["message"], test
            checked[file] += 1
        else:
            assert test["outcome"] == "passed", test
    assert all(checked.values()), checked
