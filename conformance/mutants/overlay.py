"""Serve a Python implementation from a scratch copy of its project (spec §13.2).

    python .../overlay.py CONFIG.json

CONFIG (written by scratch.py) names the user's project root, its copy (one mutant written in
it), the working folder and import path a clean served run has, both mapped into the copy, and
the --impl argument. The process is then what the protocol server of a clean run is
(`python -m elmo_conformance.conformance.serve IMPL`: the working folder first on the import path,
then PYTHONPATH, then the installation's own), with two differences that keep the user's files
out of reach: it runs in the copy, and an import hook loads every module whose file lies in the
project root from the same file of the copy instead, so that a package installed in editable mode
or a module found through the user's folder is the copy's (its `__file__` included). No bytecode
is written.

Run as a script (not with -m), so that the import path is set before anything is imported.
"""

from __future__ import annotations

import sys

if sys.path and sys.path[0].rstrip("/").endswith("mutants"):
    del sys.path[0]  # this folder has an html.py: it must not shadow the standard library's

import importlib.abc  # noqa: E402
import importlib.machinery  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402


class _FromCopy(importlib.abc.MetaPathFinder):
    """Finds every module as usual; one whose file lies in the project root is loaded from the
    same place in the copy."""

    def __init__(self, root: str, copy: str) -> None:
        self.roots = tuple(dict.fromkeys([os.path.abspath(root), os.path.realpath(root)]))
        self.copy = copy

    def mapped(self, path: str) -> str | None:
        for root in self.roots:
            for candidate in (os.path.abspath(path), os.path.realpath(path)):
                if candidate == root or candidate.startswith(root + os.sep):
                    return os.path.join(self.copy, os.path.relpath(candidate, root))
        return None

    def find_spec(self, fullname, path, target=None):  # noqa: ANN001, ANN201
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not spec.has_location or not spec.origin:
            return None
        origin = self.mapped(spec.origin)
        if origin is None or not os.path.isfile(origin):
            return None
        locations = None
        if spec.submodule_search_locations is not None:
            locations = [self.mapped(p) or p for p in spec.submodule_search_locations]
        return importlib.util.spec_from_file_location(fullname, origin, submodule_search_locations=locations)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: overlay.py CONFIG.json", file=sys.stderr)
        return 2
    with open(args[0], encoding="utf-8") as handle:
        config = json.load(handle)
    os.chdir(config["cwd"])
    sys.path[:0] = [config["cwd"], *config["path"]]
    if config["path"]:
        os.environ["PYTHONPATH"] = os.pathsep.join(config["path"])
    else:
        os.environ.pop("PYTHONPATH", None)
    sys.dont_write_bytecode = True
    sys.meta_path.insert(0, _FromCopy(config["root"], config["copy"]))
    from elmo_conformance.conformance import serve

    sys.argv = [str(serve.__file__), config["impl"]]
    return serve.main([config["impl"]])


if __name__ == "__main__":
    sys.exit(main())
