"""Rules for large pools: node groups per cluster, EC2 Fleet capacity (standalone), whole
UltraServers (the addresses of a created VPC are checked on the resolved stack's address plan:
`pool-addresses` in accelstack/resolve/rules.py). Each limit is a catalog fact (scale.yaml) and
each message names it, its source and a fix that works. `SPEC_RULES` runs them after the rules
of `accelstack.resolve.spec_rules`."""

from __future__ import annotations

import re
from collections.abc import Iterator

from accelstack.catalog.scale import Limit
from accelstack.errors import shown
from accelstack.resolve.spec_rules import Finding, SpecRule, spec_rule
from accelstack.resolve.stack import ResolvedPool, Stack


def first_url(text: str) -> str:
    """The first address in a source note (the note may go on with more)."""
    m = re.search(r"https?://[^\s;,)\"]+", text)
    return m.group(0) if m else text.split()[0]


def _source(limit: Limit) -> str:
    return first_url(limit.source)


def _group_count(stack: Stack) -> list[tuple[ResolvedPool, int]]:
    """Each pool's node-group count (by division: a huge count is never materialised)."""
    per = stack.catalog.scale.limits.nodes_per_node_group.value
    return [(f, -(-(f.spec.nodes + f.spec.spare_nodes) // per)) for f in stack.pools]


@spec_rule(
    "pool-node-groups",
    "the pools' managed node groups (at most the EKS nodes-per-group limit each) and the system "
    "group fit the EKS node-groups-per-cluster limit",
)
def _node_groups(stack: Stack) -> Iterator[Finding]:
    if stack.spec.orchestration != "eks" or not stack.pools:
        return
    lim = stack.catalog.scale.limits
    counts = _group_count(stack)
    total = sum(n for _, n in counts) + 1  # + the system node group
    if total <= lim.node_groups_per_cluster.value:
        return
    biggest = max(counts, key=lambda c: c[0].spec.nodes)[0]
    parts = ", ".join(f"{f.at}: {n}" for f, n in counts)
    yield (
        f"{biggest.at}.nodes",
        f"the pools need {total} managed node groups ({parts}, at most "
        f"{lim.nodes_per_node_group.value} nodes each, plus the system group) but EKS allows "
        f"{lim.node_groups_per_cluster.named()} ({_source(lim.node_groups_per_cluster)}): "
        f"use fewer nodes (at most {stack.catalog.scale.max_pool_nodes} in one pool) or put some "
        "pools in another stack",
    )


@spec_rule(
    "pool-fleet-capacity",
    "a standalone pool (one EC2 Fleet request) is within the fleet's target capacity",
)
def _fleet_capacity(stack: Stack) -> Iterator[Finding]:
    if stack.spec.orchestration != "ec2":
        return
    lim = stack.catalog.scale.limits.fleet_target_capacity
    for f in stack.pools:
        if f.spec.nodes > lim.value:
            yield (
                f"{f.at}.nodes",
                f"{f.spec.nodes} nodes exceed the {lim.named()} ({_source(lim)}): use at most "
                f"{lim.value} nodes per pool, or orchestration 'eks'",
            )


@spec_rule(
    "pool-ultraserver",
    "a pool of UltraServer members is a whole number of UltraServers",
)
def _ultraserver(stack: Stack) -> Iterator[Finding]:
    for f in stack.pools:
        us = stack.catalog.scale.ultraservers.get(f.spec.instance_type)
        if us is None:
            continue
        for i, r in enumerate(f.spec.purchase.reservations):
            if not us.whole(r.nodes):
                yield (
                    f"{f.at}.purchase.reservations[{i}].nodes",
                    f"{r.nodes} is not a whole number of UltraServers ({us.instances} instances "
                    "each): a Capacity Block for UltraServers holds whole ones",
                )
        if us.whole(f.spec.nodes):
            continue
        lower = f.spec.nodes - f.spec.nodes % us.instances
        options = " or ".join(str(n) for n in (lower, lower + us.instances) if n > 0)
        yield (
            f"{f.at}.nodes",
            f"{f.spec.nodes} {f.spec.instance_type} nodes is not a whole number of UltraServers "
            f"({us.instances} instances each, sharing NeuronLink; {first_url(us.source)}): "
            f"use {options}",
        )


@spec_rule(
    "pool-reservations",
    "several reservations behind a pool: capacity-block or reservation only, not with "
    "reservation_id, distinct ids, node counts adding up to the pool's nodes",
)
def _reservations(stack: Stack) -> Iterator[Finding]:
    for f in stack.pools:
        buy = f.spec.purchase
        if not buy.reservations:
            continue
        at = f"{f.at}.purchase.reservations"
        if not stack.catalog.purchase(buy.option).needs_reservation:
            held = " or ".join(
                n for n, r in stack.catalog.purchase_options.items() if r.needs_reservation
            )
            yield (at, f"is only allowed with {held}, not '{buy.option}'")
        if buy.reservation_id:
            yield (at, "and reservation_id are exclusive: list every reservation here")
        if stack.spec.orchestration == "ec2":
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
        running = f.spec.nodes + f.spec.spare_nodes
        if total != running:
            parts = " + ".join(str(r.nodes) for r in buy.reservations)
            yield (
                at,
                f"hold {parts} = {total} nodes but the pool runs {running} (nodes + "
                "spare_nodes): make the reservations' nodes add up to it",
            )


def _version(v: str) -> tuple[int, ...]:
    return tuple(int(x) if x.isdigit() else 0 for x in v.split("."))


@spec_rule(
    "pool-ultraserver-placement",
    "an UltraServer pool on EKS runs a Kubernetes version the Neuron DRA driver supports",
)
def _ultraserver_placement(stack: Stack) -> Iterator[Finding]:
    if stack.spec.orchestration != "eks":
        return
    k8s = stack.spec.cluster.kubernetes_version or stack.catalog.defaults.kubernetes_version
    for f in stack.pools:
        us = stack.catalog.scale.ultraservers.get(f.spec.instance_type)
        if us is None or _version(k8s) >= _version(us.placement.min_kubernetes):
            continue
        yield (
            "cluster.kubernetes_version",
            f"{shown(k8s)} is below {us.placement.min_kubernetes}, which the Neuron DRA driver "
            f"needs to place {f.at} ({f.spec.instance_type}) on whole UltraServers "
            "(https://docs.aws.amazon.com/eks/latest/userguide/device-management-neuron.html): "
            f"use {us.placement.min_kubernetes} or later",
        )


def _storage_refusal(stack: Stack, instance_type: str) -> str | None:
    """Why `instance_store_raid0` cannot be honoured (None: it can)."""
    if stack.spec.orchestration != "eks":
        return (
            "'instance_store_raid0' is an EKS node setting (nodeadm's localStorage); standalone "
            "nodes (orchestration ec2) boot the DLAMI without nodeadm and keep the root volume: "
            "allowed here: root_volume, or leave it unset"
        )
    store = stack.catalog.scale.instance_store
    if store.strategy_for(instance_type) is not None:
        return None
    row = store.types.get(instance_type)
    has = f"{row.disks} NVMe instance-store disk" if row else "no NVMe instance store"
    return (
        f"'instance_store_raid0' needs at least {store.raid0_min_disks} NVMe instance-store "
        f"disks and {instance_type} has {has} (catalog scale.yaml instance_store, EC2 "
        "DescribeInstanceTypes): allowed here: root_volume, or leave it unset"
    )


@spec_rule(
    "pool-container-storage",
    "container_storage instance_store_raid0 only on EKS pools of a type with enough NVMe "
    "instance-store disks for nodeadm's RAID0",
)
def _container_storage(stack: Stack) -> Iterator[Finding]:
    for f in stack.pools:
        if f.spec.container_storage != "instance_store_raid0":
            continue
        why = _storage_refusal(stack, f.spec.instance_type)
        if why is not None:
            yield (f"{f.at}.container_storage", why)


#: This module's rules, in report order (the kind's RuleSet lists this tuple).
MODULE_RULES: tuple[SpecRule, ...] = (
    _node_groups,
    _fleet_capacity,
    _ultraserver,
    _reservations,
    _ultraserver_placement,
    _container_storage,
)
