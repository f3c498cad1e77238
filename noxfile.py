"""Entry points: `nox -s conformance -- --impl torch`, `nox -s tests`, `nox -s lint`, `nox -s fixtures`,
`nox -s dashboard -- REPORT.json ...`.

The sessions that run the suite, the mutation runner, the fixtures checks and the dashboard are thin
wrappers around the console command (`python -m elmo_conformance`, installed as `elmo-conformance`):
the same options, the same exit codes, in an environment with the pinned requirements."""

from __future__ import annotations

import os
import tempfile

import nox

nox.options.sessions = ["lint", "tests"]
nox.options.reuse_existing_virtualenvs = True

REQUIREMENTS = ("-c", "constraints.txt", "-r", "requirements.txt")
# The project's tests start a few hundred Python processes (suites, served adapters, workers): with
# bytecode caches written, each imports the project's modules compiled (and, for pytest's plugin,
# assertion-rewritten) once rather than from source, about 1 CPU-second less per suite run. An
# environment that sets PYTHONDONTWRITEBYTECODE would pay it in every process.
WRITE_BYTECODE = {"PYTHONDONTWRITEBYTECODE": ""}
# pip compiles every module it installs (torch's and jax's thousands) unless told not to; the test
# runs write the caches of the modules they import instead. The install of `nox -s tests` took
# 86 s with compiling and 42 s without on a 2-core machine.
NO_COMPILE = "--no-compile"
# What `nox -s tests` selects; CI then runs `nox -s tests -- -m integration` (the last -m wins).
FAST_FEEDBACK = "not full_parity and not integration"


def requirements(without: tuple[str, ...] = ()) -> list[str]:
    """requirements.txt's requirements, less the named projects."""
    lines = [line.split("#")[0].strip() for line in open("requirements.txt", encoding="utf-8")]
    named = [line for line in lines if line]
    return [
        line
        for line in named
        if not any(line.startswith(name) and not (line + " ")[len(name)].isalnum() for name in without)
    ]


def impls_asked(posargs: list[str]) -> list[str]:
    """The --impl values among the arguments."""
    found = [value for option, value in zip(posargs, posargs[1:]) if option == "--impl"]
    return found + [arg.removeprefix("--impl=") for arg in posargs if arg.startswith("--impl=")]


def optional_packages(posargs: list[str]) -> list[str]:
    """jax is an optional extra: installed for `--impl jax`, and with no --impl (every adapter)."""
    impls = impls_asked(posargs)
    return ["jax"] if not impls or "jax" in impls else []


@nox.session
def conformance(session: nox.Session) -> None:
    """Run the conformance suite: `nox -s conformance -- --impl torch` (pytest options pass through).

    Without --impl every available adapter runs; the pass table is written to reports/pass-table.json,
    the JSON report to reports/conformance.json and its page to reports/conformance.html.
    """
    session.install(*REQUIREMENTS, *optional_packages(session.posargs))
    session.run(
        "python",
        "-m",
        "elmo_conformance",
        *("--pass-table", "reports/pass-table.json", "--report", "reports/conformance.json"),
        *session.posargs,
    )


@nox.session
def dashboard(session: nox.Session) -> None:
    """One page of many runs: `nox -s dashboard -- a.json b.json [--mutants mutation-report.json] [--out PAGE]`.

    The arguments are the --report JSON files of conformance runs (default out: reports/dashboard.html).
    """
    session.install(*REQUIREMENTS)
    args = session.posargs or ["reports/conformance.json"]
    session.run("python", "-m", "elmo_conformance", "dashboard", *args)


@nox.session
def tests(session: nox.Session) -> None:
    """The project's own tests with pytest-xdist: the harness's self-tests, the whole suite on jax
    and c, the §13.1 gates of numpy's and C's mutants, and numpy's full parity of the suite
    in-process and through the protocol (the mutation matrices and torch's full parity: `nox -s
    parity`). The tests marked `integration` (the wheel in a fresh virtual environment, a Dask
    cluster, headless Chromium, the sanitizers) run with `nox -s tests -- -m integration`, as CI
    does: pytest takes the last -m it is given."""
    session.install(NO_COMPILE, *REQUIREMENTS, "jax")
    # One worker more than cores: many tests wait on a process (a deadline, a hang, a build) with
    # a core idle. On 2 cores, 3 workers took 6 min 42 s and 2 workers 7 min 39 s, back to back.
    # --dist loadgroup: the tests that share one run (tests/conftest.py) run on one worker.
    workers = str((os.cpu_count() or 1) + 1)
    command = ("python", "-m", "pytest", "tests", "-n", workers, "--dist", "loadgroup", "-m", FAST_FEEDBACK)
    with tempfile.TemporaryDirectory(prefix="elmo-jax-cache-") as jax_cache:  # outside the checkout
        session.run(*command, *session.posargs, env={**WRITE_BYTECODE, **jax_compilation_cache(jax_cache)})


def jax_compilation_cache(folder: str) -> dict[str, str]:
    """One XLA compilation cache on disk, in `folder`, for a run's processes: a program that the
    jax suite, the jax adapter's tests or its mutants compiled is loaded by the others (the jax
    tests took 105 CPU-seconds without it and 76 with it, back to back)."""
    return {
        "JAX_COMPILATION_CACHE_DIR": folder,
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
    }


@nox.session
def parity(session: nox.Session) -> None:
    """The full parity passes (tests/test_parity.py): torch's whole suite, and numpy's and torch's
    mutation matrices with every killer of every mutant, in-process and through the protocol server,
    with the same verdicts (minutes; `nox -s tests` runs a cheaper check of each)."""
    session.install(*REQUIREMENTS)
    session.run(
        "python", "-m", "pytest", "tests/test_parity.py", "-m", "full_parity", *session.posargs, env=WRITE_BYTECODE
    )


@nox.session
def sanitize(session: nox.Session) -> None:
    """The C implementation under AddressSanitizer and UBSan, one full conformance run (both dtypes)."""
    session.install(*REQUIREMENTS)
    session.run("python", "-m", "elmo_conformance.maintain.sanitize", "-q", *session.posargs)


@nox.session
def mutants(session: nox.Session) -> None:
    """Mutation testing (spec §13): `nox -s mutants -- --impl torch`; reports in reports/mutants/ (`-- --help`)."""
    session.install(*REQUIREMENTS, *optional_packages(session.posargs))
    session.run("python", "-m", "elmo_conformance", "mutants", *session.posargs)


@nox.session
def mutate(session: nox.Session) -> None:
    """Mutants generated from an implementation's source (spec §13.2): `nox -s mutate -- --impl mine.py`."""
    session.install(*REQUIREMENTS, *optional_packages(session.posargs))
    session.run("python", "-m", "elmo_conformance", "mutate", *session.posargs)


@nox.session
def batch(session: nox.Session) -> None:
    """A class of implementations on Dask workers: `nox -s batch -- SUBMISSION... --out reports/batch`
    (`--scheduler tcp://HOST:PORT` for a cluster, `--mutants declared`; `-- --help`)."""
    session.install(*REQUIREMENTS)
    session.run("python", "-m", "elmo_conformance", "batch", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks, not part of `tests`: writes reports/bench.json and reports/bench.md (options: `-- --help`)."""
    session.install(*REQUIREMENTS, "jax", "scikit-learn", "pytest-xdist")  # every adapter, and the rivals
    session.run("python", "-m", "bench", *session.posargs)


@nox.session
def fixtures(session: nox.Session) -> None:
    """Can the fixtures be trusted? `nox -s fixtures` validates; `-- --regenerate` rewrites (fixtures/README.md)."""
    session.install(*REQUIREMENTS)
    session.run("python", "-m", "elmo_conformance", "fixtures", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check, ruff format --check and mypy (scripts/typecheck.py), at the versions constraints.txt pins."""
    session.install(NO_COMPILE, "-c", "constraints.txt", "ruff", "mypy")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    # mypy reads the types of what the suite imports, but for torch and jax (pyproject.toml's
    # [tool.mypy] treats them as untyped): CI then installs neither twice.
    session.install(NO_COMPILE, "-c", "constraints.txt", *requirements(without=("torch",)))
    session.run("python", "scripts/typecheck.py")
    # The layer order (pyproject.toml's [tool.importlinter], docs/development.md): imports run downward.
    session.run("python", "scripts/layers.py")
