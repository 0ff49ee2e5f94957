"""Pricing rules keyed on Pulumi types: every billable resource priced, never $0 for unknowns."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from accelstack.catalog import Catalog
from accelstack.cost.pricing import (
    FREE,
    PARTLY_FREE,
    PRICERS,
    Resource,
    UnpricedResource,
    covered,
    free_reason,
    option_quotes,
    price_plan,
    price_resources,
    price_stack,
)
from accelstack.errors import MissingPrice
from accelstack.inventory import billables
from accelstack.resolve import Stack, resolve
from accelstack.spec import load_spec, parse_spec

from ..conftest import PRESETS, STACKS, preset_ids
from ..factories import eks_spec

NG = "aws:eks/nodeGroup:NodeGroup"
LT = "aws:ec2/launchTemplate:LaunchTemplate"

BASE: dict[str, Any] = eks_spec(
    # the trn2 path (TorchNeuron) has no public image
    edits={"workload.entrypoint": "t.py", "workload.image": "registry.example/train:1"}
)


def stack_of(data: dict[str, Any] | None = None, **changes: Any) -> Stack:
    d = copy.deepcopy(data or BASE)
    d.update(changes)
    return resolve(parse_spec(d, "test"))


def node_group(
    name: str,
    itype: str,
    nodes: int,
    cap: str = "ON_DEMAND",
    pool: str | None = None,
    parent: str | None = None,
    lt: bool = True,
) -> Resource:
    inputs: dict[str, Any] = {
        "instanceTypes": [itype],
        "scalingConfig": {"desiredSize": nodes},
        "capacityType": cap,
    }
    if pool:
        inputs["labels"] = {"accelstack.io/pool": pool}
    if lt:
        inputs["launchTemplate"] = {"id": f"lt-0abc{name}", "version": "1"}
    return Resource(NG, name, inputs, parent)


def launch_template(name: str, gib: int, parent: str | None, vtype: str | None = "gp3") -> Resource:
    ebs: dict[str, Any] = {"volumeSize": gib}
    if vtype:
        ebs["volumeType"] = vtype
    return Resource(
        LT, name, {"blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": ebs}]}, parent
    )


def test_rules_and_free_are_disjoint() -> None:
    # only types whose rule prices some resources and leaves the rest free (the metrics add-on
    # among the EKS add-ons) are in both
    assert set(PRICERS) & set(FREE) == set(PARTLY_FREE)
    assert covered("aws:ec2/vpc:Vpc") and covered(NG)
    assert covered("accelstack:network:Network")  # components are groupings
    assert not covered("aws:rds/instance:Instance")


def test_node_group_priced_as_nodes_times_rate_with_volumes(catalog: Catalog) -> None:
    res = [launch_template("p-lt", 1024, "p"), node_group("p-ng", "p5.48xlarge", 16, parent="p")]
    cost = price_resources(res, catalog, "us-east-2")
    rate = catalog.instance_rate("us-east-2", "p5.48xlarge", "on-demand").usd
    ebs = catalog.service_rate("us-east-2", "ebs-gp3").usd
    compute, vol = cost.items
    assert compute.hourly_usd == pytest.approx(16 * rate)
    assert compute.what == "16 x p5.48xlarge (on-demand)"
    assert vol.hourly_usd == pytest.approx(16 * 1024 * ebs / catalog.hours_per_month)
    assert cost.free == ((LT, 1, FREE[LT]),)
    assert cost.hourly_usd == pytest.approx(16 * rate + 16 * 1024 * ebs / 730)


@pytest.mark.parametrize(
    ("cap", "pool_option", "billed"),
    [
        ("SPOT", None, "spot"),
        ("CAPACITY_BLOCK", None, "capacity-block"),
        ("ON_DEMAND", "savings-plan-3y", "savings-plan-3y"),
        ("ON_DEMAND", "reservation", "reservation"),
        ("ON_DEMAND", "spot", "on-demand"),  # the plan says on-demand: that is what is billed
    ],
)
def test_capacity_type_and_pool_option(
    catalog: Catalog, cap: str, pool_option: str | None, billed: str
) -> None:
    res = [node_group("ng", "p5.48xlarge", 2, cap, pool="h100", lt=False)]
    opts = {"h100": pool_option} if pool_option else {}
    item = price_resources(res, catalog, "us-east-2", opts).items[0]
    assert item.option == billed
    assert item.hourly_usd == pytest.approx(
        2 * catalog.instance_rate("us-east-2", "p5.48xlarge", billed).usd
    )
    if pool_option == "spot":
        assert item.assumption and "billed as on-demand" in item.assumption


def test_node_group_without_launch_template_uses_disk_size_or_eks_default(catalog: Catalog) -> None:
    ng = node_group("sys", "m6i.xlarge", 2, lt=False)
    items = price_resources([ng], catalog, "us-east-1").items
    assert items[0].category == "system"
    assert items[1].quantity == 40 and items[1].assumption and "20 GiB" in items[1].assumption
    ng2 = Resource(NG, "sys", {**ng.inputs, "diskSize": 100})
    assert price_resources([ng2], catalog, "us-east-1").items[1].quantity == 200


def test_several_instance_types_priced_as_the_dearest(catalog: Catalog) -> None:
    ng = Resource(
        NG,
        "ng",
        {"instanceTypes": ["m6i.large", "m6i.2xlarge"], "scalingConfig": {"desiredSize": 1}},
    )
    item = price_resources([ng], catalog, "us-east-1").items[0]
    assert "m6i.2xlarge" in item.what and item.assumption and "dearest" in item.assumption


def test_unknown_type_is_an_error_naming_type_and_region(catalog: Catalog) -> None:
    with pytest.raises(UnpricedResource, match=r"aws:rds/instance:Instance.*us-west-2"):
        price_resources([Resource("aws:rds/instance:Instance", "db", {})], catalog, "us-west-2")


def test_missing_price_is_an_error_never_zero(catalog: Catalog) -> None:
    # trn2 has no us-east-1 row in the catalog
    with pytest.raises(MissingPrice, match=r"trn2.48xlarge in us-east-1"):
        price_resources([node_group("ng", "trn2.48xlarge", 1, lt=False)], catalog, "us-east-1")
    fsx = Resource(
        "aws:fsx/lustreFileSystem:LustreFileSystem",
        "fs",
        {
            "storageCapacity": 2400,
            "deploymentType": "PERSISTENT_1",
            "perUnitStorageThroughput": 200,
        },
    )
    with pytest.raises(MissingPrice, match=r"fsx-lustre-persistent1-200.*us-east-2"):
        price_resources([fsx], catalog, "us-east-2")
    io2 = [
        launch_template("lt", 100, "c", vtype="io2"),
        node_group("ng", "m6i.large", 1, parent="c"),
    ]
    with pytest.raises(MissingPrice, match="ebs-io2"):
        price_resources(io2, catalog, "us-east-1")


def test_unknown_node_count_is_an_error(catalog: Catalog) -> None:
    ng = Resource(NG, "ng", {"instanceTypes": ["m6i.large"], "scalingConfig": {}})
    with pytest.raises(MissingPrice, match="desiredSize"):
        price_resources([ng], catalog, "us-east-1")


def test_unlinked_launch_template_is_an_error(catalog: Catalog) -> None:
    ng = node_group("ng", "m6i.large", 1, parent=None)
    with pytest.raises(MissingPrice, match="launch template"):
        price_resources([ng], catalog, "us-east-1")


def test_services(catalog: Catalog) -> None:
    res = [
        Resource("aws:eks/cluster:Cluster", "eks", {}),
        Resource("aws:ec2/natGateway:NatGateway", "nat", {}),
        Resource("aws:ec2/eip:Eip", "eip", {"domain": "vpc"}),
        Resource("aws:kms/key:Key", "key", {}),
        Resource(
            "aws:fsx/lustreFileSystem:LustreFileSystem",
            "fs",
            {
                "storageCapacity": 4800,
                "deploymentType": "PERSISTENT_2",
                "perUnitStorageThroughput": 125,
            },
        ),
        Resource("aws:s3/bucket:Bucket", "b", {}),
        Resource("aws:ec2/vpcEndpoint:VpcEndpoint", "s3", {"vpcEndpointType": "Gateway"}),
        Resource(
            "aws:ec2/vpcEndpoint:VpcEndpoint",
            "ecr",
            {"vpcEndpointType": "Interface", "subnetIds": ["a", "b"]},
        ),
    ]
    cost = price_resources(res, catalog, "us-east-2")
    by = {i.resource: i for i in cost.items}
    assert by["eks"].hourly_usd == pytest.approx(0.10)
    assert by["nat"].hourly_usd == pytest.approx(0.045) and "data processed" in str(
        by["nat"].assumption
    )
    assert by["eip"].hourly_usd == pytest.approx(0.005)
    assert by["key"].hourly_usd == pytest.approx(1.0 / 730)
    assert by["fs"].hourly_usd == pytest.approx(4800 * 0.145 / 730) and by["fs"].estimate
    assert by["b"].estimate and "usage estimate" in str(by["b"].assumption)
    assert "s3" not in by  # gateway endpoints are free
    assert by["ecr"].hourly_usd == pytest.approx(0.02)
    assert cost.estimate


def test_option_quotes_side_by_side(catalog: Catalog) -> None:
    quotes = {
        q.option: q for q in option_quotes(catalog, "us-east-2", "p5.48xlarge", 4, "capacity-block")
    }
    assert quotes["capacity-block"].chosen and not quotes["on-demand"].chosen
    assert quotes["capacity-block"].hourly_usd == pytest.approx(4 * 36.18)
    assert quotes["reservation"].hourly_usd == quotes["on-demand"].hourly_usd
    q = {
        x.option: x
        for x in option_quotes(catalog, "us-east-2", "p5e.48xlarge", 1, "capacity-block")
    }
    assert q["on-demand"].hourly_usd is None
    assert q["on-demand"].reason == "no on-demand price for p5e.48xlarge in us-east-2"


def test_spec_pricing_follows_spec_changes() -> None:
    one = price_stack(stack_of())
    more = copy.deepcopy(BASE)
    more["pools"][0]["nodes"] = 4
    four = price_stack(stack_of(more))
    assert four.pool_hourly_usd("trn2") == pytest.approx(2 * one.pool_hourly_usd("trn2"))
    nat = copy.deepcopy(BASE)
    nat["network"] = {"single_nat_gateway": False}
    per_az = price_stack(stack_of(nat))
    n_nat = sum(1 for i in per_az.items if i.type == "aws:ec2/natGateway:NatGateway")
    assert n_nat == 2  # EKS needs two zones; one NAT per zone
    existing = copy.deepcopy(BASE)
    existing["network"] = {
        "mode": "existing",
        "vpc_id": "vpc-0123456789abcdef0",
        "private_subnet_ids": ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"],
    }
    assert not [i for i in price_stack(stack_of(existing)).items if i.category == "network"]


def test_spot_pool_prices_at_spot() -> None:
    d = copy.deepcopy(BASE)
    d["pools"][0]["purchase"] = {"option": "spot"}
    cost = price_stack(stack_of(d))
    item = next(i for i in cost.items if i.pool == "trn2" and i.unit == "instance-hour")
    assert item.option == "spot" and not item.estimate  # observed (SkyPilot SpotPrice, use2-az3)
    assert item.unit_usd == pytest.approx(23.06)


@pytest.mark.parametrize("preset", PRESETS, ids=preset_ids())
def test_every_preset_prices_from_the_spec(preset: Any) -> None:
    stack = resolve(load_spec(preset))
    cost = price_stack(stack)
    assert cost.hourly_usd > 0
    types = {r.type for r in billables(stack)}
    assert "aws:ec2/natGateway:NatGateway" in types
    if stack.spec.orchestration == "eks":
        assert {"aws:eks/cluster:Cluster", "aws:eks/nodeGroup:NodeGroup"} <= types
    else:
        assert "aws:ec2/fleet:Fleet" in types and "aws:eks/cluster:Cluster" not in types
    for pool in stack.pools:
        assert (
            cost.pool_hourly_usd(pool.name)
            > pool.nodes
            * stack.catalog.instance_rate(
                stack.region, pool.instance_type, pool.purchase_option
            ).usd
            - 1e-9
        )
        assert next(q for q in cost.options[pool.name] if q.chosen).option == pool.purchase_option


def test_hand_built_plan_equals_spec_pricing() -> None:
    """A plan of the documented shape (components, parents, free types) prices as the spec."""
    stack = resolve(load_spec(STACKS / "llama3-70b-trn2.yaml"))
    n = stack.name
    plan = [
        Resource("accelstack:cluster:Cluster", f"{n}-cluster", {}),
        Resource("aws:eks/cluster:Cluster", f"{n}-eks", {"name": n}, f"{n}-cluster"),
        Resource("aws:kms/key:Key", f"{n}-secrets-key", {}, f"{n}-cluster"),
        Resource("aws:iam/role:Role", f"{n}-cluster-role", {}, f"{n}-cluster"),
        Resource("aws:ec2/vpc:Vpc", f"{n}-vpc", {"cidrBlock": "10.42.0.0/16"}),
        Resource("aws:ec2/eip:Eip", f"{n}-nat-eip", {"domain": "vpc"}),
        Resource("aws:ec2/natGateway:NatGateway", f"{n}-nat", {}),
        Resource("aws:ec2/eip:Eip", f"{n}-nat-2-eip", {"domain": "vpc"}),  # one NAT per zone
        Resource("aws:ec2/natGateway:NatGateway", f"{n}-nat-2", {}),
        launch_template(f"{n}-system-lt", 100, f"{n}-system"),
        node_group(f"{n}-system-ng", "m6i.xlarge", 2, parent=f"{n}-system"),
        launch_template(f"{n}-trn2-lt", 1024, f"{n}-trn2"),
        node_group(f"{n}-trn2-ng", "trn2.48xlarge", 16, pool="trn2", parent=f"{n}-trn2"),
        Resource("aws:ec2/placementGroup:PlacementGroup", f"{n}-trn2-pg", {}),
        Resource(
            "aws:fsx/lustreFileSystem:LustreFileSystem",
            f"{n}-fsx",
            {
                "storageCapacity": 4800,
                "deploymentType": "PERSISTENT_2",
                # the tier that writes the 70B checkpoint within the default target
                "perUnitStorageThroughput": 1000,
            },
        ),
        Resource("aws:s3/bucket:Bucket", f"{n}-cache-bucket", {}),
        Resource("aws:s3/bucket:Bucket", f"{n}-checkpoints-bucket", {}),
        Resource("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", f"{n}-pab", {}),
        Resource("kubernetes:helm.sh/v3:Release", "neuron", {}),
        Resource(
            "aws:eks/addon:Addon",
            f"{n}-metrics-addon",
            {"addonName": "amazon-cloudwatch-observability"},
        ),
        Resource("pulumi:providers:kubernetes", "k8s", {}),
    ]
    from_plan = price_plan(stack, plan)
    from_spec = price_stack(stack)
    assert from_plan.hourly_usd == pytest.approx(from_spec.hourly_usd, rel=1e-12)
    assert sorted((i.type, round(i.hourly_usd, 9)) for i in from_plan.items) == sorted(
        (i.type, round(i.hourly_usd, 9)) for i in from_spec.items
    )
    assert free_reason("accelstack:cluster:Cluster")
    with pytest.raises(UnpricedResource):
        price_plan(stack, [*plan, Resource("aws:elb/loadBalancer:LoadBalancer", "lb", {})])
