"""The layer contract (docs/development.md, "Layers"; pyproject.toml's [tool.importlinter]), as
`nox -s lint` checks it with `scripts/layers.py`: kept by the tree as it is, and broken, naming the
import, by one planted upward import, or by an import of ELMo's layers into the executor."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import layers  # noqa: E402

SOURCE_ROOTS = ("elmo_conformance", "spec", "fixtures", "reference", "adapters", "conformance")


def copy_of_the_source(tmp_path: Path) -> Path:
    """The checkout's Python source and pyproject.toml, copied: a tree to plant imports in."""
    root = tmp_path / "checkout"
    for top in SOURCE_ROOTS:
        for path in (ROOT / top).rglob("*.py"):
            target = root / path.relative_to(ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    shutil.copyfile(ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


def plant(root: Path, module: str, line: str) -> None:
    path = root / module
    path.write_text(path.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")


def test_the_tree_keeps_the_layer_contract(tmp_path: Path) -> None:
    done = layers.check(copy_of_the_source(tmp_path), tmp_path / "tree")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 3 kept, 0 broken." in done.stdout, done.stdout


@pytest.mark.parametrize(
    ("module", "line", "said"),
    [
        (
            "reference/bilm.py",
            "from elmo_conformance.mutation import model  # planted",
            "elmo_conformance.reference is not allowed to import elmo_conformance.mutation",
        ),
        (
            "conformance/checks.py",
            "from elmo_conformance.pages import render  # planted",
            "elmo_conformance.conformance is not allowed to import elmo_conformance.pages",
        ),
        (  # below the executor in the layers, and still out of its reach: it knows nothing of ELMo
            "elmo_conformance/executor/local.py",
            "from elmo_conformance.adapters import loading  # planted",
            "elmo_conformance.executor is not allowed to import elmo_conformance.adapters",
        ),
        (
            "elmo_conformance/runner/supervisor.py",
            "import elmo_conformance.conformance.plugin  # planted",
            "elmo_conformance.runner is not allowed to import elmo_conformance.conformance",
        ),
    ],
)
def test_a_planted_upward_import_breaks_the_contract(tmp_path: Path, module: str, line: str, said: str) -> None:
    root = copy_of_the_source(tmp_path)
    plant(root, module, line)
    done = layers.check(root, tmp_path / "tree")
    assert done.returncode != 0, f"{module}: {line!r} was not seen\n{done.stdout}"
    assert said in " ".join(done.stdout.split()), done.stdout
