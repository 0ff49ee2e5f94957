"""Image delivery inside the VPC: a stack whose pull is NAT-bound gets ECR
api/dkr interface endpoints in its created VPC, a pull-through cache rule for ECR Public that
its node roles may pull through, priced per zone; smaller stacks and existing VPCs do not."""

from __future__ import annotations

import json
from dataclasses import replace
from functools import cache
from typing import Any

import pytest

from accelstack.cost.guard import estimate_for
from accelstack.cost.pricing import price_plan, price_stack
from accelstack.inventory import billables
from accelstack.plan import Plan
from accelstack.plan.document import PlannedResource
from accelstack.plan.rules import evaluate
from accelstack.resolve import Stack

from ..catalog.test_scale import existing_vpc, sized, stack_of
from ..helpers_plan import plan_stack

ENDPOINT = "aws:ec2/vpcEndpoint:VpcEndpoint"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
CACHE_RULE = "aws:ecr/pullThroughCacheRule:PullThroughCacheRule"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"


@cache
def big(preset: str = "llama3-70b-p5") -> tuple[Stack, Plan]:
    stack = stack_of(sized(preset, 2048))
    return stack, plan_stack(stack, guard=False)


def interface_endpoints(plan: Plan) -> dict[str, dict[str, Any]]:
    return {
        str(r.inputs["serviceName"]): dict(r.inputs)
        for r in plan.of_type(ENDPOINT)
        if r.inputs.get("vpcEndpointType") == "Interface"
    }


def test_a_2048_node_stack_gets_ecr_endpoints_in_every_zone_with_private_dns() -> None:
    stack, plan = big()
    eps = interface_endpoints(plan)
    assert sorted(eps) == [
        f"com.amazonaws.{stack.region}.ecr.api",
        f"com.amazonaws.{stack.region}.ecr.dkr",
    ]
    private = {
        str(r.inputs["availabilityZoneId"]): r
        for r in plan.of_type("aws:ec2/subnet:Subnet")
        if r.name.startswith(f"{stack.name}-network-private-")
    }
    for ep in eps.values():
        assert ep["privateDnsEnabled"] is True
        assert len(ep["subnetIds"]) == len(stack.network_zone_ids) == len(private)
        (sg,) = ep["securityGroupIds"]
        rules = [r.inputs for r in plan.of_type(INGRESS) if r.inputs["securityGroupId"] == sg]
        assert rules and all(r["fromPort"] == r["toPort"] == 443 for r in rules)
        assert "0.0.0.0/0" not in {r.get("cidrIpv4") for r in rules}
    assert evaluate(plan, stack) == []


def test_the_endpoints_admit_https_only_from_the_security_group_every_node_carries() -> None:
    """The large pools' nodes live in secondary CIDR blocks and their pods use the node's
    security groups: the endpoints admit the EKS cluster security group, which every pool
    launch template (EFA interfaces included) carries, on TCP 443 and nothing else."""
    stack, plan = big()
    (ep, *_) = interface_endpoints(plan).values()
    (rule,) = [
        r.inputs
        for r in plan.of_type(INGRESS)
        if r.inputs["securityGroupId"] == ep["securityGroupIds"][0]
    ]
    assert (rule["fromPort"], rule["toPort"], rule["ipProtocol"]) == (443, 443, "tcp")
    assert "cidrIpv4" not in rule and "cidrIpv6" not in rule
    node_sg = rule["referencedSecurityGroupId"]
    lts = [
        r.inputs
        for r in plan.of_type("aws:ec2/launchTemplate:LaunchTemplate")
        if r.name.startswith(f"{stack.name}-{stack.pools[0].name}-")
    ]
    assert lts
    for lt in lts:
        groups = [g for nic in lt.get("networkInterfaces") or [] for g in nic["securityGroups"]]
        assert node_sg in (groups or lt.get("vpcSecurityGroupIds") or [])


def test_the_pull_through_cache_mirrors_ecr_public_and_the_node_roles_may_use_only_it() -> None:
    stack, plan = big()
    (rule,) = plan.of_type(CACHE_RULE)
    assert rule.inputs["upstreamRegistryUrl"] == "public.ecr.aws"
    prefix = str(rule.inputs["ecrRepositoryPrefix"])
    assert 2 <= len(prefix) <= 30
    policies = [r for r in plan.of_type(ROLE_POLICY) if r.name.endswith("-pull-through")]
    roles = {r.name for r in plan.of_type("aws:iam/role:Role") if r.name.endswith("-node-role")}
    assert {str(p.inputs["role"]) for p in policies} == roles  # every node role, system too
    for p in policies:
        (stmt,) = json.loads(str(p.inputs["policy"]))["Statement"]
        assert stmt["Action"] == ["ecr:BatchImportUpstreamImage", "ecr:CreateRepository"]
        (arn,) = stmt["Resource"]
        assert arn.endswith(f":repository/{prefix}/*") and f":ecr:{stack.region}:" in arn


def test_two_stacks_in_one_account_get_different_cache_prefixes() -> None:
    """A rule's prefix is unique in the account's registry: a second stack must not collide."""
    one = sized("llama3-70b-p5", 2048)
    two = sized("llama3-70b-p5", 2048)
    two["name"] = "other-cluster"
    from accelstack.inventory import registry_cache_rules

    (a,) = registry_cache_rules(stack_of(one))
    (b,) = registry_cache_rules(stack_of(two))
    assert a.prefix != b.prefix


def test_the_guard_prices_each_endpoint_per_zone_as_the_plan_does() -> None:
    stack, plan = big()
    zones = len(stack.network_zone_ids)
    items = [i for i in price_stack(stack).items if i.type == ENDPOINT and i.hourly_usd > 0]
    assert len(items) == 2
    assert all(i.hourly_usd == pytest.approx(0.01 * zones) for i in items)
    planned = [i for i in price_plan(stack, plan.resources).items if i.type == ENDPOINT]
    assert sorted((i.resource, round(i.hourly_usd, 9)) for i in planned) == sorted(
        (i.resource, round(i.hourly_usd, 9)) for i in price_stack(stack).items if i.type == ENDPOINT
    )
    declared = {(b.type, b.name) for b in billables(stack)}
    assert {(r.type, r.name) for r in plan.of_type(ENDPOINT)} <= declared


def test_sixteen_nodes_and_existing_vpcs_keep_pulling_through_nat() -> None:
    """Below the NAT-bound size the endpoints' hourly charge buys no bring-up time; an
    existing VPC is the user's to equip."""
    small = stack_of(sized("llama3-70b-p5", 16))
    assert not small.profile.private_registry
    assert not [b for b in billables(small) if b.name.endswith(("-ecr-api", "-ecr-dkr"))]
    existing = resolve_existing(512)
    assert not existing.profile.private_registry


def resolve_existing(nodes: int) -> Stack:
    data = sized("llama3-70b-p5", nodes)
    existing_vpc(nodes)(data)
    return stack_of(data)


def test_the_threshold_is_where_the_nat_gateway_bounds_the_pull() -> None:
    stack, _ = big()
    facts = stack.catalog.scale.image_delivery
    limit = int(facts.nat_gateway_gbps / facts.node_pull_gbps)
    assert not facts.nat_bound(limit) and facts.nat_bound(limit + 1)


def test_a_private_ecr_image_pulls_without_the_nat_term() -> None:
    """The trn2 preset's image is in its region's private ECR: with the endpoints, bring-up
    is one node's pull, not 2,048 images through one NAT gateway."""
    stack, _ = big("llama3-70b-trn2")
    assert stack.private_image_pull
    via_nat = replace(stack, profile=stack.profile.model_copy(update={"private_registry": False}))
    assert not via_nat.private_image_pull
    facts, gb = (
        stack.catalog.scale.image_delivery,
        stack.catalog.throughput.goodput.image_pull_gb_per_node,
    )
    saved = facts.pull_hours(2048, gb) - facts.pull_hours(2048, gb, private=True)
    assert saved > 0.5  # 2,048 x the image through a 100 Gbps NAT gateway: most of an hour
    gap = estimate_for(via_nat).one_time_hours - estimate_for(stack).one_time_hours
    assert gap == pytest.approx(saved)


def test_a_public_image_still_pulls_through_nat() -> None:
    stack, _ = big()
    assert stack.image.startswith("public.ecr.aws/")
    assert not stack.private_image_pull


def _with(plan: Plan, resource: PlannedResource) -> Plan:
    return replace(
        plan, resources=sorted([*plan.resources, resource], key=lambda r: (r.type, r.name))
    )


@pytest.mark.parametrize(
    ("extra", "found"),
    [
        (
            {"cidrIpv4": "0.0.0.0/0", "fromPort": 443, "toPort": 443, "ipProtocol": "tcp"},
            "0.0.0.0/0",
        ),
        ({"cidrIpv6": "::/0", "fromPort": 443, "toPort": 443, "ipProtocol": "tcp"}, "IPv6"),
        ({"cidrIpv4": "10.42.0.0/16", "fromPort": 0, "toPort": 65535, "ipProtocol": "tcp"}, "443"),
    ],
)
def test_a_world_open_endpoint_security_group_is_refused(extra: dict[str, Any], found: str) -> None:
    stack, plan = big()
    (ep, *_) = interface_endpoints(plan).values()
    rule = PlannedResource(
        type=INGRESS,
        name="open-to-world",
        parent=None,
        inputs={"securityGroupId": ep["securityGroupIds"][0], **extra},
        depends_on=(),
    )
    violations = [
        v for v in evaluate(_with(plan, rule), stack) if v.rule == "interface-endpoint-ingress"
    ]
    assert len(violations) == 1 and found in violations[0].message


def test_the_stack_outputs_where_the_cached_images_are_pulled_from() -> None:
    """A user points workload.image at the cache (opt-in): the output names the path, and a
    job image there is a private ECR image of the region, pulled without NAT."""
    stack, plan = big()
    (rule,) = plan.of_type(CACHE_RULE)
    path = plan.outputs["imageCache"]["public.ecr.aws"]
    assert path.endswith(
        f".dkr.ecr.{stack.region}.amazonaws.com/{rule.inputs['ecrRepositoryPrefix']}"
    )
    repo = stack.image.removeprefix("public.ecr.aws/")
    cached = replace(stack, image=f"{path}/{repo}")
    assert cached.private_image_pull
