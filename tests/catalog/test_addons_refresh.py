"""`accelstack addons refresh`: EKS DescribeAddonVersions (botocore Stubber) into the catalog
overlay's instances.yaml, the version EKS marks default for each Kubernetes version pinned."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from botocore.stub import Stubber

from accelstack.catalog import load_catalog
from accelstack.catalog.addons_refresh import AwsAddonSource, Request, refresh_overlay
from accelstack.cli import addon_cmds, main
from accelstack.errors import AccelstackError

TODAY = "2026-11-28"


@pytest.fixture(autouse=True)
def fake_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(k, v)


def _answer(addon: str, k8s: str, versions: list[tuple[str, bool]]) -> dict[str, Any]:
    """One DescribeAddonVersions page as EKS answers it."""
    return {
        "addons": [
            {
                "addonName": addon,
                "type": "networking",
                "addonVersions": [
                    {
                        "addonVersion": v,
                        "architecture": ["amd64", "arm64"],
                        "compatibilities": [
                            {"clusterVersion": k8s, "platformVersions": ["*"], "defaultVersion": d}
                        ],
                    }
                    for v, d in versions
                ],
            }
        ]
    }


def _source(answers: list[tuple[str, str, list[tuple[str, bool]]]]) -> AwsAddonSource:
    eks = boto3.client("eks", region_name="us-east-1")
    stub = Stubber(eks)
    for addon, k8s, versions in answers:
        stub.add_response(
            "describe_addon_versions",
            _answer(addon, k8s, versions),
            {"addonName": addon, "kubernetesVersion": k8s},
        )
    stub.activate()
    return AwsAddonSource(eks, "us-east-1")


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_the_default_version_is_pinned_and_written_to_the_overlay(tmp_path: Path) -> None:
    (tmp_path / "instances.yaml").write_text("defaults:\n  system_nodes: 3\n", encoding="utf-8")
    src = _source(
        [
            ("kube-proxy", "1.35", [("v1.35.9-eksbuild.2", False), ("v1.35.3-eksbuild.13", True)]),
            ("vpc-cni", "1.35", [("v1.22.9-eksbuild.1", False)]),  # no default: the newest
        ]
    )
    req = Request(("1.35",), ("kube-proxy", "vpc-cni"))
    result, target = refresh_overlay(req, src, TODAY, tmp_path / "instances.yaml")
    written = yaml.safe_load(target.read_text(encoding="utf-8"))["defaults"]
    assert written["system_nodes"] == 3  # the overlay's other keys are kept
    assert written["eks_addon_versions"]["1.35"] == {
        "kube-proxy": "v1.35.3-eksbuild.13",
        "vpc-cni": "v1.22.9-eksbuild.1",
    }
    assert (
        "DescribeAddonVersions (us-east-1, read 2026-11-28" in written["eks_addon_sources"]["1.35"]
    )
    assert ("1.35", "vpc-cni", "v1.22.3-eksbuild.1", "v1.22.9-eksbuild.1") in result.changed
    merged = load_catalog(overlay=tmp_path).defaults.eks_addon_versions["1.35"]
    assert merged["vpc-cni"] == "v1.22.9-eksbuild.1"  # the overlay over the bundled row
    assert merged["coredns"] == load_catalog().defaults.eks_addon_versions["1.35"]["coredns"]


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_paginated_answers_and_an_addon_eks_does_not_offer(tmp_path: Path) -> None:
    eks = boto3.client("eks", region_name="us-east-1")
    stub = Stubber(eks)
    first = _answer("coredns", "1.34", [("v1.12.9-eksbuild.1", False)])
    stub.add_response(
        "describe_addon_versions",
        {**first, "nextToken": "t"},
        {"addonName": "coredns", "kubernetesVersion": "1.34"},
    )
    stub.add_response(
        "describe_addon_versions",
        _answer("coredns", "1.34", [("v1.12.4-eksbuild.1", True)]),
        {"addonName": "coredns", "kubernetesVersion": "1.34", "nextToken": "t"},
    )
    stub.add_response(
        "describe_addon_versions",
        {"addons": []},
        {"addonName": "kube-proxy", "kubernetesVersion": "1.34"},
    )
    stub.activate()
    req = Request(("1.34",), ("coredns", "kube-proxy"), dry_run=True)
    result, target = refresh_overlay(
        req, AwsAddonSource(eks, "us-east-1"), TODAY, tmp_path / "instances.yaml"
    )
    assert result.pins["1.34"] == {"coredns": "v1.12.4-eksbuild.1"}  # the default, page 2
    assert result.missing == [("1.34", "kube-proxy")]
    assert not target.exists()  # dry run
    assert "1.34 kube-proxy: EKS offers no version" in result.summary(target, True)
    stub.assert_no_pending_responses()


def test_an_unknown_kubernetes_version_is_refused(tmp_path: Path) -> None:
    with pytest.raises(AccelstackError, match="--kubernetes-version 1.99: not in the catalog"):
        refresh_overlay(Request(("1.99",)), _source([]), TODAY, tmp_path / "instances.yaml")


def test_the_command_writes_the_overlay_and_never_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _source([("kube-proxy", "1.35", [("v1.35.3-eksbuild.14", True)])])
    monkeypatch.setattr(addon_cmds, "SOURCE_FACTORY", lambda region: src)
    args = ["--catalog", str(tmp_path), "addons", "refresh", "--kubernetes-version", "1.35"]
    assert main([*args, "--addon", "kube-proxy"]) == 0
    out = capsys.readouterr().out
    assert "1.35 kube-proxy: v1.35.3-eksbuild.13 -> v1.35.3-eksbuild.14" in out
    assert (tmp_path / "instances.yaml").is_file()
    monkeypatch.delenv("ACCELSTACK_CATALOG_DIR", raising=False)
    assert main(["addons", "refresh"]) == 2
    assert "writes into a catalog overlay" in capsys.readouterr().err
