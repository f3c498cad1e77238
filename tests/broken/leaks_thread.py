"""A correct adapter that starts a non-daemon thread which never ends: Python waits for such a
thread before it exits, so in the harness's process it would keep the run alive after its report."""

import threading
import time

from elmo_conformance.adapters.numpy import NumpyAdapter


def _forever() -> None:
    while True:
        time.sleep(0.1)


class LeaksThread(NumpyAdapter):
    name = "leaks-thread"


threading.Thread(target=_forever, name="leaked-by-adapter", daemon=False).start()
adapter = LeaksThread()
