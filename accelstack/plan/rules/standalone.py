"""Deploy rules for standalone clusters (orchestration: ec2).

A pool's instances are launched in one request (EC2 Fleet, type instant, all or nothing), so
a cluster placement group is filled at once instead of node by node; and what runs on them
(launch script, arguments, environment) arrives through SSM, not user data: a user-data edit
stops and restarts every instance (or replaces it) and cloud-init runs user data on first boot
only.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from accelstack.naming import POOL_TAG, STACK_TAG
from accelstack.plan.document import Plan
from accelstack.plan.rules._res import get_in, rid
from accelstack.plan.rules.registry import DeployRule, deploy_rule
from accelstack.tokens import FLEET, INSTANCE, LAUNCH_TEMPLATE
from accelstack.tokens import SSM_ASSOCIATION as ASSOCIATION
from accelstack.tokens import SSM_DOCUMENT as DOCUMENT

if TYPE_CHECKING:
    from accelstack.resolve import Stack

ONE_REQUEST_SOURCE = (
    "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/placement-strategies.html"
    "#placement-groups-cluster"
)
SSM_SOURCE = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/user-data.html"


def _fleets(plan: Plan) -> dict[str, Any]:
    return {str(get_in(f.inputs, "tags", POOL_TAG)): f for f in plan.of_type(FLEET)}


def _fleet_problem(fleet: Any, nodes: int) -> str | None:
    inputs = fleet.inputs
    total = get_in(inputs, "targetCapacitySpecification", "totalTargetCapacity")
    options = inputs.get("onDemandOptions") or inputs.get("spotOptions") or {}
    if inputs.get("type") != "instant":
        return f"type is {inputs.get('type')!r}: launch the pool with one 'instant' request"
    if total != nodes or options.get("minTargetCapacity") != nodes:
        return (
            f"asks for {total} instances with minTargetCapacity "
            f"{options.get('minTargetCapacity')}; the pool has {nodes}: all or nothing"
        )
    return None


@deploy_rule(
    "standalone-one-request",
    ONE_REQUEST_SOURCE,
    "a standalone pool launches all its instances in one all-or-nothing request (EC2 Fleet, "
    "instant), not one instance resource per node",
)
def _one_request(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    if stack.orchestration != "ec2":
        return
    for inst in plan.of_type(INSTANCE):
        yield (
            rid(inst),
            "an instance per node fills the placement group one request at a time; launch the "
            "pool with one EC2 Fleet request (type instant, minTargetCapacity = nodes)",
        )
    fleets = _fleets(plan)
    for pool in stack.pools:
        fleet = fleets.get(pool.name)
        if fleet is None:
            yield (f"pool '{pool.name}'", "no EC2 Fleet launches this pool's instances")
            continue
        problem = _fleet_problem(fleet, pool.nodes)
        if problem:
            yield (rid(fleet), problem)


def _association_targets(assoc: Any) -> dict[str, list[str]]:
    return {
        str(t.get("key")): list(t.get("values") or []) for t in assoc.inputs.get("targets") or []
    }


@deploy_rule(
    "standalone-delivery-ssm",
    SSM_SOURCE,
    "standalone nodes get scripts and arguments through an SSM document and association "
    "targeting the stack and pool tags, never through user data",
)
def _delivery(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    if stack.orchestration != "ec2":
        return
    for r in plan.of_type(LAUNCH_TEMPLATE) + plan.of_type(INSTANCE):
        if r.inputs.get("userData"):
            yield (
                rid(r),
                "carries user data: an edit stops or replaces the instances and cloud-init "
                "runs it on first boot only; deliver it with an SSM document + association",
            )
        if r.inputs.get("userDataReplaceOnChange"):
            yield (rid(r), "userDataReplaceOnChange is true: a script edit replaces the instance")
    targeted = {
        tuple(_association_targets(a).get(f"tag:{POOL_TAG}", []))
        for a in plan.of_type(ASSOCIATION)
        if _association_targets(a).get(f"tag:{STACK_TAG}") == [stack.name]
    }
    if not plan.of_type(DOCUMENT):
        yield (f"stack '{plan.stack}'", "no SSM document delivers the launch script")
    for pool in stack.pools:
        if (pool.name,) not in targeted:
            yield (
                f"pool '{pool.name}'",
                f"no SSM association targets tag:{STACK_TAG}={stack.name} and "
                f"tag:{POOL_TAG}={pool.name}",
            )


#: This module's rules, in report order (the kind's RuleSet lists this tuple).
MODULE_RULES: tuple[DeployRule, ...] = (
    _one_request,
    _delivery,
)
