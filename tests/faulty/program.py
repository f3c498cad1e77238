"""A deliberately faulty implementation process for the harness's self-tests (spec §15.7).

    python tests/faulty/program.py MODE [N [MARKER]]

It is the protocol server for the numpy adapter (so every answer is right) until its N-th call
(default 1), where it misbehaves as MODE says:

    exit-at-once       exits before the handshake, with a line on stderr
    other-version      answers the handshake as protocol 2.0
    exit               exits with status 3 during the call
    segfault           dies of a real segmentation fault during the call
    hang               never answers
    garbage            writes text to stdout instead of a frame
    truncated          writes half a frame, then exits
    oversized          declares a frame body of 3 GiB
    undecodable        writes a frame whose body is not a value
    wrong-id           answers with another request id
    wrong-shape        answers bilm_layers with R^0 one column too wide (and keeps running)
    flood-stderr       writes 20 MB to stderr on every call, then answers correctly
    spawn-child        starts a grandchild that sleeps for an hour, then hangs
    spawn-session      starts a grandchild in a session of its own and a daemon (a double fork
                       that leaves it without a parent), both sleeping for an hour, then hangs
    exit-leaving-child starts a grandchild in a session of its own that holds the answer pipe
                       open and sleeps for an hour, then exits with status 3
    huge-answer        declares a body of 10^9 + 5 bytes (under the frame limit), a list of 10^9
                       nulls, writes its first bytes and sleeps
    many-values        answers with a list of 10^6 nulls (a valid 1 MB frame)
    65-dims            answers with a float64 array of 65 dimensions of 1 (a valid §15.3 value)
    restart-hangs      exits with status 3 during the call; a fresh process started after it
                       (the file $FAULTY_STATE exists) never answers hello

The server it wraps is adapters/wire/server.py; only `call` is overridden. MARKER is put in the
command line of every process it starts, so that a test can look for survivors.
"""

from __future__ import annotations

import ctypes
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout, when run as a script

from elmo_conformance.adapters.wire import codec  # noqa: E402
from elmo_conformance.adapters.wire.server import Server  # noqa: E402


class Faulty(Server):
    def __init__(self, arg: str, out, mode: str, at: int) -> None:
        super().__init__(arg, out)
        self.mode = mode
        self.at = at
        self.calls = 0

    def hello(self, request: dict) -> None:
        state = os.environ.get("FAULTY_STATE")
        if self.mode == "restart-hangs" and state:
            if os.path.exists(state):
                sys.stderr.write("faulty: a restarted process, hanging in hello\n")
                sys.stderr.flush()
                while True:
                    time.sleep(1)
            Path(state).touch()
        if self.mode != "other-version":
            super().hello(request)
            return
        self.send({"type": "hello", "protocol": "2.0", "name": "faulty", "capabilities": ["float64"]})

    def call(self, request: dict, sources: dict | None = None) -> None:
        self.calls += 1
        if self.mode == "flood-stderr":
            block = b"x" * 65535 + b"\n"
            for _ in range(320):
                os.write(2, block)
        if self.calls < self.at or self.mode in ("flood-stderr", "other-version"):
            super().call(request, sources)
            return
        if self.mode == "wrong-shape":
            if request.get("function") != "bilm_layers":
                super().call(request, sources)
                return
            from elmo_conformance import reference
            from elmo_conformance.spec.protocol import protocol

            bound = request["args"]
            args, _ = protocol().functions["bilm_layers"].split_call(bound)
            layers = reference.bilm_layers(*args)
            layers[0] = layers[0][..., :-1]
            self.send({"type": "result", "id": request["id"], "value": layers})
            return
        self.misbehave(request)

    def misbehave(self, request: dict) -> None:
        mode = self.mode
        sys.stderr.write(f"faulty: call {self.calls} ({request.get('function')}): {mode}\n")
        sys.stderr.flush()
        if mode in ("exit", "restart-hangs"):
            os._exit(3)
        if mode == "segfault":
            ctypes.string_at(0)  # reads address 0: SIGSEGV
        if mode == "hang":
            while True:
                time.sleep(1)
        if mode == "spawn-child":
            marker = sys.argv[3] if len(sys.argv) > 3 else ""
            subprocess.Popen([sys.executable, "-c", f"import time; time.sleep(3600)  # {marker}"])
            while True:
                time.sleep(1)
        if mode == "spawn-session":
            marker = sys.argv[3] if len(sys.argv) > 3 else ""
            sleeper = f"import time; time.sleep(3600)  # {marker} session"
            subprocess.Popen([sys.executable, "-c", sleeper], start_new_session=True)
            daemon = f"import os, time\nos.setsid()\nif os.fork(): os._exit(0)\ntime.sleep(3600)  # {marker} daemon"
            subprocess.Popen([sys.executable, "-c", daemon], start_new_session=True).wait()
            while True:
                time.sleep(1)
        if mode == "exit-leaving-child":
            marker = sys.argv[3] if len(sys.argv) > 3 else ""
            sleeper = f"import time; time.sleep(3600)  # {marker} holder"
            subprocess.Popen([sys.executable, "-c", sleeper], stdout=self.out, start_new_session=True)
            time.sleep(0.2)
            os._exit(3)
        if mode == "huge-answer":
            count = 10**9
            self.out.write(codec.MAGIC + struct.pack("<I", count + 5) + b"l" + struct.pack("<I", count) + b"n" * 65536)
            self.out.flush()
            time.sleep(3600)
        if mode == "many-values":
            self.send({"type": "result", "id": request["id"], "value": [None] * 10**6})
            return
        if mode == "65-dims":
            array = b"a" + b"f8" + bytes([65]) + struct.pack("<65Q", *[1] * 65) + struct.pack("<d", 0.5)
            body = b"m" + struct.pack("<I", 3)
            body += struct.pack("<I", 4) + b"type" + b"s" + struct.pack("<I", 6) + b"result"
            body += struct.pack("<I", 2) + b"id" + b"i" + struct.pack("<q", request["id"])
            body += struct.pack("<I", 5) + b"value" + array
            self.out.write(codec.MAGIC + struct.pack("<I", len(body)) + body)
            self.out.flush()
            return
        if mode == "garbage":
            self.out.write(b"hello from the implementation: computing bilm_layers...\n")
            self.out.flush()
            time.sleep(3600)
        if mode == "truncated":
            data = codec.frame({"type": "result", "id": request["id"], "value": 1.0})
            self.out.write(data[: len(data) // 2])
            self.out.flush()
            os._exit(0)
        if mode == "oversized":
            self.out.write(codec.MAGIC + struct.pack("<I", 3 << 30))
            self.out.flush()
            time.sleep(3600)
        if mode == "undecodable":
            body = b"zzzz"
            self.out.write(codec.MAGIC + struct.pack("<I", len(body)) + body)
            self.out.flush()
            return
        if mode == "wrong-id":
            self.send({"type": "result", "id": request["id"] + 1000, "value": 0.5})
            return
        raise SystemExit(f"faulty: unknown mode {mode!r}")


def main() -> int:
    mode = sys.argv[1]
    at = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    if mode == "exit-at-once":
        sys.stderr.write("faulty: cannot open model.bin: No such file or directory\n")
        return 2
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return Faulty("numpy", out, mode, at).serve(sys.stdin.buffer)


if __name__ == "__main__":
    sys.exit(main())
