"""Pools beyond one cluster placement group: `placement_groups: per-launch` gives the node
groups one launch bucket starts at once (2 x 450 nodes) a launch template and cluster placement
group of their own (catalog scale.yaml placement, EC2 placement-strategies guidance); the default
keeps one placement group per pool, and the first pair keeps its names."""

from __future__ import annotations

from functools import cache

import pytest

from accelstack.catalog import load_catalog
from accelstack.cost.pricing import price_plan, price_stack
from accelstack.errors import SpecError
from accelstack.plan import Plan
from accelstack.plan.rules import evaluate
from accelstack.resolve import Stack

from ..catalog.test_scale import sized, stack_of
from ..helpers_plan import plan_stack

PG = "aws:ec2/placementGroup:PlacementGroup"
LT = "aws:ec2/launchTemplate:LaunchTemplate"
NG = "aws:eks/nodeGroup:NodeGroup"


@cache
def planned(preset: str, nodes: int, placement: str = "per-launch") -> tuple[Stack, Plan]:
    stack = stack_of(sized(preset, nodes, placement_groups=placement))
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


def test_a_placement_group_holds_the_node_groups_of_one_launch_bucket() -> None:
    scale = load_catalog().scale
    assert scale.large_cluster.staging.launch_bucket == 1000
    assert scale.node_groups_per_placement_group == 2  # 1000 // 450
    assert "placement-strategies.html" in scale.placement.per_launch_source


@pytest.mark.parametrize("preset", ["llama3-70b-p5", "llama3-70b-trn2"])
def test_a_2048_node_pool_per_launch_has_three_placement_groups(preset: str) -> None:
    stack, plan = planned(preset, 2048)
    pg_of, ng_lt = pool_groups(stack, plan)
    prefix = f"{stack.name}-{stack.pools[0].name}"
    assert [p.launch_template for p in stack.pools[0].node_groups] == [
        "lt", "lt", "lt-2", "lt-2", "lt-3"
    ]  # fmt: skip
    assert pg_of == {
        f"{prefix}-lt": f"{prefix}-pg",
        f"{prefix}-lt-2": f"{prefix}-pg-2",
        f"{prefix}-lt-3": f"{prefix}-pg-3",
    }
    assert len(ng_lt) == 5 and len(set(ng_lt.values())) == 3
    assert {r.inputs["strategy"] for r in plan.of_type(PG)} == {"cluster"}
    # every launch template carries the pool's EFA interfaces, user data and AMI alike
    lts = [r.inputs for r in plan.of_type(LT) if r.name.startswith(f"{prefix}-lt")]
    for key in ("networkInterfaces", "userData", "imageId", "metadataOptions"):
        assert len({repr(i[key]) for i in lts}) == 1, key
    assert len(lts[0]["networkInterfaces"]) == stack.pools[0].efa_interfaces
    assert evaluate(plan, stack) == []


def test_the_default_keeps_one_placement_group_for_the_whole_pool() -> None:
    stack, plan = planned("llama3-70b-p5", 2048, "one")
    pg_of, ng_lt = pool_groups(stack, plan)
    prefix = f"{stack.name}-{stack.pools[0].name}"
    assert pg_of == {f"{prefix}-lt": f"{prefix}-pg"}
    assert len(ng_lt) == 5 and len(set(ng_lt.values())) == 1


def test_per_launch_keeps_the_first_groups_names_and_inputs() -> None:
    """The first two node groups keep `-lt`/`-pg` and their launch template's inputs: turning
    per-launch on (or growing past 900 nodes) replaces no running node group of the first pair;
    a third group gets `-lt-2` and `-pg-2`."""
    stack, plan = planned("llama3-70b-p5", 901)
    pg_of, ng_lt = pool_groups(stack, plan)
    prefix = f"{stack.name}-{stack.pools[0].name}"
    assert pg_of == {f"{prefix}-lt": f"{prefix}-pg", f"{prefix}-lt-2": f"{prefix}-pg-2"}
    assert ng_lt[f"{prefix}-ng"] == ng_lt[f"{prefix}-ng-2"] != ng_lt[f"{prefix}-ng-3"]
    _, before = planned("llama3-70b-p5", 900, "one")
    for name in (f"{prefix}-lt", f"{prefix}-pg", f"{prefix}-ng", f"{prefix}-ng-2"):
        (old,) = [r for r in before.resources if r.name == name]
        (new,) = [r for r in plan.resources if r.name == name]
        assert old.inputs == new.inputs, name


def test_a_pool_of_up_to_900_nodes_plans_the_same_either_way() -> None:
    _, one = planned("llama3-70b-p5", 900, "one")
    _, per = planned("llama3-70b-p5", 900)
    assert {r.name: r.inputs for r in one.resources} == {r.name: r.inputs for r in per.resources}


def test_the_guard_prices_per_launch_as_the_plan_does() -> None:
    stack, plan = planned("llama3-70b-p5", 2048)
    from_plan, from_stack = price_plan(stack, plan.resources), price_stack(stack)
    assert from_stack.hourly_usd == pytest.approx(from_plan.hourly_usd, rel=1e-12)
    assert [i for i in from_plan.items if i.type == PG] == []  # placement groups are free


@pytest.mark.parametrize(
    ("preset", "pool", "words"),
    [
        ("llama3-70b-p5", {"efa": False}, "EFA is off for this pool"),
        ("p5e-capacity-block", {}, "launches where its reservation is"),
    ],
)
def test_per_launch_without_a_created_placement_group_is_refused(
    preset: str, pool: dict[str, object], words: str
) -> None:
    with pytest.raises(SpecError) as err:
        stack_of(sized(preset, 8, placement_groups="per-launch", **pool))
    text = str(err.value)
    assert "pools[0].placement_groups" in text and words in text
    assert "allowed: one" in text
