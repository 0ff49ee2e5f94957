"""`accelstack preflight` as a user runs it: once in a subprocess against moto's threaded server
through --endpoint-url, and in-process for exit codes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from botocore.stub import Stubber
from moto import mock_aws
from moto.server import ThreadedMotoServer

from accelstack.cli import main
from accelstack.preflight import AwsClients

from .. import factories
from ..conftest import ROOT, STACKS
from ..helpers_preflight import FAKE_ENV, SESSION, fake_aws_env, quota


@pytest.fixture(autouse=True)
def _no_real_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test here runs with fake credentials and no shared AWS config."""
    fake_aws_env(monkeypatch)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def moto_server() -> Iterator[str]:
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def spec_copy(tmp_path: Path, name: str, edit: Any) -> Path:
    data = factories.preset("trn1-multinode")
    data["name"] = name
    edit(data)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_cli_subprocess_against_moto_server(tmp_path: Path, moto_server: str) -> None:
    bucket = "acme-preflight-cache"
    spec = spec_copy(tmp_path, "cache-check", lambda d: d["compile_cache"].update(bucket=bucket))
    s3 = boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing").client(
        "s3", region_name="us-west-2", endpoint_url=moto_server
    )
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "us-west-2"})

    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(FAKE_ENV)
    env["AWS_CONFIG_FILE"] = env["AWS_SHARED_CREDENTIALS_FILE"] = str(tmp_path / "none")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "accelstack.cli",
            "preflight",
            str(spec),
            "--endpoint-url",
            moto_server,
            "--format",
            "json",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    doc = json.loads(proc.stdout)
    status = {(c["check"], c["subject"]): c["status"] for c in doc["checks"]}
    # moto implements offerings and S3: real answers
    assert status[("offering", "pool trn1")] == "PASS"
    assert status[("bucket", f"bucket {bucket}")] == "PASS"
    # moto has no EC2 quotas and no EKS cluster versions: warnings, not failures
    assert status[("quota", "quota L-2C3B7624")] == "WARN"
    assert status[("kubernetes", "kubernetes 1.35")] == "WARN"
    # moto ships no public EKS AMI parameter: a failure, so exit 1 with the verdict on stderr
    assert status[("ami", "ami for trn1")] == "FAIL"
    assert doc["ok"] is False
    # emulator errors (HTML pages, 500s) become one short line, never a traceback or markup
    assert all("<" not in c["message"] and len(c["message"]) < 400 for c in doc["checks"])
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        "error: preflight failed: 1 check(s) failed (ami); fix them before deploying"
    )


def test_cli_bad_spec_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = spec_copy(tmp_path, "bad-spec", lambda d: d["pools"][0].update(nodes=0))
    assert main(["preflight", str(bad)]) == 2
    assert "pools[0].nodes" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_text_in_process_with_moto(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """moto for EC2, S3 and SSM; Stubber for the quotas and EKS versions moto lacks."""
    original = AwsClients.from_session
    stubs: list[Stubber] = []

    def from_session(region: str, **kw: Any) -> AwsClients:
        clients = original(region, **kw)
        sq, eks = (
            SESSION.client("service-quotas", region_name=region),
            SESSION.client("eks", region_name=region),
        )
        sq_stub, eks_stub = Stubber(sq), Stubber(eks)
        sq_stub.add_response("get_service_quota", quota("L-1216C47A", 640.0))
        sq_stub.add_response("get_service_quota", quota("L-2C3B7624", 1024.0))
        sq_stub.add_response("get_service_quota", quota("L-BD136A63", 450.0))
        sq_stub.add_response("get_service_quota", quota("L-6D54EA21", 30.0))
        sq_stub.add_response("get_service_quota", quota("L-1194D53C", 100.0))
        sq_stub.add_response("get_service_quota", quota("L-F678F1CE", 5.0))
        eks_stub.add_response("list_clusters", {"clusters": ["other"]})
        eks_stub.add_response(
            "describe_cluster_versions",
            {"clusterVersions": [{"clusterVersion": "1.35", "versionStatus": "STANDARD_SUPPORT"}]},
        )
        for stub in (sq_stub, eks_stub):
            stub.activate()
            stubs.append(stub)
        clients.service_quotas, clients.eks = sq, eks
        return clients

    monkeypatch.setattr(AwsClients, "from_session", staticmethod(from_session))
    with mock_aws():
        code = main(["preflight", str(STACKS / "trn1-multinode.yaml")])
    out, err = capsys.readouterr()
    for stub in stubs:
        stub.assert_no_pending_responses()
    assert code == 1
    assert out.startswith("preflight trn1-multinode (us-west-2, orchestration eks)\n")
    assert "PASS  offering    pool trn1: trn1.32xlarge in usw2-az1 (us-west-2) is offered" in out
    assert "PASS  quota       quota L-2C3B7624: trn on-demand vCPUs: quota 1024 covers" in out
    assert "PASS  kubernetes  kubernetes 1.35: EKS offers 1.35 (standard support)" in out
    assert "FAIL  ami" in out and "fix: use a cluster.kubernetes_version" in out
    assert "PASS  limits      quota L-6D54EA21: managed node groups per EKS cluster" in out
    assert "PASS  limits      quota L-1194D53C: EKS clusters per account and Region: quota " in out
    assert "2 needed (this cluster + 1 existing)" in out
    assert out.endswith("9 passed, 1 failed, 0 warning(s)\n")
    assert err.strip() == (
        "error: preflight failed: 1 check(s) failed (ami); fix them before deploying"
    )


def test_cli_unknown_profile_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["preflight", str(STACKS / "trn1-multinode.yaml"), "--profile", "nope"])
    assert code == 2
    assert "The config profile (nope) could not be found" in capsys.readouterr().err
