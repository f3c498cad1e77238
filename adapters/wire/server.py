"""The protocol server: a Python adapter behind the wire protocol of spec §15.

    python -m elmo_conformance.adapters.wire.server numpy        # any --impl argument of §11

It answers `hello` with the adapter's name, capabilities, device and declared mutants, then each
`call` by calling the adapter (or the mutant the call names) exactly as the harness calls an
in-process adapter, and answers with the result or the error. It also checks what only the
adapter's own process can see: that the call did not modify its inputs (§1.4); a call that did is
answered with an error of kind `ModifiedInput` naming the input, which the harness reports as it
reports an in-process adapter that modifies its inputs.

Standard output carries frames only: whatever the adapter prints goes to standard error.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from typing import Any, BinaryIO

from elmo_conformance.adapters.declared import declared_mutants, describe
from elmo_conformance.adapters.loading import AdapterLoadError, LoadedAdapter, load_adapter, load_mutant
from elmo_conformance.adapters.purity import first_change, snapshot
from elmo_conformance.adapters.wire import codec
from elmo_conformance.ground.version import __version__
from elmo_conformance.spec.protocol import Function, protocol


def _short_traceback(exc: BaseException) -> str:
    frames = traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-3)
    return "".join(frames).rstrip()


def _unencodable(function: Function, result: Any, error: codec.WireError) -> str:
    """Why a result has no encoding, naming the value as the harness names it: bilm_layers()[1]."""
    try:
        codec.encode(result, f"{function.name}()")
    except codec.WireError as named:
        return str(named)
    return str(error)  # the value encodes; the frame as a whole is too large


class Server:
    def __init__(self, arg: str, out: BinaryIO) -> None:
        self.arg = arg
        self.out = out
        self.loaded: LoadedAdapter | None = None
        self.load_error: str | None = None
        self.variants: dict[str | None, Any] = {}
        try:
            if arg.startswith("cmd:"):
                raise AdapterLoadError(f"--impl {arg}: the server runs Python adapters; run a command directly")
            self.loaded = load_adapter(arg)
            self.variants[None] = self.loaded.adapter
        except AdapterLoadError as exc:
            self.load_error = str(exc)

    def send(self, message: dict[str, Any]) -> None:
        self.out.write(codec.frame(message))
        self.out.flush()

    def error(self, request_id: Any, kind: str, message: str) -> None:
        self.send(
            {
                "type": "error",
                "id": request_id if isinstance(request_id, int) else None,
                "kind": kind,
                "message": message,
            }
        )

    def hello(self, request: dict[str, Any]) -> None:
        if self.loaded is None:
            self.error(None, "AdapterLoadError", self.load_error or "no adapter")
            return
        mutants = []
        try:
            for key, factory in declared_mutants(self.loaded.adapter).items():
                if key.strip():  # an empty id names no mutant (`--mutant ''` is refused)
                    mutants.append({"id": key, "title": describe(key, factory).title})
        except Exception as exc:  # a malformed `mutants` spoils --mutant only, as in-process
            print(f"elmo-conformance serve: the adapter's mutants are not listed: {exc}", file=sys.stderr)
            mutants = []
        self.send(
            {
                "type": "hello",
                "protocol": protocol().version,
                "name": self.loaded.name,
                "capabilities": sorted(self.loaded.capabilities),
                "device": self.loaded.device,
                "unavailable": self.loaded.unavailable,
                "mutants": mutants,
                "server": f"elmo-conformance {__version__} protocol server",
            }
        )

    def variant(self, mutant: Any) -> Any:
        if mutant not in self.variants:
            assert self.loaded is not None
            if not isinstance(mutant, str):
                raise AdapterLoadError(f"mutant: expected null or a mutant id, got {mutant!r}")
            self.variants[mutant] = load_mutant(self.loaded, mutant).adapter
        return self.variants[mutant]

    def call(self, request: dict[str, Any], sources: dict[int, Any] | None = None) -> None:
        """One call (§15.5). `sources` maps each decoded argument array (by id) to the request
        bytes it came from: the snapshot for the purity check, so that nothing is copied."""
        request_id = _id_of(request)
        if request_id is None:
            self.error(None, "ProtocolError", f"id: a call needs an integer id, got {request.get('id')!r} (§15.5)")
            return
        name = request.get("function")
        if not isinstance(name, str):
            self.error(request_id, "ProtocolError", f"function: a call needs a string, got {name!r} (§15.5)")
            return
        function = protocol().functions.get(name)
        if function is None:
            self.error(
                request_id, "UnknownFunction", f"function: {request.get('function')!r} is not a protocol function (§11)"
            )
            return
        try:
            target = self.variant(request.get("mutant"))
        except AdapterLoadError as exc:
            self.error(request_id, "UnknownMutant", str(exc))
            return
        except Exception as exc:  # a mutant factory that raises
            self.error(request_id, "UnknownMutant", f"{type(exc).__name__}: {exc}\n{_short_traceback(exc)}")
            return
        given = request.get("args")
        if not isinstance(given, dict):
            self.error(request_id, "ProtocolError", "args: expected a map of the function's arguments (§15.5)")
            return
        missing = [name for name in function.argument_names if name not in given]
        if missing:
            self.error(request_id, "ProtocolError", f"args: {', '.join(missing)} missing (§15.5)")
            return
        args, kwargs = function.split_call(given)
        before = snapshot([list(args), kwargs], sources)
        try:
            # The lookup is the adapter's code too (a property, __getattr__): what it raises is
            # answered as what the call raised, as in the harness's process.
            try:
                method = getattr(target, function.name)
            except AttributeError:
                method = None
            if not callable(method):
                self.error(
                    request_id, "NotImplemented", f"{self.loaded.name if self.loaded else '?'} has no {function.name}"
                )
                return
            result = method(*args, **kwargs)
        except ValueError as exc:
            self.error(request_id, "ValueError", str(exc))
            return
        except Exception as exc:
            self.error(request_id, type(exc).__name__, f"{exc}\n{_short_traceback(exc)}")
            return
        changed = first_change(before, [list(args), kwargs], "args")
        if changed:
            self.error(request_id, "ModifiedInput", changed)
            return
        try:
            reply = codec.frame({"type": "result", "id": request_id, "value": result})
        except codec.WireError as exc:
            self.error(
                request_id, "UnencodableResult", f"the result cannot be sent: {_unencodable(function, result, exc)}"
            )
            return
        self.out.write(reply)
        self.out.flush()

    def serve(self, stream: BinaryIO) -> int:
        while True:
            sources: dict[int, Any] = {}
            try:
                request = codec.read_frame(stream, sources)
            except codec.WireError as exc:
                self.error(None, "ProtocolError", f"cannot read the request: {exc}")
                return 1
            if request is None:
                return 0
            kind = request.get("type")
            try:
                if kind == "hello":
                    self.hello(request)
                elif kind == "call" and self.loaded is not None:
                    self.call(request, sources)
                else:
                    self.error(_id_of(request), "ProtocolError", f"type: unexpected message type {kind!r}")
            except Exception as exc:  # the server's own failure: answered, and the server goes on
                self.error(
                    _id_of(request), "InternalError", f"the protocol server failed: {exc!r}\n{_short_traceback(exc)}"
                )
            del sources, request


def _id_of(request: dict[str, Any]) -> int | None:
    """The request's id when it is an integer, else None: an answer's id is an integer or null (§15.6)."""
    found = request.get("id")
    return found if isinstance(found, int) and not isinstance(found, bool) else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m elmo_conformance.adapters.wire.server",
        description="Serve a Python adapter over the wire protocol of spec §15 on stdin/stdout.",
    )
    parser.add_argument("impl", help="the adapter: a built-in name, a .py file with `adapter`, or package.module:attr")
    args = parser.parse_args(argv)
    # Frames go to the original standard output; anything the adapter prints goes to stderr.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    # Requests come from the original standard input; the adapter's reads (a stray breakpoint())
    # find it at end of file instead of consuming the harness's frames.
    requests = os.fdopen(os.dup(sys.stdin.fileno()), "rb")
    empty = os.open(os.devnull, os.O_RDONLY)
    os.dup2(empty, sys.stdin.fileno())
    os.close(empty)
    sys.stdin = open(os.devnull, encoding="utf-8")  # kept for the process's lifetime
    server = Server(args.impl, out)
    return server.serve(requests)


if __name__ == "__main__":
    sys.exit(main())
