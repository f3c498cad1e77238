"""Entry points: `nox -s conformance -- --impl torch`, `nox -s tests`, `nox -s lint`."""

from __future__ import annotations

import nox

nox.options.sessions = ["lint", "tests"]
nox.options.reuse_existing_virtualenvs = True

REQUIREMENTS = ("-c", "constraints.txt", "-r", "requirements.txt")


def suite_args(posargs: list[str]) -> list[str]:
    """The whole suite unless the arguments name tests (the reproduce commands name one)."""
    names_tests = any(arg.startswith("conformance/") for arg in posargs)
    return list(posargs) if names_tests else ["conformance", *posargs]


@nox.session
def conformance(session: nox.Session) -> None:
    """Run the conformance suite: `nox -s conformance -- --impl torch` (pytest options pass through)."""
    session.install(*REQUIREMENTS)
    session.run("python", "-m", "pytest", *suite_args(session.posargs))


@nox.session
def tests(session: nox.Session) -> None:
    """The project's own tests, then the conformance suite for the numpy and torch adapters."""
    session.install(*REQUIREMENTS)
    session.run("python", "-m", "pytest", "tests", *session.posargs)
    session.run("python", "-m", "pytest", "conformance", "--impl", "numpy", "--impl", "torch", "-q")


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff")
    session.run("ruff", "check", ".")
