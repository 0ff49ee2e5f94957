"""Every component registers all of its children before `register_outputs`, and registers its
outputs once: a child created afterwards (the ECR endpoints' HTTPS rule was, in the network)
belongs to a component Pulumi already counts as complete."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from ..catalog.test_scale import sized, stack_of
from ..helpers_plan import plan_stack


class _Order:
    """Program-order record of `register_outputs` calls and of children created after them."""

    def __init__(self) -> None:
        self.finished: dict[int, str] = {}  # id(component) -> its name
        self.components: dict[int, str] = {}
        self.late: list[str] = []
        self.twice: list[str] = []


def _watch(monkeypatch: pytest.MonkeyPatch) -> _Order:
    order = _Order()
    resource_init = pulumi.Resource.__init__
    register_outputs = pulumi.ComponentResource.register_outputs

    def init(self: pulumi.Resource, t: str, name: str, custom: bool, *a: Any, **kw: Any) -> None:
        opts = kw.get("opts") if "opts" in kw else (a[1] if len(a) > 1 else None)
        parent = getattr(opts, "parent", None)
        if parent is not None and id(parent) in order.finished:
            order.late.append(f"{name} (parent {order.finished[id(parent)]})")
        if isinstance(self, pulumi.ComponentResource):
            order.components[id(self)] = name
        resource_init(self, t, name, custom, *a, **kw)

    def outputs(self: pulumi.ComponentResource, out: Any) -> None:
        name = order.components.get(id(self), "?")
        if id(self) in order.finished:
            order.twice.append(name)
        order.finished[id(self)] = name
        register_outputs(self, out)

    monkeypatch.setattr(pulumi.Resource, "__init__", init)
    monkeypatch.setattr(pulumi.ComponentResource, "register_outputs", outputs)
    return order


@pytest.mark.parametrize(
    ("preset", "nodes"),
    [
        ("llama3-405b-p5", 64),  # a created VPC with the ECR endpoints
        ("llama3-70b-trn2", 16),
        ("trn1-standalone", 1),
    ],
)
def test_no_component_gains_a_child_after_its_outputs(
    monkeypatch: pytest.MonkeyPatch, preset: str, nodes: int
) -> None:
    stack = stack_of(sized(preset, nodes))
    order = _watch(monkeypatch)
    plan = plan_stack(stack, guard=False)
    assert plan.resources
    assert order.late == []
    assert order.twice == []
    unfinished = set(order.components) - set(order.finished)
    assert sorted(order.components[i] for i in unfinished) == []
    if preset == "llama3-405b-p5":  # the endpoints' rule is there, as the network's child
        (rule,) = [r for r in plan.resources if r.name.endswith("-ecr-endpoints-https")]
        assert rule.parent is not None and rule.parent.endswith("-network")
