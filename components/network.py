"""Network: a new VPC (private + public subnet per zone, NAT, routes) or existing subnets."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from accelstack import naming
from accelstack.components.common import check_children, stable_tags
from accelstack.inventory import (
    Billable,
    CacheRule,
    NatGateway,
    ecr_endpoints,
    nat_gateways,
    registry_cache_rules,
    s3_endpoint,
)
from accelstack.resolve import Stack


def subnet_cidrs(vpc_cidr: str, slots: Mapping[str, int]) -> dict[str, tuple[str, str]]:
    """zone id -> (private CIDR, public CIDR), each zone at its slot (resolve's
    `Stack.subnet_slots`: by zone id, or the order of the zones in use for a stack created
    before). The VPC is cut in eight: the first seven are large private subnets (EFA
    interfaces use many IPs), the eighth is cut in eight small public ones. A zone's subnets
    depend on its slot alone, so a zone added or removed elsewhere moves nothing."""
    net = ipaddress.IPv4Network(vpc_cidr)
    if any(not 0 <= i < 7 for i in slots.values()) or len(set(slots.values())) < len(slots):
        raise ValueError(f"zone slots {dict(slots)} do not fit the 7-zone layout of {vpc_cidr}")
    big = list(net.subnets(prefixlen_diff=3))
    small = list(big[7].subnets(prefixlen_diff=3))
    return {z: (str(big[i]), str(small[i])) for z, i in slots.items()}


@dataclass(frozen=True)
class NetworkArgs:
    cluster_name: str
    zone_ids: tuple[str, ...]
    vpc_cidr: str
    #: zone id -> its subnet slot (resolve's `Stack.subnet_slots`); default: the zones' order
    subnet_slots: dict[str, int] = field(default_factory=dict)
    existing_vpc_id: str | None = None
    existing_private_subnet_ids: tuple[str, ...] = ()
    existing_public_subnet_ids: tuple[str, ...] = ()
    tags: dict[str, str] = field(default_factory=dict)
    #: zone id -> the zone's secondary CIDR block and node subnet (large pools), if any
    secondary_subnets: dict[str, str] = field(default_factory=dict)
    #: The NAT gateways and the S3 endpoint of a created network (inventory: names, zones and
    #: priced inputs, what the cost guard prices)
    nat_gateways: tuple[NatGateway, ...] = ()
    s3_endpoint: Billable | None = None
    #: The private registry path of a created network (resolve's profile, the inventory's
    #: records): the ECR api/dkr interface endpoints and the pull-through cache rules
    ecr_endpoints: tuple[Billable, ...] = ()
    cache_rules: tuple[CacheRule, ...] = ()

    @classmethod
    def from_stack(cls, stack: Stack) -> NetworkArgs:
        """The stack's network: EKS spans at least two zones; a standalone stack only its pools'
        zones (`Stack.network_zone_ids`)."""
        existing = stack.existing_network
        return cls(
            cluster_name=stack.name,
            zone_ids=stack.network_zone_ids,
            vpc_cidr=stack.vpc_cidr,
            subnet_slots=stack.subnet_slots,
            existing_vpc_id=existing.vpc_id if existing else None,
            existing_private_subnet_ids=existing.private_subnet_ids if existing else (),
            existing_public_subnet_ids=existing.public_subnet_ids if existing else (),
            tags=stable_tags(stack.tags),
            secondary_subnets=dict(stack.address_plan.secondary_subnets),
            nat_gateways=nat_gateways(stack),
            s3_endpoint=s3_endpoint(stack),
            ecr_endpoints=ecr_endpoints(stack),
            cache_rules=registry_cache_rules(stack),
        )


def _pick_subnet(zone: str, found: list[tuple[str, str]]) -> str:
    for subnet_id, zid in found:
        if zid == zone:
            return subnet_id
    have = ", ".join(f"{s} ({z})" for s, z in found) or "none"
    raise ValueError(f"network.private_subnet_ids has no subnet in zone {zone} (have: {have})")


def _picker(zone: str) -> Callable[[list[Any]], str]:
    def pick(found: list[Any]) -> str:
        return _pick_subnet(zone, [(str(s), str(z)) for s, z in found])

    return pick


class Network(pulumi.ComponentResource):
    """VPC and subnets. `private_subnet_ids[zone_id]` is the one private subnet per zone."""

    vpc_id: pulumi.Output[str]
    private_subnet_ids: dict[str, pulumi.Output[str]]
    public_subnet_ids: list[pulumi.Output[str]]
    vpc_cidr: pulumi.Output[str]
    #: zone id -> the zone's subnet in the secondary CIDR (created VPC with large pools)
    secondary_subnet_ids: dict[str, pulumi.Output[str]]

    def __init__(
        self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("accelstack:network:Network", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.secondary_subnet_ids = {}
        self._endpoints_sg: aws.ec2.SecurityGroup | None = None
        self._name = name
        if args.existing_vpc_id:
            self._existing(name, args)
        else:
            self._create(name, args, child)

    def finish(self, node_security_group_id: pulumi.Input[str] | None = None) -> None:
        """The network's last child, then its outputs (every child is registered before
        `register_outputs`): the nodes (the EKS cluster security group every node group
        carries) reach the ECR endpoints on TCP 443, the only ingress of the endpoints'
        security group; nothing without the endpoints. Called once, when the cluster (which
        needs the network's subnets) exists; a standalone stack (no endpoints) gives None."""
        self._admit_https_from(node_security_group_id)
        self.register_outputs(
            {
                "vpcId": self.vpc_id,
                "privateSubnetIds": self.private_subnet_ids,
                "publicSubnetIds": self.public_subnet_ids,
            }
        )

    def _admit_https_from(self, node_security_group_id: pulumi.Input[str] | None) -> None:
        if self._endpoints_sg is None:
            return
        if node_security_group_id is None:
            raise ValueError(f"{self._name}: the ECR endpoints need the nodes' security group")
        aws.vpc.SecurityGroupIngressRule(
            f"{self._name}-ecr-endpoints-https",
            security_group_id=self._endpoints_sg.id,
            referenced_security_group_id=node_security_group_id,
            ip_protocol="tcp",
            from_port=443,
            to_port=443,
            description="HTTPS from the nodes",
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _existing(self, name: str, args: NetworkArgs) -> None:
        invoke = pulumi.InvokeOutputOptions(parent=self)
        assert args.existing_vpc_id is not None
        vpc = aws.ec2.get_vpc_output(id=args.existing_vpc_id, opts=invoke)
        self.vpc_id = pulumi.Output.from_input(args.existing_vpc_id)
        self.vpc_cidr = vpc.cidr_block
        lookups = [
            pulumi.Output.all(
                sid, aws.ec2.get_subnet_output(id=sid, opts=invoke).availability_zone_id
            )
            for sid in args.existing_private_subnet_ids
        ]
        found = pulumi.Output.all(*lookups)
        self.private_subnet_ids = {z: found.apply(_picker(z)) for z in args.zone_ids}
        self.public_subnet_ids = [
            pulumi.Output.from_input(s) for s in args.existing_public_subnet_ids
        ]
        # only when the spec asks (network.ecr_endpoints): the VPC may have them already
        check_children(name, *args.ecr_endpoints)
        child = pulumi.ResourceOptions(parent=self)
        self._endpoints_sg = _ecr_endpoints(name, args, self.vpc_id, self.private_subnet_ids, child)
        _cache_rules(args, child)

    def _create(self, name: str, args: NetworkArgs, child: pulumi.ResourceOptions) -> None:
        if not args.nat_gateways:
            raise ValueError(
                f"{name}: a created network needs the NAT gateways the inventory declares"
            )
        check_children(name, args.s3_endpoint, *(b for nat in args.nat_gateways for b in nat))
        check_children(name, *args.ecr_endpoints)
        vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=args.vpc_cidr,
            enable_dns_hostnames=True,
            enable_dns_support=True,
            tags={**args.tags, "Name": f"{name}-vpc"},
            opts=child,
        )
        self.vpc_id = vpc.id
        self.vpc_cidr = vpc.cidr_block
        igw, public_rt = _public_routing(name, args, vpc, child)
        public, private = _zone_subnets(name, args, vpc, public_rt, child)
        nats = _nat_gateways(args, public, igw, self)
        tables = _private_routing(name, args, vpc, private, nats, child)
        _s3_gateway_endpoint(args, vpc, tables, child)
        self._endpoints_sg = _ecr_endpoints(
            name, args, vpc.id, {z: sn.id for z, sn in private.items()}, child
        )
        _cache_rules(args, child)
        self.secondary_subnet_ids = _secondary_subnets(name, args, vpc, tables, child)
        self.private_subnet_ids = {z: s.id for z, s in private.items()}
        self.public_subnet_ids = [s.id for s in public.values()]


def _public_routing(
    name: str, args: NetworkArgs, vpc: aws.ec2.Vpc, child: pulumi.ResourceOptions
) -> tuple[aws.ec2.InternetGateway, aws.ec2.RouteTable]:
    """The internet gateway and the public route table with its default route."""
    igw = aws.ec2.InternetGateway(
        f"{name}-igw", vpc_id=vpc.id, tags={**args.tags, "Name": f"{name}-igw"}, opts=child
    )
    public_rt = aws.ec2.RouteTable(
        f"{name}-public-rt",
        vpc_id=vpc.id,
        tags={**args.tags, "Name": f"{name}-public"},
        opts=child,
    )
    aws.ec2.Route(
        f"{name}-public-default",
        route_table_id=public_rt.id,
        destination_cidr_block="0.0.0.0/0",
        gateway_id=igw.id,
        opts=child,
    )
    return igw, public_rt


def _zone_subnets(
    name: str,
    args: NetworkArgs,
    vpc: aws.ec2.Vpc,
    public_rt: aws.ec2.RouteTable,
    child: pulumi.ResourceOptions,
) -> tuple[dict[str, aws.ec2.Subnet], dict[str, aws.ec2.Subnet]]:
    """Per zone: a public subnet (associated with the public route table) and a private one."""
    cluster_tag = {f"kubernetes.io/cluster/{args.cluster_name}": "shared"}
    slots = args.subnet_slots or {z: i for i, z in enumerate(args.zone_ids)}
    cidrs = subnet_cidrs(args.vpc_cidr, slots)
    public: dict[str, aws.ec2.Subnet] = {}
    private: dict[str, aws.ec2.Subnet] = {}
    for zone in args.zone_ids:
        priv_cidr, pub_cidr = cidrs[zone]
        public[zone] = aws.ec2.Subnet(
            f"{name}-public-{zone}",
            vpc_id=vpc.id,
            cidr_block=pub_cidr,
            availability_zone_id=zone,
            map_public_ip_on_launch=False,
            tags={
                **args.tags,
                **cluster_tag,
                "Name": f"{name}-public-{zone}",
                "kubernetes.io/role/elb": "1",
            },
            opts=child,
        )
        aws.ec2.RouteTableAssociation(
            f"{name}-public-{zone}-rta",
            subnet_id=public[zone].id,
            route_table_id=public_rt.id,
            opts=child,
        )
        private[zone] = aws.ec2.Subnet(
            f"{name}-private-{zone}",
            vpc_id=vpc.id,
            cidr_block=priv_cidr,
            availability_zone_id=zone,
            tags={
                **args.tags,
                **cluster_tag,
                "Name": f"{name}-private-{zone}",
                "kubernetes.io/role/internal-elb": "1",
            },
            opts=child,
        )
    return public, private


def _nat_gateways(
    args: NetworkArgs,
    public: dict[str, aws.ec2.Subnet],
    igw: aws.ec2.InternetGateway,
    parent: pulumi.Resource,
) -> dict[str, aws.ec2.NatGateway]:
    """The NAT gateways the inventory declares (one per zone, so no zone's traffic crosses to
    another zone's NAT and its inter-AZ data charges; the first zone's only with
    single_nat_gateway), each with its Elastic IP, in the zone's public subnet.
    AWS now also offers regional NAT gateways (one gateway across zones,
    https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_AvailabilityZoneAddress.html);
    accelstack keeps zonal ones, which pulumi-aws 7 and the cost guard model."""
    child = pulumi.ResourceOptions(parent=parent)
    nats: dict[str, aws.ec2.NatGateway] = {}
    for nat in args.nat_gateways:
        tag = {**args.tags, "Name": nat.gateway.name}
        eip = aws.ec2.Eip(nat.eip.name, tags=tag, opts=child, **nat.eip.args)
        nats[nat.zone] = aws.ec2.NatGateway(
            nat.gateway.name,
            allocation_id=eip.id,
            subnet_id=public[nat.zone].id,
            tags=tag,
            opts=pulumi.ResourceOptions(parent=parent, depends_on=[igw]),
            **nat.gateway.args,
        )
    return nats


def _private_routing(
    name: str,
    args: NetworkArgs,
    vpc: aws.ec2.Vpc,
    private: dict[str, aws.ec2.Subnet],
    nats: dict[str, aws.ec2.NatGateway],
    child: pulumi.ResourceOptions,
) -> list[aws.ec2.RouteTable]:
    """Per zone: a private route table whose default route goes to the zone's NAT gateway
    (or the first zone's with single_nat_gateway), associated with the zone's private subnet."""
    first_nat = nats[args.nat_gateways[0].zone]
    tables: list[aws.ec2.RouteTable] = []
    for zone in args.zone_ids:
        nat = nats.get(zone, first_nat)
        rt = aws.ec2.RouteTable(
            f"{name}-private-{zone}-rt",
            vpc_id=vpc.id,
            tags={**args.tags, "Name": f"{name}-private-{zone}"},
            opts=child,
        )
        aws.ec2.Route(
            f"{name}-private-{zone}-default",
            route_table_id=rt.id,
            destination_cidr_block="0.0.0.0/0",
            nat_gateway_id=nat.id,
            opts=child,
        )
        aws.ec2.RouteTableAssociation(
            f"{name}-private-{zone}-rta",
            subnet_id=private[zone].id,
            route_table_id=rt.id,
            opts=child,
        )
        tables.append(rt)
    return tables


def _s3_gateway_endpoint(
    args: NetworkArgs,
    vpc: aws.ec2.Vpc,
    tables: list[aws.ec2.RouteTable],
    child: pulumi.ResourceOptions,
) -> aws.ec2.VpcEndpoint | None:
    """The S3 gateway endpoint the inventory declares, on every private route table:
    compile-cache and checkpoint traffic to S3 in the region skips the NAT gateway (and its
    per-GB charge); gateway endpoints carry no charge
    (https://docs.aws.amazon.com/vpc/latest/privatelink/vpc-endpoints-s3.html)."""
    declared = args.s3_endpoint
    if declared is None:
        return None
    return aws.ec2.VpcEndpoint(
        declared.name,
        vpc_id=vpc.id,
        route_table_ids=[t.id for t in tables],
        tags={**args.tags, "Name": declared.name},
        opts=child,
        **declared.args,
    )


def _secondary_subnets(
    name: str,
    args: NetworkArgs,
    vpc: aws.ec2.Vpc,
    tables: list[aws.ec2.RouteTable],
    child: pulumi.ResourceOptions,
) -> dict[str, pulumi.Output[str]]:
    """Per zone that needs one (resolve's address plan): a secondary CIDR block on the VPC and
    a private subnet spanning it, on the zone's private route table (NAT, S3 endpoint)."""
    table_of = dict(zip(args.zone_ids, tables, strict=True))
    out: dict[str, pulumi.Output[str]] = {}
    for zone, cidr in sorted(args.secondary_subnets.items()):
        block = aws.ec2.VpcIpv4CidrBlockAssociation(
            naming.secondary_block(name, zone), vpc_id=vpc.id, cidr_block=cidr, opts=child
        )
        subnet_name = naming.node_subnet(name, zone)
        subnet = aws.ec2.Subnet(
            subnet_name,
            vpc_id=vpc.id,
            cidr_block=cidr,
            availability_zone_id=zone,
            tags={
                **args.tags,
                f"kubernetes.io/cluster/{args.cluster_name}": "shared",
                "Name": subnet_name,
            },
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[block])),
        )
        aws.ec2.RouteTableAssociation(
            f"{subnet_name}-rta",
            subnet_id=subnet.id,
            route_table_id=table_of[zone].id,
            opts=child,
        )
        out[zone] = subnet.id
    return out


def _ecr_endpoints(
    name: str,
    args: NetworkArgs,
    vpc_id: pulumi.Input[str],
    private: Mapping[str, pulumi.Input[str]],
    child: pulumi.ResourceOptions,
) -> aws.ec2.SecurityGroup | None:
    """The ECR api and dkr interface endpoints the inventory declares: private DNS on (nodes
    resolve the regional ECR names to them), one network interface in the private subnet of
    each zone in use, behind a security group that admits HTTPS from the nodes' security
    group only (`Network.finish`, once the cluster exists)
    (https://docs.aws.amazon.com/AmazonECR/latest/userguide/vpc-endpoints.html)."""
    if not args.ecr_endpoints:
        return None
    sg = aws.ec2.SecurityGroup(
        f"{name}-ecr-endpoints-sg",
        vpc_id=vpc_id,
        description="ECR interface endpoints: HTTPS from the nodes only",
        tags={**args.tags, "Name": f"{name}-ecr-endpoints"},
        opts=child,
    )
    for declared in args.ecr_endpoints:
        aws.ec2.VpcEndpoint(
            declared.name,
            vpc_id=vpc_id,
            subnet_ids=[private[z] for z in declared.subnet_zones],
            security_group_ids=[sg.id],
            tags={**args.tags, "Name": declared.name},
            opts=child,
            **declared.args,
        )
    return sg


def _cache_rules(args: NetworkArgs, child: pulumi.ResourceOptions) -> None:
    """The ECR pull-through cache rules of the stack: `<prefix>/<repository>` in the account's
    private registry mirrors `<upstream>/<repository>` (registries that need no credential,
    scale.yaml image_delivery.private_registry.cache_source)."""
    for rule in args.cache_rules:
        aws.ecr.PullThroughCacheRule(
            rule.name,
            ecr_repository_prefix=rule.prefix,
            upstream_registry_url=rule.upstream_url,
            opts=child,
        )
