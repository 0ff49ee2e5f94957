"""Warnings on the resolved stack: what is valid and deploys, but rests on an estimate, bills
more than it needs, or costs a large cluster time a one-line change would save. Nothing here
refuses: `validate`, `check` and `plan` print `stack_warnings` as warnings.

First the notes on what the stack rests on (`stack_notes`: preview types and estimated
offerings behind its pools, extended-support Kubernetes, a global batch too small for its
chips, placeholder values `pulumi up` refuses), then the warning rules: each one small function
made a rule by `@stack_warning(name, summary)` and listed in `STACK_WARNINGS` (the
`rulebook.RuleSet` shape of the stack rules in accelstack/resolve/rules.py), which receives the
resolved `Stack` and yields `(yaml_path, message)` pairs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

from accelstack import rulebook
from accelstack.clock import today
from accelstack.resolve.placeholders import stack_placeholders
from accelstack.resolve.stack import Stack
from accelstack.spec.models import Workload

Finding = rulebook.Finding  # (YAML path, message)


def stack_warning(
    name: str, summary: str
) -> Callable[[Callable[[Stack], Iterator[Finding]]], rulebook.Rule[Stack]]:
    """`@stack_warning(name, summary)`: the function becomes a warning rule; list it in
    `STACK_WARNINGS`."""
    return rulebook.rule(name, summary)


def stack_warnings(stack: Stack) -> list[str]:
    """Every warning on the stack: the notes (`stack_notes`), then each warning rule's
    findings as `<yaml path>: <message>` lines."""
    found = rulebook.findings(STACK_WARNINGS, stack)
    return [*stack_notes(stack), *(f"{path}: {msg}" for path, msg in found)]


def stack_notes(stack: Stack) -> list[str]:
    """Preview types and estimated offerings behind the pools, extended-support Kubernetes, a
    global batch that cannot give every data-parallel rank a sequence, and placeholder values
    (documentation ranges, example accounts) that `pulumi up` refuses."""
    placeholders = [
        f"placeholder {line} (`pulumi up` refuses it)" for line in stack_placeholders(stack)
    ]
    return [*_pool_notes(stack), *_kubernetes_notes(stack), *_batch_notes(stack), *placeholders]


def _pool_notes(stack: Stack) -> list[str]:
    """Estimated catalog facts behind the pools: a preview type, an estimated offering."""
    notes = []
    estimated = stack.catalog.region(stack.region).estimated_types
    for pool in stack.pools:
        inst = pool.instance
        if inst.preview:
            notes.append(
                f"{pool.name}: {inst.name} is a preview type; estimated fields: "
                f"{', '.join(inst.estimated_fields)}"
            )
        if inst.name in estimated:
            notes.append(
                f"{pool.name}: the offering of {inst.name} in {stack.region} is an "
                "estimate; run `accelstack preflight`"
            )
    return notes


def _kubernetes_notes(stack: Stack) -> list[str]:
    """A note when the EKS control plane bills the extended-support rate."""
    k8s = stack.kubernetes_version
    window = stack.defaults.eks_versions[k8s]
    if stack.orchestration == "eks" and window.status(today()) == "extended":
        return [
            f"Kubernetes {k8s} left EKS standard support on "
            f"{window.standard_support_end}: the control plane bills the "
            "extended-support rate; upgrade cluster.kubernetes_version"
        ]
    return []


def batch_warning(workload: Workload, chips: int) -> str | None:
    """A warning when the global batch cannot give every data-parallel rank one sequence."""
    gbs = workload.global_batch_size
    if not gbs or gbs >= chips:
        return None
    per_rank = math.ceil(chips / gbs)
    return (
        f"global batch of {gbs:,} sequences on {chips:,} chips is {gbs / chips:.2f} sequence "
        f"per chip: every data-parallel rank needs at least one, so each rank must span "
        f">= {per_rank} chips (tensor/pipeline parallelism) or raise workload.global_batch_size "
        f"to >= {chips:,}"
    )


def _batch_notes(stack: Stack) -> list[str]:
    """`batch_warning` on the resolved workload pool's chips."""
    pool = stack.workload_pool
    chips = pool.nodes * pool.accelerators_per_node
    warning = batch_warning(stack.workload, chips) if chips > 0 else None
    return [f"workload.global_batch_size: {warning}"] if warning else []


@stack_warning(
    "pool-container-storage-root",
    "a pool whose image pull is bound by the NAT gateway (scale.yaml image_delivery, the "
    "private-registry threshold) on a type with NVMe instance store leaves container_storage "
    "unset (the root volume)",
)
def _root_volume_images(stack: Stack) -> Iterator[Finding]:
    if stack.spec.orchestration != "eks":
        return
    store = stack.catalog.scale.instance_store
    delivery = stack.catalog.scale.image_delivery
    for i, p in enumerate(stack.pools):
        itype = p.spec.instance_type
        if p.spec.container_storage is not None or store.strategy_for(itype) is None:
            continue
        if not delivery.nat_bound(p.running_nodes):
            continue
        disks = store.types[itype].disks
        yield (
            f"pools[{i}].container_storage",
            f"unset: {p.running_nodes} x {itype} keep container images on the gp3 root volume "
            f"while their {disks} NVMe instance-store disks go unused; set "
            "container_storage: instance_store_raid0 (nodeadm localStorage RAID0; "
            "docs/scale.md), which rolls the pool's nodes once, or root_volume to keep the "
            "root volume and silence this",
        )


@stack_warning(
    "network-ecr-endpoints-nat",
    "an existing VPC whose image pull is bound by the NAT gateway (scale.yaml image_delivery, "
    "the stack's running nodes as resolve counts them for a created VPC) without "
    "network.ecr_endpoints",
)
def _existing_vpc_nat_pull(stack: Stack) -> Iterator[Finding]:
    """An existing VPC gets no ECR endpoints unless the spec asks (it may have them already);
    say so when a created VPC of the same size would get them (`Stack.profile.nodes`)."""
    net = stack.spec.network
    if net.mode != "existing" or net.ecr_endpoints or stack.spec.orchestration != "eks":
        return
    nodes = stack.profile.nodes
    if stack.catalog.scale.image_delivery.nat_bound(nodes):
        yield (
            "network.ecr_endpoints",
            f"{nodes} nodes pull their images through this VPC's NAT unless it has ECR "
            "interface endpoints; set ecr_endpoints: true to create them (docs/scale.md)",
        )


@stack_warning(
    "pool-one-placement-group",
    "an EFA pool in one created cluster placement group has more node groups than one launch "
    "bucket starts at once (scale.yaml placement.max_nodes_per_group_source): the later ones "
    "launch into a group EC2 may have no room left in",
)
def _one_placement_group(stack: Stack) -> Iterator[Finding]:
    scale = stack.catalog.scale
    at_once = scale.node_groups_per_placement_group
    for p in stack.pools:
        if not p.placement_group or p.placement_per_launch or len(p.node_groups) <= at_once:
            continue
        steps = len({part.step for part in p.node_groups})
        per = at_once * scale.limits.nodes_per_node_group.value
        yield (
            f"{p.at}.placement_groups",
            f"one cluster placement group holds all {p.running_nodes:,} nodes of the pool, "
            f"launched in {steps} creation steps: EC2 advises launching a cluster placement "
            "group's instances in one request (later launches are more likely to fail with "
            "insufficient capacity); set placement_groups: per-launch (a placement group per "
            f"{per:,} nodes launched at once, docs/scale.md), or run the pool on a capacity "
            "reservation",
        )


@stack_warning(
    "network-existing-addresses",
    "an existing VPC without network.private_subnet_addresses whose nodes would not fit a "
    "created VPC's zone at the VPC CNI defaults: the compact settings apply, unchecked",
)
def _existing_vpc_addresses(stack: Stack) -> Iterator[Finding]:
    """The stack runs the compact VPC CNI settings on an existing VPC whose free addresses it
    does not know (resolve's address plan, `plan_unstated`): say so, and how to have them
    checked."""
    net = stack.spec.network
    env = stack.address_plan.cni_env
    if net.mode != "existing" or net.private_subnet_addresses or not env:
        return
    settings = ", ".join(f"{k}={v}" for k, v in sorted(env.items()))
    yield (
        "network.private_subnet_addresses",
        f"unset: {stack.profile.nodes:,} nodes need more addresses per zone at the VPC CNI "
        f"defaults (a warm ENI per node) than a created VPC's zone holds, so the stack sets "
        f"{settings} (docs/scale.md); state each zone's free private addresses to have them "
        "checked (and the defaults kept where they fit), or run `accelstack preflight`",
    )


#: The warnings on the resolved stack, in report order (docs/spec.md lists them)
STACK_WARNINGS: rulebook.RuleSet[rulebook.Rule[Stack]] = rulebook.RuleSet(
    "stack warning",
    (_root_volume_images, _existing_vpc_nat_pull, _existing_vpc_addresses, _one_placement_group),
)
