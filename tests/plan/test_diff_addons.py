"""Add-ons pinned per Kubernetes version in the catalog (instances.yaml eks_addon_versions), never
EKS's newest resolved at deploy (aws.eks.get_addon_version(most_recent=True), which the program
asked for before); a Kubernetes minor bump updates every add-on in place, after the control
plane, before the nodes."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import pytest

from accelstack.catalog import load_catalog
from accelstack.errors import AccelstackError
from accelstack.plan import Plan
from accelstack.plan.diff import diff_resources
from accelstack.resolve import resolve
from accelstack.spec import parse_spec, read_yaml
from accelstack.tokens import ADDON, ADDON_VERSION_LOOKUP, CLUSTER, NODE_GROUP
from tests.conftest import PRESETS, STACKS
from tests.helpers_plan import plan_stack

pytestmark = pytest.mark.plan


def _data(version: str) -> dict[str, Any]:
    data: dict[str, Any] = copy.deepcopy(read_yaml(STACKS / "llama3-70b-p5.yaml"))
    data["cluster"]["kubernetes_version"] = version
    data["budget"] = {"max_hourly_usd": 1e9, "max_monthly_usd": 1e12, "max_run_usd": 1e12}
    return data


@cache
def planned(version: str) -> Plan:
    return plan_stack(resolve(parse_spec(_data(version), "llama3-70b-p5.yaml")), guard=False)


def addon_versions(plan: Plan) -> dict[str, Any]:
    return {r.inputs["addonName"]: r.inputs.get("addonVersion") for r in plan.of_type(ADDON)}


@pytest.mark.slow
@pytest.mark.parametrize("path", PRESETS, ids=lambda p: p.stem)
def test_no_preset_plan_carries_a_floating_addon_version(path: Any) -> None:
    """Fails on the old program: every add-on without a catalog pin (all of them on 1.35) took
    `aws.eks.get_addon_version(most_recent=True)`, EKS's newest at deploy time."""
    data = copy.deepcopy(read_yaml(path))
    data["budget"] = {"max_hourly_usd": 1e9, "max_monthly_usd": 1e12, "max_run_usd": 1e12}
    stack = resolve(parse_spec(data, path.name))
    plan = plan_stack(stack, guard=False)
    assert not [x for x in plan.lookups if x["token"] == ADDON_VERSION_LOOKUP]
    versions = addon_versions(plan)
    assert sorted(versions) == sorted(stack.addon_names)
    pins = load_catalog().defaults.eks_addon_versions[stack.kubernetes_version] if versions else {}
    for name, version in versions.items():
        assert version == pins[name], name  # a literal, the catalog's row
        assert isinstance(version, str) and version.startswith("v") and "eksbuild" in version


def test_every_kubernetes_version_pins_every_addon_with_its_source() -> None:
    d = load_catalog().defaults
    every = {
        "vpc-cni",
        "kube-proxy",
        "coredns",
        "eks-pod-identity-agent",
        "aws-fsx-csi-driver",
        "eks-node-monitoring-agent",
        "amazon-cloudwatch-observability",
    }
    for version in d.eks_versions:
        assert set(d.eks_addon_versions[version]) == every, version
        assert d.eks_addon_sources[version], version


def test_a_version_without_pins_is_refused_naming_the_field() -> None:
    """An overlay that adds a Kubernetes version but no add-on row: refused in one line naming
    cluster.kubernetes_version and the refresh command (no plan would float)."""
    cat = load_catalog()
    versions = {k: v for k, v in cat.defaults.eks_addon_versions.items() if k != "1.34"}
    bare = cat.model_copy(
        update={"defaults": cat.defaults.model_copy(update={"eks_addon_versions": versions})}
    )
    with pytest.raises(AccelstackError) as e:
        resolve(parse_spec(_data("1.34"), "llama3-70b-p5.yaml"), bare)
    text = str(e.value)
    assert "cluster.kubernetes_version" in text and "addons refresh" in text
    assert "kube-proxy" in text and "1.34" in text


def test_a_catalog_pin_is_what_the_addon_carries() -> None:
    versions = addon_versions(planned("1.33"))
    assert versions["vpc-cni"] == "v1.20.1-eksbuild.3"  # instances.yaml eks_addon_versions
    assert versions["kube-proxy"] == "v1.33.10-eksbuild.13"


def test_a_kubernetes_minor_bump_updates_the_addons_in_place_in_order() -> None:
    old, new = planned("1.34"), planned("1.35")
    res = diff_resources(old.to_dict(), new.to_dict())
    changed = {r["name"]: r for r in res["changed"]}
    moved = [r.name for r in new.of_type(ADDON) if r.inputs["addonVersion"] != _pin("1.34", r)]
    assert moved and all(name in changed for name in moved)
    assert not [r for r in res["replaced"] if r["type"] in (ADDON, CLUSTER)]
    assert all("addonVersion" in changed[n]["keys"] for n in moved)
    cluster = new.of_type(CLUSTER)[0].name
    for r in new.of_type(ADDON):  # after the control plane: each add-on depends on it
        assert cluster in r.depends_on, r.name
    for ng in new.of_type(NODE_GROUP):  # the nodes after the add-ons that run before them
        early = {d for d in ng.depends_on if "addon-" in d}
        assert {"vpc-cni", "kube-proxy", "eks-pod-identity-agent"} <= {
            d.rsplit("addon-", 1)[1] for d in early
        }, ng.name


def _pin(version: str, r: Any) -> str:
    return load_catalog().defaults.eks_addon_versions[version][r.inputs["addonName"]]


def test_the_system_node_group_follows_the_cluster_version() -> None:
    """Fails on the old program: the system node group (an EKS AMI) had no `version`, so it
    stayed at its creation version and EKS refused the next UpdateClusterVersion."""
    for version in ("1.34", "1.35"):
        plan = planned(version)
        system = next(r for r in plan.of_type(NODE_GROUP) if r.name.endswith("system-ng"))
        assert system.inputs["version"] == version
        assert plan.of_type(CLUSTER)[0].inputs["version"] == version
        for ng in plan.of_type(NODE_GROUP):  # custom-AMI groups follow their AMI pin instead
            if ng is not system:
                assert "version" not in ng.inputs and "amiType" not in ng.inputs
