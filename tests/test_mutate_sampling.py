"""A sample of the generated mutants says how far its score can be from the whole set's (spec
§13.2; docs/mutation.md, "Samples"; elmo_conformance/mutation/sampling.py): stratified by file, seeded,
its 95 % interval finite-population corrected, in the terminal, summary.md and the report."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from elmo_conformance.mutation.sampling import allocate, draw, interval
from tests.test_mutate_generated import EXAMPLE, mutate


def test_draws_are_allocated_to_files_in_proportion() -> None:
    """30 of 100 + 50 + 1: exact shares 19.9, 9.9, 0.2; largest remainders give 20, 10, 0; the file
    with one mutant gets one, taken from the largest share: 19, 10, 1."""
    assert allocate({"a": 100, "b": 50, "c": 1}, 30) == {"a": 19, "b": 10, "c": 1}
    assert allocate({"a": 3, "b": 3}, 4) == {"a": 2, "b": 2}


def test_a_draw_is_seeded_and_records_its_strata() -> None:
    class M:
        def __init__(self, file: str) -> None:
            self.file = file

    mutants = [M("a.py") for _ in range(40)] + [M("b.py") for _ in range(20)]
    first, drawn = draw(mutants, 12, seed=7)
    again, _ = draw(mutants, 12, seed=7)
    other, _ = draw(mutants, 12, seed=8)
    assert first == again and first != other
    assert drawn is not None and drawn.strata == {"a.py": (40, 8), "b.py": (20, 4)}
    assert sum(m.file == "a.py" for m in first) == 8
    assert draw(mutants, 60, seed=7) == (mutants, None), "the whole set is not a sample"


def test_the_interval_is_wilsons_with_the_finite_population_correction() -> None:
    """80 of 100 detected, a sample of 100 of 1000: correction 900/999, effective size 111.0,
    Wilson's interval (computed by hand) 71.6 to 86.4; a sample that is the whole set has none."""
    found = interval(80, 100, 100, 1000)
    assert found is not None and round(found.low, 1) == 71.6 and round(found.high, 1) == 86.4
    assert interval(80, 100, 100, 100) == type(found)(80.0, 80.0)
    assert interval(0, 0, 10, 1000) is None


def test_the_interval_covers_the_whole_sets_score_95_times_in_100() -> None:
    """Drawn 2000 times from a set of 600 mutants of which 70 % are detected, samples of 150 (a
    quarter of the set, where the correction matters): the interval holds the true score in
    93-97 % of the draws (95.1 % with this seed; without the correction, 97.9 %: too wide)."""
    rng = random.Random(1)
    population = [1] * 420 + [0] * 180
    covered = 0
    for _ in range(2000):
        sample = rng.sample(population, 150)
        found = interval(sum(sample), 150, 150, 600)
        assert found is not None
        covered += found.low <= 70.0 <= found.high
    assert 0.93 <= covered / 2000 <= 0.97, covered / 2000


@pytest.mark.integration  # about 15 s: in CI's integration run, out of nox -s tests' fast feedback
def test_a_sampled_run_says_how_far_its_score_can_be(tmp_path: Path) -> None:
    shutil.copy(EXAMPLE, tmp_path / "outside_mix.py")
    out = tmp_path / "out"
    args = ["--impl", str(tmp_path / "outside_mix.py"), "-k", "hand_example", "--no-html", "--out", str(out)]
    done = mutate(*args, "--max-mutants", "6", "--seed", "4", "--timeout-min", "4", cwd=tmp_path)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    report = json.loads((out / "mutation-report.json").read_text(encoding="utf-8"))
    sample = report["config"]["sample"]
    assert sample["size"] == 6 and sample["seed"] == 4 and sample["stratifiedBy"] == "file"
    assert sample["strata"] == {str(tmp_path / "outside_mix.py"): {"mutants": sample["population"], "drawn": 6}}
    low, high = sample["interval"]
    assert low <= report["config"]["figures"]["score"] <= high and high - low > 10
    line = f"a sample of 6 of {sample['population']} mutants (--max-mutants, stratified by file, seed 4)"
    assert line in done.stdout
    assert f"between {low:.1f} % and {high:.1f} % with 95 % confidence" in done.stdout
    assert "**Sampled**: " + line in (out / "summary.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("n", [100, 400])
def test_the_docs_state_the_precision_a_sample_size_buys(n: int) -> None:
    """docs/mutation.md's table is what sampling.interval gives (a set of 3,000, a score of 50 %)."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "mutation.md").read_text(encoding="utf-8")
    found = interval(n // 2, n, n, 3000)
    assert found is not None and f"| {n} | ±{found.half_width:.1f} |" in text
