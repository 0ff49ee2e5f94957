"""The inventory: the billable resources the components create are the records the cost guard
prices without a plan, so `plan`/`check` and the deploy-time guard agree by construction."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from accelstack import inventory, naming
from accelstack.catalog import load_catalog
from accelstack.cost.pricing import Resource, StackCost, price_plan, price_stack
from accelstack.inventory import (
    billables,
    camel,
    pool_node_groups,
)
from accelstack.naming import POOL_LABEL
from accelstack.resolve import resolve
from accelstack.spec import load_spec, parse_spec
from accelstack.tokens import FLEET as T_FLEET
from accelstack.tokens import LAUNCH_TEMPLATE as T_LAUNCH_TEMPLATE
from accelstack.tokens import NODE_GROUP as T_NODE_GROUP
from policies.deploy_rules import depends_on
from tests.conftest import STACKS, planned_preset, preset_ids
from tests.helpers_plan import plan_stack

PRESETS = preset_ids()


def _matches(expected: Any, actual: Any, at: str = "") -> list[str]:
    """Where `actual` (a plan's inputs: numbers as floats) differs from `expected`: every key
    of a mapping, every item of a list, every value; keys beyond `expected` are ignored."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{at}: {actual!r} is not a mapping"]
        return [d for k, v in expected.items() for d in _matches(v, actual.get(k), f"{at}.{k}")]
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{at}: {actual!r} != {expected!r}"]
        return [d for i, v in enumerate(expected) for d in _matches(v, actual[i], f"{at}[{i}]")]
    if isinstance(expected, int | float) and not isinstance(expected, bool):
        ok = isinstance(actual, int | float) and float(actual) == float(expected)
        return [] if ok else [f"{at}: {actual!r} != {expected!r}"]
    return [] if actual == expected else [f"{at}: {actual!r} != {expected!r}"]


def _lines(cost: StackCost) -> list[tuple[str, str, str, float]]:
    return sorted((i.resource, i.type, i.what, round(i.hourly_usd, 9)) for i in cost.items)


@pytest.mark.parametrize("stem", PRESETS)
def test_every_billable_is_planned_with_its_priced_inputs(stem: str) -> None:
    stack, plan = planned_preset(stem)
    planned = {(r.type, r.name): r for r in plan.resources}
    for b in billables(stack):
        res = planned.get((b.type, b.name))
        assert res is not None, f"{b.type} {b.name} is not in the plan of {stem}"
        assert _matches(camel(b.args), dict(res.inputs)) == [], (b.name, res.inputs)
        assert res.parent == b.parent, (b.name, res.parent)
        if b.launch_template is not None:  # the launch template the guard prices its volumes by
            assert b.launch_template in res.depends_on, (b.name, res.depends_on)


@pytest.mark.parametrize("stem", PRESETS)
def test_the_guard_prices_what_the_plan_prices_line_by_line(stem: str) -> None:
    """The same line items (resource names included) from the plan and from the inventory.
    Before the inventory the guard priced a hand-kept model whose NAT gateways, cluster and
    FSx carried names the plan does not have (`<stack>-nat-0`, `<stack>-eks`)."""
    stack, plan = planned_preset(stem)
    from_plan, from_stack = price_plan(stack, plan.resources), price_stack(stack)
    assert _lines(from_stack) == _lines(from_plan)
    assert from_stack.hourly_usd == pytest.approx(from_plan.hourly_usd, rel=1e-12)


@pytest.mark.parametrize("stem", PRESETS)
def test_nothing_the_plan_bills_is_missing_from_the_inventory(stem: str) -> None:
    stack, plan = planned_preset(stem)
    billed = {(i.type, i.resource) for i in price_plan(stack, plan.resources).items}
    declared = {(b.type, b.name) for b in billables(stack)}
    assert billed <= declared, sorted(billed - declared)


def test_a_changed_derivation_moves_the_plan_and_the_guard_together(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One derivation feeds both: a node group sized differently by the inventory is sized so
    in the plan and priced so by the guard, with no second place to edit."""
    stack = resolve(load_spec(STACKS / "trn1-finetune.yaml"))
    base = price_stack(stack).hourly_usd
    real = inventory.scaling_config

    def doubled(pool: Any, nodes: int | None = None) -> dict[str, int]:
        return {k: 2 * v for k, v in real(pool, nodes).items()}

    monkeypatch.setattr(inventory, "scaling_config", doubled)
    plan = plan_stack(stack)
    (ng,) = [r for r in plan.of_type(T_NODE_GROUP) if r.inputs["labels"].get(POOL_LABEL)]
    assert ng.inputs["scalingConfig"]["desiredSize"] == 2 * stack.pools[0].running_nodes
    guard = price_stack(stack).hourly_usd
    assert guard > base
    assert guard == pytest.approx(price_plan(stack, plan.resources).hourly_usd, rel=1e-12)


def test_a_pool_over_several_node_groups_is_priced_per_node_group() -> None:
    """A pool the EKS per-group limit splits: one node group record per part, each with its
    share, each priced; together the pool's running nodes."""
    data = load_spec(STACKS / "llama3-405b-p5.yaml").model_dump(mode="json", exclude_none=True)
    data["pools"][0]["nodes"] = 1200
    data["budget"] = {"unlimited": True, "reason": "test"}
    stack = resolve(parse_spec(data, "test"), load_catalog())
    pool = stack.pools[0]
    assert len(pool.node_groups) > 1
    groups = pool_node_groups(stack, pool).node_groups
    assert [g.name for g in groups] == [
        f"{stack.name}-{pool.name}-{p.role}" for p in pool.node_groups
    ]
    assert sum(g.args["scaling_config"]["desired_size"] for g in groups) == pool.running_nodes
    compute = [
        i for i in price_stack(stack).items if i.pool == pool.name and i.unit == "instance-hour"
    ]
    assert sorted(i.resource for i in compute) == sorted(g.name for g in groups)
    assert sum(i.quantity for i in compute) == pool.running_nodes


def test_standalone_fleet_and_launch_template_are_linked_by_name() -> None:
    stack = resolve(load_spec(STACKS / "trn1-standalone.yaml"))
    by_type = {b.type: b for b in billables(stack)}
    lt, fleet = by_type[T_LAUNCH_TEMPLATE], by_type[T_FLEET]
    spec = fleet.inputs["launchTemplateConfigs"][0]["launchTemplateSpecification"]
    assert spec == {"launchTemplateName": lt.name} and lt.args["name"] == lt.name
    assert fleet.args["tags"] == {POOL_LABEL: stack.pools[0].name}


def test_camel_keeps_the_keys_of_labels_and_tags() -> None:
    args = {"scaling_config": {"desired_size": 2}, "labels": {"a_b": "1"}, "tags": {"c_d": "2"}}
    assert camel({**args, "gone": None}) == {
        "scalingConfig": {"desiredSize": 2},
        "labels": {"a_b": "1"},
        "tags": {"c_d": "2"},
    }


def test_an_existing_network_declares_no_nat_gateway() -> None:
    stack = resolve(load_spec(STACKS / "trn1-multinode.yaml"))
    assert inventory.nat_gateways(stack)
    net = stack.spec.network.model_copy(
        update={
            "mode": "existing",
            "vpc_id": "vpc-0123456789abcdef0",
            "private_subnet_ids": ("subnet-0123456789abcdef0",),
        }
    )
    existing = replace(stack, spec=stack.spec.model_copy(update={"network": net}))
    assert inventory.nat_gateways(existing) == () and inventory.s3_endpoint(existing) is None


@dataclass
class _PreviewResource:
    """What the policy pack sees of a preview's resource (pulumi_policy.PolicyResource)."""

    resource_type: str
    props: dict[str, Any]
    name: str
    parent: Any = None
    dependencies: list[Any] = field(default_factory=list)
    property_dependencies: dict[str, list[Any]] = field(default_factory=dict)


def test_a_pool_behind_two_reservations_prices_from_its_plan_and_its_preview() -> None:
    """Two launch templates under one pool component, node groups pointing at ids nobody knows
    before `pulumi up`: each node group's own launch template is found through its property
    dependency, so the plan, the preview (policy pack) and the guard give the same figure.
    The plan's pricing refused this stack before ("its launch template is not in the plan")."""
    from tests.catalog.test_scale import blocks, stack_of

    stack = stack_of(blocks(("cr-0a1b2c3d4e5f67890", 16), ("cr-0b1b2c3d4e5f67890", 8)))
    plan = plan_stack(stack, guard=False)
    assert len(plan.of_type(T_LAUNCH_TEMPLATE)) == 3  # the system's and the pool's two
    from_plan = price_plan(stack, plan.resources)
    assert _lines(from_plan) == _lines(price_stack(stack))
    preview = [_as_previewed(r, {p.name: p for p in plan.resources}) for r in plan.resources]
    assert all(
        r.inputs["launchTemplate"]["id"] == UNKNOWN for r in preview if r.type == T_NODE_GROUP
    )
    assert _lines(price_plan(stack, preview)) == _lines(from_plan)


#: What a preview shows for an output not known before `pulumi up` (Pulumi's unknown value)
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"


def _as_previewed(r: Any, by_name: dict[str, Any]) -> Resource:
    """A planned resource as the policy pack reads it from a preview: a node group's launch
    template id unknown, its launch template a property dependency, the rest plain ones."""
    inputs = dict(r.inputs)
    deps = [by_name[d] for d in r.depends_on]
    lts = [d for d in deps if d.type == T_LAUNCH_TEMPLATE]
    if "launchTemplate" in inputs:
        inputs["launchTemplate"] = {"id": UNKNOWN, "version": UNKNOWN}
    seen = _PreviewResource(
        r.type,
        inputs,
        r.name,
        dependencies=[d for d in deps if d not in lts],
        property_dependencies={"launchTemplate": lts} if lts else {},
    )
    return Resource(r.type, r.name, inputs, r.parent, depends_on(seen))


def test_a_component_refuses_declared_children_of_another_name() -> None:
    """The components name the inventory's records as their own children: a program that
    gives a component a name its records do not carry fails before creating anything."""
    from accelstack.components.common import check_children

    stack = resolve(load_spec(STACKS / "trn1-multinode.yaml"))
    plane = inventory.control_plane(stack)
    check_children(naming.cluster(stack.name), *plane)
    with pytest.raises(ValueError, match=r"'trn1-multinode-cluster-eks' is not a child of"):
        check_children(f"{stack.name}-control", *plane)
