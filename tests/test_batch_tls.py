"""A batch on a cluster that only speaks TLS with mutual authentication (docs/sandbox.md, "Clusters
across machines: TLS"), set up exactly as that section says: certificates made with `openssl`, `dask
scheduler --protocol tls` and `dask worker` with `--tls-*`, encryption required in the Dask
configuration of every process, and `elmo-conformance batch --scheduler-file` reading the client's
certificate from the same configuration. The batch judges its submissions there; a client
without the certificate is refused by the scheduler."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.batch import dask_cluster
from elmo_conformance.ground.resources import child_environment
from tests.test_batch import SELECTION, finish

pytest.importorskip("distributed")
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl makes the test's certificates"),
]
ROOT = Path(__file__).resolve().parent.parent


def certificates(folder: Path) -> dict[str, Path]:
    """A certificate authority and one certificate it signed for 127.0.0.1 (the scheduler's, the
    workers' and the client's: a course would make one per machine)."""

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=elmo-conformance test CA")  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "node.key", "-out", "node.csr", "-subj", "/CN=localhost")
    (folder / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n", encoding="utf-8")
    openssl("x509", "-req", "-in", "node.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "node.pem", "-days", "2", "-extfile", "san.ext")  # fmt: skip
    return {"ca": folder / "ca.pem", "cert": folder / "node.pem", "key": folder / "node.key"}


def tls_environment(found: dict[str, Path]) -> dict[str, str]:
    """The Dask configuration the docs give, as environment variables."""
    return {
        **child_environment(),
        "DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION": "True",
        "DASK_DISTRIBUTED__COMM__TLS__CA_FILE": str(found["ca"]),
        "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT": str(found["cert"]),
        "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY": str(found["key"]),
        "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0",
    }


def test_a_batch_runs_on_a_tls_cluster_and_a_client_without_the_certificate_is_refused(tmp_path: Path) -> None:
    found = certificates(tmp_path)
    env = tls_environment(found)
    from distributed import Security

    tls = ["--tls-ca-file", str(found["ca"]), "--tls-cert", str(found["cert"]), "--tls-key", str(found["key"])]
    client = Security(
        tls_ca_file=str(found["ca"]),
        tls_client_cert=str(found["cert"]),
        tls_client_key=str(found["key"]),
        require_encryption=True,
    )
    cluster = dask_cluster(
        tmp_path, workers=1, env=env, scheduler_args=["--protocol", "tls", *tls], worker_args=tls, security=client
    )
    with cluster as scheduler_file:
        address = json.loads(scheduler_file.read_text(encoding="utf-8"))["address"]
        assert address.startswith("tls://127.0.0.1:"), address
        # A client with no certificate: the scheduler never completes its handshake.
        stranger = (
            "from distributed import Client\n"
            "try:\n"
            f"    Client({address!r}, timeout=8, set_as_default=False)\n"
            "except Exception as exc:\n"
            "    print('refused:', type(exc).__name__)\n"
            "else:\n"
            "    print('connected')\n"
        )
        refused = subprocess.run(
            [sys.executable, "-c", stranger], env=child_environment(), capture_output=True, text=True, timeout=120
        )
        assert "refused:" in refused.stdout, refused.stdout + refused.stderr[-2000:]

        out = tmp_path / "out"
        command = [sys.executable, "-m", "elmo_conformance", "batch", str(ROOT / "tests" / "batch" / "good"),
                   str(ROOT / "tests" / "batch" / "wrong"), "--out", str(out), "--no-progress",
                   "--scheduler-file", str(scheduler_file), *SELECTION]  # fmt: skip
        process = subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
        done = finish(process, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"cluster {address}" in done.stderr
    data = json.loads((out / "batch.json").read_text(encoding="utf-8"))
    assert {r["name"]: r["verdict"] for r in data["submissions"]} == {"good": "pass", "wrong": "fail"}
