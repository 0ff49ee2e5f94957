"""Deploy rules: managed node groups (Capacity Blocks, resizes EKS accepts)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from accelstack.plan import updates
from accelstack.plan.document import Plan, PlannedResource
from accelstack.plan.rules.registry import DeployRule, deploy_rule, ref
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
    "node-group-resize-accepted",
    "https://docs.aws.amazon.com/eks/latest/APIReference/API_NodegroupScalingConfig.html "
    "(minSize <= desiredSize <= maxSize); terraform-aws-modules/terraform-aws-eks issues #748, "
    "#2508, #3306 (ignoring desiredSize sends the stored size with the new min and max)",
    "growing or shrinking a node group by one node, as `pulumi up` sends it (stored state, "
    "ignoreChanges), is a request EKS accepts and reaches the new size",
)
def _resize(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    per_group = stack.nodes_per_node_group
    for ng in plan.of_type(NODE_GROUP):
        ignore = plan.option(ng.type, ng.name, "ignoreChanges") or []
        found = resize_refusals(ng.inputs, ignore, per_group)
        if found:
            yield (ref(ng), "; ".join(found))


def resized(inputs: dict[str, Any], target: int) -> dict[str, Any]:
    """The node group's inputs with its size moved to `target` the way resolve sizes it: a
    bound equal to the desired size follows it, a lower minimum (0) stays."""
    s = inputs.get("scalingConfig") or {}
    lo, want, hi = s.get("minSize", 0), s.get("desiredSize", 0), s.get("maxSize", 0)
    scaling = {
        "minSize": target if lo == want else min(lo, target),
        "desiredSize": target,
        "maxSize": target if hi == want else max(hi, target),
    }
    return {**inputs, "scalingConfig": scaling}


def resize_refusals(inputs: dict[str, Any], ignore: list[str], per_group: int) -> list[str]:
    """Why growing or shrinking the group by one node fails (empty: both work)."""
    want = (inputs.get("scalingConfig") or {}).get("desiredSize")
    if not isinstance(want, int):
        return []
    out: list[str] = []
    for target in (want + 1, want - 1):
        if not 1 <= target <= per_group:
            continue
        new = resized(inputs, target)
        sent = updates.sent_inputs(inputs, new, ignore)
        for req in updates.nodegroup_requests(inputs, sent):
            for problem in updates.problems(req, per_group):
                out.append(f"resizing {want} -> {target} nodes: EKS refuses it ({problem})")
        if not updates.reached(sent, new):
            out.append(
                f"resizing {want} -> {target} nodes never happens: ignoreChanges keeps "
                f"{DESIRED_SIZE} at {want}"
            )
    return out


#: This module's rules, in report order (the kind's RuleSet lists this tuple).
MODULE_RULES: tuple[DeployRule, ...] = (
    _capacity_block,
    _resize,
)
