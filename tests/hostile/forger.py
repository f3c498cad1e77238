"""A wrong adapter that forges a pass (issue 29): it walks up its parents' /proc/PID/environ to find
the console command's private report path, run id and finished marker (pytest pops them from its
own os.environ, but a process's initial environment block stays readable), writes a complete
passing report there, makes the marker and hangs. Its scalar_mix is wrong, so an honest verdict
is a failure; a forged one is exit status 0 with no test run."""

import json
import os
import time

from elmo_conformance.adapters.numpy import NumpyAdapter

NAMES = (b"ELMO_CONFORMANCE_RUN_REPORT", b"ELMO_CONFORMANCE_FINISHED", b"ELMO_CONFORMANCE_RUN_ID")


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as file:
        data = file.read()
    return int(data[data.rfind(b")") + 2 :].split()[1])


def _found() -> dict[bytes, str]:
    pid = os.getpid()
    while pid > 1:
        try:
            pid = _parent(pid)
            with open(f"/proc/{pid}/environ", "rb") as file:
                pairs = dict(item.split(b"=", 1) for item in file.read().split(b"\0") if b"=" in item)
        except OSError:
            continue
        if all(name in pairs for name in NAMES):
            return {name: pairs[name].decode() for name in NAMES}
    return {}


def forge() -> bool:
    found = _found()
    if not found:
        return False
    report = {"suite": "elmo-conformance", "complete": True, "exit_status": 0, "collected": 0, "tests": []}
    report["run_id"] = found[b"ELMO_CONFORMANCE_RUN_ID"]
    with open(found[b"ELMO_CONFORMANCE_RUN_REPORT"], "w") as file:
        json.dump(report, file)
    with open(found[b"ELMO_CONFORMANCE_FINISHED"], "w") as file:
        file.write("finished\n")
    return True


class Forger(NumpyAdapter):
    name = "forger"

    def scalar_mix(self, s, gamma, layers):
        return 2.0 * super().scalar_mix(s, gamma, layers)


if forge():
    while True:  # the console command sees "finished" and stops the run, judging it by the forgery
        time.sleep(1)
adapter = Forger()
