"""The warm server of a worker's warm session (warm.py): served mutants forked, not started.

    python .../zygote.py serve FD CONFIG.json    # once per warm session, in the sandbox
    python -S .../zygote.py connect SOCKET CONFIG.json   # per served mutant: the harness's --impl

A fresh served mutant (overlay.py) pays a Python start and the protocol server's imports (the
harness's wire, protocol and loading modules, NumPy) before the implementation's own code runs.
`serve` pays them once: it imports the protocol server, checks that nothing under the project root
(named in ROOT_ENV, not on its command line, which the sandbox would make readable) came with it,
and accepts connections on FD, the listening socket the worker made and it inherits. Before that
it learns, in a forked probe that loads the clean copy's adapter (CONFIG.json), which other
modules the implementation imports (jsonschema, a framework), and imports them too when a second
fork shows that they import nothing of the project: never the project's own modules, nor the
harness's adapters that import them, nor a library whose threads do not survive a fork (torch,
JAX, TensorFlow). `connect` is the process the harness starts for a mutant, in
its own sandbox as every served adapter is: it hands its standard input, output and error to the
warm server (SCM_RIGHTS), which forks a child that becomes overlay.py's server for CONFIG on them:
the child imports the implementation from the mutant's copy (every project module executed from
the copy, module level included), reseeds NumPy's global generator (Python's `random` reseeds
itself after a fork), and serves. The connecting process waits and exits as the child did (a
signal as 128 + its number), so that the harness sees the mutant's process end, crash or hang as
it would see a fresh one's; when the harness stops it (or it dies), the warm server kills the
child. The warm server runs in the sandbox of the session's folder, the mutant's copy the only
one in it, and ends with the worker (bwrap --die-with-parent ends every process in its PID
namespace).
"""

from __future__ import annotations

import sys

if sys.path and sys.path[0].rstrip("/").endswith("mutants"):
    del sys.path[0]  # this folder has an html.py: it must not shadow the standard library's

import array  # noqa: E402
import os  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import struct  # noqa: E402
from collections.abc import Callable  # noqa: E402

READY = b"ready\n"
ROOT_ENV = "ELMO_CONFORMANCE_WARM_ROOT"  # the project root, for serve's check
REFUSED = b"refused: "  # the first line `serve` writes when it cannot serve warm


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _project_modules(folders: tuple[str, ...]) -> list[str]:
    roots = {p for f in folders for p in (os.path.abspath(f), os.path.realpath(f))}
    found = []
    for name, module in list(sys.modules.items()):
        where = getattr(module, "__file__", None)
        if isinstance(where, str) and any(_inside(os.path.abspath(where), r) for r in roots):
            found.append(name)
    return found


UNSAFE = ("torch", "jax", "jaxlib", "tensorflow")  # their thread pools do not survive a fork


def _in_fork(work: Callable[[], object]) -> object:
    """`work()` in a forked child, its JSON result back (None when it failed)."""
    import json

    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(reader)
        try:
            data = json.dumps(work()).encode()
        except BaseException:  # noqa: BLE001 - a failed probe means no preimport
            data = b"null"
        with os.fdopen(writer, "wb") as out:
            out.write(data)
        os._exit(0)
    os.close(writer)
    with os.fdopen(reader, "rb") as source:
        data = source.read()
    os.waitpid(pid, 0)
    return json.loads(data or b"null")


def _probe(config: str, roots: tuple[str, ...]) -> list[str]:
    """In a fork: load the clean adapter as a served run does; the modules it imported beyond
    the server's, in order, that are neither the project's nor the harness's."""
    from elmo_conformance.adapters.loading import load_adapter
    from elmo_conformance.mutation import overlay

    before = set(sys.modules)
    load_adapter(overlay.setup(config))
    new = [name for name in sys.modules if name not in before]
    if any(name.split(".")[0] in UNSAFE for name in new):
        return []
    project = set(_project_modules(roots))
    return [name for name in new if name not in project and name.split(".")[0] != "elmo_conformance"]


def _preimport(names: list[str], roots: tuple[str, ...]) -> list[str]:
    """Import `names`; what of the project came with them."""
    import importlib

    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001, S112 - a module only importable in the copy's context
            continue
    return _project_modules(roots)


def serve(fd: int, config: str) -> int:
    import json

    root = os.environ.pop(ROOT_ENV, "") or "/nonexistent"
    with open(config, encoding="utf-8") as handle:
        roots = (root, str(json.load(handle)["copy"]))
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # what the imports print goes to standard error
    from elmo_conformance.adapters.wire import server as server  # noqa: F401  (the imports paid once)
    from elmo_conformance.mutation import copies, overlay  # noqa: F401

    loaded = _project_modules(roots)
    if loaded:  # forked children would share what a fresh process imports from the mutant's copy
        out.write(REFUSED + f"the protocol server imports the project's {', '.join(loaded[:3])}\n".encode())
        return 3
    names = _in_fork(lambda: _probe(config, roots))
    if isinstance(names, list) and names and _in_fork(lambda: _preimport(names, roots)) == []:
        _preimport(names, roots)
    listener = socket.socket(fileno=fd)
    out.write(READY)
    out.close()
    children: dict[int, tuple[socket.socket, int]] = {}  # pidfd -> (its connection, its pid)
    by_connection: dict[int, int] = {}  # a connection's fd -> its child's pidfd
    poller = select.poll()
    poller.register(listener.fileno(), select.POLLIN)
    while True:
        for fd, _ in poller.poll():
            if fd == listener.fileno():
                connection, _ = listener.accept()
                child = _fork(connection, listener)
                if child is None:
                    connection.close()
                    continue
                pid, pidfd = child
                children[pidfd] = (connection, pid)
                by_connection[connection.fileno()] = pidfd
                poller.register(pidfd, select.POLLIN)
                poller.register(connection.fileno(), select.POLLIN)
            elif fd in children:  # the child ended: its status to the connecting process
                connection, pid = children.pop(fd)
                _, status = os.waitpid(pid, 0)
                try:
                    connection.sendall(struct.pack("!i", _exit_code(status)))
                except OSError:
                    pass
                _close(poller, by_connection, connection, fd)
            elif fd in by_connection:  # the connecting process ended first: the harness stopped it
                pidfd = by_connection[fd]
                connection, pid = children.pop(pidfd)
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                os.waitpid(pid, 0)
                _close(poller, by_connection, connection, pidfd)


def _close(poller: select.poll, by_connection: dict[int, int], connection: socket.socket, pidfd: int) -> None:
    poller.unregister(pidfd)
    poller.unregister(connection.fileno())
    by_connection.pop(connection.fileno(), None)
    os.close(pidfd)
    connection.close()


def _die_with_parent() -> None:
    """PR_SET_PDEATHSIG: this process is killed when the warm server ends (the worker ended it)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _exit_code(status: int) -> int:
    return 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _fork(connection: socket.socket, listener: socket.socket) -> tuple[int, int] | None:
    """Receive a connecting process's config and standard streams, and fork its server."""
    fds = array.array("i")
    try:
        message, ancillary, _, _ = connection.recvmsg(4096, socket.CMSG_LEN(3 * fds.itemsize))
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
    except OSError:
        return None
    if len(fds) != 3 or not message:
        for fd in fds:
            os.close(fd)
        return None
    config = message.decode("utf-8")
    warm_server = os.getpid()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            _die_with_parent()  # without the sandbox's PID namespace, nothing else would end it
            if os.getppid() != warm_server:
                os._exit(70)
            os.setsid()  # a group of its own: a mutant's kill(0, ...) does not reach the warm server
            listener.close()
            connection.close()
            for index, fd in enumerate(fds):
                os.dup2(fd, index)
                os.close(fd)
            code = _become(config)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # noqa: BLE001 - as an uncaught exception ends a fresh process
            import traceback

            traceback.print_exc()
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
    for fd in fds:
        os.close(fd)
    return pid, os.pidfd_open(pid)


def _become(config: str) -> int:
    """In the forked child: what overlay.py does in a fresh process, on this config."""
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False, buffering=1)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", closefd=False, buffering=1)  # noqa: SIM115
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()  # a fresh process's global generator is seeded from the system's entropy
    import importlib

    importlib.invalidate_caches()
    from elmo_conformance.mutation import overlay

    return overlay.main([config])


def connect(path: str, config: str) -> int:
    """Hand this process's standard streams to the warm server, then wait for its child to end."""
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.connect(path)
        client.sendmsg([config.encode("utf-8")], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, 1, 2]))])
    except OSError as exc:
        os.write(2, f"elmo-conformance: the warm server at {path} cannot be reached: {exc}\n".encode())
        return 70
    empty = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # the harness must see the child's streams close, not this process's copies
        os.dup2(empty, fd)
    os.close(empty)
    data = b""
    while len(data) < 4:
        chunk = client.recv(4 - len(data))
        if not chunk:
            return 70  # the warm server went away
        data += chunk
    (code,) = struct.unpack("!i", data)
    if code > 128:
        signal.signal(code - 128, signal.SIG_DFL)
        os.kill(os.getpid(), code - 128)
    return code


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "serve":
        return serve(int(argv[1]), argv[2])
    if len(argv) == 3 and argv[0] == "connect":
        return connect(argv[1], argv[2])
    print("usage: zygote.py serve FD CONFIG.json | zygote.py connect SOCKET CONFIG.json", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
