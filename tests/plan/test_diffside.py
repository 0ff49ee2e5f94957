"""The typed diff input (accelstack/plan/diffside.py, diffprice.py): a side row with its priced
line items (quantity, unit, unit price) and usage-priced items reads back from its JSON form,
and the document carries them to the comment: "16 -> 24 x p5.48xlarge at $X/h" for a resize,
"16 x a at $A/h -> 16 x b at $B/h" for a type change, and the usage file's items per stack,
marked as estimates and outside the totals and thresholds."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from accelstack.catalog import load_catalog
from accelstack.cost.guard import check_budget
from accelstack.cost.usage import load_usage, usage_cost
from accelstack.plan.diff import below_threshold, diff_document
from accelstack.plan.diff_inputs import side_usage
from accelstack.plan.diff_report import billed_line, render_markdown, render_text
from accelstack.plan.diffmodel import DiffDocument, SideCost
from accelstack.plan.diffprice import Billed, PricedLine, SideUsage, UsageItem
from accelstack.plan.diffside import SideRow
from accelstack.resolve import resolve
from accelstack.spec import load_spec

from ..conftest import STACKS
from .test_diff_report import NG, accelerated, pool

P5, P5EN = 55.04, 63.296  # unit prices of these tests' rows ($/instance-hour)


def _ng(nodes: int, instance_type: str = "p5.48xlarge", usd: float = P5) -> PricedLine:
    return PricedLine(
        resource="s-gpu-ng",
        type=NG,
        what=f"{nodes} x {instance_type} (on-demand)",
        rate_of=instance_type,
        quantity=nodes,
        unit="instance-hour",
        unit_usd=usd,
        monthly_usd=round(nodes * usd * 730, 2),
    )


def _disk(nodes: int) -> PricedLine:
    return PricedLine("s-gpu-ng", NG, "root", "ebs-gp3", nodes * 512, "GiB-month", 0.08, 0.0)


def _usage(nat_gb: float) -> SideUsage:
    nat = UsageItem(
        *("nat_gateway", "monthly_data_processed_gb", "NAT gateway data processed (GB)"),
        *(nat_gb, "nat-gateway-data", 0.045, "gb", 1.0, round(nat_gb * 0.045, 2), False),
    )
    az = UsageItem(
        *("data_transfer", "monthly_intra_region_gb", "inter-AZ data (GB, both sides billed)"),
        *(100.0, "inter-az-data", 0.01, "gb", 2.0, 2.0, True),
    )
    return SideUsage("accelstack-usage.yaml", (nat, az))


def _row(
    nodes: int, instance_type: str = "p5.48xlarge", usd: float = P5, nat_gb: float = 500
) -> SideRow:
    resources = pool("s", "gpu", nodes)
    resources[1]["inputs"]["instanceTypes"] = [instance_type]
    lines = (_ng(nodes, instance_type, usd), _disk(nodes))
    monthly = sum(line.monthly_usd for line in lines)
    cost = SideCost(monthly / 730, monthly, 1.0, False, True, "ok", (), {"s-gpu-ng": monthly})
    plan = {"resources": resources}
    return SideRow("f", "Pulumi.s.yaml", {"spec.x": nodes}, plan, cost, lines, _usage(nat_gb))


def _doc(base: SideRow, head: SideRow) -> DiffDocument:
    return diff_document({"s": base}, {"s": head}, ("main", "pr"), [], accelerated)


def test_a_side_row_reads_back_from_its_json_form() -> None:
    for row in (
        _row(16),
        SideRow("pr:s.yaml", errors=("pr:s.yaml: region: bad",), headline="h", exit_code=2),
    ):
        data = json.loads(json.dumps(row.to_dict()))
        assert SideRow.from_dict(data) == row
    assert "plan" not in SideRow("f", errors=("x",)).to_dict()  # an error row has no plan


def test_the_document_carries_line_items_and_usage_and_reads_back() -> None:
    doc = _doc(_row(16), _row(24, nat_gb=2000))
    (ng,) = doc.stacks[0].resources.changed
    assert [(b.base.quantity, b.head.quantity) for b in ng.billed if b.base and b.head] == [
        (16, 24),
        (16 * 512, 24 * 512),
    ]
    data = json.loads(json.dumps(doc.to_dict()))
    assert DiffDocument.from_dict(data) == doc
    stack = data["stacks"][0]
    assert stack["usage"]["delta_monthly_usd"] == 67.5  # (2000 - 500) x $0.045
    assert stack["usage"]["head"]["estimate"] is True  # the inter-AZ rate is an estimate
    billed = stack["resources"]["changed"][0]["billed"][0]
    assert (billed["base"]["quantity"], billed["head"]["rate_of"]) == (16, "p5.48xlarge")
    # usage is outside the totals and the thresholds
    moved = sum(x.monthly_usd for x in _row(24).lines) - sum(x.monthly_usd for x in _row(16).lines)
    assert data["totals"]["delta_monthly_usd"] == round(moved, 4)
    still = diff_document({"s": _row(16)}, {"s": _row(16, nat_gb=9e6)}, ("a", "b"), [])
    assert still.stacks[0].usage and still.stacks[0].usage.delta_monthly_usd > 1e5
    assert below_threshold(still, 1.0, None)  # the cost did not move


def test_a_resize_and_a_type_change_in_text_and_the_comment() -> None:
    resize = _doc(_row(16), _row(24))
    text, md = render_text(resize), render_markdown(resize, comment=True)
    assert "             billed: 16 -> 24 x p5.48xlarge at $55.04/h" in text.splitlines()
    assert "  - billed: `16 -> 24 x p5.48xlarge at $55.04/h`" in md.splitlines()
    assert "billed: 8,192 -> 12,288 GiB-month of ebs-gp3 at $0.08/GiB-month" in text
    moved = _doc(_row(16), _row(16, "p5en.48xlarge", P5EN))
    (ng,) = moved.stacks[0].resources.replaced  # instanceTypes forces a replacement
    line = "16 x p5.48xlarge at $55.04/h -> 16 x p5en.48xlarge at $63.296/h"
    assert billed_line(ng.billed[0]) == line
    assert f"billed: {line}" in render_text(moved)
    assert f"  - billed: `{line}`" in render_markdown(moved, comment=True).splitlines()
    assert "billed: 8,192 GiB-month of ebs-gp3 at $0.08/GiB-month" in render_text(moved)


def test_the_forms_of_a_line_item_before_and_after() -> None:
    assert billed_line(Billed(_ng(2), _ng(2, usd=60.0))) == "2 x p5.48xlarge at $55.04 -> $60.00/h"
    assert (
        billed_line(Billed(None, _disk(1)))
        == "(none) -> 512 GiB-month of ebs-gp3 at $0.08/GiB-month"
    )
    assert (
        billed_line(Billed(_disk(1), None))
        == "512 GiB-month of ebs-gp3 at $0.08/GiB-month -> (none)"
    )
    estimate = PricedLine("n", NG, "w", "trn2.48xlarge", 4, "instance-hour", 35.76, 1.0, True)
    assert billed_line(Billed(estimate, estimate)) == "4 x trn2.48xlarge at $35.76*/h"
    # an older accelstack's plan names no rate subject: its description stands in
    old = PricedLine("n", NG, "4 x trn2.48xlarge (on-demand)", "", 4, "instance-hour", 35.76, 1.0)
    assert billed_line(Billed(old, estimate)) == (
        "4 x trn2.48xlarge (on-demand) at $35.76/h -> 4 x trn2.48xlarge at $35.76*/h"
    )
    # an added or removed resource lists its own side's items, no arrow
    added = _doc(SideRow("f", plan={"resources": []}, cost=_row(1).cost), _row(2))
    assert "             billed: 2 x p5.48xlarge at $55.04/h" in render_text(added).splitlines()


def test_usage_items_per_stack_in_text_and_the_comment() -> None:
    doc = _doc(_row(16), _row(16, nat_gb=2000))
    text = render_text(doc).splitlines()
    head = next(x for x in text if x.startswith("  usage (from accelstack-usage.yaml; usage est"))
    assert "not in the budget verdict or the totals" in head and head.endswith("(+$67.50)")
    assert (
        "    NAT gateway data processed (GB): 500 -> 2,000 at $0.045 per gb = $22.50 -> "
        "$90.00/month"
    ) in text
    assert (
        "    inter-AZ data (GB, both sides billed): 100 x 2 at $0.01 per gb = $2.00*/month" in text
    )
    md = render_markdown(doc, comment=True)
    assert "**Usage-priced items** (monthly, from each side's usage file; usage estimates" in md
    assert (
        "| `s` | NAT gateway data processed (GB) | 500 → 2,000 | $0.045 per gb | $22.50 → $90.00 |"
    ) in md.splitlines()
    # without a usage file on either side, no usage key, block or table
    plain = replace(_row(16), usage=None)
    bare = diff_document({"s": plain}, {"s": replace(plain, cost=_row(24).cost)}, ("a", "b"), [])
    assert bare.stacks[0].usage is None and "usage" not in bare.to_dict()["stacks"][0]
    assert "Usage-priced" not in render_markdown(bare) and "  usage (" not in render_text(bare)


def test_side_usage_prices_as_price_does(tmp_path: Path) -> None:
    """The diff prices a side's usage from what the row holds (region, priced types): the
    same lines, amounts and USD as `price --usage` (`usage_cost` on the resolved stack)."""
    usage = {
        "default": {
            "nat_gateway": {"monthly_data_processed_gb": 500},
            "s3_buckets": {"monthly_tier_1_requests": 2_000_000},
            "data_transfer": {"monthly_intra_region_gb": 100},
        },
        "stacks": {"llama3-70b-trn2": {"nat_gateway": {"monthly_data_processed_gb": 2000}}},
    }
    path = tmp_path / "accelstack-usage.yaml"
    path.write_text(yaml.safe_dump(usage), encoding="utf-8")
    stack = resolve(load_spec(STACKS / "llama3-70b-trn2.yaml"))
    cost, catalog, file = check_budget(stack).cost, load_catalog(), load_usage(path)
    want = usage_cost(stack, cost, file, catalog)
    types = [item.type for item in cost.items]
    got = side_usage((stack.name, cost.region), types, file, (catalog, "u.yaml"))
    assert [(i.key, i.amount, i.rate_usd, i.monthly_usd, i.estimate) for i in got.items] == [
        (w.key, w.amount, w.rate_usd, round(w.monthly_usd or 0.0, 2), w.estimate)
        for w in want.lines
    ]
    assert got.monthly_usd == pytest.approx(want.monthly_usd, abs=0.01)
    bare = side_usage((stack.name, cost.region), [], file, (catalog, "u.yaml")).items
    priced = {i.group: i.monthly_usd is not None for i in bare}
    assert priced == {"nat_gateway": False, "s3_buckets": False, "data_transfer": True}
