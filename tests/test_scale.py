"""Large pools: node groups within the EKS per-group limit with stable names, the created VPC's
address plan (compact VPC CNI settings, a secondary CIDR), 2,048-node pools that plan, price
and render, and the limits refused in one line with their source."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml

from accelstack.catalog import load_catalog
from accelstack.catalog.scale import split_nodes
from accelstack.cost.guard import check_budget
from accelstack.errors import SpecError
from accelstack.plan import Plan
from accelstack.plan.rules import evaluate
from accelstack.render.artifacts import render
from accelstack.resolve import Stack, resolve
from accelstack.spec import parse_spec, read_yaml

from .conftest import STACKS
from .helpers_plan import plan_stack

OPEN_BUDGET = {"max_hourly_usd": 1e9, "max_monthly_usd": 1e12, "max_run_usd": 1e12}
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"


def sized(preset: str, nodes: int, **pool: Any) -> dict[str, Any]:
    data = copy.deepcopy(read_yaml(STACKS / f"{preset}.yaml"))
    data["pools"][0].update(nodes=nodes, **pool)
    data["budget"] = dict(OPEN_BUDGET)
    return data


def stack_of(data: dict[str, Any]) -> Stack:
    return resolve(parse_spec(data, f"{data['name']}.yaml"))


def groups(plan: Plan, prefix: str) -> dict[str, dict[str, Any]]:
    return {r.name: r.inputs for r in plan.of_type(NODE_GROUP) if r.name.startswith(prefix)}


def test_the_per_group_limit_is_a_sourced_catalog_fact() -> None:
    lim = load_catalog().scale.limits
    assert lim.nodes_per_node_group.value == 450
    assert lim.nodes_per_node_group.quota_code == "L-BD136A63"
    assert lim.node_groups_per_cluster.value == 30
    assert lim.node_groups_per_cluster.quota_code == "L-6D54EA21"
    for _, limit in lim:
        assert limit.source.startswith("https://docs.aws.amazon.com/")


@pytest.mark.parametrize(
    ("nodes", "parts"),
    [(1, (1,)), (450, (450,)), (451, (450, 1)), (512, (450, 62)), (2048, (450,) * 4 + (248,))],
)
def test_split_fills_groups_in_order(nodes: int, parts: tuple[int, ...]) -> None:
    assert split_nodes(nodes, 450) == parts


def test_growing_400_to_500_adds_a_group_and_keeps_the_first() -> None:
    """Plan documents: the first node group keeps its logical name and every input but its size;
    the 50 new nodes are a second group, in the zone's secondary subnet."""
    small = plan_stack(stack_of(sized("llama3-70b-p5", 400)), guard=False)
    big = plan_stack(stack_of(sized("llama3-70b-p5", 500)), guard=False)
    before, after = groups(small, "llama3-70b-p5-h100-"), groups(big, "llama3-70b-p5-h100-")
    assert list(before) == ["llama3-70b-p5-h100-ng"]
    assert sorted(after) == ["llama3-70b-p5-h100-ng", "llama3-70b-p5-h100-ng-2"]
    first_before, first_after = before["llama3-70b-p5-h100-ng"], after["llama3-70b-p5-h100-ng"]
    assert {k: v for k, v in first_before.items() if k != "scalingConfig"} == {
        k: v for k, v in first_after.items() if k != "scalingConfig"
    }
    assert first_after["scalingConfig"] == {"desiredSize": 450, "maxSize": 450, "minSize": 450}
    second = after["llama3-70b-p5-h100-ng-2"]
    assert second["scalingConfig"]["maxSize"] == 50
    assert second["subnetIds"] != first_after["subnetIds"]
    # one launch template and one placement group for the whole pool: one zone, one strategy
    for kind in ("aws:ec2/launchTemplate:LaunchTemplate", "aws:ec2/placementGroup:PlacementGroup"):
        assert len([r for r in big.of_type(kind) if "-h100-" in r.name]) == 1
    assert second["launchTemplate"] == first_after["launchTemplate"]


@pytest.mark.parametrize("preset", ["llama3-70b-p5", "llama3-70b-trn2"])
@pytest.mark.parametrize("nodes", [82, 256, 512, 2048])
def test_large_pools_plan_clean_in_a_created_vpc(preset: str, nodes: int) -> None:
    stack = stack_of(sized(preset, nodes))
    plan = plan_stack(stack, guard=False)
    assert evaluate(plan, stack) == []
    pool = stack.pools[0]
    mine = groups(plan, f"{preset}-{pool.name}-")
    sizes = [g["scalingConfig"]["maxSize"] for g in mine.values()]
    assert sum(sizes) == nodes and max(sizes) <= 450
    cni = next(
        r for r in plan.of_type("aws:eks/addon:Addon") if r.inputs.get("addonName") == "vpc-cni"
    )
    env = json.loads(cni.inputs["configurationValues"])["env"]
    assert env == {"MINIMUM_IP_TARGET": "8", "WARM_IP_TARGET": "2"}
    has_secondary = bool(
        plan.of_type("aws:ec2/vpcIpv4CidrBlockAssociation:VpcIpv4CidrBlockAssociation")
    )
    assert has_secondary == (nodes > 450)


def test_sixteen_nodes_keep_the_default_network() -> None:
    stack = stack_of(sized("llama3-70b-p5", 16))
    plan = plan_stack(stack, guard=False)
    cni = next(r for r in plan.of_type("aws:eks/addon:Addon") if "vpc-cni" in r.name)
    assert "configurationValues" not in cni.inputs or not cni.inputs["configurationValues"]
    assert stack.address_plan.secondary_cidr is None


@pytest.mark.parametrize("preset", ["llama3-70b-p5", "llama3-70b-trn2"])
def test_two_thousand_nodes_price_and_render_and_the_job_spans_the_pool(preset: str) -> None:
    stack = stack_of(sized(preset, 2048))
    pool = stack.pools[0]
    verdict = check_budget(stack)
    assert verdict.cost.pool_hourly_usd(pool.name) > 2048 * 20
    jobs = [
        doc
        for a in render(stack)
        if a.path.endswith(".yaml")
        for doc in yaml.safe_load_all(a.content)
        if isinstance(doc, dict) and doc.get("kind") == "Job"
    ]
    assert jobs, "no Job rendered"
    spec = jobs[0]["spec"]
    assert spec["completions"] == spec["parallelism"] == 2048
    selector = spec["template"]["spec"]["nodeSelector"]
    assert selector == {"accelstack.io/pool": pool.name}  # every node group carries the label


def test_a_pool_over_the_node_group_limit_is_refused_naming_the_quota() -> None:
    with pytest.raises(SpecError) as err:
        stack_of(sized("llama3-70b-p5", 14000))
    line = str(err.value)
    assert "pools[0].nodes: the pools need 33 managed node groups" in line
    assert "quota L-6D54EA21" in line and "service-quotas.html" in line
    assert "at most 13050 in one pool" in line


def test_a_trn2u_pool_is_whole_ultraservers() -> None:
    data = sized("llama3-70b-trn2", 6, instance_type="trn2u.48xlarge")
    data["region"], data["availability_zone"] = "ap-south-2", None
    with pytest.raises(
        SpecError,
        match=r"6 trn2u.48xlarge nodes is not a whole number of "
        r"UltraServers \(4 instances each.*use 4 or 8",
    ):
        stack_of(data)
