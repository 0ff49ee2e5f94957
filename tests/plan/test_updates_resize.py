"""Day 2, resizes: growing or shrinking a pool (and crossing the 450-node split) on every purchase
option is, as `pulumi up` sends it (stored state + new inputs + ignoreChanges), a request EKS
accepts that reaches the spec's size; the deploy rule refuses the pattern that is not; `diff`
shows what Pulumi sends."""

from __future__ import annotations

import copy
import dataclasses
from functools import cache
from typing import Any

import pytest

from accelstack.plan import Plan
from accelstack.plan.diff import diff_resources
from accelstack.plan.rules import evaluate
from accelstack.plan.updates import (
    Request,
    nodegroup_requests,
    operation,
    problems,
    reached,
    sent_inputs,
)
from accelstack.resolve import resolve
from accelstack.spec import parse_spec, read_yaml
from accelstack.tokens import NODE_GROUP
from tests.conftest import STACKS
from tests.helpers_plan import plan_stack

pytestmark = pytest.mark.plan

OPEN_BUDGET = {"max_hourly_usd": 1e9, "max_monthly_usd": 1e12, "max_run_usd": 1e12}
PURCHASES: dict[str, tuple[str, dict[str, Any]]] = {
    "on-demand": ("llama3-70b-p5", {"option": "on-demand"}),
    "spot": ("llama3-70b-p5", {"option": "spot"}),
    "reservation": (
        "llama3-70b-p5",
        {"option": "reservation", "reservation_id": "cr-0123456789abcdef0"},
    ),
    "capacity-block": ("p5e-capacity-block", {}),
}


@cache
def planned(purchase: str, nodes: int) -> Plan:
    preset, option = PURCHASES[purchase]
    data = copy.deepcopy(read_yaml(STACKS / f"{preset}.yaml"))
    pool = data["pools"][0]
    pool["nodes"] = nodes
    if option:
        pool["purchase"] = dict(option)
    data["budget"] = dict(OPEN_BUDGET)
    return plan_stack(resolve(parse_spec(data, f"{data['name']}.yaml")), guard=False)


def node_groups(plan: Plan) -> dict[str, Any]:
    return {r.name: r for r in plan.of_type(NODE_GROUP)}


def simulate(base: Plan, head: Plan) -> list[tuple[str, str, Request | None, list[str]]]:
    """(node group, operation, request, problems) for every node group of either plan."""
    old, new = node_groups(base), node_groups(head)
    out: list[tuple[str, str, Request | None, list[str]]] = []
    for name in sorted(old.keys() | new.keys()):
        stored = old[name].inputs if name in old else None
        if name not in new:
            out.append((name, "delete", None, []))
            continue
        ignore = head.option(NODE_GROUP, name, "ignoreChanges") or []
        sent = sent_inputs(stored, new[name].inputs, ignore)
        op = operation(stored, new[name].inputs, ignore)
        found = [] if reached(sent, new[name].inputs) else ["the new size is never sent"]
        for req in nodegroup_requests(stored, sent):
            out.append((name, op, req, found + problems(req, 450)))
            found = []
        if found:
            out.append((name, op, None, found))
    return out


@pytest.mark.parametrize("purchase", sorted(PURCHASES))
@pytest.mark.parametrize(("before", "after"), [(16, 17), (17, 16)])
def test_a_resize_is_accepted_by_eks_and_reaches_the_size(
    purchase: str, before: int, after: int
) -> None:
    """Fails on the old min = desired = max with ignoreChanges on desiredSize: 16 -> 17 sent
    min 17, desired 16 (stored), max 17; on a Capacity Block 17 -> 16 sent desired 17, max 16."""
    results = simulate(planned(purchase, before), planned(purchase, after))
    assert [r for r in results if r[2] is not None and r[2].operation == "UpdateNodegroupConfig"]
    refused = [(n, op, r.line() if r else None, p) for n, op, r, p in results if p]
    assert refused == []


@pytest.mark.parametrize(("before", "after"), [(400, 500), (500, 400)])
def test_crossing_the_450_node_split_is_accepted(before: int, after: int) -> None:
    results = simulate(planned("on-demand", before), planned("on-demand", after))
    ops = {n: op for n, op, _, _ in results}
    assert ops["llama3-70b-p5-h100-ng"] == "update"
    assert ops["llama3-70b-p5-h100-ng-2"] == ("create" if after > before else "delete")
    assert [(n, p) for n, _, _, p in results if p] == []


def test_the_deploy_rule_refuses_an_ignored_desired_size() -> None:
    plan = planned("on-demand", 16)
    stack = resolve(parse_spec({**read_yaml(STACKS / "llama3-70b-p5.yaml")}, "llama3-70b-p5.yaml"))
    assert [v for v in evaluate(plan, stack) if v.rule == "node-group-resize-accepted"] == []
    ng = plan.of_type(NODE_GROUP)[0]
    opts = dict(plan.options)
    opts[(ng.type, ng.name)] = {"ignoreChanges": ["scalingConfig.desiredSize"]}
    bad = dataclasses.replace(plan, options=opts)
    hits = [v.line() for v in evaluate(bad, stack) if v.rule == "node-group-resize-accepted"]
    assert any("16 -> 17" in h and "Minimum capacity 17" in h and ng.name in h for h in hits)
    assert any(
        "16 -> 15" in h and "desiredSize 16 can't be greater than maxSize 15" in h for h in hits
    )


def test_the_node_groups_ignore_no_part_of_their_size() -> None:
    for purchase in ("on-demand", "capacity-block"):
        plan = planned(purchase, 8)
        for ng in plan.of_type(NODE_GROUP):
            assert not plan.option(NODE_GROUP, ng.name, "ignoreChanges")
            s = ng.inputs["scalingConfig"]
            assert s["minSize"] <= s["desiredSize"] <= s["maxSize"]


def test_diff_shows_what_pulumi_sends_not_what_the_spec_says() -> None:
    """An input the head lists in ignoreChanges is sent at its stored value: no change shown."""
    size = {"minSize": 0, "desiredSize": 16, "maxSize": 16}
    base = {"resources": [{"type": NODE_GROUP, "name": "g", "inputs": {"scalingConfig": size}}]}
    grown = {"minSize": 0, "desiredSize": 17, "maxSize": 17}
    head = {
        "resources": [
            {
                "type": NODE_GROUP,
                "name": "g",
                "inputs": {"scalingConfig": grown},
                "options": {"ignoreChanges": ["scalingConfig.desiredSize"]},
            }
        ]
    }
    (row,) = diff_resources(base, head)["changed"]
    shown = {c["key"]: (c["before"], c["after"]) for c in row["changes"]}
    assert shown.get("scalingConfig.maxSize") == (16, 17)
    assert "scalingConfig.desiredSize" not in shown
