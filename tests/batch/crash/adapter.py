"""A hostile submission whose process crashes (SIGSEGV) in every ScalarMix vjp call, and which
tries to change its own grade: it writes a Gradescope results.json, a grade sheet and a journal
of passing tests into every folder it can, prints journal lines, and looks for the harness's
journal in its environment. Its grade must be what the harness observed (docs/grading.md)."""

import json
import os
import signal
from pathlib import Path

from elmo_conformance.adapters.numpy import NumpyAdapter

FAKE = {"event": "test", "test": "test_scalar_mix_vjp_matches_reference", "outcome": "passed", "hit": None}


def _claim_full_marks():
    results = {"score": 1000.0, "tests": [{"name": "everything", "score": 1000.0, "max_score": 1.0}]}
    for folder in {Path.cwd(), Path.cwd().parent, Path("/tmp")}:
        for name, text in (
            ("results.json", json.dumps(results)),
            ("grades.csv", "name,verdict,score\ncrash,pass,1000\n"),
            ("journal.jsonl", json.dumps(FAKE) + "\n"),
        ):
            try:
                (folder / name).write_text(text)
            except OSError:
                pass
    for variable, value in os.environ.items():
        if "JOURNAL" in variable or "LIMITS" in variable:
            try:
                with open(value, "a") as handle:
                    handle.write(json.dumps(FAKE) + "\n")
            except OSError:
                pass
    print(json.dumps(FAKE), flush=True)


if Path(__file__).resolve().parent == Path.cwd().resolve():  # run from its own folder: a batch job's copy
    _claim_full_marks()


class Crashes(NumpyAdapter):
    name = "crash"

    def scalar_mix_vjp(self, s, gamma, layers, g_out):
        os.kill(os.getpid(), signal.SIGSEGV)


adapter = Crashes()
