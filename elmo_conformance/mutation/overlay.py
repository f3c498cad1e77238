"""Serve a Python implementation from a scratch copy of its project (spec §13.2).

    python .../overlay.py CONFIG.json

CONFIG (written by scratch.py) names the user's project root, its copy (one mutant written in
it), the working folder and import path a clean served run has, both mapped into the copy, and
the --impl argument. The process is then what the protocol server of a clean run is
(`python -m elmo_conformance.adapters.wire.server IMPL`: the working folder first on the import path,
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

import json  # noqa: E402
import os  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: overlay.py CONFIG.json", file=sys.stderr)
        return 2
    impl = setup(args[0])
    from elmo_conformance.adapters.wire import server

    sys.argv = [str(server.__file__), impl]
    return server.main([impl])


def setup(config_file: str) -> str:
    """This process as a served run from the copy has it (its working folder, import path and
    import hook); returns the --impl argument to serve. zygote.py's forks call it too."""
    with open(config_file, encoding="utf-8") as handle:
        config = json.load(handle)
    os.chdir(config["cwd"])
    sys.path[:0] = [config["cwd"], *config["path"]]
    if config["path"]:
        os.environ["PYTHONPATH"] = os.pathsep.join(config["path"])
    else:
        os.environ.pop("PYTHONPATH", None)
    sys.dont_write_bytecode = True
    from elmo_conformance.mutation.copies import FromCopy

    sys.meta_path.insert(0, FromCopy(config["root"], config["copy"]))
    return str(config["impl"])


if __name__ == "__main__":
    sys.exit(main())
