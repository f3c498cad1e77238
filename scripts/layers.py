"""Check the layer contract: imports run downward only (docs/development.md, "Layers").

    python scripts/layers.py             # what `nox -s lint` runs
    python scripts/layers.py --verbose   # any lint-imports option passes through

The contracts are pyproject.toml's ``[tool.importlinter]``, checked by import-linter on the package
as it is installed: in a checkout ``spec/``, ``fixtures/``, ``reference/``, ``adapters/`` and
``conformance/`` become ``elmo_conformance``'s subpackages only at run time, so this script lays the
checkout out as the installed package (scripts/typecheck.py's tree of links) and runs
``lint-imports`` there. It exits with lint-imports' status: 0 when every contract is kept.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from typecheck import ROOT, TREE, build_tree  # noqa: E402


def check(root: Path = ROOT, tree: Path = TREE, options: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    """lint-imports over `root` laid out as installed in `tree`, with `root`'s pyproject.toml."""
    build_tree(root, tree)
    command = [str(Path(sys.executable).parent / "lint-imports"), str(root / "pyproject.toml"), "--no-cache"]
    return subprocess.run([*command, *(options or [])], cwd=tree, capture_output=True, text=True)


def main(argv: list[str]) -> int:
    done = check(options=argv)
    print(done.stdout + done.stderr, end="")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
