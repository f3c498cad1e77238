"""`elmo-conformance batch`: many submissions on Dask workers (elmo_conformance/batch).

The self-test starts a real Dask scheduler and two workers as separate processes on 127.0.0.1
with Dask's own command-line tools (every listening address on loopback, dashboards included),
runs a batch of submissions there (correct, wrong, one that hangs, one that kills its worker
process, one with a bad manifest), checks every record of batch.json and that no process of any
job is left running, and at the same time runs the same batch on the embedded default (a
LocalCluster) and expects the same verdicts. The submissions are in tests/batch/; the suite runs
one test case each (-k, --dtype float64), so the two batches take about a minute on two cores. The
cluster's processes are started and ended by bench.batch.dask_cluster, each as a process group."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bench.batch import dask_cluster
from elmo_conformance.batch import jobs, records, submissions
from elmo_conformance.batch.__main__ import parse
from elmo_conformance.ground.resources import child_environment

pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parent.parent
SUBMISSIONS = ROOT / "tests" / "batch"
SELECTION = ["-k", "test_hand_example_scalar_mix", "--dtype", "float64"]
JOB_TIMEOUT = "45"  # above a passing job on a busy 2-core machine (about 25 s), below the hang
# In the batch's order: the hang first, so that its deadline runs while the others run.
EXPECTED = {
    "hang": records.HUNG,
    "killer": records.KILLED_WORKER,
    "good": records.PASS,
    "wrong": records.FAIL,
    "bad-manifest": records.NOT_LOADED,
}


def marked(job_ids: set[str]) -> list[int]:
    """Processes whose environment carries one of these job ids."""
    wanted = {f"{jobs.JOB_ENV}={job}".encode() for job in job_ids}
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            if wanted & set(Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")):
                found.append(int(entry))
    return found


def batch(out: Path, *where: str) -> subprocess.Popen:
    """The batch of every submission in tests/batch, started (a console command of its own)."""
    names = [str(SUBMISSIONS / name) for name in EXPECTED]
    command = [sys.executable, "-m", "elmo_conformance", "batch", *names, "--out", str(out), "--job-timeout",
               JOB_TIMEOUT, "--no-progress", *where, *SELECTION]  # fmt: skip
    return subprocess.Popen(
        command,
        env=child_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def finish(process: subprocess.Popen, timeout: float = 300) -> subprocess.CompletedProcess:
    try:
        out, err = process.communicate(timeout=timeout)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def check_records(out: Path, done: subprocess.CompletedProcess) -> dict[str, dict]:
    """Every record of batch.json, and that no process of any job is left; the records by name."""
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads((out / "batch.json").read_text())
    found = {r["name"]: r for r in data["submissions"]}
    assert {name: r["verdict"] for name, r in found.items()} == EXPECTED, done.stdout + done.stderr
    assert data["summary"] == {"pass": 1, "fail": 1, "did not load": 1, "hung": 1, "killed its worker": 1}
    assert set(SELECTION) <= set(data["options"]["suite_args"])

    good = found["good"]
    assert good["reason"] is None and good["exit_status"] == 0 and good["counts"] == {"passed": 1}
    assert good["sections"] == {"5.1": {"passed": 1}, "5.2": {"passed": 1}} and good["failures"] == []
    for kind in ("json", "html"):
        assert (out / good["reports"][kind]).is_file()
    assert json.loads((out / good["reports"]["json"]).read_text())["complete"] is True

    wrong = found["wrong"]
    assert wrong["exit_status"] == 1 and wrong["counts"] == {"failed": 1}
    assert wrong["sections"]["5.1"] == {"failed": 1}
    (failure,) = wrong["failures"]
    assert failure["nodeid"].endswith("test_hand_example_scalar_mix[wrong-float64]")
    assert failure["first_lines"] and "5.1" in failure["sections"]
    assert "1 test case(s) failed" in wrong["reason"]
    assert (out / wrong["reports"]["html"]).is_file()

    hang = found["hang"]
    assert f"deadline ({float(JOB_TIMEOUT):g} s)" in hang["reason"] and hang["exit_status"] == 3
    assert float(JOB_TIMEOUT) <= hang["duration_s"] < float(JOB_TIMEOUT) + 30

    killer = found["killer"]
    assert "died, on both tries" in killer["reason"]
    assert [a["outcome"] for a in killer["attempts"]] == ["its worker died"] * 2
    assert killer["attempts"][0]["worker"] != killer["attempts"][1]["worker"]

    bad = found["bad-manifest"]
    assert "elmo-submission.json" in bad["reason"] and "field 'buld'" in bad["reason"] and bad["attempts"] == []

    # A job that ran past its deadline runs again alone before its deadline counts (docs/grading.md).
    assert [a["outcome"] for a in hang["attempts"]] == ["hit a time limit: run again alone", "result"]
    assert hang["time_limits"]["rerun_alone"] and hang["time_limits"]["limit_counts"]

    job_ids = {a["job"] for r in found.values() for a in r["attempts"] if a.get("job")}
    assert len(job_ids) == 6  # good, wrong, the hang and its run alone, and the killer twice
    assert marked(job_ids) == [], "a process of a job outlived it"

    page = (out / "index.html").read_text()
    for name, verdict in EXPECTED.items():
        assert f'data-submission="{name}" data-verdict="{verdict}"' in page
    assert 'href="submissions/good/report.html"' in page
    return found


class WorkerKiller(threading.Thread):
    """Kills the worker process of every job whose folder holds KILL-MY-WORKER (tests/batch/killer):
    the parent of the job's pytest process, as the kernel's OOM killer would. The killer's own
    attempt to kill its worker is stopped by the sandbox (its /proc holds its namespace only)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.1):
            for pid in marked_processes():
                with contextlib.suppress(OSError):
                    if (
                        b"pytest" in Path(f"/proc/{pid}/cmdline").read_bytes()
                        and Path(f"/proc/{pid}/cwd/KILL-MY-WORKER").exists()
                    ):
                        parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
                        os.kill(parent, signal.SIGKILL)


def marked_processes() -> list[int]:
    """Processes of any batch job (JOB_ENV in their environment)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if f"{jobs.JOB_ENV}=".encode() in Path(f"/proc/{entry}/environ").read_bytes():
                    found.append(int(entry))
    return found


@pytest.mark.integration
def test_batch_on_a_dask_cluster_and_embedded(tmp_path):
    """A real scheduler and two workers (dask scheduler / dask worker on 127.0.0.1), and the
    embedded default (the two batches at the same time, to save time): the same verdicts, every
    record checked, no process of a job left."""
    killer = WorkerKiller()
    killer.start()
    running = batch(tmp_path / "embedded", "--workers", "2")  # starts while the cluster starts
    try:
        with dask_cluster(tmp_path) as scheduler_file:
            from distributed import Client

            with Client(scheduler_file=str(scheduler_file), set_as_default=False) as client:
                info = client.scheduler_info()
                listening = [info["address"], *info["workers"]]
            assert len(listening) == 3 and all(a.startswith("tcp://127.0.0.1:") for a in listening), listening
            on_cluster = finish(batch(tmp_path / "cluster", "--scheduler-file", str(scheduler_file)))
    finally:
        embedded = finish(running)
        killer.done.set()
    assert "cluster tcp://127.0.0.1:" in on_cluster.stderr
    cluster_records = check_records(tmp_path / "cluster", on_cluster)
    assert "embedded LocalCluster tcp://127.0.0.1:" in embedded.stderr
    assert "Dask dashboard: http://127.0.0.1:" in embedded.stderr
    embedded_records = check_records(tmp_path / "embedded", embedded)
    assert {n: r["verdict"] for n, r in embedded_records.items()} == {
        n: r["verdict"] for n, r in cluster_records.items()
    }


# ------------------------------------------------------------------------------ the parts, without a cluster


def test_manifest_problems_name_the_field(tmp_path):
    assert submissions.manifest_problems({"impl": "adapter.py", "name": "ok", "build": "make"}) == []
    assert submissions.manifest_problems({}) == ["field 'impl': required, missing"]
    assert submissions.manifest_problems({"impl": 3}) == ["field 'impl': 3 is not of type 'string'"]
    (extra,) = submissions.manifest_problems({"impl": "a.py", "buld": "make"})
    assert extra.startswith("field 'buld': not a field of elmo-submission.json")
    (name,) = submissions.manifest_problems({"impl": "a.py", "name": "../up"})
    assert name.startswith("field 'name':")
    folder = tmp_path / "not-json"
    folder.mkdir()
    (folder / "elmo-submission.json").write_text("{")
    assert "not a JSON file" in submissions.resolve(str(folder)).problem
    missing = tmp_path / "missing-impl"
    missing.mkdir()
    (missing / "elmo-submission.json").write_text('{"impl": "nope.py"}')
    assert (
        submissions.resolve(str(missing)).problem
        == "elmo-submission.json: field 'impl': nope.py is not a file in the folder"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "neither elmo-submission.json" in submissions.resolve(str(empty)).problem


def test_submissions_resolve_pack_and_get_unique_names(tmp_path):
    found = submissions.resolve_all(
        ["numpy", str(SUBMISSIONS / "good"), str(SUBMISSIONS / "good" / "adapter.py"), "cmd:./prog --x", "numpy"]
    )
    assert [(s.name, s.kind, s.impl) for s in found] == [
        ("numpy", "name", "numpy"),
        ("good", "folder", "adapter.py"),
        ("adapter", "file", "adapter.py"),
        ("prog", "command", "cmd:./prog --x"),
        ("numpy-2", "name", "numpy"),
    ]
    submissions.unpack(found[1].files, tmp_path)
    assert (tmp_path / "adapter.py").read_bytes() == (SUBMISSIONS / "good" / "adapter.py").read_bytes()
    assert submissions.resolve(str(tmp_path / "none.py")).problem.endswith("no such file")


def test_suite_options_pass_through_and_the_batchs_own_are_refused(capsys):
    args = parse(["numpy", "--out", "o", "-k", "mix", "--dtype", "float64", "--", "-x", "--call-timeout", "5"])
    assert args.suite_args == ["-q", "--dtype", "float64", "-k", "mix", "-x", "--call-timeout", "5"]
    with pytest.raises(SystemExit):
        parse(["numpy", "--out", "o", "--", "--impl", "torch"])
    assert "the batch sets it" in capsys.readouterr().err


def test_a_failed_build_is_did_not_load_and_leaves_no_process(tmp_path):
    """A job's build command that starts a process in a session of its own and fails: the guard
    ends that process with the job."""
    job = jobs.Job("b", "adapter.py", build="setsid sleep 300 & echo building; exit 7", deadline_s=60, job_id="t" * 32)
    result = jobs.run_job(job)
    assert result["stage"] == "build" and result["build"]["exit_status"] == 7
    assert "building" in result["build"]["output"]
    assert marked({"t" * 32}) == []
    record = records.new_record(submissions.Submission("b", "b", "folder", "adapter.py"))
    from elmo_conformance.batch.executor import Outcome

    records.judge_suite(record, Outcome(None, job, result, ids=[job.job_id]), tmp_path / "b", tmp_path)
    assert record["verdict"] == records.NOT_LOADED and record["reason"].startswith("its build command exited 7")


def test_a_name_is_never_a_batch_file_nor_another_submissions(tmp_path):
    """Issue 29: a manifest named "batch.json" ended the batch in a traceback; a name a manifest
    claims took another submission's, whose owner was renamed NAME-2."""
    claimer, alice = tmp_path / "bob", tmp_path / "alice"
    for folder, name in ((claimer, "alice"), (tmp_path / "named", "batch.json")):
        folder.mkdir()
        (folder / "adapter.py").write_text("adapter = None\n")
        (folder / "elmo-submission.json").write_text(f'{{"impl": "adapter.py", "name": "{name}"}}')
    alice.mkdir()
    (alice / "adapter.py").write_text("adapter = None\n")
    found = submissions.resolve_all([str(claimer), str(alice), str(tmp_path / "named")])
    assert [s.name for s in found] == ["alice-2", "alice", "batch.json"]
    record = records.new_record(found[2])
    result = {"stage": "suite", "exit_status": 0, "output": "ok", "report": {"complete": True, "tests": []}}
    from elmo_conformance.batch.executor import Outcome

    records.judge_suite(
        record,
        Outcome(None, jobs.Job("batch.json", "adapter.py"), result),
        tmp_path / "submissions" / "batch.json",
        tmp_path,
    )
    assert record["reports"]["output"] == "submissions/batch.json/output.txt"
    path = records.write_batch(tmp_path, [record], {}, {})
    assert path == tmp_path / "batch.json" and json.loads(path.read_text())["submissions"][0]["name"] == "batch.json"


def test_a_jobs_output_is_read_with_a_cap(tmp_path):
    """Issue 29: a 1 GB output was read whole into the worker's memory."""
    code, text, _ = jobs.run_group(
        [sys.executable, "-c", "import sys; sys.stdout.write('x' * (8 << 20) + 'the end')"],
        cwd=tmp_path,
        env=dict(os.environ),
        deadline_s=60,
    )
    assert code == 0 and text.endswith("the end") and len(text) < 200_000
    assert text.startswith("[... ") and "bytes cut]" in text


def test_a_suite_changed_during_a_job_or_other_than_the_clients_is_no_verdict(tmp_path, monkeypatch):
    """Issue 29: a submission appended a hook to the installed suite's conftest.py and every later
    submission passed. The sandbox keeps the suite read-only (tests/test_sandbox.py); the digest of
    its files, before and after each job, refuses a run whose suite changed anyway."""
    digests = iter(["a" * 64, "b" * 64])
    monkeypatch.setattr(jobs, "suite_digest", lambda: next(digests))
    result = jobs.run_job(jobs.Job("t", "numpy", build="true", deadline_s=60, kind="suite", suite_args=["--co"]))
    assert result["stage"] == "suite-files" and "changed during the job" in result["problem"], result
    record = records.new_record(submissions.Submission("t", "t", "name", "numpy"))
    from elmo_conformance.batch.executor import Outcome

    records.judge_suite(record, Outcome(None, jobs.Job("t", "numpy"), result), tmp_path / "t", tmp_path)
    assert record["verdict"] == records.LOST and "changed during the job" in record["reason"]
    monkeypatch.setattr(jobs, "suite_digest", lambda: "c" * 64)
    other = jobs.run_job(jobs.Job("t", "numpy", suite_digest="d" * 64))
    assert other["stage"] == "suite-files" and "not the client's" in other["problem"]


def test_a_jobs_scratch_and_processes_go_when_its_worker_dies(tmp_path):
    """Issue 29: a killed worker's job folder, holding the submission's files, stayed in the
    temporary folder. The guard removes it, and ends every process of the job."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    code = (
        "from elmo_conformance.batch import jobs\n"
        "jobs.run_job(jobs.Job('w', 'adapter.py', build='echo started; sleep 300', deadline_s=300, job_id='w' * 32,"
        " files=None))\n"
    )
    worker = subprocess.Popen([sys.executable, "-c", code], env={**child_environment(), "TMPDIR": str(scratch)})
    try:
        for _ in range(200):
            if list(scratch.glob("elmo-batch-*/submission")) and marked({"w" * 32}):
                break
            time.sleep(0.05)
        assert list(scratch.glob("elmo-batch-*/submission")), "the job did not start"
    finally:
        worker.kill()
        worker.wait()
    for _ in range(100):
        if not list(scratch.iterdir()) and not marked({"w" * 32}):
            break
        time.sleep(0.1)
    assert list(scratch.iterdir()) == [], "the job's scratch folder outlived its worker"
    assert marked({"w" * 32}) == [], "a process of the job outlived its worker"


def test_verdicts_of_jobs_without_a_result_and_the_version_probe(tmp_path):
    """A job whose worker died on both tries is the submission's verdict; one with no result for
    another reason is lost (the batch exits 2). The probe the client runs on the scheduler and the
    workers gives this suite's version."""
    import elmo_conformance
    from elmo_conformance.batch.executor import VERSION_PROBE, Outcome

    assert eval(VERSION_PROBE) == elmo_conformance.__version__
    job = jobs.Job("k", "adapter.py")
    died = records.new_record(submissions.Submission("k", "k", "folder", "adapter.py"))
    outcome = Outcome(None, job, None, died=["tcp://127.0.0.1:1", "tcp://127.0.0.1:2"], ids=["a", "b"])
    records.judge_suite(died, outcome, tmp_path / "k", tmp_path)
    assert died["verdict"] == records.KILLED_WORKER and "tcp://127.0.0.1:2" in died["reason"]
    assert [(a["job"], a["worker"]) for a in died["attempts"]] == [
        ("a", "tcp://127.0.0.1:1"),
        ("b", "tcp://127.0.0.1:2"),
    ]
    lost = records.new_record(submissions.Submission("l", "l", "folder", "adapter.py"))
    records.judge_suite(
        lost, Outcome(None, job, None, lost="the cluster has no workers", ids=["c"]), tmp_path, tmp_path
    )
    assert lost["verdict"] == records.LOST and lost["reason"] == "no result: the cluster has no workers"
    assert records.summary_counts([died, lost]) == {"killed its worker": 1, "lost": 1}


def test_generated_mutants_need_the_mutate_extra_before_any_job(tmp_path, monkeypatch, capsys):
    """--mutants generated on this machine's workers needs the `mutate` extra: without it the batch
    stops before any job, naming the missing package (rather than a failed mutation per job)."""
    from elmo_conformance.batch.__main__ import main
    from elmo_conformance.mutation import generate

    monkeypatch.setattr(generate, "EXTRA", ("no_such_engine_package",))
    code = main([str(SUBMISSIONS / "good"), "--out", str(tmp_path / "out"), "--mutants", "generated"])
    assert code == 2
    said = capsys.readouterr().err
    assert "--mutants generated runs `elmo-conformance mutate`" in said and "no_such_engine_package" in said
    assert not (tmp_path / "out" / "batch.json").exists()
