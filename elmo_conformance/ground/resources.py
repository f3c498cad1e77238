"""Where the suite's files are, found through ``importlib.resources`` in a checkout and installed.

The one import name ``elmo_conformance`` holds five subpackages: ``spec`` (the prose and the
machine-readable parts of the spec, as package data), ``fixtures`` (the data and the manifest, as
package data), ``reference``, ``adapters`` and ``conformance``. In a checkout they are the
repository's top-level folders, which ``elmo_conformance/__init__.py`` puts on the package's search
path; in an installed wheel they are folders inside the package. Every file is found from its own
subpackage (``files("elmo_conformance.spec") / "protocol.json"``), so the same code reads both
layouts, and the manifest's and the reports' repository-relative names (``spec/schemas/...``,
``fixtures/generate/...``) map onto either with ``project_path`` and back with ``project_relative``.

The folders are returned as ``pathlib.Path``: for a normal install (a wheel unpacked into
site-packages, an editable install, a checkout) ``files()`` returns the folder on disk, and the
harness hands these paths to pytest and to child processes. A zipped install (a zipapp, a wheel
imported from its zip) is not supported, and is refused with one line saying so.
"""

from __future__ import annotations

import json
import os
from functools import cache
from importlib.resources import files
from pathlib import Path

NAMESPACE = "elmo_conformance"
SUBPACKAGES = ("spec", "fixtures", "reference", "adapters", "conformance")
# The pytest plugin's module, and the name its pytest11 entry point is registered under: the same
# name, so that pytest registers the plugin once whichever way reaches it first (the entry point of
# an installed package, `-p`, or conformance/conftest.py's `pytest_plugins` in a checkout).
PLUGIN = "elmo_conformance.conformance.plugin"
# The report pages' plugin (elmo_conformance/pages/plugin.py), registered the same way.
PAGES_PLUGIN = "elmo_conformance.pages.plugin"
# The entry-point group through which an installed package registers adapters by name (§11).
ADAPTERS_GROUP = "elmo_conformance.adapters"
# The pytest configuration the suite runs with in place of whatever the user's directory holds.
SUITE_INI = "suite.ini"
# Set by the console command for its pytest process: a file the plugin writes when pytest has
# finished (pytest_unconfigure), after which the process has only to exit.
FINISHED_ENV = "ELMO_CONFORMANCE_FINISHED"
# Set by the entry point (elmo_conformance.runner.running) for its pytest process: an id that only this
# run knows, stamped into every report the run writes, and a private path where the run writes its
# own copy of the report, by which the run is judged (a --report path may be stale, read-only, or
# written by another run at the same time).
RUN_ID_ENV = "ELMO_CONFORMANCE_RUN_ID"
RUN_REPORT_ENV = "ELMO_CONFORMANCE_RUN_REPORT"


@cache
def package_dir(subpackage: str = "") -> Path:
    """The folder of ``elmo_conformance.<subpackage>`` (of ``elmo_conformance`` itself for "")."""
    name = f"{NAMESPACE}.{subpackage}" if subpackage else NAMESPACE
    folder = files(name)
    if not isinstance(folder, Path):
        raise RuntimeError(
            f"{name} is not installed as files on disk ({type(folder).__name__}): "
            "install the wheel with pip rather than importing it from a zip"
        )
    return folder.resolve()


def project_path(relative: str) -> Path:
    """A file named relative to the repository root, as the manifest and the reports name it
    (``spec/schemas/manifest.schema.json``, ``fixtures/generate/probe.py``,
    ``elmo_conformance/__init__.py``), in this copy's layout."""
    top, _, rest = relative.partition("/")
    if top in SUBPACKAGES:
        return package_dir(top) / rest
    if top == NAMESPACE:
        return package_dir() / rest
    raise ValueError(f"{relative}: not a file of the suite (it starts with none of {', '.join(SUBPACKAGES)})")


def project_relative(path: str | os.PathLike[str]) -> str:
    """The inverse of ``project_path``: a file of this copy, named relative to the repository
    root with '/'. ValueError for a file outside the suite."""
    path = Path(path).resolve()
    for top in SUBPACKAGES:
        base = package_dir(top)
        if path == base or base in path.parents:
            return "/".join([top, *path.relative_to(base).parts])
    base = package_dir()
    if base in path.parents:
        return "/".join([NAMESPACE, *path.relative_to(base).parts])
    raise ValueError(f"{path}: not a file of the suite")


@cache
def checkout_root() -> Path | None:
    """The repository root when this copy is a checkout (an editable install of one included):
    the subpackages are then top-level folders beside ``elmo_conformance/``. None when installed."""
    root = package_dir().parent
    return root if all(package_dir(top).parent == root for top in ("spec", "fixtures", "conformance")) else None


def project_root() -> Path:
    """The folder that holds the subpackages' folders: the repository root in a checkout, the
    package's folder when installed. The suite's pytest rootdir: test ids read
    ``conformance/test_bilm.py::...`` in both."""
    return package_dir("conformance").parent


def suite_dir() -> Path:
    """The conformance suite: the folder pytest collects."""
    return package_dir("conformance")


def pytest_config_args() -> list[str]:
    """pytest's configuration for a run of the suite, whatever the working directory: the
    configuration file shipped with the suite in place of the user's (their pytest.ini or
    pyproject's addopts, plugins and markers are not the suite's), and the rootdir that gives the
    suite's test ids."""
    return ["-c", str(suite_dir() / SUITE_INI), "--rootdir", str(project_root())]


def child_environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a child process that imports this copy of the suite: in a checkout,
    its root goes first on PYTHONPATH (an installed package is found without it)."""
    env = dict(os.environ if env is None else env)
    root = checkout_root()
    if root is not None:
        given = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys([str(root), *given]))
    return env


# What suite_digest leaves out: bytecode caches, and the C adapter's build cache in a checkout
# (adapters/c/build/, written by any run of `--impl c`; installed, it is under ~/.cache).
DIGEST_SKIPPED = frozenset({"__pycache__", "build"})


def suite_digest() -> str:
    """The SHA-256 of the suite's installed files (every file of its package folders, by its
    repository-relative name and content; DIGEST_SKIPPED left out): the same for every
    install of one version, checkout or wheel, and different once a file is changed, added or
    removed. A batch compares it before and after each job (elmo_conformance/batch/jobs.py)."""
    import hashlib

    total = hashlib.sha256()
    for top in ("", *SUBPACKAGES):
        base = package_dir(top)
        name = top or NAMESPACE
        for path in sorted(base.rglob("*")):
            relative = path.relative_to(base)
            if DIGEST_SKIPPED & set(relative.parts) or path.suffix == ".pyc" or not path.is_file():
                continue
            if not top and relative.parts[0] in SUBPACKAGES:
                continue  # an installed wheel's subpackages, hashed under their own names
            total.update(f"{name}/{relative.as_posix()}\0".encode())
            total.update(hashlib.sha256(path.read_bytes()).digest())
    return total.hexdigest()


@cache
def spec_version() -> str:
    """The spec's version, ``spec_version`` in spec/protocol.json: every part of the spec
    (elmo.md, its JSON catalogs, the fixtures' manifest) carries the same one."""
    return json.loads(project_path("spec/protocol.json").read_text(encoding="utf-8"))["spec_version"]


@cache
def protocol_version() -> str:
    """The wire protocol's version (§15.4), ``protocol_version`` in spec/protocol.json."""
    return json.loads(project_path("spec/protocol.json").read_text(encoding="utf-8"))["protocol_version"]
