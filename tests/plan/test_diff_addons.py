"""Add-ons versioned per Kubernetes version: the catalog's pin where it has one, else EKS's newest
for the version resolved at deploy (aws.eks.get_addon_version, modelled in the plan's mocks); a
Kubernetes minor bump updates every add-on in place, after the control plane, before the nodes."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import pytest

from accelstack.plan import Plan
from accelstack.plan.diff import diff_resources
from accelstack.resolve import resolve
from accelstack.spec import parse_spec, read_yaml
from accelstack.tokens import ADDON, ADDON_VERSION_LOOKUP, CLUSTER, NODE_GROUP
from tests.conftest import STACKS
from tests.helpers_plan import plan_stack

pytestmark = pytest.mark.plan


@cache
def planned(version: str) -> Plan:
    data: dict[str, Any] = copy.deepcopy(read_yaml(STACKS / "llama3-70b-p5.yaml"))
    data["cluster"]["kubernetes_version"] = version
    data["budget"] = {"max_hourly_usd": 1e9, "max_monthly_usd": 1e12, "max_run_usd": 1e12}
    return plan_stack(resolve(parse_spec(data, "llama3-70b-p5.yaml")), guard=False)


def addon_versions(plan: Plan) -> dict[str, Any]:
    return {r.inputs["addonName"]: r.inputs.get("addonVersion") for r in plan.of_type(ADDON)}


def test_every_addon_carries_a_version_for_the_clusters_kubernetes_version() -> None:
    """Fails on the old program: without a catalog pin (every add-on on 1.34 and 1.35) the
    add-on had no version, so it stayed at its creation version through every upgrade."""
    versions = addon_versions(planned("1.35"))
    assert {"vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent"} <= set(versions)
    assert all(versions.values()), versions
    assert versions["kube-proxy"] == "kube-proxy-newest-for-1.35"
    asked = [x for x in planned("1.35").lookups if x["token"] == ADDON_VERSION_LOOKUP]
    assert {a["args"]["kubernetesVersion"] for a in asked} == {"1.35"}
    assert all(a["args"]["mostRecent"] for a in asked)


def test_a_catalog_pin_wins_over_the_lookup() -> None:
    versions = addon_versions(planned("1.33"))
    assert versions["vpc-cni"] == "v1.20.1-eksbuild.3"  # instances.yaml eks_addon_versions
    assert versions["kube-proxy"] == "kube-proxy-newest-for-1.33"


def test_a_kubernetes_minor_bump_updates_the_addons_in_place_in_order() -> None:
    old, new = planned("1.34"), planned("1.35")
    res = diff_resources(old.to_dict(), new.to_dict())
    changed = {r["name"]: r for r in res["changed"]}
    addons = [r.name for r in new.of_type(ADDON)]
    assert addons and all(name in changed for name in addons)
    assert not [r for r in res["replaced"] if r["type"] in (ADDON, CLUSTER)]
    assert all("addonVersion" in changed[n]["keys"] for n in addons)
    cluster = new.of_type(CLUSTER)[0].name
    for r in new.of_type(ADDON):  # after the control plane: each add-on depends on it
        assert cluster in r.depends_on, r.name
    ng = next(r for r in new.of_type(NODE_GROUP) if "system" not in r.name)
    assert any(d.endswith("addon-vpc-cni") for d in ng.depends_on)  # nodes after add-ons
