"""pytest's command line for a run of the suite: the suite's own configuration, its folder, and the
caller's arguments with the suite's test ids pointed at the suite wherever it is installed.

Used by the one entry point (``elmo_conformance.runner.running.run``); nothing else builds a pytest
command line for the suite.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from elmo_conformance.ground.resources import project_root, pytest_config_args, suite_dir

# The user's own pytest configuration, given in place of the suite's.
OWN_CONFIG = ("-c", "--config-file", "--rootdir")
# Options whose next argument is their value, never a test to locate (pytest's and the suite's).
VALUE_OPTIONS = {
    *("-k", "-m", "-p", "-c", "-o", "-r", "-W", "-n", "--deselect", "--ignore", "--ignore-glob", "--rootdir"),
    *("--config-file", "--confcutdir", "--basetemp", "--override-ini", "--maxfail", "--tb", "--durations"),
    *("--junitxml", "--junit-xml", "--log-file", "--log-level", "--capture", "--import-mode", "--pythonwarnings"),
    *("--hypothesis-profile", "--hypothesis-seed", "--impl", "--dtype", "--report", "--pass-table", "--html"),
    *("--conformance-html", "--xfails-file", "--mutant", "--call-timeout", "--sandbox-limit"),
}
# Options after which pytest prints something and runs no test: no report to check.
INFORMATION = frozenset(
    {"-h", "--help", "--version", "-V", "--fixtures", "--funcargs", "--markers", "--fixtures-per-test"}
)


def option_value(args: Sequence[str], option: str) -> str | None:
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
    located: list[str] = []
    names_tests = "--pyargs" in args
    for i, arg in enumerate(args):
        target, sep, rest = arg.partition("::")
        is_value = i > 0 and args[i - 1] in VALUE_OPTIONS  # `-k conformance`, `--deselect ID`: as given
        is_test = (
            not arg.startswith("-")
            and not is_value
            and bool(sep or target.endswith(".py") or target.rstrip("/") == "conformance")
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
