"""`elmo-conformance mutate --scheduler / --scheduler-file` (spec §13.2): one implementation's
mutants on a Dask cluster, through the executor (elmo_conformance.executor) that also runs the
local workers.

- the options are checked as they are parsed (the batch's own validation): a bad address or a
  missing scheduler file is a usage error, exit status 2, naming the option and what it expects;
- the executor's verdict rules, on local workers and on a cluster of `dask scheduler` and
  `dask worker` processes: a worker that dies loses its job as a RuntimeError, one that hangs as
  a Timeout, a Dask worker killed mid-job is a RuntimeError, and never a result; the other jobs
  go on (tests/executor_serve.py is the worker);
- the same seeded sample of tests/examples/outside_mix.py's mutants judged on two `dask worker`s
  and on two local workers: each mutant's status and killing tests are the same; with both Dask
  workers killed mid-run, the mutants they were running are RuntimeErrors that say so and every
  other mutant's verdict is still the local one.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from elmo_conformance.executor import cluster, local
from elmo_conformance.ground.resources import child_environment
from elmo_conformance.mutation import mutate

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = "tests/examples/outside_mix.py"
SERVE = "tests.executor_serve:serve"
# One test: the first killer of a mutant is the same in every run (with two, the order follows
# the baseline's timings, and either may kill first).
SAMPLE = ["-k", "stable_for_large_s and float64", "--max-mutants", "12", "--seed", "3"]
SAMPLE += ["--timeout-min", "4", "--timeout-factor", "2", "--max-errors", "100", "--no-html", "--no-cache"]


def run_mutate(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "elmo_conformance", "mutate", *args]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=child_environment())


# ----------------------------------------------------------------------------- the options


@pytest.mark.parametrize(
    "value",
    ["not an address", "http://127.0.0.1:8786", "tcp://127.0.0.1:99999", "tcp://", "tcp://host:port", ""],
)
def test_a_bad_scheduler_address_is_a_usage_error(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        mutate.parse(["--impl", EXAMPLE, "--scheduler", value])
    assert exit.value.code == 2
    said = capsys.readouterr().err
    assert "--scheduler" in said and "tcp://HOST:PORT" in said and repr(value) in said


@pytest.mark.parametrize("value", ["tcp://127.0.0.1:8786", "127.0.0.1:8786", "tls://[::1]:8786", "scheduler:8786"])
def test_a_scheduler_address_is_taken_as_given(value: str) -> None:
    assert mutate.parse(["--impl", EXAMPLE, "--scheduler", value]).scheduler == value
    assert cluster.scheduler_address(value) == value


def test_the_command_refuses_a_bad_scheduler_before_it_runs(tmp_path: Path) -> None:
    """Through the console command: exit status 2 and one clear line, for each option, and for
    both at once; nothing is written."""
    out = tmp_path / "report"
    bad = run_mutate("--impl", EXAMPLE, "--out", str(out), "--scheduler", "localhost:8786:1")
    assert bad.returncode == 2, bad.stderr
    assert "argument --scheduler: expected a Dask scheduler's address, tcp://HOST:PORT" in bad.stderr
    missing = run_mutate("--impl", EXAMPLE, "--out", str(out), "--scheduler-file", str(tmp_path / "none.json"))
    assert (
        missing.returncode == 2 and "argument --scheduler-file" in missing.stderr and "no such file" in missing.stderr
    )
    (tmp_path / "s.json").write_text("{}", encoding="utf-8")
    both = run_mutate(
        "--impl", EXAMPLE, "--out", str(out), "--scheduler", "tcp://127.0.0.1:8786", "--scheduler-file",
        str(tmp_path / "s.json"),
    )  # fmt: skip
    assert both.returncode == 2 and "not allowed with argument" in both.stderr
    assert not out.exists()


@pytest.mark.parametrize("value", ["tcp://127.0.0.1:8786", "not an address"])
def test_the_batch_takes_and_checks_the_same_options(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    from elmo_conformance.batch.__main__ import parse as batch_parse

    try:
        mutate_said = mutate.parse(["--impl", EXAMPLE, "--scheduler", value]).scheduler
    except SystemExit as exit:
        mutate_said = f"exit {exit.code}: " + capsys.readouterr().err.splitlines()[-1].split("error: ", 1)[1]
    try:
        batch_said = batch_parse(["submission", "--out", "out", "--scheduler", value]).scheduler
    except SystemExit as exit:
        batch_said = f"exit {exit.code}: " + capsys.readouterr().err.splitlines()[-1].split("error: ", 1)[1]
    assert batch_said == mutate_said
    assert mutate_said == value or mutate_said.startswith("exit 2: argument --scheduler: expected")


def test_the_cluster_checks_its_options_too() -> None:
    """The batch's client, given a bad address programmatically, refuses it the same way."""
    with pytest.raises(cluster.ExecutorError, match="--scheduler: expected a Dask scheduler's address"):
        cluster.Cluster(scheduler="nowhere at all").__enter__()


# ----------------------------------------------------------------------------- the verdict rules


class Recorder:
    """A scheduler of fixed jobs, each with the same deadline, that records what became of each."""

    def __init__(self, jobs: list[tuple], timeout: float) -> None:
        self.queue, self.timeout, self.count = list(jobs), timeout, len(jobs)
        self.events: dict[tuple, list] = {}
        self.verdicts: dict[tuple, tuple] = {}

    def next_job(self) -> tuple[Any, float] | None:
        return (self.queue.pop(0), self.timeout) if self.queue else None

    def on_event(self, job: tuple, event: tuple) -> None:
        assert job not in self.verdicts, "an event after the job's verdict"
        self.events.setdefault(job, []).append(event)

    def on_done(self, job: tuple, result: Any) -> None:
        assert job not in self.verdicts, "two verdicts for one job"
        self.verdicts[job] = ("done", result)

    def on_lost(self, job: tuple, status: str, reason: str, running: str | None, elapsed: float) -> None:
        assert job not in self.verdicts, "two verdicts for one job"
        self.verdicts[job] = ("lost", status, reason, running)

    def finished(self) -> bool:
        return len(self.verdicts) == self.count


def check_rules(recorder: Recorder) -> None:
    """What the executor promises, whichever workers ran the jobs."""
    verdicts = recorder.verdicts
    died = verdicts[("die", 2)]
    assert died[:2] == ("lost", "RuntimeError") and "was killed by SIGKILL while running die 2" in died[2]
    hung = verdicts[("hang", 4)]
    assert hung[:2] == ("lost", "Timeout") and "did not finish within 2 s; it was running hang 4" in hung[2]
    raised = verdicts[("raise", 6)]
    assert raised[:2] == ("lost", "RuntimeError") and "the worker raised ValueError: asked to" in raised[2]
    for job in [("ok", 1), ("ok", 3), ("ok", 5), ("ok", 7)]:
        assert verdicts[job][0] == "done" and verdicts[job][1].startswith(f"ok {job[1]} by ")
        assert recorder.events[job] == [("test", f"ok {job[1]} partial")]
    # The partial events of the lost jobs came before their verdicts, and none of them became a result.
    assert recorder.events[("die", 2)] == [("test", "die 2 partial")]


JOBS = [("ok", 1), ("die", 2), ("ok", 3), ("hang", 4), ("ok", 5), ("raise", 6), ("ok", 7)]


def test_local_workers_lose_a_dead_or_late_workers_job_and_go_on(tmp_path: Path) -> None:
    recorder = Recorder(JOBS, timeout=2.0)
    lines: list[str] = []
    local.run_jobs(recorder, 2, tmp_path / "logs", lines.append, SERVE, child_environment())
    check_rules(recorder)
    assert any(line.startswith("timeout: did not finish within 2 s") for line in lines)


def test_a_worker_that_cannot_start_stops_the_run(tmp_path: Path) -> None:
    recorder = Recorder([("ok", 1)], timeout=2.0)
    with pytest.raises(local.WorkerStartError, match="while starting"):
        local.run_jobs(recorder, 1, tmp_path / "logs", print, "tests.executor_serve:no_such_function")
    assert not recorder.verdicts


@pytest.fixture(scope="module")
def dask_scheduler(tmp_path_factory: pytest.TempPathFactory) -> Any:
    pytest.importorskip("distributed")
    from bench.batch import dask_cluster

    with dask_cluster(tmp_path_factory.mktemp("dask")) as scheduler_file:
        yield scheduler_file


@pytest.mark.integration
def test_a_dask_cluster_keeps_the_same_rules_and_loses_a_killed_dask_workers_job(
    dask_scheduler: Path, tmp_path: Path
) -> None:
    """On `dask worker`s: the same verdicts as local workers; a job whose Dask worker is killed
    (SIGKILL, mid-job) is a RuntimeError that says so, never a result, and the run goes on; a job
    reads the shipped copy of a file, at its place under the worker's base folder."""
    from distributed import Client

    from elmo_conformance.executor.remote import run_on_cluster
    from elmo_conformance.executor.shipping import Shipment
    from tests import executor_serve

    shipped = tmp_path / "shipped.txt"
    shipped.write_text("the shipped text\n", encoding="utf-8")
    jobs = [*JOBS, ("kill-dask-worker", 8), ("ok", 9), ("read", str(shipped))]
    recorder = Recorder(jobs, timeout=2.0)
    with Client(scheduler_file=str(dask_scheduler), timeout="30s", set_as_default=False) as client:
        client.wait_for_workers(2, timeout=120)
        run_on_cluster(
            recorder,
            client,
            SERVE,
            print,
            Shipment((str(shipped),)),
            executor_serve.localize,
            executor_serve.delocalize,
        )
        client.wait_for_workers(2, timeout=120)  # the killed one's nanny starts it again
    check_rules(recorder)
    killed = recorder.verdicts[("kill-dask-worker", 8)]
    assert killed[:2] == ("lost", "RuntimeError") and "the Dask worker running it" in killed[2] and "died" in killed[2]
    assert recorder.verdicts[("ok", 9)][0] == "done"
    assert recorder.verdicts[("read", str(shipped))][1].startswith("read the shipped text by ")
    left = list(Path(tempfile.gettempdir()).glob("elmo-executor-*/" + str(shipped).lstrip(os.sep)))
    assert not left, f"the run's files stay on the workers: {left}"


# ----------------------------------------------------------------------------- mutate on a cluster


def verdicts(out: Path, reasons: bool = False) -> dict[str, tuple]:
    report = json.loads((out / "mutation-report.json").read_text(encoding="utf-8"))
    return {
        m["id"]: (m["status"], tuple(m.get("killedBy") or ()), *([m.get("statusReason", "")] if reasons else []))
        for entry in report["files"].values()
        for m in entry["mutants"]
    }


@pytest.fixture(scope="module")
def local_verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple]:
    out = tmp_path_factory.mktemp("local") / "report"
    here = run_mutate("--impl", EXAMPLE, *SAMPLE, "--out", str(out), "--workers", "2")
    assert here.returncode == 0, here.stdout[-3000:] + here.stderr[-3000:]
    assert "2 workers on this machine" in here.stdout
    return verdicts(out)


@pytest.mark.integration
def test_mutants_on_dask_workers_get_the_verdicts_of_local_workers(
    dask_scheduler: Path, local_verdicts: dict, tmp_path: Path
) -> None:
    on_cluster = run_mutate("--impl", EXAMPLE, *SAMPLE, "--out", str(tmp_path / "dask"), "--scheduler-file",
                            str(dask_scheduler))  # fmt: skip
    assert on_cluster.returncode == 0, on_cluster.stdout[-3000:] + on_cluster.stderr[-3000:]
    assert "2 workers on the Dask cluster tcp://127.0.0.1:" in on_cluster.stdout
    expected, found = local_verdicts, verdicts(tmp_path / "dask")
    assert found == expected
    statuses = {status for status, _ in expected.values()}
    assert {"Killed", "Timeout", "Survived", "NoCoverage"} <= statuses, "the sample shows each kind of verdict"
    assert all(killers for status, killers in expected.values() if status == "Killed")


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("gcov") is None or shutil.which("cc") is None, reason="needs cc and gcov")
def test_a_programs_lines_are_measured_on_dask_workers(dask_scheduler: Path, tmp_path: Path) -> None:
    """§13.2 (gcov.py, remote.py): the built-in c's baseline shards, run by Dask workers, build
    their coverage copies there and bring back the lines each test ran under the user's file names
    (the workers here share this machine's files, so the paths' mapping itself is not what this
    shows): a mutant of a line no selected test runs is NoCoverage, where the protocol functions'
    reach would run all 95 tests."""
    main = str(ROOT / "adapters" / "c" / "main.c")
    args = ["--impl", "c", "--source", main, "-k", "scalar_mix and float64", "--max-mutants", "24", "--seed", "2"]
    on_cluster = run_mutate(*args, "--out", str(tmp_path), "--no-cache", "--no-html", "--scheduler-file",
                            str(dask_scheduler))  # fmt: skip
    assert on_cluster.returncode in (0, 1), on_cluster.stdout[-3000:] + on_cluster.stderr[-3000:]
    assert "line coverage (gcov): " in on_cluster.stdout + on_cluster.stderr
    report = json.loads((tmp_path / "mutation-report.json").read_text(encoding="utf-8"))
    mutants = [m for entry in report["files"].values() for m in entry["mutants"]]
    assert {"Killed", "NoCoverage"} <= {m["status"] for m in mutants}, [m["status"] for m in mutants]


@pytest.mark.integration
def test_dask_workers_killed_mid_run_lose_their_mutants_never_to_a_kill(
    dask_scheduler: Path, local_verdicts: dict, tmp_path: Path
) -> None:
    """Both `dask worker` processes killed (SIGKILL) once the mutants are running: a mutant that
    was running on one is a RuntimeError naming the Dask worker's death, every other mutant gets
    the local workers' verdict (their nannies start them again and the run goes on), and no Killed
    comes without the test that killed it."""
    from distributed import Client

    with Client(scheduler_file=str(dask_scheduler), timeout="30s", set_as_default=False) as client:
        client.wait_for_workers(2, timeout=120)
        pids = list(client.run(os.getpid).values())
        out = tmp_path / "dask"
        command = [sys.executable, "-m", "elmo_conformance", "mutate", "--impl", EXAMPLE, *SAMPLE, "--out", str(out)]
        command += ["--scheduler-file", str(dask_scheduler)]
        process = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=child_environment()
        )
        assert process.stdout is not None
        said = []
        for line in process.stdout:
            said.append(line)
            if line.startswith("baseline "):  # the mutants are handed out next
                time.sleep(0.5)
                for pid in pids:
                    os.kill(pid, signal.SIGKILL)
                break
        said += process.stdout.readlines()
        assert process.wait(timeout=900) in (0, 1), "".join(said)[-3000:]
        client.wait_for_workers(2, timeout=120)  # the nannies started them again: the next test has its cluster
    found = verdicts(out, reasons=True)
    assert set(found) == set(local_verdicts)
    lost = {m: v for m, v in found.items() if v[:2] != local_verdicts[m]}
    for mutant, (status, killers, reason) in lost.items():
        assert status == "RuntimeError" and "Dask worker" in reason and "died" in reason, (
            mutant,
            status,
            killers,
            reason,
        )
    assert all(killers for status, killers, _ in found.values() if status == "Killed")
    print(f"lost when the Dask workers were killed: {lost}")
    assert len(lost) <= 2, f"only the mutants running when the workers died are lost: {lost}"
