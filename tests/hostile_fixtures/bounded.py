"""Run a command with its memory bounded and measured: the outcome a user of a hostile fixture
needs is a refusal, in bounded memory, never a crash after gigabytes.

The address space is limited (``RLIMIT_AS``) so that a reader that tries to allocate what a bomb
declares fails at once instead of using up the machine, and the command's peak resident memory
is read from the kernel (``wait4``'s ``ru_maxrss``) for the test to compare with its budget.

The peak is measured by a small launcher (this file run as a script) that starts the command and
waits for it: on Linux a process's ``ru_maxrss`` counts the memory of the process it was forked
from, so the command must be forked from the small launcher, not from the test's own process
(which holds a 64 MiB buffer of the zip bomb, pytest and more). BLAS libraries are kept to one
thread, since each thread reserves address space of its own.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ADDRESS_SPACE = 2 * 2**30  # enough for numpy, jsonschema, hypothesis and pytest; not for a bomb
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


@dataclass(frozen=True)
class Outcome:
    returncode: int
    output: str  # stdout then stderr
    peak_mb: float  # peak resident memory of the command

    def fail_lines(self) -> list[str]:
        return [line for line in self.output.splitlines() if " FAIL " in line]


def run_bounded(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 300.0) -> Outcome:
    """``python ARGS`` in ``cwd`` with ``env`` added to this environment, bounded as above."""
    with tempfile.TemporaryDirectory(prefix="elmo-bounded-") as tmp:
        peak_file = Path(tmp) / "peak"
        launcher = [sys.executable, __file__, str(ADDRESS_SPACE), str(peak_file), sys.executable, *args]
        process = subprocess.Popen(
            launcher,
            cwd=cwd,
            env={**os.environ, **ONE_THREAD, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # so that a timeout ends the command too
        )
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
        peak_kb = float(peak_file.read_text()) if peak_file.is_file() else float("inf")
    output = out.decode("utf-8", "replace") + err.decode("utf-8", "replace")
    return Outcome(process.returncode, output, peak_kb / 1024)


def _launch(limit: str, peak_file: str, *command: str) -> int:
    """Run ``command`` with its address space limited; write its peak resident memory (kB) to
    ``peak_file`` and return its exit status."""
    resource.setrlimit(resource.RLIMIT_AS, (int(limit), int(limit)))
    pid = os.posix_spawn(command[0], list(command), os.environ)
    _, status, usage = os.wait4(pid, 0)
    Path(peak_file).write_text(str(usage.ru_maxrss))
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(_launch(*sys.argv[1:]))
