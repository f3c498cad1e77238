"""Serve a Python adapter with one of its source files replaced by a mutated copy (spec §13.2).

    python .../overlay.py --path DIR... --file ORIGINAL MUTATED -- IMPL

The mutated copy lives in the run's scratch folder; the user's file is only read. An import
hook finds every module as usual and, for the module whose file is ORIGINAL, compiles MUTATED
instead (keeping ORIGINAL as its `__file__`, and writing no bytecode), so a single file, a
module of a multi-file package or a module of an installed package are mutated alike. IMPL is the
--impl argument; a .py adapter file that is ORIGINAL itself is imported from MUTATED. Then the
protocol server (conformance/serve.py) serves it: the harness, the oracle included, stays clean in
the process that runs the tests.

Run as a script (not with -m), so that the import path can be set before the package is imported.
"""

from __future__ import annotations

import sys

if sys.path and sys.path[0].rstrip("/").endswith("mutants"):
    del sys.path[0]  # this folder has an html.py: it must not shadow the standard library's

import argparse  # noqa: E402
import importlib.abc  # noqa: E402
import importlib.machinery  # noqa: E402
import os  # noqa: E402


class _MutatedLoader(importlib.abc.SourceLoader):
    def __init__(self, fullname: str, original: str, mutated: str) -> None:
        self.fullname, self.original, self.mutated = fullname, original, mutated

    def get_filename(self, fullname: str) -> str:
        return self.original

    def get_data(self, path: str) -> bytes:
        if os.path.realpath(path) == os.path.realpath(self.original):
            with open(self.mutated, "rb") as handle:
                return handle.read()
        with open(path, "rb") as handle:
            return handle.read()


class _Overlay(importlib.abc.MetaPathFinder):
    def __init__(self, files: dict[str, str]) -> None:
        self.files = {os.path.realpath(original): mutated for original, mutated in files.items()}

    def find_spec(self, fullname, path, target=None):  # noqa: ANN001, ANN201
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not spec.origin or os.path.realpath(spec.origin) not in self.files:
            return None
        origin = os.path.realpath(spec.origin)
        loader = _MutatedLoader(fullname, spec.origin, self.files[origin])
        return importlib.util.spec_from_file_location(
            fullname, spec.origin, loader=loader, submodule_search_locations=spec.submodule_search_locations
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="overlay.py", description=__doc__.splitlines()[0])
    parser.add_argument("--path", action="append", default=[], help="prepended to the import path")
    parser.add_argument("--file", nargs=2, action="append", default=[], metavar=("ORIGINAL", "MUTATED"))
    parser.add_argument("impl")
    args = parser.parse_args(argv)
    sys.path[:0] = args.path
    sys.dont_write_bytecode = True
    import importlib.util  # noqa: F401  (spec_from_file_location above)

    files = dict(args.file)
    sys.meta_path.insert(0, _Overlay(files))
    impl = args.impl
    for original, mutated in files.items():
        if impl.endswith(".py") and os.path.exists(impl) and os.path.realpath(impl) == os.path.realpath(original):
            impl = mutated
    from elmo_conformance.conformance.serve import main as serve

    return serve([impl])


if __name__ == "__main__":
    sys.exit(main())
