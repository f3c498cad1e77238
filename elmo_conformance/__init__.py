"""elmo-conformance: the spec, fixtures, reference, adapters and conformance harness for ELMo's
building blocks, under one import name.

Installed, the subpackages live inside this package: ``elmo_conformance.spec`` (the spec's
machine-readable parts, as package data), ``elmo_conformance.fixtures``,
``elmo_conformance.reference``, ``elmo_conformance.adapters`` and
``elmo_conformance.conformance``. In a checkout of the repository they are the top-level folders
``spec/``, ``fixtures/``, ``reference/``, ``adapters/`` and ``conformance/``: this file then adds
the repository root to the package's search path, so that the same import names work in both.

The tools above the harness are packages of their own in this folder (``ground``, ``processes``,
``runner``, ``pages``, ``executor``, ``mutation``, ``maintain``, ``batch``, ``cli``); the order in
which they may import each other is docs/development.md's "Layers", checked in ``nox -s lint``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from elmo_conformance.ground.version import __version__

_HERE = Path(__file__).resolve().parent
_CHECKOUT = _HERE.parent
if not (_HERE / "conformance").is_dir() and (_CHECKOUT / "conformance" / "plugin.py").is_file():
    __path__.append(str(_CHECKOUT))  # noqa: F821  (a package's __path__ is defined by the import system)


# The one way to run the suite (elmo_conformance/runner/running.py), imported when first asked for
# (PEP 562): importing a subpackage (the reference, the harness) does not import the runner.
if TYPE_CHECKING:
    from elmo_conformance.runner.running import RunResult, TestOutcome, run

_RUNNER = ("RunResult", "TestOutcome", "run")


def __getattr__(name: str) -> Any:
    if name in _RUNNER:
        from elmo_conformance.runner import running

        return getattr(running, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["RunResult", "TestOutcome", "__version__", "run"]
