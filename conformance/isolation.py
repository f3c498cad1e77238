"""The isolation guard (spec §11.1): Python adapters run in a child process unless --in-process;
an abandoned call fails its test at once; at the end every adapter process is stopped, and a
`pytest` run whose in-process adapter left non-daemon threads running exits without them."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from elmo_conformance.conformance.case import CallAbandoned


class Guard:
    """What the harness does about adapters that outlive a call: it runs Python adapters in a
    child process unless --in-process (or --pdb, --trace) is given; it fails a test whose call was
    abandoned (timed out, or its process died) at once, without letting Hypothesis retry it; at
    the end it stops every adapter process, and, in a `pytest` run whose in-process adapter left
    non-daemon threads running, exits without waiting for them (Python would wait forever)."""

    def __init__(self, config: pytest.Config) -> None:
        self.in_process = bool(
            config.getoption("in_process", False)
            or config.getoption("usepdb", False)
            or config.getoption("trace", False)
        )
        self.threads = set(threading.enumerate())
        self.exitstatus = 0

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item):
        try:
            return (yield)
        except CallAbandoned as exc:
            message = str(exc)
        pytest.fail(message, pytrace=False)  # outside the except block: no exception chain

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.exitstatus = int(exitstatus)

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        from elmo_conformance.adapters.loading import stop_processes
        from elmo_conformance.adapters.wire.client import stop_all

        stop_processes()
        stop_all()
        leaked = [t for t in threading.enumerate() if t not in self.threads and t.is_alive() and not t.daemon]
        if not leaked or not _pytest_is_the_program():
            return
        names = ", ".join(repr(t.name) for t in leaked[:5])
        sys.stdout.flush()
        sys.stderr.write(
            f"elmo-conformance: the adapter left {len(leaked)} non-daemon thread(s) running ({names}); "
            f"exiting with status {self.exitstatus} without waiting for them\n"
        )
        sys.stderr.flush()
        os._exit(self.exitstatus)


def _pytest_is_the_program() -> bool:
    """True in `pytest ...` and `python -m pytest ...`, not when a program calls pytest.main."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    program = Path(sys.argv[0]).name if sys.argv else ""
    return getattr(spec, "name", None) in ("pytest", "pytest.__main__") or program in ("pytest", "py.test")
