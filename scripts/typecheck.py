"""Type-check the suite as it is imported: mypy over the package `elmo_conformance`.

    python scripts/typecheck.py             # what `nox -s lint` runs
    python scripts/typecheck.py --pretty    # any mypy option passes through

In a checkout, `spec/`, `fixtures/`, `reference/`, `adapters/` and `conformance/` are top-level
folders that elmo_conformance/__init__.py adds to the package's path at run time, so that they
import as `elmo_conformance.conformance` and so on; mypy cannot follow that. This script lays the
checkout out as the installed package (the `package-dir` table of pyproject.toml, the one source of
that layout) in a tree of links, build/typecheck/elmo_conformance/, runs mypy on it with the
`[tool.mypy]` configuration of pyproject.toml, and prints each finding under its checkout path
(`conformance/case.py`, not the link's). It exits with mypy's status.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "build" / "typecheck"
PACKAGE = "elmo_conformance"


def layout(root: Path = ROOT) -> dict[str, Path]:
    """Path inside the tree -> the checkout's folder or file it links to."""
    pyproject = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    package_dir: dict[str, str] = pyproject["tool"]["setuptools"]["package-dir"]
    links = {}
    for package, folder in package_dir.items():
        inside = package.replace(".", "/")
        if package == PACKAGE:  # the top package: link its entries one by one, the subpackages go beside them
            for entry in (root / folder).iterdir():
                if entry.name != "__pycache__":
                    links[f"{inside}/{entry.name}"] = entry
        else:
            links[inside] = root / folder
    return links


def build_tree(root: Path = ROOT, tree: Path = TREE) -> dict[str, Path]:
    links = layout(root)
    if (tree / PACKAGE).exists():
        shutil.rmtree(tree / PACKAGE)
    for inside, target in links.items():
        link = tree / inside
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, link, target_is_directory=target.is_dir())
    return links


def checkout_path(line: str, links: dict[str, Path], root: Path = ROOT) -> str:
    """A mypy line with a tree path given as the checkout's path."""
    for inside, target in sorted(links.items(), key=lambda item: -len(item[0])):
        if line.startswith(inside + "/") or line.startswith(inside + ":"):
            return str(target.relative_to(root)) + line[len(inside) :]
    return line


def main(argv: list[str]) -> int:
    links = build_tree()
    command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")]
    command += ["--cache-dir", str(TREE / ".mypy_cache"), "-p", PACKAGE, *argv]
    done = subprocess.run(command, cwd=TREE, capture_output=True, text=True)
    for line in (done.stdout + done.stderr).splitlines():
        print(checkout_path(line, links))
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
