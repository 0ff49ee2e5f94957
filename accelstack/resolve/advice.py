"""Warnings on the resolved stack: what is valid and deploys, but costs a large cluster time a
one-line change would save. Each is one small function made a rule by
`@stack_warning(name, summary)` and listed in `STACK_WARNINGS` (the `rulebook.RuleSet` shape of
the stack rules in accelstack/resolve/rules.py): it receives the resolved `Stack` and yields `(yaml_path,
message)` pairs. Nothing here refuses: `validate`, `check` and `plan` print them as warnings.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from accelstack import rulebook
from accelstack.resolve.stack import Stack

Finding = rulebook.Finding  # (YAML path, message)


def stack_warning(
    name: str, summary: str
) -> Callable[[Callable[[Stack], Iterator[Finding]]], rulebook.Rule[Stack]]:
    """`@stack_warning(name, summary)`: the function becomes a warning rule; list it in
    `STACK_WARNINGS`."""
    return rulebook.rule(name, summary)


def stack_warnings(stack: Stack) -> list[str]:
    """Every warning on the stack, as `<yaml path>: <message>` lines."""
    return [f"{path}: {msg}" for path, msg in rulebook.findings(STACK_WARNINGS, stack)]


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


#: The warnings on the resolved stack, in report order (docs/spec.md lists them)
STACK_WARNINGS: rulebook.RuleSet[rulebook.Rule[Stack]] = rulebook.RuleSet(
    "stack warning",
    (_root_volume_images, _existing_vpc_nat_pull),
)
