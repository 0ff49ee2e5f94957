"""Kubernetes upgrades as EKS takes them (accelstack/plan/updates.py): UpdateClusterVersion one
minor version up, and only while every managed node group runs the cluster's version; each node
group followed through an update (its `version` on an EKS AMI, its AMI pin on a custom AMI)."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import pytest

from accelstack.plan import Plan
from accelstack.plan.updates import (
    cluster_requests,
    node_group_version,
    problems,
    upgrade_problems,
    version_step_problem,
)
from accelstack.resolve import resolve
from accelstack.spec import parse_spec, read_yaml
from accelstack.tokens import CLUSTER, LAUNCH_TEMPLATE, NODE_GROUP
from tests.conftest import STACKS
from tests.helpers_plan import plan_stack


def test_one_minor_version_up_at_a_time() -> None:
    assert version_step_problem("1.33", "1.34") is None
    assert version_step_problem("1.34", "1.34") is None
    for a, b in (("1.33", "1.35"), ("1.35", "1.34"), ("1.35", "2.0")):
        assert version_step_problem(a, b) == (
            f"Unsupported Kubernetes minor version update from {a} to {b}"
        )


def test_a_lagging_node_group_blocks_the_next_cluster_upgrade() -> None:
    assert upgrade_problems("1.34", "1.35", {"sys": "1.34", "p5": "1.34"}) == []
    assert upgrade_problems("1.34", "1.35", {"sys": "1.33", "p5": "1.34"}) == [
        "Nodegroups sys must be updated to match cluster version 1.34 before updating cluster "
        "version"
    ]


def test_each_node_group_follows_as_eks_does() -> None:
    eks_ami = {"amiType": "AL2023_x86_64_STANDARD"}
    assert node_group_version({**eks_ami, "version": "1.34"}, "1.33", "1.34", False) == "1.34"
    assert node_group_version(eks_ami, "1.33", "1.34", False) == "1.33"  # no version: stays
    assert node_group_version(eks_ami, None, "1.34", False) == "1.34"  # created now
    custom: dict[str, Any] = {"launchTemplate": {"id": "lt", "version": "2"}}
    assert node_group_version(custom, "1.33", "1.34", True) == "1.34"  # the new AMI pin
    assert node_group_version(custom, "1.33", "1.34", False) == "1.33"  # an old pin: lags


def test_the_cluster_requests_check_against_botocore() -> None:
    reqs = cluster_requests({"version": "1.34"}, {"version": "1.35", "deletionProtection": True})
    assert [r.operation for r in reqs] == ["UpdateClusterVersion", "UpdateClusterConfig"]
    assert all(problems(r) == [] for r in reqs)
    assert cluster_requests(None, {"version": "1.35"}) == []


def _data(version: str) -> dict[str, Any]:
    data: dict[str, Any] = copy.deepcopy(read_yaml(STACKS / "trn1-multinode.yaml"))
    data["cluster"]["kubernetes_version"] = version
    data["budget"] = {"max_hourly_usd": 1e9, "max_monthly_usd": 1e12, "max_run_usd": 1e12}
    return data


@cache
def _planned(version: str) -> Plan:
    return plan_stack(resolve(parse_spec(_data(version), "trn1-multinode.yaml")), guard=False)


def _versions_after(base: Plan, head: Plan, before: dict[str, str], drop: bool) -> dict[str, str]:
    """Each node group's version after `base` -> `head` (`drop`: the system group without its
    `version`, as the program planned it before)."""
    images = {
        r.name
        for r in head.of_type(LAUNCH_TEMPLATE)
        if r.inputs.get("imageId") != base.get(r.type, r.name).inputs.get("imageId")
    }
    k8s = str(head.of_type(CLUSTER)[0].inputs["version"])
    out = {}
    for ng in head.of_type(NODE_GROUP):
        sent = dict(ng.inputs)
        if drop:
            sent.pop("version", None)
        out[ng.name] = node_group_version(
            sent, before[ng.name], k8s, bool(images & set(ng.depends_on))
        )
    return out


@pytest.mark.plan
@pytest.mark.parametrize("old_program", [False, True])
def test_two_upgrades_in_a_row_are_accepted_only_when_every_group_follows(
    old_program: bool,
) -> None:
    """The old program's system node group (no `version`) stays at 1.33 through 1.33 -> 1.34,
    so EKS refuses 1.34 -> 1.35; the program's follows and both are accepted. The pools' groups
    (custom AMIs) follow through their new AMI pins either way."""
    p33, p34, p35 = _planned("1.33"), _planned("1.34"), _planned("1.35")
    created = {ng.name: "1.33" for ng in p33.of_type(NODE_GROUP)}
    assert upgrade_problems("1.33", "1.34", created) == []
    after = _versions_after(p33, p34, created, drop=old_program)
    system = next(n for n in after if n.endswith("system-ng"))
    pools = [n for n in after if n != system]
    assert pools and all(after[n] == "1.34" for n in pools)
    second = upgrade_problems("1.34", "1.35", after)
    if old_program:
        assert after[system] == "1.33"
        assert second == [
            f"Nodegroups {system} must be updated to match cluster version 1.34 before "
            "updating cluster version"
        ]
    else:
        assert second == []
    assert _versions_after(p34, p35, after, drop=False)[system] == "1.35"


def test_deletion_protection_and_repair_thresholds_update_in_place() -> None:
    """The generated provider table (catalog/provider_replacements.json): an existing cluster
    given deletionProtection, and an existing node group given repair thresholds, are updated
    in place (UpdateClusterConfig, UpdateNodegroupConfig), never replaced."""
    from accelstack.plan.updates import nodegroup_requests, operation
    from accelstack.tokens import CLUSTER as C
    from accelstack.tokens import NODE_GROUP as NG

    cluster = {"name": "c", "version": "1.35", "roleArn": "arn"}
    protected = {**cluster, "deletionProtection": True}
    assert operation(cluster, protected, rtype=C) == "update"
    group = {"nodeGroupName": "g", "nodeRepairConfig": {"enabled": True}}
    repaired = {
        **group,
        "nodeRepairConfig": {
            "enabled": True,
            "maxUnhealthyNodeThresholdCount": 4,
            "maxParallelNodesRepairedCount": 4,
        },
    }
    assert operation(group, repaired, rtype=NG) == "update"
    (req,) = nodegroup_requests(group, repaired)
    assert req.operation == "UpdateNodegroupConfig" and problems(req) == []
