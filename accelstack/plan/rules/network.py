"""Network deploy rules: FSx clients can reach the Lustre
ports, the private subnets hold the nodes' addresses, S3 traffic skips the NAT gateway, and
every zone in use has its own NAT gateway."""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from accelstack import naming
from accelstack.plan.document import Plan
from accelstack.plan.rules._res import rid
from accelstack.plan.rules.registry import DeployRule, deploy_rule
from accelstack.tokens import ADDON, CIDR_BLOCK, LAUNCH_TEMPLATE, NODE_GROUP, ROUTE, SUBNET, VPC
from accelstack.tokens import EGRESS_RULE as EGRESS
from accelstack.tokens import INGRESS_RULE as INGRESS
from accelstack.tokens import LUSTRE as FSX
from accelstack.tokens import VPC_ENDPOINT as ENDPOINT

if TYPE_CHECKING:
    from accelstack.resolve import Stack

#: TCP ports an FSx for Lustre client talks to the file system on.
LUSTRE_PORTS = ((988, 988), (1018, 1023))
FSX_SOURCE = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/limit-access-security-groups.html"


def _covers(rule: dict[str, Any], lo: int, hi: int) -> bool:
    if rule.get("ipProtocol") == "-1":
        return True
    if rule.get("ipProtocol") != "tcp":
        return False
    return int(rule.get("fromPort", -1)) <= lo and int(rule.get("toPort", -1)) >= hi


def _fsx_clients(plan: Plan) -> tuple[set[str], set[str]]:
    """(security groups of the file systems, client security groups they admit)."""
    fsx_groups = {
        str(g) for fs in plan.of_type(FSX) for g in fs.inputs.get("securityGroupIds") or []
    }
    clients = {
        str(r.inputs.get("referencedSecurityGroupId"))
        for r in plan.of_type(INGRESS)
        if r.inputs.get("securityGroupId") in fsx_groups
        and r.inputs.get("referencedSecurityGroupId") not in fsx_groups
    }
    return fsx_groups, clients


@deploy_rule(
    "fsx-client-egress",
    FSX_SOURCE,
    "a node security group whose egress the stack manages allows TCP 988 and 1018-1023 to "
    "its FSx for Lustre file system",
)
def _fsx_egress(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    fsx_groups, clients = _fsx_clients(plan)
    egress = plan.of_type(EGRESS)
    for client in sorted(clients):
        rules = [r for r in egress if r.inputs.get("securityGroupId") == client]
        if not rules:
            continue  # egress not managed here (e.g. the EKS cluster security group: all out)
        to_fsx = [
            r.inputs
            for r in rules
            if r.inputs.get("referencedSecurityGroupId") in fsx_groups
            or r.inputs.get("cidrIpv4") == "0.0.0.0/0"
        ]
        missing = [
            f"{lo}-{hi}" if lo != hi else str(lo)
            for lo, hi in LUSTRE_PORTS
            if not any(_covers(r, lo, hi) for r in to_fsx)
        ]
        if missing:
            yield (
                f"aws:ec2/securityGroup:SecurityGroup '{client}'",
                f"FSx clients need egress TCP {', '.join(missing)} to the file system's "
                "security group; the mount fails without it",
            )


PRIVATE_SUBNET_TAG = "kubernetes.io/role/internal-elb"


def _nat_routes(plan: Plan) -> dict[str, str]:
    """Private route table id -> the NAT gateway its default route uses."""
    return {
        str(r.inputs.get("routeTableId")): str(r.inputs.get("natGatewayId"))
        for r in plan.of_type(ROUTE)
        if r.inputs.get("natGatewayId") and r.inputs.get("destinationCidrBlock") == "0.0.0.0/0"
    }


@deploy_rule(
    "s3-gateway-endpoint",
    "https://docs.aws.amazon.com/vpc/latest/privatelink/vpc-endpoints-s3.html",
    "a created VPC has an S3 gateway endpoint on every private route table (S3 traffic skips "
    "the NAT gateway)",
)
def _s3_endpoint(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    for vpc in plan.of_type(VPC):
        private = set(_nat_routes(plan))
        covered: set[str] = set()
        for ep in plan.of_type(ENDPOINT):
            if ep.inputs.get("vpcEndpointType") == "Gateway" and str(
                ep.inputs.get("serviceName", "")
            ).endswith(".s3"):
                covered |= {str(t) for t in ep.inputs.get("routeTableIds") or []}
        if private - covered:
            yield (
                rid(vpc),
                f"{len(private - covered)} private route table(s) reach S3 only through the NAT "
                "gateway (billed per GB): add an S3 gateway endpoint on them",
            )


#: An interface endpoint's security group admits HTTPS from its clients in the VPC.
ECR_ENDPOINTS_SOURCE = (
    "https://docs.aws.amazon.com/vpc/latest/privatelink/create-interface-endpoint.html"
)


def _vpc_cidrs(plan: Plan) -> list[ipaddress.IPv4Network]:
    """The created VPC's CIDR blocks: its primary block and its secondary associations."""
    blocks = [r.inputs.get("cidrBlock") for r in plan.of_type(VPC)]
    blocks += [r.inputs.get("cidrBlock") for r in plan.of_type(CIDR_BLOCK)]
    return [ipaddress.IPv4Network(str(b)) for b in blocks if b]


def _endpoint_ingress_problem(rule: dict[str, Any], vpc: list[ipaddress.IPv4Network]) -> str:
    """Why an ingress rule of an interface endpoint's security group is too broad ('' if not)."""
    if rule.get("cidrIpv6"):
        return f"admits IPv6 {rule['cidrIpv6']}"
    if rule.get("ipProtocol") != "tcp" or (rule.get("fromPort"), rule.get("toPort")) not in (
        (443, 443),
        (443.0, 443.0),
    ):
        return "admits more than TCP 443"
    cidr = rule.get("cidrIpv4")
    if cidr is None:
        return "" if rule.get("referencedSecurityGroupId") else "admits no source it names"
    net = ipaddress.IPv4Network(str(cidr), strict=False)
    if not any(net.subnet_of(v) for v in vpc):
        return f"admits {cidr}, outside the VPC's CIDR blocks"
    return ""


@deploy_rule(
    "interface-endpoint-ingress",
    ECR_ENDPOINTS_SOURCE,
    "an interface endpoint's security group admits TCP 443 from the VPC's CIDR blocks or "
    "security groups only, never from the world",
)
def _endpoint_ingress(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    groups = {
        str(g)
        for ep in plan.of_type(ENDPOINT)
        if ep.inputs.get("vpcEndpointType") == "Interface"
        for g in ep.inputs.get("securityGroupIds") or []
    }
    vpc = _vpc_cidrs(plan)
    for rule in plan.of_type(INGRESS):
        if str(rule.inputs.get("securityGroupId")) not in groups:
            continue
        problem = _endpoint_ingress_problem(dict(rule.inputs), vpc)
        if problem:
            yield (rid(rule), f"interface endpoint security group rule {problem}")


@deploy_rule(
    "nat-per-zone",
    "https://docs.aws.amazon.com/vpc/latest/userguide/vpc-nat-gateway.html",
    "each zone's private route table uses a NAT gateway of its own (no inter-AZ data charges) "
    "unless network.single_nat_gateway asks for one",
)
def _nat_per_zone(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    if stack.network.single_nat_gateway or not plan.of_type(VPC):
        return
    routes = _nat_routes(plan)
    shared = len(routes) - len(set(routes.values()))
    if shared > 0:
        (vpc,) = plan.of_type(VPC)[:1]
        yield (
            rid(vpc),
            f"{len(routes)} private route tables share {len(set(routes.values()))} NAT "
            "gateway(s): traffic crosses zones (inter-AZ data charges); one NAT per zone",
        )


def _cni_env(plan: Plan) -> dict[str, str]:
    """The vpc-cni add-on's `env` configuration values in the plan ({}: its defaults)."""
    for addon in plan.of_type(ADDON):
        if addon.inputs.get("addonName") == "vpc-cni" and addon.inputs.get("configurationValues"):
            return dict(json.loads(str(addon.inputs["configurationValues"])).get("env", {}))
    return {}


def _node_ips(plan: Plan, stack: Stack, inst: Any, lt_name: str | None) -> int:
    """Addresses one node takes: the VPC CNI's (warm ENIs, or MINIMUM_IP_TARGET +
    WARM_IP_TARGET past the node's own address when the add-on sets them) plus its launch
    template's 'efa' interfaces on cards 1..N-1."""
    kubernetes = bool(plan.of_type(NODE_GROUP))
    env = _cni_env(plan)
    if not kubernetes:
        base = 1
    elif "MINIMUM_IP_TARGET" in env:
        base = 1 + int(env["MINIMUM_IP_TARGET"]) + int(env.get("WARM_IP_TARGET", 0))
    else:
        base = (1 + stack.defaults.vpc_cni_warm_enis) * inst.ipv4_per_interface
    lts = [r for r in plan.of_type(LAUNCH_TEMPLATE) if r.name == lt_name]
    nics = (lts[0].inputs.get("networkInterfaces") or []) if lts else []
    extra = sum(
        1 for n in nics if n.get("networkCardIndex", 0) > 0 and n.get("interfaceType") == "efa"
    )
    return base + extra


def _group_demands(plan: Plan, stack: Stack) -> dict[str, list[tuple[str, int]]]:
    """subnet id -> (node group, addresses) of every node group in the plan; a group over
    several subnets (the system nodes) counts its share, rounded up, in each."""
    insts: dict[str, tuple[Any, str | None]] = {
        naming.system_node_group(stack.name): (
            stack.catalog.instances[stack.system_instance_type],
            None,
        )
    }
    for p in stack.pools:
        for part in p.node_groups:
            insts[naming.pool_node_group(stack.name, p.name, part.role)] = (
                p.instance,
                naming.launch_template(stack.name, p.name, part.launch_template),
            )
    out: dict[str, list[tuple[str, int]]] = {}
    if not plan.of_type(NODE_GROUP):
        return _standalone_demands(plan, stack)
    for ng in plan.of_type(NODE_GROUP):
        inst, lt = insts.get(ng.name, (None, None))
        subnets = [str(s) for s in ng.inputs.get("subnetIds") or []]
        if inst is None or not subnets:
            continue
        nodes = int((ng.inputs.get("scalingConfig") or {}).get("maxSize", 0))
        share = -(-nodes // len(subnets)) * _node_ips(plan, stack, inst, lt)
        for sid in subnets:
            out.setdefault(sid, []).append((ng.name, share))
    return out


def _standalone_demands(plan: Plan, stack: Stack) -> dict[str, list[tuple[str, int]]]:
    """Standalone instances: each pool's nodes in its zone's private subnet."""
    from accelstack.plan.lookups import planned_ec2_id

    out: dict[str, list[tuple[str, int]]] = {}
    for subnet in plan.of_type(SUBNET):
        if (subnet.inputs.get("tags") or {}).get(PRIVATE_SUBNET_TAG) != "1":
            continue
        zone = subnet.inputs.get("availabilityZoneId")
        out[planned_ec2_id(SUBNET, subnet.name)] = [
            (
                p.name,
                p.nodes
                * _node_ips(plan, stack, p.instance, naming.launch_template(stack.name, p.name)),
            )
            for p in stack.pools
            if p.zone_id == zone
        ]
    return out


@deploy_rule(
    "subnet-ip-budget",
    "https://docs.aws.amazon.com/vpc/latest/userguide/subnet-sizing.html",
    "each subnet of a created VPC holds the addresses of the node groups in it (VPC CNI warm "
    "ENI or WARM_IP_TARGET/MINIMUM_IP_TARGET, EFA interfaces with ENA, 5 reserved)",
)
def _ip_budget(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    from accelstack.plan.lookups import planned_ec2_id

    reserved = stack.defaults.subnet_reserved_ips
    demands = _group_demands(plan, stack)
    for subnet in plan.of_type(SUBNET):
        cidr = subnet.inputs.get("cidrBlock")
        groups = demands.get(planned_ec2_id(SUBNET, subnet.name), [])
        if not isinstance(cidr, str) or not groups:
            continue
        need = sum(n for _, n in groups)
        usable = ipaddress.IPv4Network(cidr).num_addresses - reserved
        if need > usable:
            yield (
                rid(subnet),
                f"{cidr} offers {usable} addresses; node groups "
                f"{', '.join(g for g, _ in groups)} need {need}: use fewer nodes or "
                "'efa-only' interfaces",
            )


#: This module's rules, in report order (the kind's RuleSet lists this tuple).
MODULE_RULES: tuple[DeployRule, ...] = (
    _fsx_egress,
    _s3_endpoint,
    _endpoint_ingress,
    _nat_per_zone,
    _ip_budget,
)
