"""The harness's protocol server (adapters/wire/server.py) speaks §15 for every Python adapter the
harness serves (a mutation run, a batch job); the suite's tests of a program's side of the
protocol (conformance/test_wire_process.py) skip a served adapter, so they are run here against
the server itself, started as any `cmd:` program is, serving an adapter the team did not write.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from tests.suite_runs import run_suite_here
from tests.test_components import WIRE_TESTS

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "tests" / "examples" / "outside_mix.py"


def test_the_protocol_server_answers_every_request_of_section_15_6_as_a_program_must(tmp_path: Path) -> None:
    program = shlex.join([sys.executable, "-m", "elmo_conformance.adapters.wire.server", str(EXAMPLE)])
    code, report, output = run_suite_here(
        tmp_path, f"cmd:{program}", "--dtype", "float64", "-k", "test_wire_process or wire_process.py"
    )
    assert code == 0 and report is not None, output[-4000:]
    # every case the module collected (its own lists of requests), each of its four tests, all passed
    ran = [t for t in report["tests"] if t["nodeid"].startswith("conformance/test_wire_process.py")]
    assert {t["test"] for t in ran} == WIRE_TESTS, output[-3000:]
    assert report["collected"] == len(ran) and all(t["outcome"] == "passed" for t in ran), output[-3000:]


def test_a_program_that_will_not_start_again_fails_the_protocol_tests_with_a_message(tmp_path: Path) -> None:
    """A program that answered the run's handshake and cannot start a second time (it exits at
    once when it finds the file its first start left): each §15.6 test, which starts a fresh
    process, fails saying so; none is an error of the harness."""
    server = shlex.join([sys.executable, "-m", "elmo_conformance.adapters.wire.server", str(EXAMPLE)])
    program = tmp_path / "once" / "program.sh"
    program.parent.mkdir()
    program.write_text(
        f'#!/bin/sh\nmark="$(dirname "$0")/started"\n[ -e "$mark" ] && exit 3\ntouch "$mark"\nexec {server}\n',
        encoding="utf-8",
    )
    program.chmod(0o755)
    code, report, output = run_suite_here(
        tmp_path, f"cmd:{program}", "--dtype", "float64", "-k", "not_a_frame or unknown_function_or_mutant"
    )
    assert code == 1 and report is not None, output[-3000:]
    ran = [t for t in report["tests"] if t["nodeid"].startswith("conformance/test_wire_process.py")]
    assert len(ran) == 3 and all(t["outcome"] == "failed" for t in ran), [(t["nodeid"], t["outcome"]) for t in ran]
    assert all(
        "a fresh process of outside-mix, started as the run started its first, failed" in t["message"] for t in ran
    )
