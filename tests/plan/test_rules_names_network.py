"""The deploy rules on AMIs, names, networking and standalone clusters (amis.py, names.py,
network.py, standalone.py in accelstack/plan/rules) and the spec rules on generated names: every
rule fails, with one line naming the resource and the document, when the fix is turned off or the plan is
edited back to the defect; and every preset plans with none of them firing."""

from __future__ import annotations

import copy
from dataclasses import replace
from functools import cache
from typing import Any

import pytest

from accelstack.catalog.ipbudget import AddressPlan
from accelstack.components.standalone import StandaloneCluster
from accelstack.plan import Plan, PlannedResource
from accelstack.plan.rules import DEPLOY_RULES, Violation, evaluate
from accelstack.resolve import Stack, resolve, resolve_unchecked
from accelstack.spec import load_spec, parse_spec, read_yaml

from ..conftest import STACKS
from ..helpers_plan import plan_stack

MINE = {"ami-pinned", "standalone-one-request", "standalone-delivery-ssm", "fsx-client-egress"}
FLEET = "aws:ec2/fleet:Fleet"
LT = "aws:ec2/launchTemplate:LaunchTemplate"


def preset(name: str) -> Stack:
    return resolve(load_spec(STACKS / f"{name}.yaml"))


def validated(data: dict[str, Any], file: str) -> Stack:
    """What `accelstack validate` accepts: the spec rules, then the stack rules (resolve)."""
    return resolve(parse_spec(data, file))


def variant(name: str, edit: Any) -> Stack:
    data = copy.deepcopy(read_yaml(STACKS / f"{name}.yaml"))
    edit(data)
    return resolve(parse_spec(data, f"{data['name']}.yaml"))


@cache
def standalone_plan() -> tuple[Plan, Stack]:
    stack = preset("trn1-standalone")
    return plan_stack(stack, guard=False), stack


def fired(plan: Plan, stack: Stack, rule: str) -> list[Violation]:
    return [v for v in evaluate(plan, stack) if v.rule == rule]


def edit(plan: Plan, typ: str, change: Any, drop: bool = False) -> Plan:
    """The plan with every resource of `typ` changed (inputs -> inputs) or dropped."""
    out: list[PlannedResource] = []
    for r in plan.resources:
        if r.type != typ:
            out.append(r)
        elif not drop:
            out.append(replace(r, inputs=change(copy.deepcopy(r.inputs))))
    return replace(plan, resources=out)


def assert_one_line(v: Violation, resource: str, document: str) -> None:
    line = v.line()
    assert "\n" not in line
    assert line.startswith(resource + ": "), line
    assert document in line and f"[{v.rule}; " in line


def test_rules_are_registered_with_their_documents() -> None:
    names = {r.name: r for r in DEPLOY_RULES}
    assert set(names) >= MINE
    for name in MINE:
        assert names[name].source.startswith("https://"), name


@pytest.mark.parametrize("name", sorted(p.stem for p in STACKS.glob("*.yaml")))
def test_every_preset_plans_with_no_violation(name: str) -> None:
    stack = preset(name)
    assert [v.line() for v in evaluate(plan_stack(stack, guard=False), stack)] == []


# -- standalone: one request, delivery through SSM


def test_instances_per_node_violate_one_request() -> None:
    plan, stack = standalone_plan()
    inst = PlannedResource("aws:ec2/instance:Instance", "trn1-standalone-trn1-0", None, {})
    bad = replace(plan, resources=[*plan.resources, inst])
    (v, *_) = fired(bad, stack, "standalone-one-request")
    assert_one_line(v, "aws:ec2/instance:Instance 'trn1-standalone-trn1-0'", "placement-strategies")


def test_a_partial_fleet_violates_one_request() -> None:
    plan, stack = standalone_plan()

    def partial(inputs: dict[str, Any]) -> dict[str, Any]:
        inputs["onDemandOptions"]["minTargetCapacity"] = 1
        return inputs

    (v,) = fired(edit(plan, FLEET, partial), stack, "standalone-one-request")
    assert_one_line(v, f"{FLEET} 'trn1-standalone-trn1-fleet'", "placement-strategies")
    assert "minTargetCapacity 1; the pool has 2" in v.message
    (v,) = fired(edit(plan, FLEET, lambda i: i, drop=True), stack, "standalone-one-request")
    assert v.resource == "pool 'trn1'"


def test_user_data_violates_ssm_delivery() -> None:
    plan, stack = standalone_plan()
    bad = edit(plan, LT, lambda i: {**i, "userData": "IyEvYmluL2Jhc2g="})
    (v,) = fired(bad, stack, "standalone-delivery-ssm")
    assert_one_line(v, f"{LT} 'trn1-standalone-trn1-lt'", "user-data.html")
    no_assoc = edit(plan, "aws:ssm/association:Association", lambda i: i, drop=True)
    (v,) = fired(no_assoc, stack, "standalone-delivery-ssm")
    assert v.resource == "pool 'trn1'" and "tag:accelstack.io/pool=trn1" in v.message


# -- FSx client egress


def with_fsx(data: dict[str, Any]) -> None:
    data["storage"] = {"fsx_lustre_gib": 1200}
    data["workload"]["entrypoint"] = "/fsx/code/train.py"


def test_standalone_nodes_reach_fsx_and_the_rule_fails_without_the_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stack = variant("trn1-standalone", with_fsx)
    plan = plan_stack(stack, guard=False)
    egress = [
        r.inputs
        for r in plan.of_type("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")
        if r.name.startswith("trn1-standalone-lustre-egress-")
    ]
    assert sorted((e["fromPort"], e["toPort"]) for e in egress) == [(988, 988), (1018, 1023)]
    assert not fired(plan, stack, "fsx-client-egress")
    # the fix turned off: the node security group has no way out to FSx
    monkeypatch.setattr(StandaloneCluster, "_fsx_egress", lambda self, name: [])
    broken = plan_stack(stack, guard=False)
    (v,) = fired(broken, stack, "fsx-client-egress")
    assert v.resource.startswith("aws:ec2/securityGroup:SecurityGroup 'sg-")  # the node group
    assert_one_line(v, v.resource, "limit-access-security-groups")
    assert "988, 1018-1023" in v.message


# -- names and tags: validation refuses, the deploy rules catch what slips

from accelstack.catalog import limits  # noqa: E402
from accelstack.errors import SpecError  # noqa: E402
from accelstack.spec.models import Spec  # noqa: E402


def unvalidated(data: dict[str, Any]) -> Stack:
    """A stack built from the spec's shape only (spec rules and stack rules off), to show
    what the deploy rules catch when validation is bypassed."""
    return resolve_unchecked(Spec.model_validate(data))


def renamed(base: str, stack_name: str, pool_name: str | None = None) -> dict[str, Any]:
    data = copy.deepcopy(read_yaml(STACKS / f"{base}.yaml"))
    data["name"] = stack_name
    if pool_name:
        data["pools"][0]["name"] = pool_name
        data["workload"].pop("pool", None)
    return data


def test_limits_come_from_botocore_models() -> None:
    assert limits.iam_role_name() == (64, r"[\w+=,.@-]+")  # iam roleNameType
    assert limits.max_tags() == 50  # iam tagListType, eks TagMap


def test_a_40_character_eks_stack_name_is_refused_a_39_accepted() -> None:
    """`<stack>-system-node-role` + 8: 39 characters make 64, 40 make 65 (a one-node stack:
    with a fabric test, the kubernetes-names rule allows 37, tests/resolve/test_k8snames.py)."""
    ok, long = "p" * 37 + "-x", "p" * 38 + "-x"
    validated(renamed("trn1-finetune", ok, "h"), f"{ok}.yaml")
    with pytest.raises(
        SpecError,
        match=r"system-node-role-x{7}' .* would be 65 characters; AWS allows 64 \(botocore iam roleNameType\): shorten the stack name by 1",
    ):
        validated(renamed("llama3-70b-p5", long, "h"), f"{long}.yaml")


def test_training_role_name_fits_every_stack_name_the_system_role_allows() -> None:
    """`<stack>-training-role` (the pods' one Pod Identity role, compile cache included) is
    shorter than `<stack>-system-node-role`: a 39-character Neuron stack plans clean, and 40 is
    refused for the system role, not for the training role."""
    ok = "a" * 37 + "-x"  # 39 characters
    stack = resolve(parse_spec(renamed("trn1-finetune", ok), f"{ok}.yaml"))
    plan = plan_stack(stack, guard=False)
    role = plan.get("aws:iam/role:Role", f"{ok}-training-role")
    assert len(role.name) + limits.AUTONAME_SUFFIX == 61
    assert not fired(plan, stack, "iam-role-name")
    long = "a" * 38 + "-x"  # 40 characters
    with pytest.raises(SpecError, match=r"name: the IAM role name '.*-system-node-role-x{7}'"):
        validated(renamed("trn1-finetune", long), f"{long}.yaml")


def test_pool_role_and_node_group_names_both_edges() -> None:
    """`<stack>-<pool>-node-role` + 8 <= 64 binds first (stack + pool <= 45): 45 plans clean,
    46 is refused. Bypassing validation, `<stack>-<pool>-ng` + 8 <= 63 (stack + pool <= 51):
    51 passes the node-group rule, 52 fails it. (A 39-character stack: with 40,
    `<stack>-system-node-role` is already 65; a one-node stack, which has no fabric test
    whose pod names would bind first: tests/resolve/test_k8snames.py)"""
    stack_name = "p" * 37 + "-x"  # 39 characters
    ok = resolve(parse_spec(renamed("trn1-finetune", stack_name, "h" * 6), f"{stack_name}.yaml"))
    plan = plan_stack(ok, guard=False)
    assert not fired(plan, ok, "iam-role-name") and not fired(plan, ok, "eks-nodegroup-name")
    with pytest.raises(SpecError, match=r"pools\[0\]\.name: the IAM role name .* would be 65"):
        validated(renamed("trn1-finetune", stack_name, "h" * 7), f"{stack_name}.yaml")
    edge = unvalidated(renamed("trn1-finetune", stack_name, "h" * 12))
    assert not fired(plan_stack(edge, guard=False), edge, "eks-nodegroup-name")
    bad = unvalidated(renamed("trn1-finetune", stack_name, "h" * 13))
    (v,) = fired(plan_stack(bad, guard=False), bad, "eks-nodegroup-name")
    assert_one_line(
        v, f"aws:eks/nodeGroup:NodeGroup '{stack_name}-{'h' * 13}-ng'", "API_CreateNodegroup"
    )
    assert "is 64 characters" in v.message


@pytest.mark.parametrize("prefix", limits.BUCKET_RESERVED_PREFIXES)
def test_reserved_bucket_prefixes_are_refused(prefix: str) -> None:
    name = (prefix + "cache").rstrip("-")
    with pytest.raises(SpecError, match="reserved prefix"):
        validated(renamed("trn1-finetune", name), f"{name}.yaml")
    bad = unvalidated(renamed("trn1-finetune", name))
    ckpt, cache = fired(plan_stack(bad, guard=False), bad, "s3-bucket-name")
    assert_one_line(ckpt, f"aws:s3/bucket:Bucket '{name}-checkpoints-bucket'", "bucketnamingrules")
    assert_one_line(
        cache, f"aws:s3/bucket:Bucket '{name}-compile-cache-bucket'", "bucketnamingrules"
    )


def test_existing_bucket_with_a_reserved_suffix_is_refused() -> None:
    def edit(d: dict[str, Any]) -> None:
        d["compile_cache"] = {"bucket": "team-cache--x-s3"}

    with pytest.raises(
        SpecError,
        match=r"compile_cache\.bucket: 'team-cache--x-s3' ends with the reserved suffix '--x-s3'",
    ):
        variant("trn1-finetune", edit)


def test_tag_count_both_edges() -> None:
    def tags(n: int) -> Any:
        return lambda d: d.update(tags={f"k{i}": "v" for i in range(n)})

    stack = variant("trn1-standalone", tags(44))  # 44 + 2 stack keys + 4 per resource = 50
    assert not fired(plan_stack(stack, guard=False), stack, "tag-count")
    with pytest.raises(SpecError, match=r"tags: 45 tags; .* would carry 51, AWS allows 50"):
        variant("trn1-standalone", tags(45))
    data = copy.deepcopy(read_yaml(STACKS / "trn1-standalone.yaml"))
    tags(49)(data)
    bad = unvalidated(data)
    lines = fired(plan_stack(bad, guard=False), bad, "tag-count")
    assert (
        lines
        and "tags after merging the provider's default tags; AWS allows 50" in lines[0].message
    )
    assert "tagging.html" in lines[0].line()


# -- subnet IP budget


def p5_in(vpc: str, nodes: int, style: str | None = None) -> Any:
    def edit(d: dict[str, Any]) -> None:
        d["network"] = {"vpc_cidr": vpc}
        d["pools"][0]["nodes"] = nodes
        if style:
            d["pools"][0]["efa_interface_style"] = style

    return edit


def test_a_slash_20_holds_four_p5_nodes_at_default_settings_and_five_with_compact_ones() -> None:
    """A /20 VPC gives each zone a /23 private subnet: 512 - 5 = 507 addresses; an EKS p5 node
    holds 2 ENIs x 50 (VPC CNI warm ENI) with efa-only extra cards, and the zone carries one of
    the two m6i.xlarge system nodes (2 x 15): 4 p5 (430) fit at the CNI defaults. 5 (530) do
    not, so the stack sets WARM_IP_TARGET/MINIMUM_IP_TARGET on vpc-cni (1 + 8 + 2 per node)
    and plans clean; the deploy rule counts the compact settings from the add-on."""
    ok = variant("llama3-70b-p5", p5_in("10.0.0.0/20", 4))
    assert ok.address_plan.cni_env == {}
    assert not fired(plan_stack(ok, guard=False), ok, "subnet-ip-budget")
    five = variant("llama3-70b-p5", p5_in("10.0.0.0/20", 5))
    assert five.address_plan.cni_env == {"WARM_IP_TARGET": "2", "MINIMUM_IP_TARGET": "8"}
    assert five.address_plan.secondary_subnets == {}
    assert not fired(plan_stack(five, guard=False), five, "subnet-ip-budget")
    data = copy.deepcopy(read_yaml(STACKS / "llama3-70b-p5.yaml"))
    p5_in("10.0.0.0/20", 5)(data)
    bad = replace(unvalidated(data), address_plan=AddressPlan())  # the CNI defaults
    (v,) = fired(plan_stack(bad, guard=False), bad, "subnet-ip-budget")
    assert "10.0.0.0/23 offers 507 addresses" in v.message and "need 530" in v.message


def test_a_pool_too_large_even_for_the_secondary_cidr_is_refused_with_a_fix_that_works() -> None:
    """2,048 p5 nodes with 'efa' interfaces on the 31 extra cards take 1 + 10 + 31 addresses
    each: the zone's secondary /16 cannot hold them; the advice ('efa-only') plans."""
    with pytest.raises(
        SpecError,
        match=r"pools\[0\]\.nodes: the node groups of this pool do not fit zone use2-az3: .*"
        r"secondary CIDR block 100\.66\.0\.0/16 \(65531 addresses; .*ai-on-eks.*\): use "
        r"efa_interface_style 'efa-only'",
    ):
        variant("llama3-70b-p5", p5_in("10.42.0.0/16", 2048, "efa"))
    fixed = variant("llama3-70b-p5", p5_in("10.42.0.0/16", 2048, "efa-only"))
    assert not fired(plan_stack(fixed, guard=False), fixed, "subnet-ip-budget")
    data = copy.deepcopy(read_yaml(STACKS / "llama3-70b-p5.yaml"))
    p5_in("10.42.0.0/16", 2048, "efa")(data)
    bad = unvalidated(data)
    lines = fired(plan_stack(bad, guard=False), bad, "subnet-ip-budget")
    assert lines and lines[0].resource.startswith(
        "aws:ec2/subnet:Subnet 'llama3-70b-p5-network-nodes-use2-az3'"
    )
    assert "100.66.0.0/16 offers 65531 addresses" in lines[0].message
    assert "subnet-sizing" in lines[0].line()


def test_efa_style_interfaces_count_one_address_each() -> None:
    """'efa' on the 31 extra cards adds 31 addresses per node: 16 p5 need 2096 (fits /16)."""
    from accelstack.catalog.ipbudget import node_ips

    stack = preset("llama3-70b-p5")
    pool = stack.pools[0]
    assert pool.efa_interface_style == "efa-only"  # the catalog default
    assert node_ips(stack.catalog, pool.instance, 32, "efa-only", True) == 100
    assert node_ips(stack.catalog, pool.instance, 32, "efa", True) == 131
    assert node_ips(stack.catalog, pool.instance, 32, "efa", False) == 32


# -- NAT per zone and the S3 gateway endpoint


def test_each_zone_routes_through_its_own_nat_and_s3_skips_it() -> None:
    stack = preset("llama3-70b-trn2")
    plan = plan_stack(stack, guard=False)
    nats = plan.of_type("aws:ec2/natGateway:NatGateway")
    assert len(nats) == len(stack.network_zone_ids) == 2
    (ep,) = plan.of_type("aws:ec2/vpcEndpoint:VpcEndpoint")
    assert ep.inputs["vpcEndpointType"] == "Gateway"
    assert ep.inputs["serviceName"] == "com.amazonaws.us-east-2.s3"
    assert len(ep.inputs["routeTableIds"]) == 2
    # the fix off: drop the endpoint, route every zone through one NAT
    no_ep = edit(plan, "aws:ec2/vpcEndpoint:VpcEndpoint", lambda i: i, drop=True)
    (v,) = fired(no_ep, stack, "s3-gateway-endpoint")
    assert_one_line(v, "aws:ec2/vpc:Vpc 'llama3-70b-trn2-network-vpc'", "vpc-endpoints-s3")
    first = nats[0].name

    def one_nat(inputs: dict[str, Any]) -> dict[str, Any]:
        if inputs.get("natGatewayId"):
            inputs["natGatewayId"] = "nat-" + first
        return inputs

    (v,) = fired(edit(plan, "aws:ec2/route:Route", one_nat), stack, "nat-per-zone")
    assert_one_line(v, "aws:ec2/vpc:Vpc 'llama3-70b-trn2-network-vpc'", "vpc-nat-gateway")


def test_single_nat_is_an_explicit_choice() -> None:
    stack = variant("llama3-70b-trn2", lambda d: d.update(network={"single_nat_gateway": True}))
    plan = plan_stack(stack, guard=False)
    assert len(plan.of_type("aws:ec2/natGateway:NatGateway")) == 1
    assert not fired(plan, stack, "nat-per-zone")


# -- trn1-standalone: no entrypoint on a missing FSx


def test_an_entrypoint_on_fsx_needs_fsx() -> None:
    def on_fsx(d: dict[str, Any]) -> None:
        d["workload"]["entrypoint"] = "/fsx/code/train.py"

    with pytest.raises(
        SpecError, match=r"workload\.entrypoint: '/fsx/code/train\.py' is on the FSx mount /fsx"
    ):
        variant("trn1-standalone", on_fsx)
    assert not preset("trn1-standalone").spec.workload.entrypoint.startswith("/fsx/")
    variant("trn1-standalone", with_fsx)  # with FSx it is fine


# -- EKS upgrade policy and add-on versions

CLUSTER = "aws:eks/cluster:Cluster"
ADDON = "aws:eks/addon:Addon"


def test_clusters_default_to_standard_support_and_extended_is_a_choice() -> None:
    stack = preset("trn1-finetune")
    plan = plan_stack(stack, guard=False)
    (cluster,) = plan.of_type(CLUSTER)
    assert cluster.inputs["upgradePolicy"] == {"supportType": "STANDARD"}
    unset = edit(plan, CLUSTER, lambda i: {k: v for k, v in i.items() if k != "upgradePolicy"})
    (v,) = fired(unset, stack, "eks-upgrade-policy")
    assert_one_line(v, f"{CLUSTER} 'trn1-finetune-cluster-eks'", "API_UpgradePolicyRequest")
    ext = variant("trn1-finetune", lambda d: d["cluster"].update(support_type="EXTENDED"))
    ext_plan = plan_stack(ext, guard=False)
    assert ext_plan.of_type(CLUSTER)[0].inputs["upgradePolicy"] == {"supportType": "EXTENDED"}
    assert not fired(ext_plan, ext, "eks-upgrade-policy")


def test_clusters_have_deletion_protection_unless_the_spec_turns_it_off() -> None:
    """Fails on the old program: the cluster carried no deletionProtection (EKS's default off:
    a `pulumi destroy` deleted it with every Kubernetes object of the stack)."""
    stack = preset("trn1-finetune")
    plan = plan_stack(stack, guard=False)
    (cluster,) = plan.of_type(CLUSTER)
    assert cluster.inputs["deletionProtection"] is True
    unset = edit(plan, CLUSTER, lambda i: {k: v for k, v in i.items() if k != "deletionProtection"})
    (v,) = fired(unset, stack, "eks-deletion-protection")
    assert_one_line(v, f"{CLUSTER} 'trn1-finetune-cluster-eks'", "API_CreateCluster")
    off = variant("trn1-finetune", lambda d: d["cluster"].update(deletion_protection=False))
    off_plan = plan_stack(off, guard=False)
    assert off_plan.of_type(CLUSTER)[0].inputs["deletionProtection"] is False
    assert not fired(off_plan, off, "eks-deletion-protection")


def test_addons_carry_the_catalog_version_where_one_is_pinned() -> None:
    """Every version pins every add-on (instances.yaml eks_addon_versions); an add-on that lost
    its version (or carries another one) is reported."""
    stack = variant("trn1-finetune", lambda d: d["cluster"].update(kubernetes_version="1.33"))
    plan = plan_stack(stack, guard=False)
    versions = {a.inputs["addonName"]: a.inputs.get("addonVersion") for a in plan.of_type(ADDON)}
    assert versions["vpc-cni"] == "v1.20.1-eksbuild.3"
    assert versions["coredns"] == "v1.12.3-eksbuild.1"
    assert not fired(plan, stack, "eks-addon-pinned")

    def unpin(inputs: dict[str, Any]) -> dict[str, Any]:
        inputs.pop("addonVersion", None)
        return inputs

    lines = fired(edit(plan, ADDON, unpin), stack, "eks-addon-pinned")
    assert {v.resource for v in lines} >= {f"{ADDON} 'trn1-finetune-cluster-addon-vpc-cni'"}
    assert "managing-add-ons" in lines[0].line()
    latest = preset("trn1-finetune")  # 1.35: every add-on pinned too
    assert set(latest.addon_names) <= set(latest.addon_versions)
