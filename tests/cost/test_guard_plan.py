"""Every preset's REAL plan: every resource type priced or free; plan pricing == spec pricing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from accelstack.cost.guard import report_for_plan
from accelstack.cost.pricing import FREE, PRICERS, covered, price_plan, price_stack
from accelstack.plan import Plan
from accelstack.resolve import Stack

from ..conftest import PRESETS, planned_preset, preset_ids


def planned(preset: Path) -> tuple[Stack, Plan]:
    return planned_preset(preset.stem)


@pytest.mark.parametrize("preset", PRESETS, ids=preset_ids())
def test_every_planned_type_has_a_rule_or_is_free(preset: Path) -> None:
    _, plan = planned(preset)
    uncovered = sorted({r.type for r in plan.resources if not covered(r.type)})
    assert uncovered == [], (
        f"{preset.stem}: no pricer and not in FREE: {uncovered}; add a pricer to "
        "accelstack/cost/pricing.py PRICERS or list the type in FREE with the reason"
    )
    billable = {r.type for r in plan.resources if r.type in PRICERS}
    assert "aws:ec2/natGateway:NatGateway" in billable
    assert billable & {"aws:eks/nodeGroup:NodeGroup", "aws:ec2/fleet:Fleet"}


@pytest.mark.parametrize("preset", PRESETS, ids=preset_ids())
def test_plan_pricing_equals_spec_pricing(preset: Path) -> None:
    """The in-program guard prices from the spec; `accelstack plan` from the plan: same bill."""
    stack, plan = planned(preset)
    from_plan = price_plan(stack, plan.resources)
    from_spec = price_stack(stack)

    def key(items: Any) -> list[tuple[str, str, str, str, float]]:
        return sorted(
            (i.type, i.pool or "", i.category, i.unit, round(i.hourly_usd, 9)) for i in items
        )

    assert key(from_plan.items) == key(from_spec.items)
    assert from_plan.hourly_usd == pytest.approx(from_spec.hourly_usd, rel=1e-12)
    assert from_plan.options == from_spec.options


@pytest.mark.parametrize("preset", PRESETS, ids=preset_ids())
def test_plan_report(preset: Path) -> None:
    stack, plan = planned(preset)
    text = report_for_plan(stack, plan)
    assert text.rstrip().endswith(f"verdict: {stack.name}: within budget")
    free_types = {r.type for r in plan.resources if r.type in FREE}
    assert "not billed: " in text and len(free_types) > 3


@pytest.mark.parametrize("preset", PRESETS, ids=preset_ids())
def test_policy_pack_passes_every_preset_plan(preset: Path) -> None:
    """The CrossGuard policies on the real plan's resources: within budget, no findings."""
    from policies import budget_policies as bp

    from ..policypack.test_policies import FakeParent, FakeResource, StackArgs, run

    stack, plan = planned(preset)
    res = [
        FakeResource(r.type, dict(r.inputs), r.name, FakeParent(r.parent) if r.parent else None)
        for r in plan.resources
    ]
    b = stack.spec.budget
    cfg = {
        "region": stack.region,
        "max_hourly_usd": b.max_hourly_usd,
        "max_monthly_usd": b.max_monthly_usd,
        "pool_options": {p.name: p.purchase_option for p in stack.pools},
    }
    assert run(bp.budget, StackArgs(res, cfg)) == []
    tight = {**cfg, "max_hourly_usd": price_stack(stack).hourly_usd * 0.99}
    assert len(run(bp.budget, StackArgs(res, tight))) == 1
    for policy in (bp.no_open_ingress, bp.imdsv2_required, bp.s3_public_access_block):
        for r in res:
            assert run(policy, r) == [], (policy.name, r.name)
    assert run(bp.s3_buckets_blocked, StackArgs(res)) == []
