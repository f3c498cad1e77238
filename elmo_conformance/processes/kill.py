"""Ending processes: a process group, a family found by ``tree``, the descendants of a process
(spec §11.1: no process outlives the run; §15.7: a stopped process is stopped with its whole
process group and every process it started).

A process of a family is signalled only while it is the process that was found: same pid, same
start time, not a zombie (``signal_family``). A pid the kernel gave to another process since is
left alone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time

from elmo_conformance.processes import tree

ROUNDS = 5  # looks for processes left behind, each killing those found
PAUSE_S = 0.05  # between two looks: SIGKILL is delivered, the next look finds them gone


def signal_group(group: int, sig: int) -> bool:
    """Send `sig` to process group `group`; whether there was one to receive it."""
    try:
        os.killpg(group, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def signal_family(root: int | None, family: dict[int, int], sig: int) -> bool:
    """Send `sig` to the process group of `root` (None: no group) and to each process of `family`
    (pid -> start time) that is still the process it was; those that are not, or are gone, leave
    `family`. Whether any was there to receive it."""
    sent = root is not None and signal_group(root, sig)
    for pid, started in list(family.items()):
        now = tree.stat(pid)
        if now is None or now.zombie or now.started != started:
            del family[pid]
            continue
        try:
            os.kill(pid, sig)
            sent = True
        except (ProcessLookupError, PermissionError):
            del family[pid]
    return sent


def end_family(
    root: int,
    variable: str,
    value: str,
    family: dict[int, int] | None = None,
    rounds: int = ROUNDS,
    pause: float = PAUSE_S,
) -> None:
    """SIGKILL `root`'s process group and every process of its family (``tree.family``: its
    descendants, group, session and the processes marked `variable=value`), found again each
    round (those it starts while it dies), with those of `family` seen before, until a round finds
    none of them alive and `root` itself has ended (or was reaped), or `rounds` have passed."""
    known: dict[int, int] = {} if family is None else family
    for _ in range(rounds):
        known.update(tree.family(root, variable, value))
        signal_family(root, known, signal.SIGKILL)
        if not known and not alive(root):
            return
        time.sleep(pause)


def alive(pid: int) -> bool:
    """Whether process `pid` is there and has not ended (a zombie has)."""
    found = tree.stat(pid)
    return found is not None and not found.zombie


def end_group(process: subprocess.Popen) -> int:
    """SIGKILL the whole process group of `process` (it leads it: started in a session of its own)
    and reap it; its exit status."""
    signal_group(process.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        process.kill()
    return process.wait()


def kill_descendants(root: int | None = None) -> list[int]:
    """SIGKILL every live descendant of `root` (this process by default), each while it is the
    process that was found; the pids signalled."""
    below = tree.descendants(os.getpid() if root is None else root)
    found = {pid: read.started for pid in below if (read := tree.stat(pid)) is not None}
    signal_family(None, found, signal.SIGKILL)
    return list(found)
