"""Pools beyond one cluster placement group (issue 27 item 2): each node group of an EFA pool
split across node groups launches from its own launch template into its own cluster placement
group (scale.yaml placement.group_per_node_group, EC2 placement-strategies guidance)."""

from __future__ import annotations

from functools import cache

import pytest

from accelstack.cost.pricing import price_plan, price_stack
from accelstack.plan import Plan
from accelstack.plan.rules import evaluate
from accelstack.resolve import Stack

from .helpers_plan import plan_stack
from .test_scale import sized, stack_of

PG = "aws:ec2/placementGroup:PlacementGroup"
LT = "aws:ec2/launchTemplate:LaunchTemplate"
NG = "aws:eks/nodeGroup:NodeGroup"


@cache
def planned(preset: str, nodes: int) -> tuple[Stack, Plan]:
    stack = stack_of(sized(preset, nodes))
    return stack, plan_stack(stack, guard=False)


def pool_groups(stack: Stack, plan: Plan) -> tuple[dict[str, str], dict[str, str]]:
    """(placement group by launch template name, launch template id by node group name)."""
    prefix = f"{stack.name}-{stack.pools[0].name}-"
    lts = {r.name: r for r in plan.of_type(LT) if r.name.startswith(prefix)}
    pg_of = {n: str((r.inputs.get("placement") or {}).get("groupName")) for n, r in lts.items()}
    ng_lt = {
        r.name: str(r.inputs["launchTemplate"]["id"])
        for r in plan.of_type(NG)
        if r.name.startswith(prefix)
    }
    return pg_of, ng_lt


@pytest.mark.parametrize("preset", ["llama3-70b-p5", "llama3-70b-trn2"])
def test_each_node_group_of_a_2048_node_pool_has_its_own_placement_group(preset: str) -> None:
    stack, plan = planned(preset, 2048)
    pg_of, ng_lt = pool_groups(stack, plan)
    groups = stack.pools[0].node_groups
    assert len(groups) == len(ng_lt) == len(pg_of) == 5
    assert len(set(ng_lt.values())) == 5  # five launch templates, one per node group
    assert len(set(pg_of.values())) == 5  # five placement groups, one per launch template
    pgs = plan.of_type(PG)
    prefix = f"{stack.name}-{stack.pools[0].name}-pg"
    assert sorted(r.name for r in pgs) == sorted([prefix] + [f"{prefix}-{n}" for n in range(2, 6)])
    assert {r.inputs["strategy"] for r in pgs} == {"cluster"}
    assert evaluate(plan, stack) == []


def test_a_pool_in_one_node_group_keeps_its_one_placement_group() -> None:
    stack, plan = planned("llama3-70b-p5", 450)
    pg_of, _ = pool_groups(stack, plan)
    prefix = f"{stack.name}-{stack.pools[0].name}"
    assert pg_of == {f"{prefix}-lt": f"{prefix}-pg"}


def test_growing_past_one_group_keeps_the_first_groups_template_and_placement_group() -> None:
    """The first group's launch template and placement group keep their names (no replacement
    of running nodes); the new group gets `-lt-2` and `-pg-2`."""
    stack, plan = planned("llama3-70b-p5", 451)
    pg_of, _ = pool_groups(stack, plan)
    prefix = f"{stack.name}-{stack.pools[0].name}"
    assert pg_of == {f"{prefix}-lt": f"{prefix}-pg", f"{prefix}-lt-2": f"{prefix}-pg-2"}
    small, small_plan = planned("llama3-70b-p5", 450)
    (first,) = [r for r in small_plan.of_type(LT) if r.name == f"{prefix}-lt"]
    (again,) = [r for r in plan.of_type(LT) if r.name == f"{prefix}-lt"]
    assert first.inputs == again.inputs


def test_the_guard_prices_each_groups_launch_template_as_the_plan_does() -> None:
    stack, plan = planned("llama3-70b-p5", 2048)
    from_plan, from_stack = price_plan(stack, plan.resources), price_stack(stack)
    assert from_stack.hourly_usd == pytest.approx(from_plan.hourly_usd, rel=1e-12)
    assert [i for i in from_plan.items if i.type == PG] == []  # placement groups are free
