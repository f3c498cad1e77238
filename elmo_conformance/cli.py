"""The console command `elmo-conformance` (also `python -m elmo_conformance`): the suite from any
directory, with the exit codes of the nox sessions, which are thin wrappers around it.

    elmo-conformance --impl mine.py [pytest options]     the conformance suite (the default)
    elmo-conformance mutants --impl mine.py ...          the mutation runner (spec §13)
    elmo-conformance fixtures ...                        can the fixtures be trusted? (spec §12)
    elmo-conformance serve ARG                           an adapter behind the wire protocol (§15)
    elmo-conformance dashboard REPORT.json ...           one page of many runs' reports

The suite runs as a pytest child process with the suite's own pytest configuration (`-c` the
suite's suite.ini, `--rootdir` its folder), so that neither the working directory's pytest
configuration nor its conftest.py reaches it. Its exit status is pytest's, except that a run never
exits 0 unless every collected test ran and the report was written: the child always writes a
`--report` (a temporary one if none is given), and the command reads it back.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from elmo_conformance import __version__
from elmo_conformance.resources import (
    FINISHED_ENV,
    INTERNAL_REPORT_ENV,
    child_environment,
    project_root,
    protocol_version,
    pytest_config_args,
    spec_version,
    suite_dir,
)

# The run did not finish: the pytest process ended early or was killed, or left a report that is
# missing, incomplete, or short of outcomes. pytest's own "internal error" status.
NOT_FINISHED = 3
# Once pytest has finished, how long its process may take to exit before it is stopped (a thread
# an adapter left running keeps a Python process alive), and how long after a complete report
# when pytest never says it finished.
EXIT_GRACE_S = 5.0
REPORT_GRACE_S = 120.0
# The user's own pytest configuration, given in place of the suite's.
OWN_CONFIG = ("-c", "--config-file", "--rootdir")
# Options whose next argument is their value, never a test to locate (pytest's and the suite's).
VALUE_OPTIONS = {
    *("-k", "-m", "-p", "-c", "-o", "-r", "-W", "--deselect", "--ignore", "--ignore-glob", "--rootdir"),
    *("--config-file", "--confcutdir", "--basetemp", "--override-ini", "--maxfail", "--tb", "--durations"),
    *("--junitxml", "--junit-xml", "--log-file", "--log-level", "--capture", "--import-mode", "--pythonwarnings"),
    *("--hypothesis-profile", "--hypothesis-seed", "--impl", "--dtype", "--report", "--pass-table", "--html"),
    *("--conformance-html", "--xfails-file", "--mutant", "--call-timeout"),
}
# Options after which pytest prints something and runs no test: no report to check.
INFORMATION = {"-h", "--help", "--version", "-V", "--fixtures", "--funcargs", "--markers", "--fixtures-per-test"}

USAGE = f"""\
elmo-conformance {__version__}: the conformance suite of the ELMo spec {{spec}}

usage:
  elmo-conformance [--impl ARG ...] [suite and pytest options] [TEST ...]
  elmo-conformance mutants [--impl ARG ...] [--mutant ID ...] [--fail-fast] [--out DIR] ...
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
    from elmo_conformance.conformance.mutants.__main__ import main as mutants

    return mutants(args)


def _fixtures(args: list[str]) -> int:
    from elmo_conformance.fixtures.__main__ import main as fixtures

    return fixtures(args)


def _serve(args: list[str]) -> int:
    from elmo_conformance.conformance.serve import main as serve

    return serve(args)


def _dashboard(args: list[str]) -> int:
    from elmo_conformance.conformance.report.__main__ import main as report

    return report(["dashboard", *args])


COMMANDS: dict[str, Callable[[list[str]], int]] = {
    "mutants": _mutants,
    "fixtures": _fixtures,
    "serve": _serve,
    "dashboard": _dashboard,
}


# ------------------------------------------------------------------------------ the suite


def _option_value(args: Sequence[str], option: str) -> str | None:
    """The last value of `option` among pytest arguments (`--report PATH` or `--report=PATH`)."""
    found = None
    for i, arg in enumerate(args):
        if arg == option and i + 1 < len(args):
            found = args[i + 1]
        elif arg.startswith(option + "="):
            found = arg[len(option) + 1 :]
    return found


def suite_arguments(args: Sequence[str], cwd: Path | None = None) -> list[str]:
    """pytest's arguments for a run of the suite: the suite's configuration (unless the user gives
    their own with -c or --rootdir), the suite's folder unless the arguments name its tests, and the
    user's arguments, with the suite's test ids ('conformance/test_bilm.py::...', as reproduce
    commands print them) pointed at the suite wherever it is installed."""
    cwd = Path.cwd() if cwd is None else cwd
    root, suite = project_root(), suite_dir()
    located, names_tests = [], "--pyargs" in args
    for i, arg in enumerate(args):
        target, sep, rest = arg.partition("::")
        is_value = i > 0 and args[i - 1] in VALUE_OPTIONS  # `-k conformance`, `--deselect ID`: as given
        is_test = (
            not arg.startswith("-")
            and not is_value
            and (sep or target.endswith(".py") or target.rstrip("/") == "conformance")
        )
        if is_test and target.startswith("conformance") and not (cwd / target).exists() and (root / target).exists():
            arg = str(root / target) + sep + rest
            target = str(root / target)
        if is_test:
            path = (cwd / target).resolve()
            names_tests = names_tests or path == suite or suite in path.parents
        located.append(arg)
    own_config = any(a in OWN_CONFIG or a.startswith(tuple(f"{o}=" for o in OWN_CONFIG)) for a in args)
    return [*([] if own_config else pytest_config_args()), *([] if names_tests else [str(suite)]), *located]


def run_suite(args: list[str]) -> int:
    """The conformance suite in a pytest child process; its exit status, checked against its report."""
    with tempfile.TemporaryDirectory(prefix="elmo-conformance-") as tmp:
        given = _option_value(args, "--report")
        report = Path(given) if given else Path(tmp) / "report.json"
        extra = [] if given else ["--report", str(report)]
        finished = Path(tmp) / "finished"
        env = child_environment()
        env[FINISHED_ENV] = str(finished)
        if not given:
            env[INTERNAL_REPORT_ENV] = str(report)
        command = [sys.executable, "-m", "pytest", *suite_arguments(extra + args)]
        if INFORMATION & set(args):
            return subprocess.run(command, env=env).returncode
        return supervise(command, env, report, finished)


def _read_report(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """The report, or None and why not."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, f"it wrote no report ({path})"
    except OSError as exc:
        return None, f"its report {path} cannot be read: {exc.strerror or exc}"
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None, f"its report {path} is not JSON (cut off?)"
    if not isinstance(data, dict):
        return None, f"its report {path} is not a report"
    return data, None


class _Watch:
    """Whether a report file says its run is complete, read again only when the file changed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seen: tuple[int, int] | None = None
        self.complete = False

    def __call__(self) -> bool:
        try:
            info = self.path.stat()
        except OSError:
            return False
        if (info.st_mtime_ns, info.st_size) != self.seen:
            self.seen = (info.st_mtime_ns, info.st_size)
            data, _ = _read_report(self.path)
            self.complete = bool(data and data.get("complete") is True)
        return self.complete


def problem(report: dict[str, Any] | None, why: str | None) -> str | None:
    """Why a report does not show a finished run, or None when it does: complete, and an
    outcome for every collected test."""
    if report is None:
        return why
    if report.get("complete") is not True:
        return "its report says the run did not finish (the process ended early: os._exit, a crash, a kill?)"
    if report.get("refused"):
        return f"it refused to run: {report['refused']}"
    collected = report.get("collected")
    if not isinstance(collected, int):
        return "its report does not record how many tests were collected"
    ran = len({test.get("nodeid") for test in report.get("tests", []) if isinstance(test, dict)})
    if ran < collected:
        return f"its report has outcomes for {ran} of the {collected} tests collected"
    return None


def supervise(
    command: list[str],
    env: dict[str, str],
    report: Path,
    finished: Path,
    exit_grace: float = EXIT_GRACE_S,
    report_grace: float = REPORT_GRACE_S,
) -> int:
    """Run the pytest `command` and return its exit status, made 3 (NOT_FINISHED) with a one-line
    reason when it exits 0 although the run did not finish. A process that has finished (it wrote
    `finished`, or a complete report) but does not exit is stopped after a grace period, and the
    report's exit status is used."""
    process = subprocess.Popen(command, env=env)
    complete = _Watch(report)
    since: dict[str, float] = {}  # "finished", "complete" -> when first seen
    stopped_after: float | None = None
    try:
        while True:
            try:
                code = process.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                pass
            now = time.monotonic()
            if finished.exists():
                since.setdefault("finished", now)
            if complete():
                since.setdefault("complete", now)
            for what, grace in (("finished", exit_grace), ("complete", report_grace)):
                if what in since and now - since[what] > grace:
                    stopped_after = grace
            if stopped_after is not None:
                process.kill()
                code = process.wait()
                break
    except KeyboardInterrupt:  # the child got the same SIGINT: let it stop and write its report
        try:
            code = process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            code = process.wait()
    data, why = _read_report(report)
    if stopped_after is not None:
        status = data.get("exit_status") if data else None
        code = status if isinstance(status, int) else NOT_FINISHED
        _say(
            "the pytest process had finished but did not exit (a thread an adapter left running?); "
            f"stopped it after {stopped_after:g} s; exit status {code}, from its report"
        )
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        _say(f"the run did not finish: the pytest process was killed by {name}")
        return NOT_FINISHED
    why = problem(data, why)
    if code == 0 and why:
        _say(f"the run did not finish although pytest exited 0: {why}")
        return NOT_FINISHED
    if code == 0 and data and data.get("exit_status") not in (0, None):
        _say(f"pytest exited 0 but its report records exit status {data['exit_status']}")
        return int(data["exit_status"])
    return code


def _say(line: str) -> None:
    sys.stdout.flush()
    print(f"elmo-conformance: {line}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
