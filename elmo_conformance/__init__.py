"""elmo-conformance: the spec, fixtures, reference, adapters and conformance harness for ELMo's
building blocks, under one import name.

Installed, the subpackages live inside this package: ``elmo_conformance.spec`` (the spec's
machine-readable parts, as package data), ``elmo_conformance.fixtures``,
``elmo_conformance.reference``, ``elmo_conformance.adapters`` and
``elmo_conformance.conformance``. In a checkout of the repository they are the top-level folders
``spec/``, ``fixtures/``, ``reference/``, ``adapters/`` and ``conformance/``: this file then adds
the repository root to the package's search path, so that the same import names work in both.
"""

from __future__ import annotations

from pathlib import Path

__version__ = "1.1.0"

_HERE = Path(__file__).resolve().parent
_CHECKOUT = _HERE.parent
if not (_HERE / "conformance").is_dir() and (_CHECKOUT / "conformance" / "plugin.py").is_file():
    __path__.append(str(_CHECKOUT))  # noqa: F821  (a package's __path__ is defined by the import system)


# The one way to run the suite (elmo_conformance/running.py), imported after the search path is set.
from elmo_conformance.running import RunResult, TestOutcome, run  # noqa: E402

__all__ = ["RunResult", "TestOutcome", "__version__", "run"]
