"""Finding a tree of processes on Linux, from /proc: what a process is (its parent, process group,
session, start time and CPU ticks), its descendants, the processes that carry a marker in their
environment, and the family of a process the harness started (spec §11.1: "no process outlives
the run", and how they are found; §15.7: a stopped process is stopped with every process it
started).

Nothing here signals: ``kill`` does, with what this finds. A process is named by its pid *and* its
start time (``Stat.started``), read before anything else about it, so that a pid the kernel has
given to a new process since is never taken for the old one. Where there is no /proc (macOS), every
search finds nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import NamedTuple

PROC = "/proc"
TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100  # clock ticks a second


class Stat(NamedTuple):
    """What /proc/PID/stat says of a process."""

    parent: int
    group: int  # its process group
    session: int
    started: int  # clock ticks after boot: with the pid, which process this is
    ticks: int  # CPU time in clock ticks: user + system, its own and its reaped children's
    zombie: bool  # it has ended and waits only to be reaped


def stat(pid: int) -> Stat | None:
    """The stat of process `pid`, or None when there is none (or it cannot be read)."""
    try:
        with open(f"{PROC}/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2 :].split()  # after the command's name: state, ppid, ...
    try:
        return Stat(
            parent=int(fields[1]),
            group=int(fields[2]),
            session=int(fields[3]),
            started=int(fields[19]),
            ticks=sum(int(x) for x in fields[11:15]),
            zombie=fields[0] == b"Z",
        )
    except (IndexError, ValueError):
        return None


def table() -> dict[int, Stat]:
    """Every process there is now, by pid (zombies included); empty where there is no /proc."""
    if not os.path.isdir(PROC):
        return {}
    found: dict[int, Stat] = {}
    for name in os.listdir(PROC):
        if name.isdigit() and (read := stat(int(name))) is not None:
            found[int(name)] = read
    return found


def _below(root: int, children: Mapping[int, Iterable[int]]) -> list[int]:
    """Every pid under `root` in a map of children, each once."""
    found: list[int] = []
    seen: set[int] = {root}
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in seen:
                seen.add(child)
                found.append(child)
                todo.append(child)
    return found


def _children_by_parent(processes: Mapping[int, Stat]) -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for pid, read in processes.items():
        children.setdefault(read.parent, []).append(pid)
    return children


def children(pid: int) -> list[int] | None:
    """The children of `pid`, from /proc/PID/task/TID/children: none when it is gone, None where
    the kernel lacks these files."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"{PROC}/{pid}/task")
    except OSError:
        return []
    for task in tasks:
        try:
            with open(f"{PROC}/{pid}/task/{task}/children", "rb") as handle:
                found += [int(x) for x in handle.read().split()]
        except FileNotFoundError:
            if not os.path.exists(f"{PROC}/{pid}/task/{task}"):
                continue  # the thread ended
            return None
        except OSError:
            continue
    return found


def descendants(root: int) -> list[int]:
    """Every descendant of `root` there is now (its children, theirs, ...; zombies included). A
    process whose parent ended is its subreaper's, no longer `root`'s: ``family`` finds those."""
    found: list[int] = []
    todo = [root]
    while todo:
        below = children(todo.pop())
        if below is None:  # no children files: the parent of every process
            return _below(root, _children_by_parent(table()))
        found += below
        todo += below
    return found


def cpu_seconds(root: int | None = None) -> float:
    """CPU seconds of `root`'s descendants (this process's by default), their reaped children's
    included, plus this process's reaped children's: what its child processes have used so far."""
    root = os.getpid() if root is None else root
    ticks = sum(read.ticks for pid in descendants(root) if (read := stat(pid)) is not None)
    times = os.times() if root == os.getpid() else None
    return ticks / TICK + (times.children_user + times.children_system if times else 0.0)


def carries(pid: int, variable: str, value: str) -> bool:
    """Whether `variable=value` is in the environment of process `pid` (a zombie's is empty)."""
    try:
        with open(f"{PROC}/{pid}/environ", "rb") as handle:
            return f"{variable}={value}".encode() in handle.read().split(b"\0")
    except OSError:
        return False


def marked(variable: str, value: str) -> dict[int, int]:
    """Every live process but this one whose environment carries `variable=value`, by pid, with
    its start time. What a process starts inherits its environment: a mark finds it after it has
    left its session and lost its parent."""
    own = os.getpid()
    return {
        pid: read.started
        for pid, read in table().items()
        if pid != own and not read.zombie and carries(pid, variable, value)
    }


def family(root: int, variable: str, value: str) -> dict[int, int]:
    """Every live process that `root` started, by pid, with its start time: its descendants, the
    processes of its process group and session (it leads both: it was started in a session of its
    own), and those whose environment carries `variable=value`, as `root`'s did. Neither `root`
    nor this process."""
    processes = table()
    members = set(_below(root, _children_by_parent(processes)))
    members.update(pid for pid, read in processes.items() if root in (read.group, read.session))
    members.update(pid for pid in processes if pid not in members and carries(pid, variable, value))
    members -= {root, os.getpid()}
    return {pid: processes[pid].started for pid in members if not processes[pid].zombie}
