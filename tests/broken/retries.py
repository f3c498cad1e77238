"""bilm_layers never returns, and catches every exception on the way, the harness's alarm included:
the in-process alarm cannot stop it; the child process it runs in by default is stopped."""

import time

from elmo_conformance.adapters.numpy import NumpyAdapter


class Retries(NumpyAdapter):
    name = "retries"

    def bilm_layers(self, params, ids, lengths):
        while True:
            try:
                time.sleep(0.05)
            except BaseException:  # noqa: B036  (the point: it swallows the harness's CallTimeout)
                pass


adapter = Retries()
