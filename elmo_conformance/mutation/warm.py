"""Warm runs of generated mutants (spec §13.2): one pytest session per worker, collected once, and
a forked child of it per mutant. A Python implementation is served as below; a program is built in
the slot (its clean build's outputs come with the clean copy, so a mutant's build compiles its one
file and links) and started from there, as a fresh run starts it.

A fresh mutant run pays a pytest session (its start, the plugin's configuration, a collection of
the whole suite) and a served adapter process (a Python start, the harness's server modules and
the implementation's imports) for a handful of tests. Here a worker pays both once:

1. The worker starts one pytest session (`run(..., where="here")`, as a fresh run does) on the clean copy served
   from a fixed folder, the *slot*; `WarmLoop` takes over pytest's test loop once the session has
   collected, notes the adapter's hello (its name, capabilities, device, declared mutants:
   everything the collection depends on) and stops the clean adapter's process.
2. For each mutant it writes the mutant's copy into the slot (the same path each time, so the
   served `--impl` argument, and with it every test id, is the session's), then `gc.freeze()`
   and `os.fork()`. The child starts the mutant's adapter process exactly as a fresh run would
   start it (served in its sandbox, from the slot: overlay.py, or a fork of the warm server,
   zygote.py), runs the mutant's selected tests in order through pytest's own
   `pytest_runtest_protocol` with a fresh `Collector`, stops at the first kill, and hands back
   its `MutantRun`; the child then ends. The parent never runs a test, so each child starts from
   the state a fresh session has after its collection.
3. Nothing of the implementation is imported in the worker: the code under test runs in its
   sandboxed process, a new one for every mutant (its modules, module level included, executed
   from the mutant's copy), and the verdict is what the child, a copy of the judge's process,
   observed.

A mutant whose adapter answers the handshake with another hello than the clean copy's (a mutated
name, capability list or declared mutant) would be collected differently: its child says so and
the mutant runs fresh, as does every mutant when the session cannot start (`--fresh`: always).
"""

from __future__ import annotations

import gc
import os
import pickle
import select
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, NoReturn

import pytest

from elmo_conformance.executor.local import next_job
from elmo_conformance.mutation.collector import Collector
from elmo_conformance.mutation.deadlines import Watchdog, deadline_of
from elmo_conformance.mutation.model import MutantRun
from elmo_conformance.mutation.programs import SameProgram
from elmo_conformance.mutation.scratch import BuildFailed, prepare
from elmo_conformance.processes import kill

STOP = object()  # the runner closed the pipe or sent None: the worker ends
_WARM_FAILED: set[str] = set()  # targets whose warm session could not start in this worker


def eligible(job: object) -> bool:
    """A job that a warm session can run: a generated mutant of a Python implementation, or of a
    program (built in the slot: the clean build's outputs are copied with the clean copy, so a
    mutant's build compiles its one file and links)."""
    from elmo_conformance.mutation.worker import GeneratedJob

    return (
        isinstance(job, GeneratedJob)
        and not job.control
        and not job.fresh
        and job.generated is not None
        and job.target is not None
        and (not job.target.python or not job.target.build)
        and job.target.root not in _WARM_FAILED
    )


def unreached(run: MutantRun, job: Any, started: float) -> MutantRun:
    """A built mutant that no test of the clean run reaches: NoCoverage, no test run."""
    assert job.generated is not None
    run.status = "NoCoverage"
    run.reason = f"no test of the clean run reaches {Path(job.generated.file).name}:{job.generated.line}"
    run.duration = time.perf_counter() - started
    return run


def _same_session(first: Any, job: Any) -> bool:
    return eligible(job) and job.target == first.target and job.select == first.select and job.impl == first.impl


def hello_of(adapter: Any) -> tuple:
    """What a collection depends on in an adapter's hello (plugin.pytest_generate_tests, the
    components' skips): a mutant with another one is collected differently."""
    return (
        adapter.name,
        frozenset(adapter.capabilities),
        adapter.device,
        adapter.unavailable,
        tuple(sorted(getattr(adapter, "mutant_titles", {}).items())),
    )


def _die_with_parent() -> None:
    """This child ends when the worker does (the runner kills a worker whose mutant passed its
    deadline): PR_SET_PDEATHSIG; its adapter process ends with it (bwrap --die-with-parent)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class WarmLoop:
    """The plugin that replaces pytest's test loop in a worker's warm session: it judges jobs
    until one comes that this session cannot run, which it leaves in `leftover`."""

    def __init__(
        self,
        first: Any,
        conn: Connection,
        slot: Path,
        impl: str,
        served: Callable[[str], str],
        zygote: subprocess.Popen | None,
    ) -> None:
        self.first, self.conn, self.slot, self.impl, self.served = first, conn, slot, impl, served
        self.zygote = zygote
        self.took = False  # the loop ran (else the first job still has to be run)
        self.leftover: Any = STOP
        self.problem: str | None = None
        self.collect_errors: list[str] = []
        self.crash: str | None = None  # the loop's own failure (a traceback)
        self.clean_start = 0.0  # seconds the clean program's start (its handshake) took here

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collect_errors.append(f"{report.nodeid}: {report.longreprtext[-2000:]}")

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        try:
            return self._loop(session)
        except BaseException:  # noqa: BLE001 - pytest would take it as its own internal error
            self.crash = traceback.format_exc()
            return True

    def _loop(self, session: pytest.Session) -> bool:
        from elmo_conformance.adapters import loading
        from elmo_conformance.adapters.wire.client import ProcessAdapter

        adapter = loading._PROCESSES.get(self.impl)
        if self.collect_errors or session.testsfailed or not isinstance(adapter, ProcessAdapter):
            self.problem = "the warm session did not collect: " + ("; ".join(self.collect_errors) or "no adapter")
            return True  # no test runs here; the first job is run fresh
        clean = hello_of(adapter)
        adapter.stop()
        # The clean program's start, timed once: a mutant's start gets a deadline from it (deadlines.py).
        began = time.perf_counter()
        adapter._start()
        self.clean_start = time.perf_counter() - began
        adapter.stop()
        for thread in threading.enumerate():  # the clean process's standard-error reader ends at its EOF
            if thread is not threading.main_thread() and thread.name == "elmo-process-stderr":
                thread.join(2)
        self.took = True
        job = self.first
        while True:
            started = time.perf_counter()
            run = self._one(session, adapter, clean, job, started)
            if self.zygote is not None and self.zygote.poll() is not None:
                # The warm server ended during this mutant (one of its forks killed it): the
                # mutant runs fresh, and the next ones in a new warm session.
                run = None
            if run is None:  # another hello: collected differently, so run fresh
                self.leftover = replace(job, fresh=True)
                return True
            self.conn.send(("done", run))
            following = next_job(self.conn)
            if following is None:
                self.leftover = STOP
                return True
            if not _same_session(self.first, following):
                self.leftover = following
                return True
            job = following

    def _one(self, session: pytest.Session, adapter: Any, clean: tuple, job: Any, started: float) -> MutantRun | None:
        run = MutantRun(job.impl, job.mutant, selected=list(job.order), warm=True)
        clear(self.slot)
        try:
            self.conn.send(("start", "building the mutant" if job.target.build else "writing the mutant"))
            impl = self.served(prepare(job.target, job.generated, self.slot)[0])
        except BuildFailed as exc:  # a program's check or build refused it
            run.status, run.reason = "CompileError", str(exc)
            run.duration = time.perf_counter() - started
            return run
        except SameProgram as exc:  # its build made the clean program or another mutant's (programs.py)
            run.status, run.reason = "Ignored", exc.reason
            run.duration = time.perf_counter() - started
            return run
        if impl != self.impl:  # the slot's path is in the argument: it must not move
            raise RuntimeError(f"the warm slot's --impl changed: {impl!r} != {self.impl!r}")
        if not job.order:  # built, and no test reaches it
            clear(self.slot)
            return unreached(run, job, started)
        try:
            return self._fork(session, adapter, clean, job, run, started)
        finally:
            clear(self.slot)

    def _fork(
        self, session: pytest.Session, adapter: Any, clean: tuple, job: Any, run: MutantRun, started: float
    ) -> MutantRun | None:
        gc.collect()
        gc.freeze()  # the session's objects stay out of the child's collections (and its pages shared)
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: judge this mutant, hand the verdict back, end
            os.close(reader)
            handed = threading.Lock()  # one verdict: the judge's, or a test deadline's (deadlines.py)

            def hand_back(answer: Any, code: int = 0) -> NoReturn:
                handed.acquire()  # a second verdict waits here for the first one's exit
                try:
                    data = pickle.dumps(answer)
                    with os.fdopen(writer, "wb") as out:
                        out.write(data)
                finally:
                    os._exit(code)

            try:
                _die_with_parent()
                answer: Any = self._judge(session, adapter, clean, job, run, started, hand_back)
            except BaseException:  # noqa: BLE001 - reported to the parent, which decides
                hand_back(("failed", traceback.format_exc()), 1)
            hand_back(answer)
        os.close(writer)
        with os.fdopen(reader, "rb") as source:
            data = source.read()
        _, status = os.waitpid(pid, 0)
        if not data:
            how = f"was killed by signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else "exited"
            run.status, run.reason = "RuntimeError", f"the mutant's warm run {how} before its verdict"
            return run
        answer = pickle.loads(data)  # noqa: S301 - written by this process's own child
        if isinstance(answer, tuple) and answer and answer[0] == "failed":
            run.status, run.reason = "RuntimeError", f"the mutant's warm run raised:\n{answer[1]}"
            return run
        return answer

    def _judge(
        self,
        session: pytest.Session,
        adapter: Any,
        clean: tuple,
        job: Any,
        run: MutantRun,
        started: float,
        hand_back: Callable[[Any], NoReturn],
    ) -> MutantRun | None:
        """In the child: start the mutant's process, run its tests in order to the first kill,
        each under its own deadline (deadlines.py): one that passes it makes the mutant a Timeout,
        handed back from the timer's thread."""
        from elmo_conformance.adapters.wire.client import ProcessStartError
        from elmo_conformance.mutation.worker import judge

        send = self.conn.send
        collector = Collector(send, order=list(job.order), must_run=job.must_run, fail_fast=job.fail_fast)

        def expired(nodeid: str, seconds: float) -> None:
            if nodeid == START:
                timed_out = replace(run, status="Timeout", running=None)
                timed_out.reason = (
                    f"its start did not finish within {seconds:.1f} s (the handshake, §15.4; --test-timeout-min + "
                    "--timeout-factor x the clean program's start)"
                )
                end_starting()
            else:
                timed_out = replace(run, status="Timeout", tests=dict(collector.outcomes), running=nodeid)
                timed_out.reason = (
                    f"its test {nodeid} did not finish within {seconds:.1f} s (--test-timeout-min + --timeout-factor x "
                    "its time in the clean run)"
                )
                end_process(adapter)
            timed_out.duration = time.perf_counter() - started
            hand_back(timed_out)

        watchdog = Watchdog(dict(zip(job.order, job.deadlines, strict=False)), expired)
        start_deadline = None
        if job.start_timing:
            minimum, factor = job.start_timing
            start_deadline = deadline_of(self.clean_start, factor, minimum)
        send(("start", "starting the mutant"))
        try:
            with watchdog.deadline(START, start_deadline):
                hello = adapter._start()
        except ProcessStartError as exc:
            watchdog.close()
            run.status = "RuntimeError"
            run.reason = "the harness could not start the implementation: " + str(exc)  # as the plugin refuses it
            run.duration = time.perf_counter() - started
            return run
        if hello_of(_Hello(hello)) != clean:
            watchdog.close()
            adapter.stop()
            return None
        config = session.config
        config.pluginmanager.register(collector, "elmo-conformance-warm-collector")
        config.pluginmanager.register(watchdog, "elmo-conformance-warm-deadlines")
        collector.pytest_sessionstart(session)
        items = list(session.items)
        collector.pytest_collection_modifyitems(config, items)
        session.shouldstop = session.shouldfail = False
        try:
            for index, item in enumerate(items):
                following = items[index + 1] if index + 1 < len(items) else None
                config.hook.pytest_runtest_protocol(item=item, nextitem=following)
                if session.shouldstop or session.shouldfail:
                    break
        finally:
            watchdog.close()
            adapter.stop()
        run.duration = time.perf_counter() - started
        # The exit status the session would have ended with: 2 when --fail-fast stopped it.
        failed = any(t.killed for t in collector.outcomes.values())
        exit_code = 2 if collector.stopped else 1 if failed else 0 if collector.outcomes else 5
        return judge(run, exit_code, collector)


def _kill_at_once(connection: Any) -> None:
    """SIGKILL a process past a deadline and its group (started in a session of its own): no
    grace for a hung program; stopping it as ever then ends whatever of its family is left."""
    process = getattr(connection, "process", None)
    if process is not None and process.poll() is None:
        kill.signal_group(process.pid, signal.SIGKILL)


def end_starting() -> None:
    """End the process of a mutant whose start passed its deadline (its connection is not the
    adapter's yet: the handshake has not finished)."""
    from elmo_conformance.adapters.wire import client

    for connection in list(client._LIVE):
        _kill_at_once(connection)
    client.stop_all()


def end_process(adapter: Any) -> None:
    """End the mutant's process, past a test's deadline."""
    _kill_at_once(getattr(adapter, "_connection", None))
    adapter.stop()


class _Hello:
    """A hello message read as an adapter's attributes (hello_of)."""

    def __init__(self, hello: dict) -> None:
        self.name = hello["name"]
        self.capabilities = frozenset(hello["capabilities"])
        self.device = hello.get("device") or "cpu"
        self.unavailable = hello.get("unavailable")
        self.mutant_titles = {m["id"]: m.get("title") or m["id"] for m in hello.get("mutants") or []}


START = "<the mutant's start>"  # the start's deadline, kept by the watchdog as a test's is
ZYGOTE = Path(__file__).resolve().parent / "zygote.py"
ZYGOTE_START_S = 60.0  # seconds the warm server may take to import the protocol server


def clear(slot: Path) -> None:
    """Empty the slot, keeping the folder itself: the warm server's sandbox binds that folder."""
    for entry in list(slot.iterdir()) if slot.is_dir() else []:
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def start_zygote(folder: Path, slot: Path, root: str) -> tuple[subprocess.Popen | None, str]:
    """The warm server (zygote.py) in a sandbox whose one writable folder is the slot, as a
    fresh served mutant's is its copy's folder, or None and why not. Its listening socket is
    made here, outside the slot, and inherited: no mutant can remove or replace it."""
    from elmo_conformance.adapters.wire.client import _LAUNCHER
    from elmo_conformance.mutation.zygote import READY, ROOT_ENV
    from elmo_conformance.processes import sandbox

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(str(folder / "zygote.sock"))  # a path of at most 107 bytes
        listener.listen(8)
    except OSError as exc:
        listener.close()
        return None, f"its socket cannot be made in {folder}: {exc}"
    argv = [sys.executable, str(ZYGOTE), "serve", str(listener.fileno()), str(slot / "overlay.json")]
    env = dict(os.environ)
    if sandbox.active():
        box = sandbox.Sandbox(writable=(str(slot),))
        command = box.command(argv, cwd=slot, env=env)
        env = box.environment(env, {ROOT_ENV: root})
    else:
        command = [sys.executable, "-S", "-c", _LAUNCHER, str(os.getpid()), *argv]
        env[ROOT_ENV] = root
    try:
        process = subprocess.Popen(
            command,
            cwd=slot,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            env=env,
            start_new_session=True,
            pass_fds=(listener.fileno(),),
        )
    finally:
        listener.close()
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], ZYGOTE_START_S)
    line = process.stdout.readline() if ready else b""
    if line == READY:
        return process, ""
    process.kill()
    process.wait()
    return None, line.decode("utf-8", "replace").strip() or f"no answer within {ZYGOTE_START_S:.0f} s"


def connect_command(folder: Path, slot: Path) -> str:
    """The --impl argument that serves the slot's copy through the warm server."""
    config = slot / "overlay.json"
    return "cmd:" + shlex.join([sys.executable, "-S", str(ZYGOTE), "connect", str(folder / "zygote.sock"), str(config)])


def run_warm(first: Any, conn: Connection) -> Any:
    """Judge `first` and the jobs after it in one warm session; returns the job the session did
    not take (to run as usual), or STOP. When the session cannot start or collect, `first` is
    returned marked fresh, and this target's later jobs run fresh in this worker."""
    from elmo_conformance.mutation.worker import _run_suite

    target = first.target
    folder = Path(tempfile.mkdtemp(prefix="warm-", dir=first.scratch or None))
    slot = folder / "slot"
    zygote: subprocess.Popen | None = None
    try:
        try:
            impl, _ = prepare(target, None, slot)
        except BuildFailed as exc:  # the clean copy does not build in the slot: every mutant runs fresh
            _WARM_FAILED.add(target.root)
            print(f"warm session: the clean copy did not build in its slot ({exc}); running fresh", flush=True)
            return replace(first, fresh=True)
        if target.python:  # a program is started from its build in the slot, as a fresh run starts it
            zygote, why = start_zygote(folder, slot, target.root)
            if zygote is None:
                print(f"warm session: no warm server ({why}); each mutant's adapter process starts fresh", flush=True)
        served = (lambda impl: connect_command(folder, slot)) if zygote is not None else (lambda impl: impl)
        impl = served(impl)
        loop = WarmLoop(first, conn, slot, impl, served, zygote)
        _run_suite(impl, loop, select=first.select)
        if loop.crash:
            _WARM_FAILED.add(target.root)
            raise RuntimeError(f"the warm session failed:\n{loop.crash}")
        if not loop.took:
            _WARM_FAILED.add(target.root)
            print(f"warm session: {loop.problem or 'it did not start'}; running fresh", flush=True)
            return replace(first, fresh=True)
        return loop.leftover
    finally:
        from elmo_conformance.mutation.worker import _stop_processes

        _stop_processes()
        if zygote is not None:
            zygote.kill()
            zygote.wait()
        shutil.rmtree(folder, ignore_errors=True)
