"""``elmo-conformance fixtures`` check 5 and ``--regenerate`` (spec §12): regenerated fixtures are compared
with the committed ones within tolerance, never bit for bit; ``--regenerate`` is deterministic
and refuses to overwrite drift beyond tolerance unless ``--accept-drift``.

Each test works on a temporary copy of fixtures/."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fixture_copies import FIXTURE_NAMES, copy_fixtures

from elmo_conformance.fixtures.drift import compare, tolerance
from elmo_conformance.fixtures.store import (
    FIXTURES_DIR,
    MANIFEST_NAME,
    dumps_json,
    load_json,
    load_npz,
    save_npz,
    sha256_file,
)
from elmo_conformance.maintain.fixtures import main as fixtures_main


def scale_array(copy: Path, name: str, key: str, factor: float) -> None:
    """Multiply one array of an npz by ``factor`` and record the new hash in the manifest."""
    arrays = load_npz(copy / name)
    arrays[key] = arrays[key] * factor
    save_npz(copy / name, arrays)
    manifest = load_json(copy / MANIFEST_NAME)
    for entry in manifest["fixtures"]:
        if entry["path"] == name:
            entry["sha256"] = sha256_file(copy / name)
    (copy / MANIFEST_NAME).write_text(dumps_json(manifest), encoding="utf-8")


def snapshot(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir()) if path.is_file()}


def test_regenerating_twice_gives_identical_bytes_and_an_unchanged_manifest(tmp_path: Path) -> None:
    copy = copy_fixtures(tmp_path)
    assert fixtures_main(["--regenerate", "--fixtures-dir", str(copy)]) == 0
    first = snapshot(copy)
    assert fixtures_main(["--regenerate", "--fixtures-dir", str(copy)]) == 0
    assert snapshot(copy) == first
    assert sorted(first) == sorted([*FIXTURE_NAMES, MANIFEST_NAME])
    # and what it wrote is the committed data, within tolerance (not necessarily to the last bit)
    for name in FIXTURE_NAMES:
        assert [d.line() for d in compare(name, FIXTURES_DIR / name, copy / name) if not d.ok] == []


def bracket(quantity: str) -> str:
    """How the drift report names a tolerance of §10."""
    rtol, atol = tolerance(quantity)
    return f"[{quantity} rtol {rtol:.0e} atol {atol:.0e}]"


def test_regenerate_refuses_drift_beyond_tolerance_unless_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = copy_fixtures(tmp_path)
    beyond = 1000 * tolerance("layers")[0]
    scale_array(copy, "golden_bilm.npz", "layers", 1 + beyond)
    before = snapshot(copy)
    assert fixtures_main(["--regenerate", "--only", "golden_bilm", "--fixtures-dir", str(copy)]) == 1
    out = capsys.readouterr().out
    assert "REFUSED: 1 value drifted beyond tolerance or changed; nothing was written." in out
    [layers] = [line for line in out.splitlines() if line.strip().startswith("layers ")]
    assert f"{bracket('layers')}  DRIFT" in layers and f"max_rel {beyond:.2e}" in layers
    assert snapshot(copy) == before

    assert fixtures_main(["--regenerate", "--accept-drift", "--only", "golden_bilm", "--fixtures-dir", str(copy)]) == 0
    out = capsys.readouterr().out
    assert "drift accepted" in out and "DRIFT" in out  # the report is printed when drift is accepted
    assert all(d.ok for d in compare("golden_bilm.npz", FIXTURES_DIR / "golden_bilm.npz", copy / "golden_bilm.npz"))
    unchanged = set(FIXTURE_NAMES) - {"golden_bilm.npz"}
    assert {name: before[name] for name in unchanged} == {name: snapshot(copy)[name] for name in unchanged}


def test_regenerate_overwrites_drift_within_tolerance_without_asking(tmp_path: Path) -> None:
    """§12.5: a drift within tolerance is overwritten with what the generator makes on this machine
    (the same as a regeneration of an untouched copy; not necessarily the committed bits, which
    another machine's float64 kernels made)."""
    copy = copy_fixtures(tmp_path / "drifted")
    scale_array(copy, "probe_separable.npz", "W", 1 + tolerance("probe_weights")[0] / 4)
    drifted = load_npz(copy / "probe_separable.npz")["W"]
    assert fixtures_main(["--regenerate", "--only", "probe", "--fixtures-dir", str(copy)]) == 0
    pristine = copy_fixtures(tmp_path / "pristine")
    assert fixtures_main(["--regenerate", "--only", "probe", "--fixtures-dir", str(pristine)]) == 0
    regenerated = load_npz(copy / "probe_separable.npz")["W"]
    assert np.array_equal(regenerated, load_npz(pristine / "probe_separable.npz")["W"])
    assert not np.array_equal(regenerated, drifted), "the drifted values were kept"


def test_validation_compares_with_tolerance_and_reports_every_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = copy_fixtures(tmp_path)
    within = tolerance("probe_weights")[0] / 4
    scale_array(copy, "probe_separable.npz", "W", 1 + within)  # not bit for bit, but within tolerance
    scale_array(copy, "golden_bilm.npz", "loss", 1 + 1000 * tolerance("loss")[0])
    assert fixtures_main(["--fixtures-dir", str(copy), "--skip", "reference", "--skip", "mutants"]) == 1
    lines = capsys.readouterr().out.splitlines()
    check5 = {line.split()[2]: line for line in lines if line.startswith("[5 regenerate]")}
    assert sorted(check5) == FIXTURE_NAMES
    assert " FAIL  1 of 94 values beyond tolerance or changed: loss (drift)" in check5["golden_bilm.npz"]
    assert " PASS  8 values within tolerance" in check5["probe_separable.npz"]
    assert "byte-identical" not in check5["probe_separable.npz"]
    assert " PASS  byte-identical;" in check5["scalar_mix_examples.json"]
    # the drift report: one line per value, with max abs, max rel and the tolerance
    report = [line.strip() for line in lines if line.startswith("    ")]
    [w] = [line for line in report if line.startswith("W ")]
    assert f"{bracket('probe_weights')}  ok" in w and f"max_rel {within:.2e}" in w
    assert len(report) == sum(len(compare(n, FIXTURES_DIR / n, FIXTURES_DIR / n)) for n in FIXTURE_NAMES)
    # checks 1-4 still ran for every fixture and the thresholds were re-derived
    assert sum(line.startswith("[4 provenance]") for line in lines) == len(FIXTURE_NAMES)
    assert any(line.strip().startswith("re-derived  final_loss <=") for line in lines)
