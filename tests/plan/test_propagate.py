"""Replacements carried to their dependents (plan/propagate.py) as `diff` shows them: a VPC CIDR
change replaces the VPC, the subnets on it (`vpcId`), the node groups on those (`subnetIds`), and
the nodes roll, counted first in the text, the PR comment and the quiet decision."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from accelstack.plan.diff import below_threshold, diff_document, stack_diff
from accelstack.plan.diff_report import render_markdown, render_text
from accelstack.plan.diffside import SideRow
from accelstack.plan.propagate import carried, outputs_of, references
from accelstack.plan.replacements import provider_table
from accelstack.resolve import resolve
from accelstack.spec import parse_spec
from accelstack.tokens import NODE_GROUP, SUBNET, VPC

from .. import factories
from ..conftest import planned_preset
from ..helpers_plan import plan_stack

pytestmark = [pytest.mark.plan, pytest.mark.slow]
STEM = "mixed-trn2-p5"  # no FSx: a VPC change is not refused, so its rolls are the headline


def accelerated(instance_type: str) -> bool:
    return not instance_type.startswith("m6i")


@cache
def sides() -> tuple[dict[str, Any], dict[str, Any]]:
    base = planned_preset(STEM)[1].to_dict()
    data = factories.preset(
        STEM, {"network.vpc_cidr": "10.43.0.0/16", "budget.max_hourly_usd": 1e9}
    )
    head = plan_stack(resolve(parse_spec(data, f"{STEM}.yaml")), guard=False).to_dict()
    return base, head


def _side(plan: dict[str, Any]) -> SideRow:
    return SideRow("f", plan=plan)


def test_a_vpc_cidr_change_replaces_the_vpc_and_everything_built_on_it() -> None:
    """Fails on the hand table, which had no VPC row and carried nothing: the VPC was an
    in-place change and no node rolled."""
    base, head = sides()
    doc = stack_diff(STEM, _side(base), _side(head), accelerated).to_dict()
    replaced = {(r["type"], r["name"]): r for r in doc["resources"]["replaced"]}
    vpc = next(k for k in replaced if k[0] == VPC)
    assert replaced[vpc]["replace_keys"] == ["cidrBlock"] and not replaced[vpc].get("via")
    subnets = [r for k, r in replaced.items() if k[0] == SUBNET]
    assert subnets and all("vpcId" in r["replace_keys"] for r in subnets)
    groups = [r for k, r in replaced.items() if k[0] == NODE_GROUP]
    assert len(groups) == 3 and all("subnetIds" in r["replace_keys"] for r in groups)
    assert all(any(v.startswith("Subnet ") for v in r["via"]) for r in groups)
    rolled = {r["name"]: r for r in doc["rolls"]}
    assert {g["name"] for g in groups} == set(rolled)
    cause = rolled[groups[0]["name"]]["causes"][0]
    assert cause["key"] == "(replaced)" and "carried from Subnet" in cause["after"]


def test_the_rolls_a_replacement_causes_come_first_and_are_never_quiet() -> None:
    base, head = sides()
    doc = diff_document({STEM: _side(base)}, {STEM: _side(head)}, ("main", "pr"), [], accelerated)
    text = render_text(doc).splitlines()
    # the cluster cannot follow its subnets to a new VPC: refused first, then the rolls
    assert text[1].startswith("REFUSED") and "vpcConfig.subnetIds" in text[2]
    rolls = text.index("NODES ROLL OR ARE REMOVED (a running job on them is interrupted):")
    assert "(replaced: " in text[rolls + 1] and "carried from Subnet" in text[rolls + 1]
    md = render_markdown(doc, comment=True)
    assert md.index("**Nodes roll or are removed**") < md.index("**Cost:**")
    # no accelerated roll counted: a replacement that rolls (system) nodes still posts
    quiet = doc.to_dict()
    quiet["rolls"] = [{**r, "accelerated": False} for r in quiet["rolls"]]
    for s in quiet["stacks"]:
        s.pop("create_before_delete", None)
    assert not below_threshold(quiet, 1e12, None)
    unrolled = {**quiet, "rolls": []}
    assert below_threshold(unrolled, 1e12, None)


def test_an_input_carrying_a_name_propagates_only_when_the_old_one_goes_first() -> None:
    """A cluster replaced with its explicit name kept: the node groups' clusterName carries a
    value the replacement keeps, so it reaches them only through delete-before-replace."""
    base, head = sides()
    cluster = next(r for r in head["resources"] if r["type"] == "aws:eks/cluster:Cluster")
    group = next(r for r in head["resources"] if r["type"] == NODE_GROUP)
    computed, kept = references(group, cluster, head["region"], head["stack"])
    assert "clusterName" in kept and "clusterName" not in computed
    key = (cluster["type"], cluster["name"])
    table = provider_table()
    first = carried(base, head, {key}, table, lambda _k: True)
    assert "clusterName" in first[(group["type"], group["name"])].forcing
    later = carried(base, head, {key}, table, lambda _k: False).get((group["type"], group["name"]))
    assert later is None or "clusterName" not in later.forcing


def test_outputs_split_into_computed_and_kept() -> None:
    base, _ = sides()
    vpc = next(r for r in base["resources"] if r["type"] == VPC)
    computed, kept = outputs_of(vpc, base["region"], base["stack"])
    assert any(v.startswith("vpc-") for v in computed) and not kept
    assert vpc["inputs"]["cidrBlock"] not in computed


def test_a_replaced_cluster_takes_the_kubernetes_objects_with_it() -> None:
    """The Kubernetes provider's kubeconfig comes from the cluster: a new cluster replaces the
    provider, and a replaced provider replaces every object it manages (pulumi-kubernetes
    provider.go DiffConfig). A replaced role it also waits for does not."""
    cluster = {"type": "aws:eks/cluster:Cluster", "name": "eks", "inputs": {"name": "c"}}
    role = {"type": "aws:iam/role:Role", "name": "admin", "inputs": {}}
    provider = {
        "type": "pulumi:providers:kubernetes",
        "name": "k8s",
        "inputs": {"kubeconfig": "[secret]"},
        "dependsOn": ["admin", "eks"],
    }
    cm = {"type": "kubernetes:core/v1:ConfigMap", "name": "cm", "inputs": {}, "dependsOn": []}
    plan = {"stack": "s", "region": "us-east-2", "resources": [cluster, role, provider, cm]}
    table = provider_table()
    reach = carried(plan, plan, {("aws:eks/cluster:Cluster", "eks")}, table, lambda _k: True)
    assert reach[("kubernetes:core/v1:ConfigMap", "cm")].forcing == ("(provider)",)
    assert carried(plan, plan, {("aws:iam/role:Role", "admin")}, table, lambda _k: False) == {}
