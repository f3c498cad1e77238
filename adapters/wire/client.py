"""An implementation as a process that speaks the wire protocol (spec §15): `--impl 'cmd:PROGRAM ARGS'`.

`ProcessAdapter` has the attributes and methods of §11, so the harness checks it exactly as it
checks a Python object. Each protocol call becomes one request; the answer's value is returned, an
error of kind ValueError is raised as ValueError with the same message (§15.6). Whatever the
process does wrong (exits, is killed, hangs past the call timeout, writes something that is not a
frame, a truncated or oversized frame, an undecodable value, an answer to another request) raises
`ProcessFailure`, whose message says what was sent, what came back and what the process last wrote
to standard error; the process is stopped and the next call starts a fresh one (§15.7).
"""

from __future__ import annotations

import atexit
import functools
import itertools
import json
import os
import select
import shlex
import signal
import subprocess
import sys
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import jsonschema

from elmo_conformance.adapters.wire import codec
from elmo_conformance.ground.version import __version__
from elmo_conformance.processes import exits, kill, sandbox, tree
from elmo_conformance.spec.catalog import SPEC_DIR
from elmo_conformance.spec.protocol import Function, expected_result_bytes, protocol

PREFIX = "cmd:"
STDERR_KEEP = 64 * 1024  # bytes of standard error kept for messages (§15.7)
STDERR_LINES = 20  # lines of it shown in a message
HANDSHAKE_FLOOR = 10.0  # seconds: the handshake's deadline is the call timeout, and at least this (§11.1)
MAX_ANSWER_VALUES = 1 << 16  # values in one answer; a legitimate one has fewer than a hundred (§11.1)
ANSWER_SLACK = 16 << 20  # bytes an answer may take beyond twice the call's arrays (§11.1)
HELLO_LIMIT = 16 << 20  # bytes of an answer to hello
MARKER_VARIABLE = "ELMO_CONFORMANCE_PROCESS"  # in the environment of a process and what it starts
_STOP_GRACE = 2.0  # seconds between closing stdin, SIGTERM and SIGKILL
_KILL_ROUNDS = 5  # looks for processes left behind, each killing those found
_EXIT_LOOK = 0.5  # seconds between two looks at whether the process exited, without a pidfd
_SETTLE_S = 0.5  # seconds a sandbox's pipe may take to close after bwrap has exited
_CHUNK = 1 << 16  # bytes read at once before a frame's length is known
_PIPE_SIZE = 1 << 20
_SERIAL = itertools.count(1)

# Run the program so that Linux kills it when the harness dies, whatever the harness died of:
# PR_SET_PDEATHSIG, set in a tiny launcher that then execs the program (a preexec_fn would run in
# a forked copy of a process with threads).
_LAUNCHER = (
    "import ctypes, os, signal, sys\n"
    "try:\n"
    "    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)\n"
    "except Exception:\n"
    "    pass\n"
    "if os.getppid() != int(sys.argv[1]):\n"
    "    os._exit(70)\n"
    "try:\n"
    "    os.execvp(sys.argv[2], sys.argv[2:])\n"
    "except OSError as exc:\n"
    "    sys.stderr.write(f'cannot run {sys.argv[2]!r}: {exc.strerror}\\n')\n"
    "    os._exit(127)\n"
)


class ProcessFailure(Exception):
    """The process broke the protocol or died during a call; the message says what happened."""


class ProcessTimeout(ProcessFailure):
    """The process did not answer within the call timeout."""


class ProcessStartError(Exception):
    """The process could not be started or did not complete the handshake (§15.4). `refusal` is
    the message of a process that answered hello with an error, when it did."""

    def __init__(self, message: str, refusal: str | None = None) -> None:
        super().__init__(message)
        self.refusal = refusal


class RemoteError(Exception):
    """The implementation answered a call with an error of a kind other than ValueError (§15.6)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


class InputModified(Exception):
    """The protocol server saw the Python adapter modify an input (§1.4); the message is its path."""


def command_of(arg: str) -> list[str]:
    """`cmd:PROGRAM ARGS` as an argument list (split as a POSIX shell would, nothing expanded)."""
    text = arg[len(PREFIX) :].strip()
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise ProcessStartError(f"--impl {arg}: cannot split the command: {exc}") from None
    if not argv:
        raise ProcessStartError(f"--impl {arg}: no command after {PREFIX!r}")
    return argv


# ------------------------------------------------------------------------------ one running process


class _StderrTail(threading.Thread):
    """Reads a process's standard error as it comes, keeping the last STDERR_KEEP bytes, so that a
    process that floods it never blocks on a full pipe."""

    def __init__(self, stream: Any) -> None:
        super().__init__(name="elmo-process-stderr", daemon=True)
        self.stream = stream
        self.buffer = bytearray()
        self.total = 0
        self.lock = threading.Lock()
        self.start()

    def run(self) -> None:
        while True:
            try:
                chunk = os.read(self.stream.fileno(), 65536)
            except (OSError, ValueError):
                return
            if not chunk:
                return
            with self.lock:
                self.total += len(chunk)
                self.buffer += chunk
                if len(self.buffer) > STDERR_KEEP:
                    del self.buffer[: len(self.buffer) - STDERR_KEEP]

    def tail(self) -> str:
        with self.lock:
            text = self.buffer.decode("utf-8", "replace")
            total = self.total
        lines = text.rstrip().splitlines()[-STDERR_LINES:]
        if not lines:
            return "  (nothing on standard error)"
        cut = " (last lines)" if total > len(text) or len(text.splitlines()) > STDERR_LINES else ""
        return f"  standard error{cut}:\n" + "\n".join(f"    | {line[:300]}" for line in lines)


class _Broken(Exception):
    """What went wrong on the pipes; turned into ProcessFailure with the call's context."""

    def __init__(self, what: str, received: bytes | str = b"", timeout: bool = False) -> None:
        super().__init__(what)
        self.what = what
        self.received = received
        self.timeout = timeout

    def shown(self) -> str:
        """What came back, for a message: bytes as a Python literal, a decoded answer as described."""
        if not self.received:
            return "nothing"
        return self.received if isinstance(self.received, str) else repr(self.received)


class Connection:
    """One child process: the pipes, a deadline on every read and write, and stopping it.

    Per call it costs one write of the request (a larger one only while the pipe is full), one
    poll and one read of the answer when it fits in 64 KiB, and reads straight into the body's
    buffer otherwise. The poll also watches the process itself (a pidfd on Linux, a look every
    half second elsewhere), so a process that exits while something it started keeps its
    standard output open is seen to exit at once."""

    def __init__(
        self, argv: list[str], env: Mapping[str, str] | None = None, box: sandbox.Sandbox | None = None
    ) -> None:
        self.argv = argv
        self.marker = f"{os.getpid()}-{next(_SERIAL)}-{uuid.uuid4().hex[:8]}"
        environment = dict(os.environ if env is None else env)
        self.sandboxed = sandbox.active()
        if self.sandboxed:  # the code under test runs in the sandbox (elmo_conformance/processes/sandbox.py)
            box = box or sandbox.Sandbox()
            command = box.command(argv, env=environment)
            environment = box.environment(environment)
        else:
            sandbox.announce()
            # PR_SET_PDEATHSIG: bwrap's --die-with-parent does the same in the sandbox.
            launcher = [sys.executable, "-S", "-c", _LAUNCHER, str(os.getpid())] if sys.platform == "linux" else []
            command = [*launcher, *argv]
        environment[MARKER_VARIABLE] = self.marker  # inherited by what it starts: found at stop()
        try:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                bufsize=0,
                env=environment,
            )
        except OSError as exc:
            raise ProcessStartError(f"cannot run {shlex.join(argv)}: {exc.strerror or exc}") from None
        assert self.process.stdin and self.process.stdout and self.process.stderr
        self.stdin = self.process.stdin.fileno()
        self.stdout = self.process.stdout.fileno()
        for fd in (self.stdin, self.stdout):
            os.set_blocking(fd, False)
            _widen_pipe(fd)
        self.pidfd: int | None = None
        try:
            self.pidfd = os.pidfd_open(self.process.pid)  # readable once the process has exited
        except (AttributeError, OSError):
            pass
        self._readable = select.poll()
        self._readable.register(self.stdout, select.POLLIN)
        self._writable = select.poll()
        self._writable.register(self.stdin, select.POLLOUT)
        if self.pidfd is not None:
            self._readable.register(self.pidfd, select.POLLIN)
            self._writable.register(self.pidfd, select.POLLIN)
        self.pending = bytearray()  # bytes read past the end of the last frame
        self.stderr = _StderrTail(self.process.stderr)
        self.timeout_text = "the call timeout"
        self.family: dict[int, int] = {}  # processes it started, as seen at stop(): pid -> start time
        _LIVE.add(self)

    # -- status

    def exit_description(self, wait: float = 0.5) -> str:
        try:
            code = self.process.wait(wait)
        except subprocess.TimeoutExpired:
            return "it is still running"
        if self.sandboxed and 128 < code < 128 + 65:
            code = 128 - code  # bwrap exits with 128 + the signal that killed the program
        if code < 0:
            try:
                return f"it was killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"it was killed by signal {-code}"
        return f"it exited with status {code}"

    def _wait(self, poller: select.poll, fd: int, deadline: float, timed_out: Any, exited: Any) -> None:
        """Until `fd` is ready: `timed_out()` or `exited()` (both raise _Broken) otherwise."""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out()
            wait = remaining if self.pidfd is not None else min(remaining, _EXIT_LOOK)
            events = poller.poll(wait * 1000.0)
            if any(ready == fd for ready, _ in events):
                return
            if events or (self.pidfd is None and self.process.poll() is not None):
                if self.sandboxed and poller is self._readable and _ready(fd, _SETTLE_S):
                    return  # bwrap exited a moment before its init, which held the pipe open too
                exited()

    # -- pipes with deadlines

    def send(self, data: bytes, deadline: float) -> None:
        view = memoryview(data)

        def timed_out() -> None:
            raise _Broken(
                f"did not read its request within {self.timeout_text} ({len(view)} bytes unsent)", timeout=True
            )

        def exited() -> None:
            raise _Broken(f"exited before reading the request; {self.exit_description()}")

        while view:
            try:
                written = os.write(self.stdin, view)
            except BlockingIOError:
                self._wait(self._writable, self.stdin, deadline, timed_out, exited)
                continue
            except OSError:  # BrokenPipeError among them
                raise _Broken(
                    f"closed its standard input before reading the request; {self.exit_description()}"
                ) from None
            view = view[written:]

    def _fill(self, target: memoryview, deadline: float, got: int, header: bytes) -> int:
        """Read into `target` (not past its end); returns how many bytes came. `got` bytes of the
        answer, `header` among them, came before, for messages."""

        def timed_out() -> None:
            where = f" (it had sent {got} bytes of the answer)" if got else ""
            raise _Broken(f"did not answer within {self.timeout_text}{where}", header[:64], timeout=True)

        def exited() -> None:
            # Whatever it wrote before it exited was read first: the pipe is read while it is readable.
            holder = " (a process it started still holds its standard output open)"
            raise _Broken(f"exited before answering{holder}; {self.exit_description()}", header[:64])

        while True:
            try:
                n = os.readv(self.stdout, [target])
            except BlockingIOError:
                self._wait(self._readable, self.stdout, deadline, timed_out, exited)
                continue
            except OSError as exc:
                raise _Broken(f"its standard output cannot be read: {exc}", header[:64]) from None
            if n == 0:
                if header[: len(codec.MAGIC)] == codec.MAGIC and got >= codec.HEADER.size:
                    where = f"after {got - codec.HEADER.size} of the {len(target) + got - codec.HEADER.size} bytes of a frame body"
                else:
                    where = "before answering"
                raise _Broken(f"closed its standard output {where}; {self.exit_description()}", header[:64])
            return n

    def _more(self, limit: int = 160) -> bytes:
        """What else the process has written right now, for a message about garbage."""
        try:
            readable, _, _ = select.select([self.stdout], [], [], 0.05)
            return os.read(self.stdout, limit) if readable else b""
        except OSError:
            return b""

    def receive(
        self,
        deadline: float,
        limit: int | Callable[[], int] = codec.MAX_FRAME,
        max_values: int = MAX_ANSWER_VALUES,
    ) -> dict[str, Any]:
        """The next message, within `deadline`: a body over `limit` bytes is refused before it is
        read, one of more than `max_values` values as soon as the count is passed (§11.1). A
        callable `limit` is asked only for a body over ANSWER_SLACK, which no limit is below."""
        pending = self.pending
        size = codec.HEADER.size
        if len(pending) < size:
            chunk = bytearray(_CHUNK)
            while len(pending) < size:
                n = self._fill(memoryview(chunk), deadline, len(pending), bytes(pending))
                pending += memoryview(chunk)[:n]
        magic, length = codec.HEADER.unpack_from(pending)
        header = bytes(pending[:size])
        if magic != codec.MAGIC:
            shown = bytes(pending[:64]) + (self._more() if len(pending) < 64 else b"")
            raise _Broken(
                f"wrote bytes that are not a frame (a frame starts with {codec.MAGIC!r}; logs belong on "
                "standard error, §15.1)",
                shown,
            )
        if length > codec.MAX_FRAME:
            raise _Broken(
                f"declared a frame body of {length} bytes, more than the limit of {codec.MAX_FRAME} (§15.7)", header
            )
        if callable(limit):
            limit = limit() if length > ANSWER_SLACK else ANSWER_SLACK
        if length > limit:
            raise _Broken(
                f"declared a frame body of {length} bytes, more than any answer to this call can need "
                f"({limit} bytes, §11.1)",
                header,
            )
        have = len(pending) - size
        if have >= length:
            body = pending[size : size + length]
            del pending[: size + length]
        else:
            body = bytearray(length)
            body[:have] = pending[size:]
            pending.clear()
            view = memoryview(body)
            while have < length:
                have += self._fill(view[have:], deadline, size + have, header)
            del view
        try:
            message = codec.decode(body, max_values, deadline)
        except codec.WireTimeout as exc:
            raise _Broken(f"did not answer within {self.timeout_text} ({exc})", header, timeout=True) from None
        except codec.WireError as exc:
            raise _Broken(f"wrote a frame whose body cannot be decoded: {exc}", header + bytes(body[:56])) from None
        if not isinstance(message, dict):
            raise _Broken(f"wrote a frame holding a {type(message).__name__}, not a map (§15.2)", bytes(body[:64]))
        return message

    # -- stopping

    def stop(self) -> None:
        """Close stdin, then SIGTERM, then SIGKILL the process group and every process it started
        (§11.1); never raises."""
        _LIVE.discard(self)
        process = self.process
        root = process.pid
        self.family.update(tree.family(root, MARKER_VARIABLE, self.marker))  # while it runs, its children are its own
        for stream in (process.stdin, process.stdout):
            try:
                stream.close()  # type: ignore[union-attr]
            except OSError:
                pass
        if process.poll() is None:
            exits.wait(process, _STOP_GRACE / 2)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if process.poll() is not None:
                break
            kill.signal_family(root, self.family, sig)
            exits.wait(process, _STOP_GRACE)
        # Whatever it started and left behind, in its group or not, found as it is now.
        kill.end_family(root, MARKER_VARIABLE, self.marker, self.family, rounds=_KILL_ROUNDS, pause=0.02)
        if self.pidfd is not None:
            try:
                os.close(self.pidfd)
            except OSError:
                pass
            self.pidfd = None
        self.stderr.join(1.0)


def _ready(fd: int, seconds: float) -> bool:
    """Whether `fd` becomes readable (data, or its end) within `seconds`."""
    single = select.poll()
    single.register(fd, select.POLLIN)
    return bool(single.poll(seconds * 1000.0))


def _widen_pipe(fd: int) -> None:
    """A 1 MiB pipe where Linux allows it: fewer writes, reads and wake-ups for large calls."""
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), _PIPE_SIZE)
    except (ImportError, OSError):
        pass


_LIVE: weakref.WeakSet[Connection] = weakref.WeakSet()


def stop_all() -> None:
    """Stop every process this harness started (at exit, and when a run ends)."""
    for connection in list(_LIVE):
        connection.stop()


atexit.register(stop_all)


# ------------------------------------------------------------------------------ the adapter


def _as_json(value: Any) -> Any:
    """A decoded message as JSON for its schema: arrays become {"$array": {dtype, shape}}."""
    if isinstance(value, dict):
        return {key: _as_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_json(item) for item in value]
    if hasattr(value, "dtype") and hasattr(value, "shape"):
        code = next((c for c, dt in codec.DTYPES.items() if dt == value.dtype), str(value.dtype))
        return {"$array": {"dtype": code, "shape": list(value.shape)}}
    return value


def message_problem(message: dict[str, Any], definition: str) -> str | None:
    """Why a message does not match a definition of spec/schemas/wire.schema.json, or None."""
    error = jsonschema.exceptions.best_match(_validator(definition).iter_errors(_as_json(message)))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{error.message}" + (f" (at {where})" if where else "")


@functools.cache
def _validator(definition: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((SPEC_DIR / "schemas" / "wire.schema.json").read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator({"$ref": f"#/$defs/{definition}", "$defs": schema["$defs"]})


def _major(version: str) -> str:
    return version.split(".")[0]


_DEADLINES: dict[str, Any] = {"call_timeout": 120.0, "startup_timeout": None}


def set_deadlines(call_timeout: float | None = None, startup_timeout: float | None = None) -> None:
    """The call timeout (--call-timeout) and the startup timeout of every process adapter made
    from now on; a startup timeout of None derives the handshake's deadline from the call timeout
    (ProcessAdapter.handshake_timeout). The harness calls this before it loads the adapters."""
    if call_timeout is not None:
        _DEADLINES["call_timeout"] = float(call_timeout)
    _DEADLINES["startup_timeout"] = None if startup_timeout is None else float(startup_timeout)


def answer_limit(function: Function, bound: Mapping[str, Any], request_bytes: int) -> int:
    """The most bytes an answer to this call may declare (§11.1): twice the larger of the request
    and the result the spec gives for these arguments (at 8 bytes an element), plus ANSWER_SLACK
    for messages; never more than the frame limit."""
    expected = expected_result_bytes(function, bound) or 0
    return min(codec.MAX_FRAME, ANSWER_SLACK + 2 * max(request_bytes, expected))


class ProcessAdapter:
    """An adapter (§11) whose every call is a request to a child process (§15)."""

    enforces_call_timeout = True  # the harness's in-process alarm is not needed: reads have deadlines

    def __init__(
        self,
        arg: str,
        argv: list[str],
        call_timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        startup_timeout: float | None = None,
        box: sandbox.Sandbox | None = None,
        served: bool = False,
    ) -> None:
        self.arg = arg
        self.argv = argv
        self.served = served  # a Python adapter behind the harness's own protocol server (server.py)
        self.env = env
        self.box = box  # how its process is sandboxed (None: the default sandbox, where it runs)
        self.call_timeout = _DEADLINES["call_timeout"] if call_timeout is None else call_timeout
        self.startup_timeout = _DEADLINES["startup_timeout"] if startup_timeout is None else startup_timeout
        self.mutant: str | None = None
        self._connection: Connection | None = None
        self._next_id = 0
        hello = self._start()
        self.name: str = hello["name"]
        self.capabilities = frozenset(hello["capabilities"])
        self.device: str = hello.get("device") or "cpu"
        self.unavailable: str | None = hello.get("unavailable")
        self.mutant_titles = {m["id"]: m.get("title") or m["id"] for m in hello.get("mutants") or []}
        self.mutants = {key: _MutantFactory(self, key, title) for key, title in self.mutant_titles.items()}

    def __repr__(self) -> str:
        return f"ProcessAdapter({self.arg!r})"

    # -- the process

    @property
    def handshake_timeout(self) -> float:
        """Seconds for the handshake (§15.4), at the start and at every restart: the startup
        timeout where one is set, otherwise the call timeout and at least HANDSHAKE_FLOOR (§11.1)."""
        if self.startup_timeout is not None:
            return self.startup_timeout
        return max(self.call_timeout, HANDSHAKE_FLOOR)

    def _handshake_text(self) -> str:
        if self.startup_timeout is not None:
            return f"the handshake deadline of {self.startup_timeout:g} s (the startup timeout)"
        return (
            f"the handshake deadline of {self.handshake_timeout:g} s "
            f"(the call timeout, {self.call_timeout:g} s, and at least {HANDSHAKE_FLOOR:g} s)"
        )

    def _start(self) -> dict[str, Any]:
        """Start the process and complete the handshake of §15.4; returns its hello."""
        connection = Connection(self.argv, self.env, self.box)
        deadline = time.monotonic() + self.handshake_timeout
        connection.timeout_text = self._handshake_text()
        hello = {"type": "hello", "protocol": protocol().version, "suite": f"elmo-conformance {__version__}"}
        try:
            connection.send(codec.frame(hello), deadline)
            answer = connection.receive(deadline, HELLO_LIMIT)
        except _Broken as exc:
            tail = connection.stderr.tail()
            connection.stop()
            shown = f"\n  received: {exc.shown()}" if exc.received else ""
            raise ProcessStartError(
                f"--impl {self.arg}: the handshake failed (§15.4): the process {exc.what}{shown}\n{tail}"
            ) from None
        if answer.get("type") == "error":
            connection.stop()
            refusal = str(answer.get("message"))
            raise ProcessStartError(f"--impl {self.arg}: the process refused the handshake: {refusal}", refusal)
        version = answer.get("protocol")
        if isinstance(version, str) and answer.get("type") == "hello" and _major(version) != _major(protocol().version):
            connection.stop()
            raise ProcessStartError(
                f"--impl {self.arg}: the process speaks protocol {version}, this suite speaks {protocol().version}; "
                f"major versions must match (spec §15.4)"
            )
        problem = message_problem(answer, "hello_response")
        if problem:
            tail = connection.stderr.tail()
            connection.stop()
            raise ProcessStartError(f"--impl {self.arg}: its answer to hello is not a hello (§15.4): {problem}\n{tail}")
        self._connection = connection
        return answer

    def stop(self) -> None:
        if self._connection is not None:
            self._connection.stop()
            self._connection = None

    # -- calls

    def call(self, function: Function, bound: Mapping[str, Any], mutant: str | None) -> Any:
        """One request and its answer (§15.5, §15.6)."""
        self._next_id += 1
        request = {
            "type": "call",
            "id": self._next_id,
            "function": function.name,
            "mutant": mutant,
            "args": dict(bound),
        }

        def sent() -> str:
            call = f"{function.name}({', '.join(f'{k}={codec.describe(v)}' for k, v in bound.items())})"
            return call + (f" for mutant {mutant!r}" if mutant else "")

        try:
            data = codec.frame(request)
        except codec.WireError as exc:
            raise ProcessFailure(f"the harness cannot send this call: {exc}\n  call: {sent()}") from None
        if self._connection is None:
            try:
                self._start()
            except ProcessStartError as exc:
                raise ProcessFailure(f"restarting the process failed: {exc}\n  call: {sent()}") from None
        connection = self._connection
        assert connection is not None
        deadline = time.monotonic() + self.call_timeout
        connection.timeout_text = f"the call timeout of {self.call_timeout:g} s (--call-timeout)"
        try:
            connection.send(data, deadline)
            answer = connection.receive(deadline, lambda: answer_limit(function, bound, len(data)))
            problem = self._answer_problem(answer)
            if problem:
                raise _Broken(problem, codec.describe(answer))
        except _Broken as exc:
            self._failed(connection)
            received = exc.shown()
            kind = ProcessTimeout if exc.timeout else ProcessFailure
            raise kind(
                f"the process {exc.what}\n  sent: {sent()}\n  received: {received}\n{connection.stderr.tail()}\n"
                "  The process was stopped; the next call starts a fresh one (spec §15.7)."
            ) from None
        except BaseException:  # an interrupt mid-frame leaves the pipes unusable
            self._failed(connection)
            raise
        if answer["type"] == "error":
            if answer["kind"] == "ValueError":
                raise ValueError(answer["message"])
            if answer["kind"] == "ModifiedInput":
                raise InputModified(answer["message"])
            raise RemoteError(answer["kind"], answer["message"])
        return answer["value"]

    def _answer_problem(self, answer: dict[str, Any]) -> str | None:
        """Why an answer is not a result or error for this call (codec.schema.json), or None. A
        well-formed result is recognized without the schema: this runs on every call."""
        kind = answer.get("type")
        if kind not in ("result", "error"):
            return f"answered with a message of type {kind!r} (expected 'result' or 'error', §15.5)"
        if kind == "result":
            well_formed = "value" in answer and type(answer.get("id")) is int
        else:  # the fast path of an error, checked as the schema would
            kind_of = answer.get("kind")
            well_formed = (
                type(answer.get("id")) in (int, type(None))
                and "id" in answer
                and type(kind_of) is str
                and kind_of != ""
                and type(answer.get("message")) is str
            )
        problem = None if well_formed else message_problem(answer, kind)
        if problem:
            return f"answered with a malformed {kind} message: {problem}"
        if answer["id"] != self._next_id and not (kind == "error" and answer["id"] is None):
            return f"answered request {answer['id']!r} to request {self._next_id} (§15.5)"
        return None

    def _failed(self, connection: Connection) -> None:
        connection.stop()
        if self._connection is connection:
            self._connection = None


class _MutantView:
    """The process's mutant `mutant` (§13) as an adapter: every call carries its id (§15.5)."""

    enforces_call_timeout = True

    def __init__(self, parent: ProcessAdapter, mutant: str) -> None:
        self.parent = parent
        self.mutant = mutant
        self.name = parent.name
        self.capabilities = parent.capabilities
        self.device = parent.device
        self.unavailable = parent.unavailable

    @property
    def call_timeout(self) -> float:
        return self.parent.call_timeout

    @call_timeout.setter
    def call_timeout(self, value: float) -> None:
        self.parent.call_timeout = value


class _MutantFactory:
    """A zero-argument factory of a mutant view, as §11 declares mutants; its docstring is the
    title the process gave."""

    def __init__(self, parent: ProcessAdapter, mutant: str, title: str) -> None:
        self.parent = parent
        self.mutant = mutant
        self.title = title
        self.__doc__ = title

    def __call__(self) -> _MutantView:
        return _MutantView(self.parent, self.mutant)


def _protocol_method(function: Function) -> Any:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        bound = function.bind_arguments(args, kwargs)
        parent = self.parent if isinstance(self, _MutantView) else self
        return parent.call(function, bound, self.mutant)

    method.__name__ = method.__qualname__ = function.name
    method.__doc__ = f"{function.signature()}, answered by the process (§{function.section}, §15.5)."
    return method


for _function in protocol().functions.values():
    setattr(ProcessAdapter, _function.name, _protocol_method(_function))
    setattr(_MutantView, _function.name, _protocol_method(_function))
