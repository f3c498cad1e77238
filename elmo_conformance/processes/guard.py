"""The guard of a group of processes that may outlive the one that started them (spec §11.1: no
process outlives the run; a batch job's, docs/batch.md):

    python -P -m elmo_conformance.processes.guard VARIABLE VALUE [FOLDER]

It waits for its standard input to close: its starter closes it when the work is done, and the
kernel closes it when the starter dies, however it dies. Then it kills every process whose
environment carries ``VARIABLE=VALUE`` (``tree.marked``), again and again until none is left
(what they start while they die is marked too), and removes FOLDER. It runs outside any sandbox,
in the starter's environment less the mark, so that it never counts itself.
"""

from __future__ import annotations

import shutil
import signal
import sys
import time

from elmo_conformance.processes import kill, tree

ROUNDS = 200  # looks for marked processes, each killing those found
PAUSE_S = 0.05
USAGE = "usage: python -m elmo_conformance.processes.guard VARIABLE VALUE [FOLDER]"


def sweep(variable: str, value: str, folder: str | None = None, rounds: int = ROUNDS, pause: float = PAUSE_S) -> None:
    """Kill every process marked `variable=value` until a look finds none (at most `rounds`
    looks), then remove `folder`."""
    for _ in range(rounds):
        found = tree.marked(variable, value)
        if not found:
            break
        kill.signal_family(None, found, signal.SIGKILL)
        time.sleep(pause)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (2, 3):
        print(USAGE, file=sys.stderr)
        return 2
    sys.stdin.buffer.read()  # until the starter closes it, or dies
    sweep(args[0], args[1], args[2] if len(args) == 3 else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
