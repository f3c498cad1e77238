"""Tries to kill the worker process that runs its batch job (the parent of the pytest process that
loads it): the sandbox stops it, its /proc holds its own PID namespace only. The test kills the
worker from outside (tests/test_batch.py, WorkerKiller: this folder's KILL-MY-WORKER), as the
kernel's OOM killer would."""

import os
import signal

from elmo_conformance.adapters.numpy import NumpyAdapter


def _argv(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as handle:
        return handle.read().split(b"\0")


def _parent(pid):
    with open(f"/proc/{pid}/stat") as handle:
        return int(handle.read().rsplit(")", 1)[1].split()[1])


if "ELMO_CONFORMANCE_BATCH_JOB" in os.environ:  # only in a batch job
    pid = os.getpid()
    while pid > 1:
        if b"pytest" in _argv(pid):
            os.kill(_parent(pid), signal.SIGKILL)
            break
        pid = _parent(pid)


class Killer(NumpyAdapter):
    name = "killer"


adapter = Killer()
