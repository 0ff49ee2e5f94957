"""Private-subnet IP budget: how many VPC addresses a pool's nodes hold

Per node: the primary ENI's addresses, plus (EKS) the VPC CNI's warm ENI, plus one address per
extra EFA interface of style 'efa' (EFA with ENA); 'efa-only' interfaces take none. Facts come
from the catalog (instances.*.ipv4_per_interface, defaults.vpc_cni_warm_enis,
defaults.subnet_reserved_ips), where their sources are cited.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass, field

from accelstack.catalog.facts import InstanceType
from accelstack.catalog.model import Catalog


def node_ips(
    catalog: Catalog, inst: InstanceType, efa_interfaces: int, style: str, kubernetes: bool
) -> int:
    """Addresses one node takes from its subnet."""
    enis = 1 + (catalog.defaults.vpc_cni_warm_enis if kubernetes else 0)
    per_eni = inst.ipv4_per_interface if kubernetes else 1
    extra_efa = max(efa_interfaces - 1, 0) if style == "efa" else 0
    return enis * per_eni + extra_efa


def usable_ips(catalog: Catalog, cidr: str) -> int:
    """Addresses a subnet offers to instances (AWS keeps 5 of every subnet)."""
    return ipaddress.IPv4Network(cidr).num_addresses - catalog.defaults.subnet_reserved_ips


def private_subnet_cidr(vpc_cidr: str) -> str:
    """The private subnet size the created network cuts per zone: an eighth of the VPC
    (components/network.py `subnet_cidrs`)."""
    return str(next(ipaddress.IPv4Network(vpc_cidr).subnets(prefixlen_diff=3)))


# ---------------------------------------------------------------------------------------
# Address plan of a created VPC (EKS): the smallest step of scale.yaml `address_space` that
# holds every node group's addresses.
# ---------------------------------------------------------------------------------------

PRIMARY, SECONDARY = "primary", "secondary"


@dataclass(frozen=True)
class GroupDemand:
    """One node group of a pool, in a zone: who it is (YAML path), its nodes, its addresses
    per node under the default and the compact VPC CNI settings."""

    at: str
    pool: str
    index: int
    zone: str
    nodes: int
    per_node_default: int
    per_node_compact: int


@dataclass(frozen=True)
class AddressPlan:
    """Where each node group takes its addresses, and what the network must add for it."""

    cni_env: dict[str, str] = field(default_factory=dict)  # vpc-cni add-on env; {} = defaults
    #: zone id -> the zone's secondary VPC CIDR block, which is also its node subnet
    secondary_subnets: dict[str, str] = field(default_factory=dict)
    placement: dict[tuple[str, int], str] = field(default_factory=dict)  # (pool, group) -> subnet
    #: (YAML path, what does not fit): the address space cannot hold the pools
    problems: tuple[tuple[str, str], ...] = ()

    def subnet_of(self, pool: str, group: int) -> str:
        return self.placement.get((pool, group), PRIMARY)


def per_node(
    catalog: Catalog, inst: InstanceType, efa_interfaces: int, style: str, compact: bool
) -> int:
    """Addresses one EKS node takes: the default VPC CNI (warm ENIs), or the compact settings
    (its primary address plus MINIMUM_IP_TARGET + WARM_IP_TARGET)."""
    if not compact:
        return node_ips(catalog, inst, efa_interfaces, style, True)
    extra_efa = max(efa_interfaces - 1, 0) if style == "efa" else 0
    return 1 + catalog.scale.address_space.compact_cni.addresses_per_node + extra_efa


def secondary_blocks(catalog: Catalog, first: str, region: str) -> dict[str, str]:
    """zone id -> its secondary block: the region's zones (catalog, sorted by id) take the /16s
    from `first` on, in order. A zone's block depends on its id alone, never on which other
    zones the stack uses, so adding a pool elsewhere changes no existing subnet."""
    base = ipaddress.IPv4Network(first)
    zones = sorted(catalog.region(region).zones.values()) if region in catalog.regions else []
    step = base.num_addresses
    return {
        z: str(ipaddress.IPv4Network((int(base.network_address) + i * step, base.prefixlen)))
        for i, z in enumerate(zones)
    }


def _fits(catalog: Catalog, groups: Sequence[GroupDemand], fixed: dict[str, int], cap: int) -> bool:
    need: dict[str, int] = dict(fixed)
    for g in groups:
        need[g.zone] = need.get(g.zone, 0) + g.nodes * g.per_node_default
    return all(n <= cap for n in need.values())


def plan_addresses(
    catalog: Catalog,
    region: str,
    vpc_cidr: str,
    zones: Sequence[str],
    groups: Sequence[GroupDemand],
    fixed: dict[str, tuple[int, int]],
) -> AddressPlan:
    """The address plan: default CNI when every zone's private subnet holds its node groups;
    else the compact CNI settings, each pool's first node group in its zone's private subnet
    when it fits, and every further group (and a first one that does not fit) in the zone's
    secondary CIDR block (one /16 per zone that needs it, `secondary_blocks`). A group never changes subnet as its pool grows: growing fills
    the last group and adds groups after it, all in the secondary subnet.
    `fixed`: zone -> (default, compact) addresses of nodes outside the pools (system nodes)."""
    cap = usable_ips(catalog, private_subnet_cidr(vpc_cidr))
    if _fits(catalog, groups, {z: d for z, (d, _) in fixed.items()}, cap):
        return AddressPlan()
    space = catalog.scale.address_space
    free = {z: cap - fixed.get(z, (0, 0))[1] for z in zones}
    second = secondary_blocks(catalog, space.secondary_cidr, region)
    second_free = {z: usable_ips(catalog, c) for z, c in second.items()}
    placement: dict[tuple[str, int], str] = {}
    problems: list[tuple[str, str]] = []
    for g in groups:
        need = g.nodes * g.per_node_compact
        if g.index == 0 and need <= free.get(g.zone, 0):
            free[g.zone] -= need
            continue
        placement[(g.pool, g.index)] = SECONDARY
        second_free[g.zone] = second_free.get(g.zone, 0) - need  # no block: 0 - need < 0
        if second_free[g.zone] < 0:
            problems.append((g.at, f"{g.nodes} nodes x {g.per_node_compact} addresses"))
    if not placement:
        return AddressPlan(cni_env=space.compact_cni.env())
    used = {g.zone for g in groups if (g.pool, g.index) in placement}
    return AddressPlan(
        cni_env=space.compact_cni.env(),
        secondary_subnets={z: c for z, c in second.items() if z in used},
        placement=placement,
        problems=tuple(problems),
    )


def plan_existing(
    catalog: Catalog,
    free: dict[str, int],
    groups: Sequence[GroupDemand],
    fixed: dict[str, tuple[int, int]],
) -> AddressPlan:
    """The address plan of an existing VPC whose zones' free private addresses are known
    (`free`, zone id -> addresses): the VPC CNI defaults when every known zone holds its nodes
    at them, else the compact settings; a zone that cannot hold even those is a problem of
    each pool there. Unknown zones are left to preflight."""
    default: dict[str, int] = {z: d for z, (d, _) in fixed.items()}
    compact: dict[str, int] = {z: c for z, (_, c) in fixed.items()}
    for g in groups:
        default[g.zone] = default.get(g.zone, 0) + g.nodes * g.per_node_default
        compact[g.zone] = compact.get(g.zone, 0) + g.nodes * g.per_node_compact
    if all(default.get(z, 0) <= n for z, n in free.items()):
        return AddressPlan()
    problems = tuple(
        (g.at, f"zone {g.zone}: {compact[g.zone]} addresses needed, {free[g.zone]} free")
        for g in groups
        if g.index == 0 and g.zone in free and compact[g.zone] > free[g.zone]
    )
    env = catalog.scale.address_space.compact_cni.env()
    return AddressPlan(cni_env=env, problems=problems)


def plan_unstated(
    catalog: Catalog,
    vpc_cidr: str,
    groups: Sequence[GroupDemand],
    fixed: dict[str, tuple[int, int]],
) -> AddressPlan:
    """The address plan of an existing VPC whose free addresses the spec does not state: the
    VPC CNI defaults while every zone's nodes fit what a created VPC of `vpc_cidr` gives a zone
    (`private_subnet_cidr`), else the compact settings, which any subnet holding the nodes at
    the defaults also holds (MINIMUM_IP_TARGET + WARM_IP_TARGET per node instead of whole warm
    ENIs). Whether the subnets hold even those is for `accelstack preflight` (or the spec's
    network.private_subnet_addresses) to say."""
    cap = usable_ips(catalog, private_subnet_cidr(vpc_cidr))
    if _fits(catalog, groups, {z: d for z, (d, _) in fixed.items()}, cap):
        return AddressPlan()
    return AddressPlan(cni_env=catalog.scale.address_space.compact_cni.env())


def pool_group_demands(
    catalog: Catalog,
    at: str,
    pool: str,
    zone: str,
    inst: InstanceType,
    sizes: Sequence[int],
    efa_interfaces: int,
    style: str,
) -> list[GroupDemand]:
    """The address demand of each node group of one pool."""
    default = per_node(catalog, inst, efa_interfaces, style, compact=False)
    compact = per_node(catalog, inst, efa_interfaces, style, compact=True)
    return [GroupDemand(at, pool, i, zone, n, default, compact) for i, n in enumerate(sizes)]


def system_demand(
    catalog: Catalog, inst: InstanceType | None, nodes: int, zones: Sequence[str]
) -> dict[str, tuple[int, int]]:
    """zone -> (default, compact) addresses of the system nodes: they spread over the zones,
    each zone counts its share rounded up."""
    if inst is None or not zones:
        return {}
    share = -(-nodes // max(len(zones), 2))
    d = per_node(catalog, inst, 0, "efa-only", compact=False)
    c = per_node(catalog, inst, 0, "efa-only", compact=True)
    return {z: (share * d, share * c) for z in zones}
