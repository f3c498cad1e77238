"""One full conformance run of elmo-c under AddressSanitizer and UndefinedBehaviorSanitizer.

    python -m elmo_conformance.maintain.sanitize [PYTEST ARGS]      # nox -s sanitize

A memory error or undefined behaviour makes the sanitized program abort during a call, which
fails that test; a leak is reported only when the program exits, after its last answer, where no
test can see it. So the program runs with its standard error copied to a log (through `tee`, so
that failure messages still show its tail), and the run fails when the log holds any sanitizer
report, printing it, whatever the tests said. (UBSAN_OPTIONS' `log_path` is not used: with
AddressSanitizer linked in, UBSan ignores it.)

Before the run, the same flags build two tiny canaries, one that leaks and one that writes past
an allocation, and the run stops unless both are caught: a sanitizer that cannot work on this
machine (LeakSanitizer under ptrace, say) must not make a clean result meaningless.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from elmo_conformance.adapters.c.build import COMMON, SANITIZED, build, compiler
from elmo_conformance.runner.running import run

CANARY = r"""
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    char *block = malloc(16);
    if (argc > 1) block[16] = 1; /* one past the end */
    block = malloc(32);          /* the first block leaks */
    printf("%p\n", (void *)block);
    return 0;
}
"""


MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:", "SUMMARY: UndefinedBehaviorSanitizer")


def sanitizer_environment() -> dict[str, str]:
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = "detect_leaks=1"
    env["UBSAN_OPTIONS"] = "print_stacktrace=1"
    return env


def logged(program: Path, log: Path, *args: str) -> list[str]:
    """The command that runs `program` with its standard error also appended to `log`."""
    return ["bash", "-c", 'exec "$0" "${@:2}" 2> >(tee -a "$1" >&2)', str(program), str(log), *args]


def reports(log: Path) -> list[str]:
    """The sanitizer reports' first lines in a log."""
    if not log.is_file():
        return []
    return [line for line in log.read_text(errors="replace").splitlines() if any(m in line for m in MARKERS)]


def check_canaries(work: Path) -> str | None:
    """None when both canaries are caught; otherwise why the sanitizers cannot be trusted here."""
    source = work / "canary.c"
    source.write_text(CANARY, encoding="utf-8")
    program = work / "canary"
    flags = [flag for flag in COMMON if flag != "-Werror"]
    built = subprocess.run(
        [*compiler(), *flags, *SANITIZED, "-o", str(program), str(source)], capture_output=True, text=True
    )
    if built.returncode != 0:
        return f"the canary does not build with the sanitizer flags:\n{built.stderr}"
    for why, args in (("a leak", []), ("a write past an allocation", ["overflow"])):
        log = work / f"canary-{len(args)}.log"
        subprocess.run(logged(program, log, *args), env=sanitizer_environment(), capture_output=True, timeout=60)
        if not reports(log):
            return f"the sanitizers did not report {why} in the canary; they cannot be trusted on this machine"
    return None


def main(argv: list[str] | None = None) -> int:
    pytest_args = list(sys.argv[1:] if argv is None else argv)
    with tempfile.TemporaryDirectory(prefix="elmo-sanitize-") as tmp:
        work = Path(tmp)
        problem = check_canaries(work)
        if problem:
            print(f"sanitize: {problem}", file=sys.stderr)
            return 2
        print("sanitize: the canaries' leak and overflow were both reported", flush=True)
        program = build(sanitize=True)
        log = work / "elmo-c.stderr"
        impl = "cmd:" + shlex.join(logged(program, log))
        # The project's own program, not code under test from elsewhere: outside the sandbox, whose
        # memory limit AddressSanitizer's shadow memory exceeds and whose read-only temporary
        # folder would keep the log from being written (docs/sandbox.md).
        command = ["--impl", impl, "--no-sandbox", "-p", "no:cacheprovider", *pytest_args]
        done = run(pytest_args=command, env=sanitizer_environment())
        found = reports(log)
        if found:
            print(f"\n==== elmo-c's standard error ====\n{log.read_text(errors='replace')[-20000:]}", file=sys.stderr)
            print(f"sanitize: {len(found)} sanitizer report(s) from elmo-c, first: {found[0]}", file=sys.stderr)
            return 1
        print(f"sanitize: no sanitizer report from elmo-c; the suite exited {done.exit_status}", flush=True)
        for note in done.notes:
            print(f"sanitize: {note}", flush=True)
        return done.exit_status


if __name__ == "__main__":
    sys.exit(main())
