"""Deploy rules (accelstack.plan.rules): the framework, the plan document's dependencies and
options, every preset planning with zero violations, and per rule a bad plan that shows the
one-line message naming the resource and the document."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest

from accelstack.plan import Plan, PlannedResource
from accelstack.plan.rules import RULES, Violation, deploy_rule, evaluate
from accelstack.resolve import Stack, resolve
from accelstack.spec import load_spec
from tests.conftest import ROOT, preset_ids

from .helpers_plan import plan_stack

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

NG = "aws:eks/nodeGroup:NodeGroup"
LT = "aws:ec2/launchTemplate:LaunchTemplate"


@cache
def preset(stem: str) -> tuple[Plan, Stack]:
    stack = resolve(load_spec(ROOT / "stacks" / f"{stem}.yaml"))
    return plan_stack(stack), stack


def replace(plan: Plan, type_: str, name: str, **changes: Any) -> Plan:
    """The plan with one resource changed (inputs replaced wholesale or other fields)."""
    resources = [
        dataclasses.replace(r, **changes) if (r.type, r.name) == (type_, name) else r
        for r in plan.resources
    ]
    return dataclasses.replace(plan, resources=resources)


def with_inputs(plan: Plan, r: PlannedResource, **inputs: Any) -> Plan:
    return replace(plan, r.type, r.name, inputs={**r.inputs, **inputs})


def only(found: list[Violation], rule: str) -> Violation:
    hits = [v for v in found if v.rule == rule]
    assert len(hits) >= 1, f"{rule} did not fire: {[v.line() for v in found]}"
    return hits[0]


def assert_line(v: Violation, resource_name: str) -> None:
    line = v.line()
    assert "\n" not in line
    assert resource_name in line and v.source in line and v.rule in line
    assert v.source.startswith(("https://", "terraform-", "aws/", "NVIDIA/", "aws-neuron/"))


# ---------------------------------------------------------------------------------------
# Framework and plan document
# ---------------------------------------------------------------------------------------


def test_framework_builds_violations_from_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("accelstack.plan.rules.RULES", list(RULES))

    @deploy_rule("test-rule", "https://example.invalid/doc", "a test")
    def _body(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
        yield ("aws:x:Y 'n'", "is wrong")

    plan, stack = preset("trn1-finetune")
    found = [v for v in evaluate(plan, stack) if v.rule == "test-rule"]
    assert found == [
        Violation("test-rule", "aws:x:Y 'n'", "is wrong", "https://example.invalid/doc")
    ]
    assert found[0].line() == "aws:x:Y 'n': is wrong [test-rule; https://example.invalid/doc]"
    with pytest.raises(ValueError, match="twice"):
        deploy_rule("test-rule", "x", "y")(_body)


def test_every_rule_names_a_source_and_a_summary() -> None:
    # (rules register as their modules fill in)
    for info in RULES:
        assert info.source and info.summary and info.name == info.name.lower()
    assert len({r.name for r in RULES}) == len(RULES)


def test_plan_records_dependencies_and_options() -> None:
    plan, _ = preset("p5e-capacity-block")
    ng = plan.get(NG, "p5e-capacity-block-h200-ng")
    assert "p5e-capacity-block-h200-lt" in ng.depends_on  # property dependency (launch template)
    assert "p5e-capacity-block-cluster-addon-vpc-cni" in ng.depends_on  # explicit depends_on
    assert list(ng.depends_on) == sorted(set(ng.depends_on))
    doc = plan.to_dict()
    entry = next(r for r in doc["resources"] if r["name"] == ng.name and r["type"] == NG)
    assert entry["dependsOn"] == list(ng.depends_on)
    # options: see the node-group rules
    vpc = next(r for r in doc["resources"] if r["type"] == "aws:ec2/vpc:Vpc")
    assert "dependsOn" not in vpc


@pytest.mark.parametrize("stem", preset_ids())
def test_every_preset_plans_with_zero_violations(stem: str) -> None:
    plan, stack = preset(stem)
    assert [v.line() for v in evaluate(plan, stack)] == []
