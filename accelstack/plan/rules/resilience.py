"""Deploy rules: node groups that heal themselves, finish their updates and roll only when
they must (accelstack/catalog/resilience.yaml holds the facts and their sources)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from accelstack.naming import IDENTITY_TAG_KEYS, POOL_LABEL
from accelstack.plan.document import Plan, PlannedResource
from accelstack.plan.rules.nodegroups import launch_template_of
from accelstack.plan.rules.registry import DeployRule, deploy_rule, ref
from accelstack.tokens import NODE_GROUP

if TYPE_CHECKING:
    from accelstack.resolve import Stack

#: Tag keys a launch template's tag specifications may carry: the stack's stable ones + Name.
STABLE_INSTANCE_TAGS = frozenset({*IDENTITY_TAG_KEYS, "Name"})


def accelerator_groups(plan: Plan) -> Iterator[PlannedResource]:
    for ng in plan.of_type(NODE_GROUP):
        if POOL_LABEL in (ng.inputs.get("labels") or {}):
            yield ng


def _reserved(plan: Plan, ng: PlannedResource) -> bool:
    """On a capacity block, or a launch template targeting a capacity reservation."""
    if ng.inputs.get("capacityType") == "CAPACITY_BLOCK":
        return True
    lt = launch_template_of(plan, ng)
    spec = (lt.inputs.get("capacityReservationSpecification") or {}) if lt else {}
    return bool((spec.get("capacityReservationTarget") or {}).get("capacityReservationId"))


@deploy_rule(
    "node-repair-on",
    "https://docs.aws.amazon.com/eks/latest/userguide/node-health.html",
    "every accelerator node group has node auto repair on (nodeRepairConfig.enabled)",
)
def _node_repair(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    for ng in accelerator_groups(plan):
        if (ng.inputs.get("nodeRepairConfig") or {}).get("enabled") is not True:
            yield (
                ref(ng),
                "node auto repair is off: a node with a failed GPU or Neuron device stays in "
                "the pool and the job cannot restart; set nodeRepairConfig.enabled",
            )


@deploy_rule(
    "reserved-capacity-scales-to-zero",
    "https://docs.aws.amazon.com/eks/latest/userguide/capacity-blocks-mng.html",
    "capacity-block and reservation node groups have minSize 0 and update with MINIMAL "
    "(no room for surge nodes; EKS scales a Capacity Block group to zero at the block's end)",
)
def _reserved_capacity(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    for ng in accelerator_groups(plan):
        if not _reserved(plan, ng):
            continue
        size = ng.inputs.get("scalingConfig") or {}
        if size.get("minSize") != 0:
            yield (
                ref(ng),
                f"minSize is {size.get('minSize')!r} on reserved capacity: EKS cannot scale the "
                "group to zero at the block's end or for an upgrade; use minSize 0",
            )
        if (ng.inputs.get("updateConfig") or {}).get("updateStrategy") != "MINIMAL":
            yield (
                ref(ng),
                "updates with surge nodes on reserved capacity, which holds none: set "
                "updateConfig.updateStrategy MINIMAL",
            )


@deploy_rule(
    "launch-template-stable-tags",
    "hashicorp/terraform-provider-aws@025e4f81cab8553cb052aebfcc5987e2aa8c702a "
    "internal/service/ec2/ec2_launch_template.go (tag_specifications makes a new version)",
    "launch templates of node groups tag instances with the stack's stable tags only, so a tag "
    "edit creates no version and rolls no node",
)
def _stable_tags(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    for ng in plan.of_type(NODE_GROUP):
        lt = launch_template_of(plan, ng)
        if lt is None:
            continue
        for spec in lt.inputs.get("tagSpecifications") or []:
            extra = sorted(set(spec.get("tags") or {}) - STABLE_INSTANCE_TAGS)
            if extra:
                yield (
                    ref(lt),
                    f"tags {spec.get('resourceType')}s with {', '.join(extra)}: editing them "
                    "makes a launch-template version that rolls every node of the group; "
                    "propagate them through the Auto Scaling group instead",
                )
                break


#: This module's rules, in report order (the kind's RuleSet lists this tuple).
MODULE_RULES: tuple[DeployRule, ...] = (
    _node_repair,
    _reserved_capacity,
    _stable_tags,
)
