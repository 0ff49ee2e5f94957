"""An existing VPC gets the private registry path (ECR api/dkr interface endpoints, the
pull-through cache rule) only when the spec asks (network.ecr_endpoints): it may have the
endpoints already, so nothing is created silently; a NAT-bound pool without it gets one
warning line."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import pytest

from accelstack.catalog import load_catalog
from accelstack.cost.pricing import price_plan, price_stack
from accelstack.errors import SpecError
from accelstack.plan import Plan
from accelstack.plan.rules import evaluate
from accelstack.resolve import Stack
from accelstack.resolve.advice import stack_warnings
from accelstack.spec import read_yaml

from ..catalog.test_scale import STACKS, existing_vpc, stack_of
from ..helpers_plan import plan_stack

ENDPOINT = "aws:ec2/vpcEndpoint:VpcEndpoint"
RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
CACHE = "aws:ecr/pullThroughCacheRule:PullThroughCacheRule"


def existing(nodes: int, **network: Any) -> dict[str, Any]:
    data = copy.deepcopy(read_yaml(STACKS / "llama3-70b-p5.yaml"))
    existing_vpc(nodes)(data)
    data["network"].update(network)
    return data


@cache
def planned(nodes: int, opted_in: bool) -> tuple[Stack, Plan]:
    stack = stack_of(existing(nodes, ecr_endpoints=opted_in))
    return stack, plan_stack(stack, guard=False)


def test_an_opted_in_existing_vpc_gets_the_endpoints_in_its_own_vpc_and_subnets() -> None:
    stack, plan = planned(64, True)
    assert stack.profile.private_registry
    endpoints = plan.of_type(ENDPOINT)
    interface = [r for r in endpoints if r.inputs.get("vpcEndpointType") == "Interface"]
    services = sorted(r.inputs["serviceName"].rsplit(".", 2)[-2] for r in interface)
    assert services == ["ecr", "ecr"]  # com.amazonaws.<region>.ecr.api / .ecr.dkr
    for r in interface:
        assert r.inputs["vpcId"] == "vpc-0123456789abcdef0"
        assert r.inputs["privateDnsEnabled"] is True
        assert set(r.inputs["subnetIds"]) <= {
            "subnet-0123456789abcdef0",
            "subnet-0123456789abcdef1",
        }
    (https,) = [r for r in plan.of_type(RULE) if r.name.endswith("-ecr-endpoints-https")]
    assert (https.inputs["fromPort"], https.inputs["toPort"]) == (443, 443)
    assert "referencedSecurityGroupId" in https.inputs and "cidrIpv4" not in https.inputs
    assert len(plan.of_type(CACHE)) == 1
    assert evaluate(plan, stack) == []
    # the guard prices the endpoints (per zone-hour) as the plan declares them
    from_plan, from_stack = price_plan(stack, plan.resources), price_stack(stack)
    assert from_stack.hourly_usd == pytest.approx(from_plan.hourly_usd, rel=1e-12)
    assert [i for i in from_plan.items if i.type == ENDPOINT and i.hourly_usd > 0]


def test_an_existing_vpc_gets_no_endpoints_unless_asked() -> None:
    stack, plan = planned(64, False)
    assert not stack.profile.private_registry
    assert not [r for r in plan.of_type(ENDPOINT) if r.inputs.get("vpcEndpointType") == "Interface"]
    assert not plan.of_type(CACHE)


def test_a_nat_bound_existing_vpc_without_the_setting_warns_in_one_line() -> None:
    """The warning counts the nodes resolve counts for a created VPC's decision (pools,
    spares and system nodes), so both sides of the threshold agree."""
    catalog = load_catalog()
    assert catalog.scale.image_delivery.nat_bound(64)
    stack = stack_of(existing(64))
    (line,) = [w for w in stack_warnings(stack) if "ecr" in w]
    assert (
        line.startswith(f"network.ecr_endpoints: {stack.profile.nodes} nodes") and "\n" not in line
    )
    assert stack.profile.nodes >= 64
    small = stack_of(existing(16))
    assert not [w for w in stack_warnings(small) if "ecr_endpoints" in w]
    opted = stack_of(existing(64, ecr_endpoints=True))
    assert not [w for w in stack_warnings(opted) if "ecr_endpoints" in w]


def test_the_warning_and_a_created_vpcs_decision_agree_at_the_threshold() -> None:
    """Just over the threshold with the system nodes counted: a created VPC of that size gets
    the private registry path, so an existing one without it is warned."""
    catalog = load_catalog()
    for pool_nodes in range(14, 24):
        created = stack_of_created(pool_nodes)
        stack = stack_of(existing(pool_nodes))
        warned = bool([w for w in stack_warnings(stack) if "ecr_endpoints" in w])
        assert warned == created.profile.private_registry, pool_nodes
    assert catalog.scale.image_delivery.nat_bound(stack.profile.nodes)


def stack_of_created(nodes: int) -> Stack:
    data = copy.deepcopy(read_yaml(STACKS / "llama3-70b-p5.yaml"))
    data["pools"][0]["nodes"] = nodes
    return stack_of(data)


def test_the_setting_on_a_created_vpc_is_refused() -> None:
    data = copy.deepcopy(read_yaml(STACKS / "llama3-70b-p5.yaml"))
    data["budget"] = {"unlimited": True, "reason": "test"}
    data.setdefault("network", {})["ecr_endpoints"] = True
    with pytest.raises(SpecError) as err:
        stack_of(data)
    assert "network.ecr_endpoints" in str(err.value)
    assert "applies to an existing VPC" in str(err.value)
