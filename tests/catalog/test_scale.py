"""Large pools: node groups within the EKS per-group limit with stable names, the created VPC's
address plan (compact VPC CNI settings, a secondary CIDR), 2,048-node pools that plan, price
and render, and the limits refused in one line with their source."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from typing import Any

import pytest
import yaml

from accelstack.catalog import load_catalog
from accelstack.catalog.scale import split_nodes
from accelstack.cost.guard import check_budget
from accelstack.errors import MissingPrice, SpecError
from accelstack.plan import Plan
from accelstack.plan.rules import evaluate
from accelstack.render.artifacts import render
from accelstack.resolve import Stack, resolve
from accelstack.spec import parse_spec, read_yaml

from ..conftest import ROOT, STACKS, compare_golden
from ..helpers_plan import plan_stack

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
    # the repair threshold follows the group's size (a fifth of 400, of 450: resilience.yaml
    # node_repair), in place with the size (UpdateNodegroupConfig), no roll
    sized_keys = ("scalingConfig", "nodeRepairConfig")
    assert {k: v for k, v in first_before.items() if k not in sized_keys} == {
        k: v for k, v in first_after.items() if k not in sized_keys
    }
    assert first_after["scalingConfig"] == {"desiredSize": 450, "maxSize": 450, "minSize": 450}
    assert first_before["nodeRepairConfig"]["maxUnhealthyNodeThresholdCount"] == 80
    assert first_after["nodeRepairConfig"]["maxUnhealthyNodeThresholdCount"] == 90
    second = after["llama3-70b-p5-h100-ng-2"]
    assert second["scalingConfig"]["maxSize"] == 50
    assert second["subnetIds"] != first_after["subnetIds"]
    # one launch template and one placement group for the whole pool: one zone, one strategy
    for kind in ("aws:ec2/launchTemplate:LaunchTemplate", "aws:ec2/placementGroup:PlacementGroup"):
        assert len([r for r in big.of_type(kind) if "-h100-" in r.name]) == 1
    assert second["launchTemplate"] == first_after["launchTemplate"]
    assert "poolNodeGroups" not in small.outputs
    assert big.outputs["poolNodeGroups"] == {
        "h100": ["llama3-70b-p5-h100-ng", "llama3-70b-p5-h100-ng-2"]
    }


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
    # the CNI's own address defaults: no env (the network policy agent is on for every stack)
    assert "env" not in json.loads(cni.inputs["configurationValues"])
    assert stack.address_plan.secondary_subnets == {}


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


# -- preflight: the account's quotas and an existing VPC's free addresses -------------------


def existing_vpc(nodes: int) -> Any:
    def edit(d: dict[str, Any]) -> None:
        d["pools"][0]["nodes"] = nodes
        d["budget"] = dict(OPEN_BUDGET)
        d["network"] = {
            "mode": "existing",
            "vpc_id": "vpc-0123456789abcdef0",
            "private_subnet_ids": ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"],
        }

    return edit


def test_an_existing_vpc_512_node_pool_is_split_and_preflight_names_the_quota() -> None:
    from accelstack.preflight import check_limits

    from ..helpers_preflight import make_clients, quota, stack_from, stubbed

    stack = stack_from("llama3-70b-p5", existing_vpc(512))
    assert [(g.role, g.nodes) for g in stack.pools[0].node_groups] == [("ng", 450), ("ng-2", 62)]
    sq, stub = stubbed("service-quotas", stack.region)
    stub.add_response(
        "get_service_quota",
        quota("L-BD136A63", 400.0),
        {"ServiceCode": "eks", "QuotaCode": "L-BD136A63"},
    )
    stub.add_response(
        "get_service_quota",
        quota("L-6D54EA21", 30.0),
        {"ServiceCode": "eks", "QuotaCode": "L-6D54EA21"},
    )
    with stub:
        results = check_limits(stack, make_clients(stack.region, service_quotas=sq))
    stub.assert_no_pending_responses()
    by = {r.subject: r for r in results}
    bad = by["quota L-BD136A63"]
    assert bad.status == "FAIL"
    assert "nodes per EKS managed node group: quota L-BD136A63 is 400, below the 450" in bad.message
    assert "service-quotas.html" in bad.message
    assert bad.fix is not None and "--service-code eks --quota-code L-BD136A63" in bad.fix
    assert by["quota L-6D54EA21"].status == "PASS"
    assert "3 needed (h100: 2, system: 1)" in by["quota L-6D54EA21"].message


@pytest.mark.slow
def test_preflight_counts_an_existing_subnets_free_addresses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import dataclasses

    from moto import mock_aws

    from accelstack.preflight import check_subnets

    from ..helpers_preflight import fake_aws_env, make_clients, stack_from, with_zone

    fake_aws_env(monkeypatch)
    with mock_aws():
        import boto3

        ec2 = boto3.client("ec2", region_name="us-east-2")
        vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
        sn = ec2.create_subnet(VpcId=vpc, CidrBlock="10.9.0.0/20", AvailabilityZone="us-east-2a")
        sid, zone = sn["Subnet"]["SubnetId"], sn["Subnet"]["AvailabilityZoneId"]

        def stack_with(nodes: int) -> Stack:
            base = stack_from("llama3-70b-p5", existing_vpc(nodes))
            net = base.spec.network.model_copy(update={"vpc_id": vpc, "private_subnet_ids": (sid,)})
            spec = base.spec.model_copy(update={"network": net})
            return with_zone(dataclasses.replace(base, spec=spec), zone)

        clients = make_clients("us-east-2", ec2=ec2)
        (ok,) = check_subnets(stack_with(16), clients)
        (bad,) = check_subnets(stack_with(512), clients)
    assert ok.status == "PASS" and f"{sid} (4091 free)" in ok.message
    assert bad.status == "FAIL"
    # 512 nodes: the large-cluster profile's 3 system nodes (scale.yaml large_cluster), at the
    # compact VPC CNI settings an existing VPC at scale gets (11 addresses a p5 node)
    assert "4091 free addresses, 5654 needed (pool h100: 5632, system nodes: 22)" in bad.message
    assert "compact VPC CNI settings the stack applies" in bad.message
    assert bad.fix is not None and "network.mode 'create'" in bad.fix


# -- several reservations behind one pool -----------------------------------------------------


def blocks(*parts: tuple[str, int], nodes: int | None = None) -> dict[str, Any]:
    data = sized("p5e-capacity-block", nodes or sum(n for _, n in parts))
    data["pools"][0]["purchase"] = {
        "option": "capacity-block",
        "reservations": [{"id": rid, "nodes": n} for rid, n in parts],
    }
    return data


def test_each_reservation_gets_its_own_launch_template_and_node_group() -> None:
    a, b = "cr-0a1b2c3d4e5f67890", "cr-0b1b2c3d4e5f67890"
    stack = stack_of(blocks((a, 16), (b, 8)))
    plan = plan_stack(stack, guard=False)
    assert evaluate(plan, stack) == []
    lts = {
        r.name: r.inputs["capacityReservationSpecification"]["capacityReservationTarget"][
            "capacityReservationId"
        ]
        for r in plan.of_type("aws:ec2/launchTemplate:LaunchTemplate")
        if r.name.startswith(f"{stack.name}-{stack.pools[0].name}-lt")
    }
    assert sorted(lts.values()) == [a, b]
    ngs = groups(plan, f"{stack.name}-{stack.pools[0].name}-")
    assert sorted(g["scalingConfig"]["maxSize"] for g in ngs.values()) == [8, 16]
    first = ngs[f"{stack.name}-{stack.pools[0].name}-ng"]
    assert first["scalingConfig"]["maxSize"] == 16  # the first reservation keeps the old names
    assert not plan.of_type("aws:ec2/placementGroup:PlacementGroup")  # reservations: no PG


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            blocks(("cr-0a1b2c3d4e5f67890", 16), ("cr-0b1b2c3d4e5f67890", 8), nodes=30),
            r"purchase\.reservations: hold 16 \+ 8 = 24 nodes but the pool runs 30 \(nodes \+ "
            r"spare_nodes\)",
        ),
        (
            blocks(("cr-0a1b2c3d4e5f67890", 4), ("cr-0a1b2c3d4e5f67890", 4)),
            r"purchase\.reservations\[1\]\.id: 'cr-0a1b2c3d4e5f67890' is listed twice",
        ),
    ],
)
def test_reservations_that_do_not_add_up_are_refused(data: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        stack_of(data)


# -- UltraServers -------------------------------------------------------------------------------


def ultra(nodes: int, **extra: Any) -> dict[str, Any]:
    data = sized(
        "llama3-70b-trn2",
        nodes,
        instance_type="trn2u.48xlarge",
        purchase={"option": "capacity-block", "reservation_id": "cr-0a1b2c3d4e5f67890"},
    )
    data["region"], data["availability_zone"] = "ap-south-2", None
    data.update(extra)
    return data


@pytest.fixture(scope="module")
def ultra_catalog(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The catalog with a test-only trn2u Capacity Block rate (the catalog has none: prices
    fail closed), so an UltraServer pool validates and plans."""
    import shutil

    from accelstack.catalog import CATALOG_DIR

    base = tmp_path_factory.mktemp("catalog")
    shutil.copytree(CATALOG_DIR, base, dirs_exist_ok=True)
    prices = base / "prices.yaml"
    text = prices.read_text(encoding="utf-8").replace(
        "instances:\n",
        "instances:\n  - {region: ap-south-2, type: trn2u.48xlarge, option: capacity-block, "
        'usd: 1.0, as_of: "2026-11", estimate: true, source: "test fixture"}\n',
        1,
    )
    prices.write_text(text, encoding="utf-8")
    return load_catalog(base)


def test_an_ultraserver_pool_installs_the_dra_driver_and_operator(ultra_catalog: Any) -> None:
    data = ultra(8)
    stack = resolve(parse_spec(data, "llama3-70b-trn2.yaml"), ultra_catalog)
    plan = plan_stack(stack, guard=False)
    assert evaluate(plan, stack) == []
    (neuron,) = [r for r in plan.of_type("kubernetes:helm.sh/v3:Release") if "neuron" in r.name]
    values = neuron.inputs["values"]
    assert neuron.inputs["version"] == ultra_catalog.charts["neuron"].version == "1.9.0"
    assert values["draDriver"]["enabled"] is True
    assert values["draDriver"]["nodeSelector"]["accelstack.io/neuron-allocation"] == "dra"
    # the operator supports Trn3pds UltraServers only (catalog placement.operator)
    assert values["ultraserverOperator"] == {"enabled": False}
    assert values["devicePlugin"] == {"enabled": False}  # never beside the DRA driver
    (ng,) = groups(plan, f"{stack.name}-{stack.pools[0].name}-").values()
    assert ng["labels"]["accelstack.io/neuron-allocation"] == "dra"


def test_the_catalog_says_which_ultraserver_families_get_the_operator(ultra_catalog: Any) -> None:
    """trn2u: off, with the Neuron docs that scope the operator to Trn3pds as the source; a
    family whose catalog row says `operator: true` gets it, with no code change."""
    from components.device_plugins import neuron_values

    placement = ultra_catalog.scale.ultraservers["trn2u.48xlarge"].placement
    assert placement.operator is False
    assert "ultraserver-operator.rst:84" in placement.operator_source
    stack = resolve(parse_spec(ultra(8), "llama3-70b-trn2.yaml"), ultra_catalog)
    pool = stack.pools[0]
    assert pool.ultraserver is not None
    assert neuron_values([pool])["ultraserverOperator"] == {"enabled": False}
    served = pool.ultraserver.model_copy(
        update={"placement": placement.model_copy(update={"operator": True})}
    )
    other = replace(pool, ultraserver=served)
    assert neuron_values([other])["ultraserverOperator"] == {"enabled": True}


def test_ultraserver_pools_need_a_kubernetes_version_the_dra_driver_supports() -> None:
    data = ultra(8)
    data["cluster"]["kubernetes_version"] = "1.33"
    with pytest.raises(SpecError, match=r"cluster.kubernetes_version: '1.33' is below 1.34"):
        stack_of(data)


def test_stacks_without_ultraservers_keep_their_neuron_values_and_labels() -> None:
    stack = stack_of(sized("llama3-70b-trn2", 16))
    plan = plan_stack(stack, guard=False)
    (neuron,) = [r for r in plan.of_type("kubernetes:helm.sh/v3:Release") if "neuron" in r.name]
    assert "draDriver" not in neuron.inputs["values"]
    for ng in groups(plan, stack.name).values():
        assert "accelstack.io/neuron-allocation" not in (ng.get("labels") or {})


def test_every_node_group_name_fits_when_the_pool_role_name_does() -> None:
    """The pool's IAM role '{stack}-{pool}-node-role' (64 with the autoname suffix) is checked
    by generated-names; the longest node group name a cluster allows, '{stack}-{pool}-ng-29'
    (63), is never longer relative to its limit, so no separate rule is needed."""
    from accelstack.catalog import limits
    from accelstack.catalog.scale import group_role

    role_max, _ = limits.iam_role_name()
    most = load_catalog().scale.limits.node_groups_per_cluster.value - 1
    longest = len(f"-{group_role(most - 1)}") + limits.AUTONAME_SUFFIX
    role = len("-node-role") + limits.AUTONAME_SUFFIX
    assert limits.NODEGROUP_NAME_MAX - longest >= role_max - role


@pytest.mark.parametrize(
    ("vpc", "nodes", "larger"),
    [("10.0.0.0/20", 70, True), ("10.42.0.0/16", 1100, False)],
)
def test_standalone_address_advice_only_names_fixes_that_work(
    vpc: str, nodes: int, larger: bool
) -> None:
    """trn1.32xlarge with 'efa' on its 7 extra cards takes 8 addresses per instance: a /20 VPC
    (/23 per zone, 507) holds 63; a /16 (/19, 8187) 1,023. A larger vpc_cidr is advice only
    below /16 (validation refuses anything larger)."""
    data = sized("trn1-standalone", nodes, efa_interface_style="efa")
    data["network"] = {"vpc_cidr": vpc}
    with pytest.raises(SpecError) as err:
        stack_of(data)
    line = next(p for p in str(err.value).splitlines() if "private addresses" in p)
    assert "pools[0].nodes: the pools in this zone need" in line
    assert ("a larger vpc_cidr (up to /16)" in line) == larger
    assert "efa_interface_style 'efa-only'" in line


def test_standalone_advice_leaves_out_efa_only_when_the_pool_has_it() -> None:
    data = sized("trn1-standalone", 8200, efa_interface_style="efa-only")
    with pytest.raises(SpecError) as err:
        stack_of(data)
    line = next(p for p in str(err.value).splitlines() if "private addresses" in p)
    assert "need 8200 private addresses" in line and "'efa-only'" not in line
    assert line.endswith("use fewer nodes or pools in other zones")


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_preflight_judges_each_reservation_behind_a_pool() -> None:
    """Two Capacity Blocks of 8 behind a 16-node p5e pool: each is judged against the nodes the
    pool launches into it (8 each); one holding only 4 fails as too small."""
    from datetime import UTC, datetime

    from accelstack.preflight import check_reservations

    from ..helpers_preflight import make_clients, stubbed

    a, b = "cr-0a1b2c3d4e5f67890", "cr-0b1b2c3d4e5f67890"
    stack = stack_of(blocks((a, 8), (b, 8)))

    def block(rid: str, total: int) -> dict[str, Any]:
        return {
            "CapacityReservationId": rid,
            "InstanceType": "p5e.48xlarge",
            "InstancePlatform": "Linux/UNIX",
            "AvailabilityZone": "us-east-2b",
            "AvailabilityZoneId": stack.pools[0].zone_id,
            "TotalInstanceCount": total,
            "AvailableInstanceCount": total,
            "State": "active",
            "ReservationType": "capacity-block",
            "InstanceMatchCriteria": "targeted",
            "StartDate": datetime(2026, 11, 20, 11, 30, tzinfo=UTC),
            "EndDate": datetime(2026, 11, 27, 11, 30, tzinfo=UTC),
        }

    ec2, stub = stubbed("ec2", stack.region)
    for rid, total in ((a, 8), (b, 4)):
        stub.add_response(
            "describe_capacity_reservations",
            {"CapacityReservations": [block(rid, total)]},
            {"CapacityReservationIds": [rid]},
        )
    with stub:
        first, second = check_reservations(stack, make_clients(stack.region, ec2=ec2))
    assert first.status == "PASS" and a in first.message
    assert second.status == "FAIL" and b in second.message
    assert "4" in second.message and "8" in second.message


def test_each_reservation_of_an_ultraserver_pool_is_whole_ultraservers() -> None:
    data = ultra(8)
    data["pools"][0]["purchase"] = {
        "option": "capacity-block",
        "reservations": [
            {"id": "cr-0a1b2c3d4e5f67890", "nodes": 6},
            {"id": "cr-0b1b2c3d4e5f67890", "nodes": 2},
        ],
    }
    with pytest.raises(SpecError) as err:
        stack_of(data)
    text = str(err.value)
    assert (
        "pools[0].purchase.reservations[0].nodes: 6 is not a whole number of UltraServers" in text
    )
    assert "pools[0].purchase.reservations[1].nodes: 2 is not a whole number" in text


def test_a_zones_secondary_block_does_not_move_when_pools_are_added_elsewhere() -> None:
    """Each zone's secondary /16 follows from its zone id alone (RFC 6598 range, the region's
    zones in id order): a second large pool in another zone adds a block, the first stays."""
    one = stack_of(sized("llama3-70b-p5", 2048))
    data = sized("llama3-70b-p5", 2048)
    second = copy.deepcopy(data["pools"][0])
    second.update(name="h100b", availability_zone="use2-az1")
    data["pools"].append(second)
    two = stack_of(data)
    assert one.address_plan.secondary_subnets == {"use2-az3": "100.66.0.0/16"}
    assert two.address_plan.secondary_subnets == {
        "use2-az1": "100.64.0.0/16",
        "use2-az3": "100.66.0.0/16",
    }
    plan = plan_stack(two, guard=False)
    assert evaluate(plan, two) == []
    blocks = plan.of_type("aws:ec2/vpcIpv4CidrBlockAssociation:VpcIpv4CidrBlockAssociation")
    assert sorted(b.inputs["cidrBlock"] for b in blocks) == ["100.64.0.0/16", "100.66.0.0/16"]


def test_a_retargeted_stack_recomputes_its_node_groups() -> None:
    from accelstack.cost.compare import retarget_stack

    stack = stack_of(sized("llama3-70b-p5", 16))
    moved = retarget_stack(stack, "trn2.48xlarge", 900, "on-demand")
    pool = moved.workload_pool
    assert [g.nodes for g in pool.node_groups] == [450, 450]
    assert moved.address_plan.secondary_subnets  # 900 nodes need the zone's secondary block


def test_golden_plan_of_a_2048_node_pool() -> None:
    """The 2,048-node p5 plan document: five node groups (the first in the private subnet, the
    rest in use2-az3's secondary block 100.66.0.0/16), the compact vpc-cni settings."""
    stack = stack_of(sized("llama3-70b-p5", 2048))
    plan = plan_stack(stack, guard=False)
    compare_golden(plan.to_json(), ROOT / "tests" / "golden" / "plan" / "scale" / "p5-2048.json")


def test_spare_nodes_count_in_the_node_groups() -> None:
    """The node groups hold the running nodes (nodes + spare_nodes): 450 + 2 spares are two
    groups, the second of 2."""
    data = sized("llama3-70b-p5", 450)
    data["pools"][0]["spare_nodes"] = 2
    stack = stack_of(data)
    assert [g.nodes for g in stack.pools[0].node_groups] == [450, 2]


# ---- large-cluster profile -------------------------------------------


@pytest.mark.parametrize("preset", ["llama3-70b-p5", "llama3-70b-trn2"])
def test_a_2048_node_plan_has_the_large_cluster_profile(preset: str) -> None:
    """2,048 nodes: a provisioned control-plane tier chosen from the catalog's tier table, node
    groups created in steps of at most the RunInstances launch bucket (each step waits for the
    one before), more system nodes, and the tier priced on top of the cluster-hour."""
    stack = stack_of(sized(preset, 2048))
    facts = stack.catalog.scale.large_cluster
    profile = stack.profile
    assert profile.tier is not None and profile.tier.tier == "tier-2xl"
    assert profile.tier.pod_scheduling_rate * facts.control_plane.reschedule_seconds >= (
        profile.nodes * facts.control_plane.pods_per_node
    )
    assert stack.system_nodes == profile.system_nodes > 2
    plan = plan_stack(stack, guard=False)
    (cluster,) = plan.of_type("aws:eks/cluster:Cluster")
    assert cluster.inputs["controlPlaneScalingConfig"] == {"tier": "tier-2xl"}
    system = next(r for r in plan.of_type(NODE_GROUP) if r.name.endswith("-system-ng"))
    assert system.inputs["scalingConfig"]["desiredSize"] == profile.system_nodes
    mine = groups(plan, f"{preset}-{stack.pools[0].name}-")
    steps = {p.role: p.step for p in stack.pools[0].node_groups}
    names = {p.role: f"{preset}-{stack.pools[0].name}-{p.role}" for p in stack.pools[0].node_groups}
    for role, step in steps.items():
        waits = {d for d in plan.get(NODE_GROUP, names[role]).depends_on if d in set(mine)}
        assert waits == {names[r] for r, s in steps.items() if s == step - 1}
    per_step: dict[int, int] = {}
    for part in stack.pools[0].node_groups:
        per_step[part.step] = per_step.get(part.step, 0) + part.nodes
    assert max(per_step.values()) <= facts.staging.launch_bucket and len(per_step) == 3
    items = check_budget(stack).cost.items
    tier = [i for i in items if i.what.endswith("tier-2xl")]
    assert tier and tier[0].hourly_usd > 0 and tier[0].estimate


def test_sixteen_nodes_keep_the_standard_control_plane_and_one_step() -> None:
    stack = stack_of(sized("llama3-70b-p5", 16))
    assert stack.profile.tier is None and stack.profile.steps == 1
    plan = plan_stack(stack, guard=False)
    (cluster,) = plan.of_type("aws:eks/cluster:Cluster")
    assert "controlPlaneScalingConfig" not in cluster.inputs


def test_a_tier_without_a_price_is_refused_not_free() -> None:
    """The tier's price is a catalog row: without it the stack cannot be priced."""
    stack = stack_of(sized("llama3-70b-trn2", 2048))
    cat = stack.catalog
    rates = tuple(r for r in cat.service_rates if r.item != "eks-control-plane-tier-2xl")
    poor = replace(stack, catalog=cat.model_copy(update={"service_rates": rates}))
    with pytest.raises(MissingPrice, match="eks-control-plane-tier-2xl"):
        check_budget(poor)


@pytest.mark.parametrize(("nodes", "tier"), [(400, None), (1200, "tier-xl"), (2048, "tier-2xl")])
def test_the_tier_follows_the_node_count(nodes: int, tier: str | None) -> None:
    got = stack_of(sized("llama3-70b-p5", nodes)).profile.tier
    assert (got.tier if got else None) == tier


# ---- Capacity Blocks across pools and behind one pool -----------------


def two_block_pools(a: int, b: int) -> dict[str, Any]:
    """Two capacity-block pools of `a` and `b` nodes, each on whole 64-instance blocks."""
    data = sized("p5e-capacity-block", a)
    first = data["pools"][0]
    second = copy.deepcopy(first)
    second["name"], second["nodes"] = "h200b", b

    def res(prefix: str, n: int) -> list[dict[str, Any]]:
        return [{"id": f"cr-0{prefix}{i:015x}", "nodes": 64} for i in range(n // 64)]

    first["purchase"] = {"option": "capacity-block", "reservations": res("a", a)}
    second["purchase"] = {"option": "capacity-block", "reservations": res("b", b)}
    data["pools"].append(second)
    data["workload"]["pool"] = "h200"
    return data


def test_capacity_block_pools_together_stay_within_the_account_limit() -> None:
    """256 instances per account across Capacity Blocks: two pools of 192 (each within it)
    are refused together in one line naming the limit and its source; 128 + 128 pass."""
    with pytest.raises(SpecError) as err:
        stack_of(two_block_pools(192, 192))
    text = str(err.value)
    assert "384 instances (h200: 192, h200b: 192)" in text
    assert "256 an account can hold across Capacity Blocks" in text
    assert "capacity-blocks-how.html" in text
    assert len(stack_of(two_block_pools(128, 128)).pools) == 2


def test_price_shows_each_capacity_block_behind_a_pool_with_its_zone() -> None:
    """128 nodes on two 64-instance blocks: the report names both reservations, their nodes
    and zone, and bills blocks of the sizes bought (not sizes it re-derives)."""
    from accelstack.cost.guard import render_report, verdict_dict

    a, b = "cr-0a1b2c3d4e5f67890", "cr-0b1b2c3d4e5f67890"
    stack = stack_of(blocks((a, 64), (b, 64)))
    verdict = check_budget(stack)
    zone = stack.pools[0].zone_id
    text = render_report(verdict)
    assert "2 reservations behind pool h200" in text
    assert f"{a} 64 node(s) in {zone}; {b} 64 node(s) in {zone}" in text
    training = verdict_dict(verdict)["training"]
    assert training["capacity_blocks"] == [64, 64]
    assert training["reservations"] == [
        {"id": a, "nodes": 64, "zone_id": zone},
        {"id": b, "nodes": 64, "zone_id": zone},
    ]


def test_a_reservation_pool_launches_into_the_placement_group_its_reservation_lives_in() -> None:
    """An ODCR created in a cluster placement group is used by launches into that group: the
    pool's launch template names it and accelstack creates no group of its own."""
    data = sized("llama3-70b-p5", 16)
    data["pools"][0]["purchase"] = {
        "option": "reservation",
        "reservation_id": "cr-0a1b2c3d4e5f67890",
        "placement_group": "team-p5-cpg",
    }
    stack = stack_of(data)
    assert stack.pools[0].placement_group_name == "team-p5-cpg"
    plan = plan_stack(stack, guard=False)
    (lt,) = [r for r in plan.of_type("aws:ec2/launchTemplate:LaunchTemplate") if "h100" in r.name]
    assert lt.inputs["placement"] == {"groupName": "team-p5-cpg"}
    target = lt.inputs["capacityReservationSpecification"]["capacityReservationTarget"]
    assert target == {"capacityReservationId": "cr-0a1b2c3d4e5f67890"}
    assert not plan.of_type("aws:ec2/placementGroup:PlacementGroup")


def test_a_placement_group_on_a_capacity_block_is_refused_naming_the_source() -> None:
    data = sized("p5e-capacity-block", 8)
    data["pools"][0]["purchase"]["placement_group"] = "team-cpg"
    with pytest.raises(SpecError) as err:
        stack_of(data)
    text = str(err.value)
    assert "pools[0].purchase.placement_group" in text
    assert "only allowed with reservation, not 'capacity-block'" in text
    assert "API_CapacityBlock.html" in text


# ---- image delivery: container storage on the NVMe instance store ------


@pytest.mark.slow
def test_the_instance_store_table_is_describe_instance_types() -> None:
    """Disks per type in scale.yaml are EC2 DescribeInstanceTypes InstanceStorageInfo (moto's
    snapshot of it)."""
    from moto import mock_aws

    from ..helpers_preflight import fake_aws_env

    facts = load_catalog().scale.instance_store
    with pytest.MonkeyPatch.context() as mp:
        fake_aws_env(mp)
        with mock_aws():
            import boto3

            ec2 = boto3.client("ec2", region_name="us-east-1")
            got = ec2.describe_instance_types(InstanceTypes=sorted(facts.types))["InstanceTypes"]
    seen = {
        t["InstanceType"]: (
            t["InstanceStorageInfo"]["Disks"][0]["Count"],
            t["InstanceStorageInfo"]["Disks"][0]["SizeInGB"],
        )
        for t in got
    }
    assert seen == {name: (r.disks, r.disk_gb) for name, r in facts.types.items()}


def user_data_of(plan: Plan, name: str) -> dict[str, Any]:
    import base64

    lt = plan.get("aws:ec2/launchTemplate:LaunchTemplate", name)
    text = base64.b64decode(lt.inputs["userData"]).decode()
    part = text.split("Content-Type: application/node.eks.aws\n\n", 1)[1].split("\n\n--", 1)[0]
    doc: dict[str, Any] = json.loads(part)
    return doc


@pytest.mark.parametrize("preset", ["llama3-70b-p5", "llama3-70b-trn2"])
def test_nodes_with_nvme_disks_keep_containers_on_a_raid0_of_them(preset: str) -> None:
    stack = stack_of(sized(preset, 16))
    plan = plan_stack(stack, guard=False)
    doc = user_data_of(plan, f"{preset}-{stack.pools[0].name}-lt")
    assert doc["spec"]["instance"] == {"localStorage": {"strategy": "RAID0"}}


def test_a_single_disk_type_keeps_the_root_volume() -> None:
    facts = load_catalog().scale.instance_store
    assert facts.strategy_for("p5.4xlarge") is None  # one disk: no array
    assert facts.strategy_for("m6i.xlarge") is None  # no instance store
    assert facts.strategy_for("p5.48xlarge") == "RAID0"


@pytest.mark.parametrize(("nodes", "pull"), [(16, 0.009), (256, 0.114), (2048, 0.91)])
def test_the_image_pull_is_in_the_one_time_hours(nodes: int, pull: float) -> None:
    """Every node pulls the image through its zone's NAT gateway: 2,048 nodes x 20 GB at
    100 Gbps is most of an hour, in the estimate's one-time hours and its note."""
    from accelstack.cost.guard import estimate_for

    stack = stack_of(sized("llama3-70b-p5", nodes))
    est = estimate_for(stack)
    g = stack.catalog.throughput.goodput
    assert est.one_time_hours == pytest.approx(g.bring_up_hours + pull, abs=0.001)
    assert f"image pull {pull:.2f} h ({nodes} x 20 GB" in est.parts.one_time_note


# ---- an existing VPC's address plan ------------------------------------


def existing_with(nodes: int, free: int | None) -> Stack:
    data = copy.deepcopy(read_yaml(STACKS / "llama3-70b-p5.yaml"))
    existing_vpc(nodes)(data)
    zone = stack_of(copy.deepcopy(data)).pools[0].zone_id
    if free is not None:
        data["network"]["private_subnet_addresses"] = {zone: free}
    return stack_of(data)


def cni_env_of(stack: Stack) -> dict[str, str]:
    plan = plan_stack(stack, guard=False)
    cni = next(r for r in plan.of_type("aws:eks/addon:Addon") if "vpc-cni" in r.name)
    raw = cni.inputs.get("configurationValues")
    return dict(json.loads(raw)["env"]) if raw else {}


def test_an_existing_vpc_with_known_subnet_sizes_gets_the_compact_cni_settings() -> None:
    """512 p5 nodes take 51,200 addresses at the VPC CNI defaults; a zone with 16,000 free
    holds them at WARM_IP_TARGET/MINIMUM_IP_TARGET (11 a node), so the stack applies those."""
    stack = existing_with(512, 16000)
    assert stack.address_plan.cni_env == {"MINIMUM_IP_TARGET": "8", "WARM_IP_TARGET": "2"}
    assert cni_env_of(stack) == {"MINIMUM_IP_TARGET": "8", "WARM_IP_TARGET": "2"}


def test_an_existing_vpc_that_holds_the_defaults_keeps_them() -> None:
    assert existing_with(16, 16000).address_plan.cni_env == {}
    assert existing_with(64, None).address_plan.cni_env == {}  # unknown, small: the defaults


def test_an_existing_vpc_at_scale_without_free_addresses_gets_the_compact_settings() -> None:
    """Unknown free addresses and more nodes than a created VPC's zone holds at the defaults
    (a /19: 8,187 addresses, 100 a p5 node): the compact settings, not the defaults (which an
    existing VPC's subnets rarely hold at 512 p5 nodes); preflight still checks the subnets."""
    assert existing_with(512, None).address_plan.cni_env == {
        "MINIMUM_IP_TARGET": "8",
        "WARM_IP_TARGET": "2",
    }


def test_an_existing_vpc_too_small_even_for_the_compact_settings_is_refused() -> None:
    with pytest.raises(SpecError) as err:
        existing_with(512, 4000)
    text = str(err.value)
    assert "pools[0].nodes" in text and "even with WARM_IP_TARGET/MINIMUM_IP_TARGET" in text
    assert "4000 free" in text and "vpc-cni.html" in text


def test_subnet_addresses_name_zones_of_the_region() -> None:
    data = copy.deepcopy(read_yaml(STACKS / "llama3-70b-p5.yaml"))
    existing_vpc(16)(data)
    data["network"]["private_subnet_addresses"] = {"use2-az9": 100}
    with pytest.raises(SpecError, match=r"network.private_subnet_addresses.use2-az9"):
        stack_of(data)


def test_preflight_counts_the_addresses_at_the_plans_cni_settings() -> None:
    """With the compact settings applied, preflight judges a subnet by what nodes take under
    them (11 a p5 node), not by the defaults' 100."""
    from accelstack.preflight.scale_checks import zone_address_needs

    compact = zone_address_needs(existing_with(512, 16000))
    default = zone_address_needs(existing_with(64, None))
    (zone,) = [z for z, needs in compact.items() if any(w == "pool h100" for w, _ in needs)]
    assert dict(compact[zone])["pool h100"] == 512 * 11
    assert dict(default[zone])["pool h100"] == 64 * 100
    unstated = zone_address_needs(existing_with(512, None))  # at scale: compact, unstated
    assert dict(unstated[zone])["pool h100"] == 512 * 11
