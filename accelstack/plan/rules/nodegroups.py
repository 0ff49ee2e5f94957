"""Deploy rules: managed node groups (Capacity Blocks, desired size)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from accelstack.plan.document import Plan, PlannedResource
from accelstack.plan.rules.registry import deploy_rule, ref
from accelstack.tokens import LAUNCH_TEMPLATE, NODE_GROUP

if TYPE_CHECKING:
    from accelstack.resolve import Stack

DESIRED_SIZE = "scalingConfig.desiredSize"


def launch_template_of(plan: Plan, ng: PlannedResource) -> PlannedResource | None:
    """The node group's launch template: the one it depends on (its `launchTemplate.id`), else
    the only launch template beside it (same parent), for documents without dependencies."""
    if not ng.inputs.get("launchTemplate"):
        return None
    lts = plan.of_type(LAUNCH_TEMPLATE)
    for lt in lts:
        if lt.name in ng.depends_on:
            return lt
    siblings = [lt for lt in lts if ng.parent is not None and lt.parent == ng.parent]
    return siblings[0] if len(siblings) == 1 else None


@deploy_rule(
    "capacity-block-node-group",
    "https://docs.aws.amazon.com/eks/latest/userguide/capacity-blocks-mng.html",
    "a CAPACITY_BLOCK node group names no instance types; its launch template sets the type, "
    "market type capacity-block and the reservation",
)
def _capacity_block(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    for ng in plan.of_type(NODE_GROUP):
        if ng.inputs.get("capacityType") != "CAPACITY_BLOCK":
            continue
        if ng.inputs.get("instanceTypes"):
            yield (
                ref(ng),
                "a Capacity Block node group must not set instanceTypes (EKS rejects it); "
                "put the instance type in its launch template",
            )
        lt = launch_template_of(plan, ng)
        if lt is None:
            yield (ref(ng), "a Capacity Block node group needs a custom launch template")
            continue
        market = (lt.inputs.get("instanceMarketOptions") or {}).get("marketType")
        target = (lt.inputs.get("capacityReservationSpecification") or {}).get(
            "capacityReservationTarget"
        ) or {}
        missing = [
            what
            for what, ok in (
                ("instanceType", bool(lt.inputs.get("instanceType"))),
                ("instanceMarketOptions.marketType=capacity-block", market == "capacity-block"),
                ("the capacity reservation id", bool(target.get("capacityReservationId"))),
            )
            if not ok
        ]
        if missing:
            yield (
                ref(lt),
                f"launch template of Capacity Block node group lacks {', '.join(missing)}",
            )


@deploy_rule(
    "node-group-ignores-desired-size",
    "terraform-aws-modules/terraform-aws-eks@bef29c4d9523523e57fe898643fde2895106b339 "
    "modules/eks-managed-node-group/main.tf (lifecycle ignore_changes desired_size)",
    "every node group ignores drift of scalingConfig.desiredSize, so `pulumi up` does not undo "
    "EKS's Capacity Block scale-down or an autoscaler",
)
def _desired_size(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    for ng in plan.of_type(NODE_GROUP):
        if DESIRED_SIZE not in (plan.option(ng.type, ng.name, "ignoreChanges") or []):
            yield (
                ref(ng),
                f"ignoreChanges lacks {DESIRED_SIZE}: the next `pulumi up` would scale back "
                "what EKS (Capacity Block end) or an autoscaler changed",
            )
