"""Rules for large pools: node groups per cluster, addresses of a created VPC under EKS, EC2
Fleet capacity (standalone), whole UltraServers. Each limit is a catalog fact (scale.yaml) and
each message names it, its source and a fix that works. Registered after the rules of
`accelstack.spec.rules` (the package imports this module)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from accelstack.catalog.ipbudget import (
    GroupDemand,
    plan_addresses,
    pool_group_demands,
    private_subnet_cidr,
    system_demand,
    usable_ips,
)
from accelstack.catalog.scale import Limit, split_nodes
from accelstack.errors import shown
from accelstack.spec.rules import Context, Finding, PoolFacts, _pool_zone, rule


def first_url(text: str) -> str:
    """The first address in a source note (the note may go on with more)."""
    m = re.search(r"https?://[^\s;,)\"]+", text)
    return m.group(0) if m else text.split()[0]


def _source(limit: Limit) -> str:
    return first_url(limit.source)


def _groups(ctx: Context, f: PoolFacts) -> tuple[int, ...]:
    """The pool's node-group sizes as resolve splits them: each reservation's nodes, else the
    running nodes (nodes + spare_nodes), in groups of at most the per-group limit."""
    per = ctx.catalog.scale.limits.nodes_per_node_group.value
    runs = [r.nodes for r in f.pool.purchase.reservations] or [f.pool.nodes + f.pool.spare_nodes]
    return tuple(n for run in runs for n in split_nodes(run, per))


def _group_count(ctx: Context) -> list[tuple[PoolFacts, int]]:
    """Each pool's node-group count (by division: a huge count is never materialised)."""
    per = ctx.catalog.scale.limits.nodes_per_node_group.value
    return [(f, -(-(f.pool.nodes + f.pool.spare_nodes) // per)) for f in ctx.known_pools]


def _over_group_limit(ctx: Context) -> bool:
    total = sum(n for _, n in _group_count(ctx)) + 1
    return total > ctx.catalog.scale.limits.node_groups_per_cluster.value


@rule(
    "pool-node-groups",
    "the pools' managed node groups (at most the EKS nodes-per-group limit each) and the system "
    "group fit the EKS node-groups-per-cluster limit",
)
def _node_groups(ctx: Context) -> Iterator[Finding]:
    if ctx.spec.orchestration != "eks" or not ctx.known_pools:
        return
    lim = ctx.catalog.scale.limits
    counts = _group_count(ctx)
    total = sum(n for _, n in counts) + 1  # + the system node group
    if total <= lim.node_groups_per_cluster.value:
        return
    biggest = max(counts, key=lambda c: c[0].pool.nodes)[0]
    parts = ", ".join(f"{f.at}: {n}" for f, n in counts)
    yield (
        f"{biggest.at}.nodes",
        f"the pools need {total} managed node groups ({parts}, at most "
        f"{lim.nodes_per_node_group.value} nodes each, plus the system group) but EKS allows "
        f"{lim.node_groups_per_cluster.named()} ({_source(lim.node_groups_per_cluster)}): "
        f"use fewer nodes (at most {ctx.catalog.scale.max_pool_nodes} in one pool) or put some "
        "pools in another stack",
    )


@rule(
    "pool-fleet-capacity",
    "a standalone pool (one EC2 Fleet request) is within the fleet's target capacity",
)
def _fleet_capacity(ctx: Context) -> Iterator[Finding]:
    if ctx.spec.orchestration != "ec2":
        return
    lim = ctx.catalog.scale.limits.fleet_target_capacity
    for f in ctx.known_pools:
        if f.pool.nodes > lim.value:
            yield (
                f"{f.at}.nodes",
                f"{f.pool.nodes} nodes exceed the {lim.named()} ({_source(lim)}): use at most "
                f"{lim.value} nodes per pool, or orchestration 'eks'",
            )


@rule(
    "pool-ultraserver",
    "a pool of UltraServer members is a whole number of UltraServers",
)
def _ultraserver(ctx: Context) -> Iterator[Finding]:
    for f in ctx.known_pools:
        us = ctx.catalog.scale.ultraservers.get(f.pool.instance_type)
        if us is None:
            continue
        for i, r in enumerate(f.pool.purchase.reservations):
            if not us.whole(r.nodes):
                yield (
                    f"{f.at}.purchase.reservations[{i}].nodes",
                    f"{r.nodes} is not a whole number of UltraServers ({us.instances} instances "
                    "each): a Capacity Block for UltraServers holds whole ones",
                )
        if us.whole(f.pool.nodes):
            continue
        lower = f.pool.nodes - f.pool.nodes % us.instances
        options = " or ".join(str(n) for n in (lower, lower + us.instances) if n > 0)
        yield (
            f"{f.at}.nodes",
            f"{f.pool.nodes} {f.pool.instance_type} nodes is not a whole number of UltraServers "
            f"({us.instances} instances each, sharing NeuronLink; {first_url(us.source)}): "
            f"use {options}",
        )


def _demands(ctx: Context) -> tuple[list[GroupDemand], list[str]]:
    """Each pool's node groups with their addresses per node, and the zones in network order
    (the pools' zones, sorted, topped up to two as the created VPC does)."""
    cat, d = ctx.catalog, ctx.catalog.defaults
    groups: list[GroupDemand] = []
    for f in ctx.known_pools:
        efa = f.inst.efa_interfaces if f.pool.efa is not False else 0
        style = f.pool.efa_interface_style or d.efa_interface_style
        groups += pool_group_demands(
            cat, f.at, f.pool.name, _pool_zone(ctx, f), f.inst, _groups(ctx, f), efa, style
        )
    zones = sorted({g.zone for g in groups})
    region = cat.regions.get(ctx.spec.region)
    for zid in sorted(region.zones.values()) if region else ():
        if len(zones) >= 2:
            break
        if zid not in zones:
            zones.append(zid)
    return groups, zones


@rule(
    "pool-addresses",
    "a created VPC (EKS) holds every node group's addresses: default VPC CNI settings, else "
    "WARM_IP_TARGET/MINIMUM_IP_TARGET, else a secondary CIDR",
)
def _pool_addresses(ctx: Context) -> Iterator[Finding]:
    if ctx.spec.orchestration != "eks" or ctx.spec.network.mode != "create":
        return
    if _over_group_limit(ctx):
        return  # pool-node-groups reports it
    cat = ctx.catalog
    vpc = ctx.spec.network.vpc_cidr or cat.defaults.vpc_cidr
    try:
        private_subnet_cidr(vpc)
    except ValueError:
        return  # vpc-cidr reports it
    groups, zones = _demands(ctx)
    if not groups:
        return
    sys_nodes = ctx.spec.cluster.system_nodes
    system = system_demand(
        cat,
        cat.instances.get(sys_nodes.instance_type or cat.defaults.system_instance_type),
        sys_nodes.nodes or cat.defaults.system_nodes,
        zones,
    )
    plan = plan_addresses(cat, ctx.spec.region, vpc, zones, groups, system)
    space = cat.scale.address_space
    for at, what in dict(plan.problems).items():
        g = next(g for g in groups if g.at == at)
        zone_cidr = plan.secondary_subnets.get(g.zone, "")
        size = usable_ips(cat, zone_cidr) if zone_cidr else 0
        efa = (
            "efa_interface_style 'efa-only', "
            if g.per_node_compact > 1 + (space.compact_cni.addresses_per_node)
            else ""
        )
        yield (
            f"{at}.nodes",
            f"the node groups of this pool do not fit zone {g.zone}: {what} beyond the private "
            f"subnet of network.vpc_cidr {shown(vpc)} and the zone's secondary CIDR block "
            f"{zone_cidr} ({size} addresses; {first_url(space.secondary_cidr_source)}): use "
            f"{efa}fewer nodes, or split the pool into pools in other zones",
        )


@rule(
    "pool-reservations",
    "several reservations behind a pool: capacity-block or reservation only, not with "
    "reservation_id, distinct ids, node counts adding up to the pool's nodes",
)
def _reservations(ctx: Context) -> Iterator[Finding]:
    for f in ctx.known_pools:
        buy = f.pool.purchase
        if not buy.reservations:
            continue
        at = f"{f.at}.purchase.reservations"
        if not ctx.catalog.purchase(buy.option).needs_reservation:
            held = " or ".join(
                n for n, r in ctx.catalog.purchase_options.items() if r.needs_reservation
            )
            yield (at, f"is only allowed with {held}, not '{buy.option}'")
        if buy.reservation_id:
            yield (at, "and reservation_id are exclusive: list every reservation here")
        if ctx.spec.orchestration == "ec2":
            yield (
                at,
                "needs orchestration 'eks' (one node group per reservation); a standalone pool "
                "launches into one reservation_id",
            )
        ids = [r.id for r in buy.reservations]
        for i, rid in enumerate(ids):
            if rid in ids[:i]:
                yield (f"{at}[{i}].id", f"{shown(rid)} is listed twice; each reservation once")
        if buy.instances is not None:
            yield (f"{f.at}.purchase.instances", "applies to one reservation_id; list each here")
        total = sum(r.nodes for r in buy.reservations)
        running = f.pool.nodes + f.pool.spare_nodes
        if total != running:
            parts = " + ".join(str(r.nodes) for r in buy.reservations)
            yield (
                at,
                f"hold {parts} = {total} nodes but the pool runs {running} (nodes + "
                "spare_nodes): make the reservations' nodes add up to it",
            )


def _version(v: str) -> tuple[int, ...]:
    return tuple(int(x) if x.isdigit() else 0 for x in v.split("."))


@rule(
    "pool-ultraserver-placement",
    "an UltraServer pool on EKS runs a Kubernetes version the Neuron DRA driver supports",
)
def _ultraserver_placement(ctx: Context) -> Iterator[Finding]:
    if ctx.spec.orchestration != "eks":
        return
    k8s = ctx.spec.cluster.kubernetes_version or ctx.catalog.defaults.kubernetes_version
    for f in ctx.known_pools:
        us = ctx.catalog.scale.ultraservers.get(f.pool.instance_type)
        if us is None or _version(k8s) >= _version(us.placement.min_kubernetes):
            continue
        yield (
            "cluster.kubernetes_version",
            f"{shown(k8s)} is below {us.placement.min_kubernetes}, which the Neuron DRA driver "
            f"needs to place {f.at} ({f.pool.instance_type}) on whole UltraServers "
            "(https://docs.aws.amazon.com/eks/latest/userguide/device-management-neuron.html): "
            f"use {us.placement.min_kubernetes} or later",
        )
