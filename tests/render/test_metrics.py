"""Accelerator metrics on by default: the Amazon CloudWatch Observability add-on with its agent's
Pod Identity role, priced per node in the cost report, admitted by the job's NetworkPolicy, and
off with `jobs.metrics: false`."""

from __future__ import annotations

from typing import Any

import yaml

from accelstack.cost.pricing import price_plan, price_stack
from accelstack.render import render_manifest

from ..helpers_plan import plan_stack
from ..helpers_render import preset_stack
from .test_trainjob import _jobs

ADDON = "aws:eks/addon:Addon"


def _metrics_items(cost: Any) -> list[Any]:
    return [i for i in cost.items if i.category == "monitoring"]


def test_metrics_addon_is_planned_and_priced() -> None:
    stack = preset_stack("llama3-70b-trn2")
    plan = plan_stack(stack)
    addon = stack.catalog.metrics_addon
    assert addon is not None and addon.addon_name == "amazon-cloudwatch-observability"
    (res,) = [r for r in plan.of_type(ADDON) if r.inputs.get("addonName") == addon.addon_name]
    (assoc,) = res.inputs["podIdentityAssociations"]
    assert assoc["serviceAccount"] == "cloudwatch-agent"
    policies = [
        r.inputs["policyArn"]
        for r in plan.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    ]
    assert "arn:aws:iam::aws:policy/CloudWatchAgentServerPolicy" in policies
    (item,) = _metrics_items(price_plan(stack, plan.resources))
    nodes = stack.system_nodes + sum(p.nodes for p in stack.pools)
    assert item.quantity == nodes and item.estimate
    rate = stack.catalog.service_rate(stack.region, addon.rate_item)
    assert item.hourly_usd == nodes * rate.usd
    # the spec-only price (check, diff) agrees with the plan's
    (spec_item,) = _metrics_items(price_stack(stack))
    assert spec_item.hourly_usd == item.hourly_usd


def test_metrics_off_with_one_switch() -> None:
    stack = _jobs("llama3-70b-trn2", metrics=False)
    plan = plan_stack(stack)
    assert not [
        r
        for r in plan.of_type(ADDON)
        if r.inputs.get("addonName") == "amazon-cloudwatch-observability"
    ]
    assert _metrics_items(price_plan(stack, plan.resources)) == []
    assert _metrics_items(price_stack(stack)) == []
    assert price_stack(stack).hourly_usd < price_stack(preset_stack("llama3-70b-trn2")).hourly_usd


def _policy(stack: Any) -> dict[str, Any]:
    (np,) = [
        d
        for d in yaml.safe_load_all(render_manifest(stack, "trainjob"))
        if d and d["kind"] == "NetworkPolicy"
    ]
    return np  # type: ignore[no-any-return]


def test_network_policy_admits_no_scraper_with_metrics_on_or_off() -> None:
    """The add-on reads node-level sources, never the job's pods (tests/render/test_network_policy.py):
    the policy is the same with metrics on or off, the job's own pods only."""
    on = _policy(preset_stack("llama3-70b-p5"))["spec"]["ingress"]
    off = _policy(_jobs("llama3-70b-p5", metrics=False))["spec"]["ingress"]
    assert on == off
    assert all("namespaceSelector" not in peer for r in on for peer in r["from"])


def test_standalone_has_no_metrics_addon() -> None:
    assert _metrics_items(price_stack(preset_stack("trn1-standalone"))) == []
