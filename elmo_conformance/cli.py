"""The console command `elmo-conformance` (also `python -m elmo_conformance`): the suite from any
directory, with the exit codes of the nox sessions, which are thin wrappers around it.

    elmo-conformance --impl mine.py [pytest options]     the conformance suite (the default)
    elmo-conformance mutants --impl mine.py ...          the declared mutants (spec §13)
    elmo-conformance mutate --impl mine.py ...           mutants generated from its own source (§13.2)
    elmo-conformance batch SUBMISSION ... --out DIR      a whole class of implementations
    elmo-conformance fixtures ...                        can the fixtures be trusted? (spec §12)
    elmo-conformance serve ARG                           an adapter behind the wire protocol (§15)
    elmo-conformance dashboard REPORT.json ...           one page of many runs' reports

The suite runs through the one entry point, `elmo_conformance.run` (elmo_conformance/runner/running.py): a
supervised pytest child process with the suite's own pytest configuration (`-c` the suite's
suite.ini, `--rootdir` its folder), so that neither the working directory's pytest configuration
nor its conftest.py reaches it. Its exit status is pytest's, except that a run never exits 0 unless
every collected test ran and this run's own report says so (elmo_conformance/runner/supervisor.py).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from elmo_conformance.ground.resources import protocol_version, spec_version
from elmo_conformance.ground.version import __version__
from elmo_conformance.runner.running import run
from elmo_conformance.runner.supervisor import NOT_FINISHED

__all__ = ["NOT_FINISHED", "main", "run_suite"]

USAGE = f"""\
elmo-conformance {__version__}: the conformance suite of the ELMo spec {{spec}}

usage:
  elmo-conformance [--impl ARG ...] [suite and pytest options] [TEST ...]
  elmo-conformance mutants [--impl ARG ...] [--mutant ID ...] [--fail-fast] [--out DIR] ...
  elmo-conformance mutate --impl ARG [--source PATH ...] [--build CMD] [--out DIR] ...
  elmo-conformance batch SUBMISSION ... --out DIR [--mutants none|declared|generated] [--scheduler ADDRESS]
  elmo-conformance fixtures [--skip CHECK ...] [--impl ARG] ...
  elmo-conformance serve ARG
  elmo-conformance dashboard REPORT.json ... [--mutants PATH] [--out PAGE.html]
  elmo-conformance --version

The suite (the default) checks each --impl ARG: a built-in name (numpy, torch, jax, cuda, c), an
installed adapter's name (entry point group elmo_conformance.adapters), a .py file that defines
`adapter`, package.module:attr, or 'cmd:PROGRAM ARGS'. Its options: --dtype, --report PATH,
--pass-table PATH, --html PATH, --xfails-file PATH, --mutant ID, --call-timeout S, --in-process;
any pytest option passes through (-k, -x, -q, ...); a TEST is a test id such as
'conformance/test_bilm.py::test_padding_never_leaks[mine-float64]'. `elmo-conformance suite --help`
lists every option. Each subcommand has its own --help.

exit status (the suite): 0 every collected test ran and passed and the report was written; 1 a
test failed; 2 interrupted; 3 the run did not finish (the pytest process ended early, was killed,
or left its report incomplete); 4 usage error or refused (an adapter that cannot be loaded,
untrustworthy fixtures); 5 no test collected.
"""


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] in (["-h"], ["--help"]):
        print(USAGE.format(spec=spec_version()), end="")
        return 0
    if args[:1] in (["--version"], ["-V"]):
        print(f"elmo-conformance {__version__} (spec {spec_version()}, wire protocol {protocol_version()})")
        return 0
    if args[:1] == ["suite"]:
        return run_suite(args[1:])
    if args and args[0] in COMMANDS:
        return COMMANDS[args[0]](args[1:])
    return run_suite(args)


# ------------------------------------------------------------------------------ subcommands


def _mutants(args: list[str]) -> int:
    from elmo_conformance.mutation.__main__ import main as mutants

    return mutants(args)


def _mutate(args: list[str]) -> int:
    from elmo_conformance.mutation.mutate import main as mutate

    return mutate(args)


def _fixtures(args: list[str]) -> int:
    from elmo_conformance.maintain.fixtures import main as fixtures

    return fixtures(args)


def _serve(args: list[str]) -> int:
    from elmo_conformance.adapters.wire.server import main as serve

    return serve(args)


def _dashboard(args: list[str]) -> int:
    from elmo_conformance.pages.__main__ import main as report

    return report(["dashboard", *args])


def _batch(args: list[str]) -> int:
    from elmo_conformance.batch import main as batch

    return batch(args)


COMMANDS: dict[str, Callable[[list[str]], int]] = {
    "batch": _batch,
    "mutants": _mutants,
    "mutate": _mutate,
    "fixtures": _fixtures,
    "serve": _serve,
    "dashboard": _dashboard,
}


# ------------------------------------------------------------------------------ the suite


def run_suite(args: list[str]) -> int:
    """The conformance suite through the one entry point (elmo_conformance.runner.running): its exit
    status, which is 0 only when this run's own report shows every collected test run and passed."""
    result = run(pytest_args=args)
    for note in result.notes:
        _say(note)
    return result.exit_status


def _say(line: str) -> None:
    sys.stdout.flush()
    print(f"elmo-conformance: {line}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
