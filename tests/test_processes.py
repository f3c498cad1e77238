"""The process kit (elmo_conformance/processes/: tree, kill, guard) on real process trees that
each test starts: what a process is, its descendants, the processes its mark finds after their
parent has gone, signalling a family only while each process is still the one found, ending a
group, and the guard (spec §11.1: no process outlives the run; §15.7: a stopped process is
stopped with every process it started). Each check is shown failing on an input that must fail
it: another mark, a wrong start time, a process outside the tree."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from elmo_conformance.batch import jobs
from elmo_conformance.ground.resources import child_environment
from elmo_conformance.processes import exits, guard, kill, tree

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="process trees are read from /proc")

VARIABLE = "ELMO_TEST_PROCESSES_MARK"
SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]

# A tree: ROOT -> CHILD -> GRANDCHILD in ROOT's group and session; ESCAPEE, ROOT's child in a
# session of its own; ORPHAN, in a session of its own, started by a process that exited at once
# (its parent is no longer in the tree); BURN, ROOT's child, spends CPU_S seconds of CPU first.
TREE = f"""
import os, subprocess, sys, time
sleeper = {SLEEPER!r}
burn = float(sys.argv[2])
child = subprocess.Popen(
    [sys.executable, "-c", "import subprocess, sys, time; p = subprocess.Popen(%r); print(p.pid, flush=True); time.sleep(120)" % (sleeper,)],
    stdout=subprocess.PIPE,
)
grandchild = int(child.stdout.readline())
escapee = subprocess.Popen(sleeper, start_new_session=True)
middle = subprocess.Popen(
    [sys.executable, "-c", "import subprocess; print(subprocess.Popen(%r, start_new_session=True).pid, flush=True)" % (sleeper,)],
    stdout=subprocess.PIPE,
)
orphan = int(middle.stdout.readline())
middle.wait()
burner = subprocess.Popen([sys.executable, "-c", "import time\\nend = time.process_time() + %r\\nwhile time.process_time() < end: pass\\ntime.sleep(120)" % burn])
with open(sys.argv[1] + ".part", "w") as handle:
    handle.write(" ".join(str(p) for p in (child.pid, grandchild, escapee.pid, orphan, burner.pid)))
os.rename(sys.argv[1] + ".part", sys.argv[1])
time.sleep(120)
"""


def alive(pid: int) -> bool:
    found = tree.stat(pid)
    return found is not None and not found.zombie


def gone(pids: list[int], within: float = 10.0) -> bool:
    """Whether every pid has ended (a zombie has) within `within` seconds."""
    end = time.monotonic() + within
    while any(alive(pid) for pid in pids):
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


class Tree:
    """A started TREE: its root process (in a session of its own) and the pids it wrote."""

    def __init__(self, folder: Path, value: str, burn_s: float = 0.0, variable: str = VARIABLE) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        script, pids = folder / "tree.py", folder / "pids"
        script.write_text(TREE, encoding="utf-8")
        self.root = subprocess.Popen(
            [sys.executable, str(script), str(pids), str(burn_s)],
            env={**os.environ, variable: value},
            start_new_session=True,
        )
        end = time.monotonic() + 60
        while not pids.exists():
            assert self.root.poll() is None and time.monotonic() < end, "the tree did not start"
            time.sleep(0.02)
        self.child, self.grandchild, self.escapee, self.orphan, self.burner = map(int, pids.read_text().split())

    @property
    def everyone(self) -> list[int]:
        return [self.root.pid, self.child, self.grandchild, self.escapee, self.orphan, self.burner]

    def end(self) -> None:
        for pid in self.everyone[1:]:
            found = tree.stat(pid)
            if found is not None and found.started == self.started.get(pid, found.started):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        kill.end_group(self.root)

    def __enter__(self) -> Tree:
        self.started = {pid: read.started for pid in self.everyone if (read := tree.stat(pid)) is not None}
        return self

    def __exit__(self, *exc: object) -> None:
        self.end()


@pytest.fixture
def value() -> str:
    return uuid.uuid4().hex


def test_stat_reads_parent_group_session_and_start_of_a_process_then_its_zombie_then_nothing():
    process = subprocess.Popen(SLEEPER, start_new_session=True)
    try:
        found = tree.stat(process.pid)
        assert found is not None
        assert (found.parent, found.group, found.session) == (os.getpid(), process.pid, process.pid)
        own = tree.stat(os.getpid())
        assert own is not None and own.group != process.pid and not found.zombie
        assert 0 < own.started <= found.started
    finally:
        process.kill()
    for _ in range(500):  # killed, not reaped: a zombie
        if (found := tree.stat(process.pid)) is not None and found.zombie:
            break
        time.sleep(0.01)
    assert found is not None and found.zombie
    process.wait()
    assert tree.stat(process.pid) is None


def test_descendants_are_the_tree_below_a_process_from_the_children_files_or_the_table(tmp_path, value, monkeypatch):
    with Tree(tmp_path, value) as started:
        below = set(tree.descendants(started.root.pid))
        assert {started.child, started.grandchild, started.escapee, started.burner} <= below
        assert started.orphan not in below, "its parent exited: it is no longer below the root"
        assert started.root.pid not in below and os.getpid() not in below
        assert tree.descendants(started.child) == [started.grandchild]
        assert tree.descendants(started.grandchild) == []
        assert started.root.pid in tree.descendants(os.getpid())
        monkeypatch.setattr(tree, "children", lambda pid: None)  # a kernel without the children files
        assert set(tree.descendants(started.root.pid)) == below
        assert tree.descendants(started.child) == [started.grandchild]


def test_a_marked_orphan_is_found_after_its_parent_exits_and_another_mark_finds_nothing(tmp_path, value):
    with Tree(tmp_path, value) as started:
        family = tree.family(started.root.pid, VARIABLE, value)
        assert set(family) == set(started.everyone[1:])
        assert family[started.orphan] == started.started[started.orphan]
        assert started.orphan in tree.marked(VARIABLE, value)
        assert set(tree.marked(VARIABLE, value)) == set(started.everyone)  # the root carries it too
        other = uuid.uuid4().hex
        assert tree.marked(VARIABLE, other) == {}
        assert started.orphan not in tree.family(started.root.pid, VARIABLE, other)
        # Without the mark: the descendants, group and session only (the escapee is a child still).
        assert set(tree.family(started.root.pid, VARIABLE, other)) == set(started.everyone[1:]) - {started.orphan}


def test_a_family_is_signalled_only_while_each_pid_is_the_process_found(tmp_path):
    process = subprocess.Popen(SLEEPER)
    try:
        found = tree.stat(process.pid)
        assert found is not None
        reused = {process.pid: found.started + 1}  # the pid as another process would hold it
        assert kill.signal_family(None, reused, signal.SIGKILL) is False
        assert reused == {} and process.poll() is None
        time.sleep(0.1)
        assert process.poll() is None, "a pid of another start time was signalled"
        same = {process.pid: found.started}
        assert kill.signal_family(None, same, signal.SIGKILL) is True
        assert process.wait(10) == -signal.SIGKILL
        assert kill.signal_family(None, {process.pid: found.started}, signal.SIGKILL) is False  # reaped
    finally:
        process.kill()
        process.wait()


def test_ending_a_group_ends_its_members_and_reaps_it_but_not_a_process_that_left_it(tmp_path, value):
    assert kill.signal_group(2**22 + 1, signal.SIGKILL) is False  # above pid_max: no such group
    with Tree(tmp_path, value) as started:
        assert kill.end_group(started.root) == -signal.SIGKILL
        assert started.root.returncode == -signal.SIGKILL
        assert gone([started.child, started.grandchild, started.burner])
        assert alive(started.escapee) and alive(started.orphan), "only the group is ended"


def test_ending_a_family_ends_every_process_the_root_started_marked_orphans_included(tmp_path, value):
    with Tree(tmp_path / "other", uuid.uuid4().hex) as bystander, Tree(tmp_path / "tree", value) as started:
        known: dict[int, int] = {}
        kill.end_family(started.root.pid, VARIABLE, value, known)
        assert gone(started.everyone[1:])
        assert set(known) <= set(started.everyone[1:])
        assert all(alive(pid) for pid in bystander.everyone), "a process of another tree was ended"
        assert started.root.poll() is not None or started.root.wait(10) == -signal.SIGKILL


def test_ending_a_family_looks_again_while_its_root_lives_and_stops_once_nothing_is_found(monkeypatch):
    process = subprocess.Popen(SLEEPER, start_new_session=True)
    looks: list[int] = []
    find = tree.family
    monkeypatch.setattr(tree, "family", lambda *args: looks.append(args[0]) or find(*args))
    try:
        states = iter([True, True, False])  # the root seen alive twice (a fork could race its death)
        monkeypatch.setattr(kill, "alive", lambda pid: next(states))
        kill.end_family(process.pid, VARIABLE, uuid.uuid4().hex, pause=0.0)
        assert looks == [process.pid] * 3
        assert process.wait(10) == -signal.SIGKILL
        monkeypatch.undo()
        monkeypatch.setattr(tree, "family", lambda *args: looks.append(args[0]) or find(*args))
        looks.clear()
        kill.end_family(process.pid, VARIABLE, uuid.uuid4().hex)  # reaped, nothing of it left: one look
        assert looks == [process.pid]
    finally:
        process.kill()
        process.wait()


def test_kill_descendants_ends_the_tree_below_not_the_root_nor_an_orphan(tmp_path, value):
    with Tree(tmp_path, value) as started:
        signalled = set(kill.kill_descendants(started.root.pid))
        assert {started.child, started.grandchild, started.escapee, started.burner} <= signalled
        assert gone([started.child, started.grandchild, started.escapee, started.burner])
        assert started.root.poll() is None and alive(started.orphan)


def test_cpu_seconds_counts_the_tree_below_a_process(tmp_path, value):
    with Tree(tmp_path / "idle", value) as idle, Tree(tmp_path / "busy", value, burn_s=1.0) as busy:
        end = time.monotonic() + 30
        while tree.cpu_seconds(busy.root.pid) < 0.8:
            assert time.monotonic() < end, "the burner's CPU time was not counted"
            time.sleep(0.05)
        assert tree.cpu_seconds(idle.root.pid) < 0.8
        assert tree.cpu_seconds(busy.child) < 0.8, "the burner is not below the child"


def test_the_guard_waits_for_its_input_to_close_then_ends_every_marked_process_and_removes_its_folder(
    tmp_path, value, monkeypatch
):
    folder = tmp_path / "scratch"
    (folder / "deep").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)  # outside the checkout: the package comes from child_environment's path
    with Tree(tmp_path / "other", uuid.uuid4().hex) as bystander, Tree(tmp_path / "tree", value) as started:
        command = [sys.executable, "-P", "-m", "elmo_conformance.processes.guard", VARIABLE, value, str(folder)]
        watcher = subprocess.Popen(command, stdin=subprocess.PIPE, env=child_environment())
        time.sleep(0.5)
        assert watcher.poll() is None and all(alive(pid) for pid in started.everyone) and folder.exists()
        assert watcher.stdin is not None
        watcher.stdin.close()
        assert watcher.wait(30) == 0
        assert gone(started.everyone) and not folder.exists()
        assert all(alive(pid) for pid in bystander.everyone), "a process of another mark was ended"
    usage = subprocess.run([*command[:4]], capture_output=True, env=child_environment(), timeout=60)
    assert usage.returncode == 2 and b"usage" in usage.stderr


@pytest.mark.parametrize("broken", [False, True], ids=["guard", "guard-that-cannot-run"])
def test_a_jobs_guard_ends_its_processes_even_where_its_process_cannot_run(tmp_path, value, monkeypatch, broken):
    """jobs.Guard starts the guard as a module from any working folder; where that process fails
    (it exits at once, or is killed), closing it does its work in the worker's process."""
    monkeypatch.chdir(tmp_path)
    if broken:
        monkeypatch.setattr(jobs, "GUARD", [sys.executable, "-c", "raise SystemExit(1)"])
    folder = tmp_path / "scratch"
    folder.mkdir()
    with Tree(tmp_path / "tree", value, variable=jobs.JOB_ENV) as started:
        watcher = jobs.Guard(value, folder)
        if broken:
            assert watcher.process.wait(30) == 1
        assert all(alive(pid) for pid in started.everyone)
        watcher.close()
        assert gone(started.everyone) and not folder.exists()


def test_sweep_without_marked_processes_removes_only_the_folder(tmp_path, value):
    folder = tmp_path / "scratch"
    folder.mkdir()
    with Tree(tmp_path / "tree", uuid.uuid4().hex) as bystander:
        guard.sweep(VARIABLE, value, str(folder))
        assert not folder.exists() and all(alive(pid) for pid in bystander.everyone)


def test_waiting_for_an_exit_wakes_when_it_happens_and_says_when_it_has_not() -> None:
    """processes/exits.py: a process that exits after 0.17 s is seen within 30 ms of its exit
    (subprocess's own wait, sleeping 0.5, 1, 2, ... 32, 50 ms between looks, sees it at 0.21 s),
    reaped, with its status; one still running when the time is up gives None and is left
    running; one killed by a signal gives the negative signal."""
    started = time.perf_counter()
    quick = subprocess.Popen(["sleep", "0.17"])
    assert exits.wait(quick, 10) == 0 and quick.returncode == 0
    assert time.perf_counter() - started < 0.2
    slow = subprocess.Popen(SLEEPER)
    try:
        assert exits.wait(slow, 0.1) is None and slow.poll() is None
        slow.kill()
        assert exits.wait(slow, 10) == -signal.SIGKILL
    finally:
        with contextlib.suppress(ProcessLookupError):
            slow.kill()
        slow.wait()
    assert exits.wait(slow, 0) == -signal.SIGKILL, "an exit already seen is given again"
