"""A Dask client on an embedded cluster or an existing one, one code path for both: the
``LocalCluster`` of worker processes on 127.0.0.1 that a command starts by default, or a cluster
named by ``--scheduler ADDRESS`` or ``--scheduler-file PATH`` (`add_options`: the same options,
spelling and validation for `elmo-conformance batch` and `elmo-conformance mutate`).

The suite's version is checked on the scheduler and on every worker when the client connects: the
scheduler unpickles the jobs and the workers run them, so both need this elmo-conformance.
An address that is not one, a scheduler file that is not there, a cluster that cannot be reached,
one with no worker, or one with another version is an ExecutorError that says which.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

# What `client.run` evaluates on each worker and the scheduler: the suite's version there, or why
# it cannot be imported. A builtin (eval) with a string, so that nothing of this package has to be
# unpickled there for the check itself.
VERSION_PROBE = (
    "(lambda il: (lambda spec: __import__('elmo_conformance').__version__ if spec else "
    "'not installed')(il.util.find_spec('elmo_conformance')))(__import__('importlib.util'))"
)
NO_WORKERS_S = 120.0  # a cluster with no worker this long cannot run the jobs
SCHEMES = ("tcp", "tls", "ws", "wss", "ucx", "inproc")  # Dask's comm protocols
_HOST_PORT = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)(:(\d{1,5}))?$")


class ExecutorError(RuntimeError):
    """The jobs cannot run on this cluster (cannot connect, another suite version, no workers)."""


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def scheduler_address(text: str) -> str:
    """`text` when it is a Dask scheduler's address, SCHEME://HOST:PORT or HOST:PORT (SCHEME one of
    SCHEMES), else a ValueError that says what was expected."""
    expected = f"a Dask scheduler's address, tcp://HOST:PORT (or {', '.join(s + '://' for s in SCHEMES[1:])})"
    scheme, sep, rest = text.strip().rpartition("://")
    found = _HOST_PORT.match(rest) if rest else None
    port = found.group(3) if found else None
    if (
        not text.strip()
        or (sep and scheme not in SCHEMES)
        or found is None
        or (port is not None and not 0 < int(port) < 65536)
    ):
        raise ValueError(f"expected {expected}, got {text!r}")
    return text.strip()


def scheduler_file(text: str) -> str:
    """`text` when it names a readable file (the one `dask scheduler --scheduler-file` writes)."""
    path = Path(text)
    if not path.is_file():
        raise ValueError(
            f"expected the file a Dask scheduler writes (dask scheduler --scheduler-file), no such file: {text}"
        )
    return text


def _argparse(check: Callable[[str], str]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        try:
            return check(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = check.__name__
    return parse


def add_options(parser: argparse.ArgumentParser, what: str = "the jobs") -> None:
    """--scheduler ADDRESS and --scheduler-file PATH, mutually exclusive, validated as they are
    parsed (a usage error, exit status 2, names the option and what it expects)."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        type=_argparse(scheduler_address),
        help=f"run {what} on an existing Dask scheduler, tcp://HOST:PORT",
    )
    where.add_argument(
        "--scheduler-file",
        metavar="PATH",
        type=_argparse(scheduler_file),
        help=f"run {what} on an existing Dask scheduler, named by its --scheduler-file",
    )


class Cluster:
    """A Dask client on an embedded LocalCluster or an existing cluster (a context manager)."""

    def __init__(
        self,
        scheduler: str | None = None,
        scheduler_file: str | None = None,
        workers: int | None = None,
        dashboard: bool = True,
        say: Callable[[str], None] = print,
    ) -> None:
        self.scheduler, self.scheduler_file = scheduler, scheduler_file
        self.workers = workers or cores()
        self.dashboard = dashboard
        self.say = say
        self.cluster: Any = None
        self.client: Any = None
        self.stack = contextlib.ExitStack()

    @property
    def embedded(self) -> bool:
        return self.scheduler is None and self.scheduler_file is None

    def __enter__(self) -> Self:
        try:
            if self.scheduler is not None:
                scheduler_address(self.scheduler)
            if self.scheduler_file is not None:
                scheduler_file(self.scheduler_file)
        except ValueError as exc:
            option = "--scheduler" if self.scheduler is not None else "--scheduler-file"
            raise ExecutorError(f"{option}: {exc}") from None
        try:
            import dask
            from distributed import Client, LocalCluster
        except ImportError as exc:
            raise ExecutorError(
                f"the jobs run on Dask distributed here, which is not installed ({exc}): "
                "pip install 'elmo-conformance[dask]'"
            ) from None
        try:
            if self.embedded:
                self.stack.enter_context(dask.config.set({"distributed.scheduler.allowed-failures": 0}))
                self.cluster = self.stack.enter_context(
                    LocalCluster(
                        n_workers=self.workers,
                        threads_per_worker=1,
                        processes=True,
                        host="127.0.0.1",
                        dashboard_address="127.0.0.1:0" if self.dashboard else None,
                        silence_logs=logging.CRITICAL,
                    )
                )
                self.client = self.stack.enter_context(Client(self.cluster, set_as_default=False))
            else:
                target = {"scheduler_file": self.scheduler_file} if self.scheduler_file else {"address": self.scheduler}
                self.client = self.stack.enter_context(Client(**target, timeout="30s", set_as_default=False))
                self.client.wait_for_workers(1, timeout=NO_WORKERS_S)
        except ExecutorError:
            self.stack.close()
            raise
        except Exception as exc:
            self.stack.close()
            where = self.scheduler or self.scheduler_file or "the embedded cluster"
            raise ExecutorError(
                f"cannot start or reach the Dask cluster ({where}): {type(exc).__name__}: {exc}"
            ) from None
        try:
            self.check_versions()
        except BaseException:
            self.stack.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stack.close()

    # ------------------------------------------------------------------ what the cluster is

    @property
    def address(self) -> str:
        return self.client.scheduler.address

    @property
    def dashboard_link(self) -> str | None:
        if self.embedded and not self.dashboard:
            return None
        with contextlib.suppress(Exception):
            return self.client.dashboard_link
        return None

    def threads(self) -> dict[str, int]:
        """worker address -> threads."""
        try:
            return dict(self.client.nthreads())
        except Exception:
            return {}

    def describe(self) -> dict[str, Any]:
        threads = self.threads()
        return {
            "engine": "dask.distributed",
            "kind": "embedded LocalCluster" if self.embedded else "cluster",
            "scheduler": self.address,
            "dashboard": self.dashboard_link,
            "workers": len(threads),
            "threads": sum(threads.values()),
        }

    def check_versions(self) -> None:
        """The scheduler and every worker must have this suite's version (ExecutorError if not)."""
        from elmo_conformance.ground.version import __version__

        found: dict[str, Any] = {}
        try:
            found["scheduler " + self.address] = self.client.run_on_scheduler(eval, VERSION_PROBE)
        except Exception as exc:
            found["scheduler " + self.address] = exc
        for worker, version in self.client.run(eval, VERSION_PROBE, on_error="return").items():
            found["worker " + worker] = version
        wrong = {where: version for where, version in found.items() if version != __version__}
        if wrong:
            lines = [
                f"  {where}: {v if isinstance(v, str) else type(v).__name__ + ': ' + str(v)}"
                for where, v in sorted(wrong.items())
            ]
            raise ExecutorError(
                f"elmo-conformance {__version__} is needed on the scheduler and every worker, and is not on:\n"
                + "\n".join(lines)
                + f"\ninstall it there (the same version): pip install 'elmo-conformance[dask]=={__version__}' "
                "or the wheel (pip install elmo_conformance-*.whl; for workers already running, "
                "client.register_plugin(distributed.diagnostics.plugin.PipInstall([...])) installs it on each), "
                "then start the batch again"
            )
