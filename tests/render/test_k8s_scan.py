"""A Kubernetes security scanner over every rendered manifest: checkov (--framework kubernetes,
no network: --skip-download) runs once over the PyTorchJob and indexed-Job manifests of every
EKS preset. The PyTorchJob's replica pod templates are also written as Pods, because checkov
does not look inside the custom resource. Every finding is fixed in the templates or listed,
with its reason, in tests/checkov-allowlist.yaml; an allowlist entry that no longer fires fails.

checkov pins old versions of boto3 and others, so it lives in its own environment (`make test`
creates .venv-checkov); the test finds it through ACCELSTACK_CHECKOV, .venv-checkov/bin or PATH,
and is skipped without it, except under CI, where a missing scanner fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from accelstack.render import render_manifest
from accelstack.render.artifacts import render_fabric_test

from ..conftest import PRESETS, ROOT
from ..helpers_render import preset_stack

pytestmark = pytest.mark.slow

ALLOWLIST = ROOT / "tests" / "checkov-allowlist.yaml"
#: A planted manifest that must produce a finding the allowlist does not excuse (proves the
#: scanner ran and reads our files).
CANARY = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "canary", "namespace": "training"},
    "spec": {
        "containers": [{"name": "c", "image": "repo:1.0", "securityContext": {"privileged": True}}]
    },
}
CANARY_CHECK = "CKV_K8S_16"  # "Container should not be privileged"


def _checkov() -> str | None:
    for candidate in (
        os.environ.get("ACCELSTACK_CHECKOV"),
        str(ROOT / ".venv-checkov" / "bin" / "checkov"),
        shutil.which("checkov"),
    ):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def _pods_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The PyTorchJob's replica templates, or a TrainingRuntime's replicated Jobs' pod
    templates, as Pods (checkov skips custom resources)."""
    meta = doc["metadata"]
    if doc["kind"] == "TrainingRuntime":
        return [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{meta['name']}-{rj['name']}",
                    "namespace": meta["namespace"],
                    "labels": rj["template"]["spec"]["template"]["metadata"]["labels"],
                },
                "spec": rj["template"]["spec"]["template"]["spec"],
            }
            for rj in doc["spec"]["template"]["spec"]["replicatedJobs"]
        ]
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{meta['name']}-{role.lower()}",
                "namespace": meta["namespace"],
                "labels": rs["template"]["metadata"]["labels"],
            },
            "spec": rs["template"]["spec"],
        }
        for role, rs in doc["spec"]["pytorchReplicaSpecs"].items()
    ]


def _write_manifests(out: Path) -> int:
    """Every EKS preset's manifests (plus the PyTorchJob pods); returns the file count."""
    count = 0
    for path in PRESETS:
        stack = preset_stack(path.stem)
        if stack.spec.orchestration != "eks":
            continue
        fabric = render_fabric_test(stack)
        texts = {
            kind: render_manifest(stack, kind, bucket="cache-bucket")  # type: ignore[arg-type]
            for kind in ("trainjob", "pytorchjob", "job")
        }
        if fabric is not None:
            texts["fabric-test"] = fabric
        for kind, text in texts.items():
            (out / f"{path.stem}-{kind}.yaml").write_text(text)
            pods = [
                p
                for d in yaml.safe_load_all(text)
                if d and d["kind"] in ("PyTorchJob", "TrainingRuntime")
                for p in _pods_of(d)
            ]
            if pods:
                (out / f"{path.stem}-{kind}-pods.yaml").write_text(yaml.safe_dump_all(pods))
            count += 1 + bool(pods)
    (out / "zz-canary.yaml").write_text(yaml.safe_dump(CANARY))
    return count


@pytest.fixture(scope="session")
def scan(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    checkov = _checkov()
    if checkov is None:
        if os.environ.get("CI"):
            pytest.fail("checkov is not installed: run `make test` (it creates .venv-checkov)")
        pytest.skip("checkov not found (ACCELSTACK_CHECKOV, .venv-checkov/bin, PATH)")
    out = tmp_path_factory.mktemp("manifests")
    files = _write_manifests(out)
    proc = subprocess.run(
        [
            checkov,
            "-d",
            str(out),
            "--framework",
            "kubernetes",
            "-o",
            "json",
            "--compact",
            "--skip-download",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "BC_SKIP_MAPPING": "TRUE"},
    )
    assert proc.returncode in (0, 1), proc.stderr[-3000:]  # 1 = findings
    report = json.loads(proc.stdout)
    assert report["summary"]["parsing_errors"] == 0
    return {"report": report, "files": files}


def _allowlist() -> dict[str, str]:
    entries = yaml.safe_load(ALLOWLIST.read_text())
    ids = [e["id"] for e in entries]
    assert len(ids) == len(set(ids)), "duplicate allowlist entries"
    assert all(len(e["reason"].split()) >= 5 for e in entries), "every entry needs a reason"
    return {e["id"]: e["reason"] for e in entries}


def _findings(scan: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [
        (f["check_id"], f["file_path"].lstrip("/"), f["resource"])
        for f in scan["report"]["results"]["failed_checks"]
    ]


def test_scanner_read_every_manifest(scan: dict[str, Any]) -> None:
    results = scan["report"]["results"]
    scanned = {
        f["file_path"].lstrip("/") for f in results["passed_checks"] + results["failed_checks"]
    }
    assert len(scanned - {"zz-canary.yaml"}) == scan["files"] >= 10
    canary = [c for c, path, _ in _findings(scan) if path == "zz-canary.yaml"]
    assert CANARY_CHECK in canary and CANARY_CHECK not in _allowlist()


def test_every_finding_is_fixed_or_allowlisted(scan: dict[str, Any]) -> None:
    allowed = _allowlist()
    new = sorted(
        {(c, p, r) for c, p, r in _findings(scan) if p != "zz-canary.yaml" and c not in allowed}
    )
    assert not new, "findings to fix or allowlist (tests/checkov-allowlist.yaml):\n" + "\n".join(
        f"{c} {p} {r}" for c, p, r in new
    )


def test_every_allowlist_entry_still_fires(scan: dict[str, Any]) -> None:
    fired = {c for c, p, _ in _findings(scan) if p != "zz-canary.yaml"}
    stale = sorted(set(_allowlist()) - fired)
    assert not stale, f"allowlist entries that no longer fire (remove them): {stale}"
