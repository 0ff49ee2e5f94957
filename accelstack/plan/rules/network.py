"""Network deploy rules: FSx clients can reach the Lustre
ports, the private subnets hold the nodes' addresses, S3 traffic skips the NAT gateway, and
every zone in use has its own NAT gateway."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from accelstack import naming
from accelstack.plan.document import Plan
from accelstack.plan.rules._res import rid
from accelstack.plan.rules.registry import deploy_rule

if TYPE_CHECKING:
    from accelstack.resolve import Stack

FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
EGRESS = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
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


VPC = "aws:ec2/vpc:Vpc"
ROUTE = "aws:ec2/route:Route"
ENDPOINT = "aws:ec2/vpcEndpoint:VpcEndpoint"
SUBNET = "aws:ec2/subnet:Subnet"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
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


@deploy_rule(
    "nat-per-zone",
    "https://docs.aws.amazon.com/vpc/latest/userguide/vpc-nat-gateway.html",
    "each zone's private route table uses a NAT gateway of its own (no inter-AZ data charges) "
    "unless network.single_nat_gateway asks for one",
)
def _nat_per_zone(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    if stack.spec.network.single_nat_gateway or not plan.of_type(VPC):
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


def _node_ips(plan: Plan, stack: Stack, pool: Any) -> int:
    """Addresses one node of `pool` takes, from its launch template's interfaces."""
    kubernetes = bool(plan.of_type(NODE_GROUP))
    enis = 1 + (stack.catalog.defaults.vpc_cni_warm_enis if kubernetes else 0)
    per_eni = pool.instance.ipv4_per_interface if kubernetes else 1
    lts = [
        r
        for r in plan.of_type(LAUNCH_TEMPLATE)
        if r.name == naming.launch_template(stack.name, pool.name)
    ]
    nics = (lts[0].inputs.get("networkInterfaces") or []) if lts else []
    extra = sum(
        1 for n in nics if n.get("networkCardIndex", 0) > 0 and n.get("interfaceType") == "efa"
    )
    return enis * per_eni + extra


@deploy_rule(
    "subnet-ip-budget",
    "https://docs.aws.amazon.com/vpc/latest/userguide/subnet-sizing.html",
    "each private subnet holds the addresses of its zone's nodes (VPC CNI warm ENI, EFA "
    "interfaces with ENA, 5 reserved)",
)
def _ip_budget(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    reserved = stack.catalog.defaults.subnet_reserved_ips
    private = [
        s
        for s in plan.of_type(SUBNET)
        if (s.inputs.get("tags") or {}).get(PRIVATE_SUBNET_TAG) == "1"
        and isinstance(s.inputs.get("cidrBlock"), str)
    ]
    system = 0  # EKS system nodes spread over the private subnets: each its share, rounded up
    if plan.of_type(NODE_GROUP) and private:
        inst = stack.catalog.instances[stack.system_instance_type]
        per = (1 + stack.catalog.defaults.vpc_cni_warm_enis) * inst.ipv4_per_interface
        system = -(-stack.system_nodes // len(private)) * per
    for subnet in private:
        cidr = str(subnet.inputs.get("cidrBlock"))
        zone = subnet.inputs.get("availabilityZoneId")
        pools = [p for p in stack.pools if p.zone_id == zone]
        need = system + sum(p.running_nodes * _node_ips(plan, stack, p) for p in pools)
        usable = ipaddress.IPv4Network(cidr).num_addresses - reserved
        if need > usable:
            yield (
                rid(subnet),
                f"{cidr} offers {usable} addresses; pools {', '.join(p.name for p in pools)} "
                f"and system nodes need {need}: use a larger VPC CIDR, fewer nodes or 'efa-only' interfaces",
            )
