"""Deadline and chip-budget sizing that can be bought and fed.

Capacity Block limits (capacity_blocks.yaml, EC2 User Guide "Capacity Blocks for ML",
capacity-blocks-purchase: up to 64 instances per block, 256 across blocks per account), the
blocks a row assumes, the data-parallel width the global batch can feed, and the warning where
more nodes no longer pay.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import pytest

from accelstack.cost.compare import (
    MAX_EXTRA_NODE_HOURS,
    compare,
    model_parallel_layout,
    render,
)
from accelstack.cost.formats import comparison_dict
from accelstack.resolve import Stack, resolve
from accelstack.spec import parse_spec

from .. import factories


def _stack(preset: str, **workload: Any) -> Stack:
    d = factories.preset(preset)
    d["budget"] = {}
    d["workload"].update(workload)
    return resolve(parse_spec(d, "t"))


def test_capacity_block_limits_are_the_catalogs() -> None:
    stack = _stack("llama3-70b-p5")
    cb = stack.catalog.capacity_blocks
    assert (cb.max_instances_per_block, cb.max_instances_per_account) == (64, 256)
    assert "capacity-blocks-purchase" in cb.source


def test_deadline_sizing_never_buys_more_capacity_blocks_than_an_account_holds() -> None:
    """70.6B in 24 h needs 462 p5: on-demand can be priced (with a warning), the Capacity
    Block row cannot be bought (256 per account) and is refused, not priced."""
    stack = _stack("llama3-70b-p5")
    (c,) = compare(stack, ["p5.48xlarge"], deadline_hours=24).candidates
    assert c.available and c.nodes > 256
    assert [o.option for o in c.options] == ["on-demand"]
    assert len(c.refused) == 1 and c.refused[0].startswith("capacity-block: ")
    assert f"{c.nodes} instances exceed the 256 an account can hold" in c.refused[0]
    assert "not buyable at this size: capacity-block" in render(
        compare(stack, ["p5.48xlarge"], deadline_hours=24)
    )


def test_chip_budget_over_the_account_limit_refuses_the_capacity_block_row() -> None:
    stack = _stack("llama3-405b-p5")
    (c,) = compare(stack, ["p5.48xlarge"], chips=8 * 257).candidates
    assert "capacity-block" not in [o.option for o in c.options]
    assert c.refused and "257 instances exceed the 256" in c.refused[0]
    (ok,) = compare(stack, ["p5.48xlarge"], chips=8 * 256).candidates
    assert "capacity-block" in [o.option for o in ok.options] and not ok.refused


def test_rows_show_the_capacity_blocks_they_assume() -> None:
    stack = _stack("llama3-405b-p5")
    cmp = compare(stack, ["p5.48xlarge"], chips=8 * 100)
    (c,) = cmp.candidates
    by = {o.option: o for o in c.options}
    assert by["capacity-block"].capacity_blocks == (64, 32, 4)
    assert by["capacity-block"].blocks == 3
    assert by["on-demand"].blocks == 0 and by["on-demand"].capacity_blocks == ()
    assert "3 Capacity Block(s) (64, 32, 4)" in render(cmp)
    doc = json.loads(json.dumps(comparison_dict(cmp)))
    rows = {o["option"]: o for o in doc["candidates"][0]["options"]}
    assert rows["capacity-block"]["blocks"] == 3
    assert rows["capacity-block"]["capacity_blocks"] == [64, 32, 4]
    assert rows["on-demand"]["blocks"] == 0


def test_the_default_layout_states_the_span_a_chip_budget_needs() -> None:
    assert model_parallel_layout(512, 512, 8) is None
    tp = model_parallel_layout(3696, 512, 8)
    assert tp is not None and "must span 8 chips (tensor parallelism 8)" in tp
    pp = model_parallel_layout(8208, 512, 16)
    assert pp is not None and "tensor parallelism 16 x pipeline parallelism 2" in pp
    odd = model_parallel_layout(1136, 256, 8)
    assert odd is not None and "span 8 chips (tensor parallelism 8)" in odd


def _degrees(layout: str) -> dict[str, int]:
    """{'TP': 8, 'PP': 1, 'CP': 2, 'DP': 256} from a row's layout line."""
    return {k: int(v) for k, v in re.findall(r"\b(TP|PP|CP|DP)(\d+)\b", layout.split(";")[0])}


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_deadline_sizing_spans_a_data_parallel_rank_over_chips_until_the_batch_stops_it() -> None:
    """An 8B model with a 256-sequence batch: a data-parallel rank spans TP x CP chips (the old
    sizing capped it at one node and 256 nodes); past 512 nodes every rank would need a
    pipeline fed 1-2 micro-batches, and the bubble stops more nodes paying."""
    stack = _stack("mixed-trn2-p5", tokens_billion=2000)
    (c,) = compare(stack, ["p5.48xlarge"], deadline_hours=20).candidates
    assert c.reason is not None and "cannot finish in 20 h" in c.reason
    assert "TP8 PP1 CP2 DP256 on 512 node(s)" in c.reason  # every rank one sequence
    assert "more nodes no longer pay" in c.reason and "pipeline bubble" in c.reason
    # a larger batch feeds more ranks: the same deadline is then met, on more than 256 nodes
    big = _stack("mixed-trn2-p5", tokens_billion=2000, global_batch_size=4096)
    (ok,) = compare(big, ["p5.48xlarge"], deadline_hours=20).candidates
    assert ok.available and ok.nodes > 256 and ok.wall_hours <= 20
    deg = _degrees(ok.layout)
    assert deg["DP"] <= 4096 and deg["TP"] * deg["PP"] * deg["CP"] * deg["DP"] == ok.chips


def test_a_deadline_row_names_its_layout_instead_of_warning() -> None:
    """Fewer sequences than chips: the deadline row is priced at a layout whose ranks span
    several chips (no 'must span' warning); a chip-budget row, at the default layout, warns."""
    stack = _stack("mixed-trn2-p5", tokens_billion=200)
    (c,) = compare(stack, ["p5.48xlarge"], deadline_hours=20).candidates
    assert c.available and c.chips > 256
    deg = _degrees(c.layout)
    assert deg["DP"] <= 256 < c.chips and deg["DP"] * deg["TP"] * deg["PP"] * deg["CP"] == c.chips
    assert "global batch 256:" in c.layout and not any("must span" in w for w in c.warnings)
    assert c.layout in render(compare(stack, ["p5.48xlarge"], deadline_hours=20))
    (chips,) = compare(stack, ["p5.48xlarge"], chips=c.chips).candidates
    assert any("each data-parallel rank must span" in w for w in chips.warnings)
    assert "(the default, as `price`" in chips.layout


def test_deadline_sizing_warns_where_more_nodes_no_longer_pay() -> None:
    stack = _stack("mixed-trn2-p5")
    cat = stack.catalog
    steep = cat.throughput.scaling.model_copy(update={"loss_per_node_doubling": 0.05})
    tp = cat.throughput.model_copy(update={"scaling": steep})
    slow = dataclasses.replace(stack, catalog=cat.model_copy(update={"throughput": tp}))
    (c,) = compare(slow, ["p5.48xlarge"], deadline_hours=6).candidates
    (w,) = [w for w in c.warnings if w.startswith("more nodes no longer pay")]
    extra = float(w.split(" spend +")[1].split("%")[0]) / 100
    assert extra > MAX_EXTRA_NODE_HOURS
    assert f"{c.nodes} node(s) spend" in w and f"against {c.min_nodes} node(s)" in w
    # an easy deadline does not warn
    (easy,) = compare(slow, ["p5.48xlarge"], deadline_hours=200).candidates
    assert not any(w.startswith("more nodes") for w in easy.warnings)
    # a chip budget is the user's own count: no such warning
    (chips,) = compare(slow, ["p5.48xlarge"], chips=c.chips).candidates
    assert not any(w.startswith("more nodes") for w in chips.warnings)


@pytest.mark.parametrize("deadline", [24.0])
def test_json_candidates_carry_refusals_and_warnings(deadline: float) -> None:
    doc = comparison_dict(
        compare(_stack("llama3-70b-p5"), ["p5.48xlarge"], deadline_hours=deadline)
    )
    (cand,) = doc["candidates"]
    assert cand["refused"] and cand["refused"][0].startswith("capacity-block:")
    assert cand["layout"].startswith("layout TP4 PP1 CP2 DP")
    (od,) = cand["options"]
    assert od["option"] == "on-demand" and "is above 256 instances" in od["capacity"]


def test_markdown_rows_carry_blocks_refusals_and_warnings() -> None:
    from accelstack.cost.formats import comparison_markdown

    md = comparison_markdown(compare(_stack("llama3-405b-p5"), ["p5.48xlarge"], chips=8 * 100))
    assert "3 Capacity Block(s) (64, 32, 4)" in md
    md24 = comparison_markdown(compare(_stack("llama3-70b-p5"), ["p5.48xlarge"], deadline_hours=24))
    # 467 nodes today (scaling, goodput and the one-time hours decide the count): over 256
    assert re.search(r"capacity-block: \d{3} instances exceed the 256", md24)
    assert "| layout TP4 PP1 CP2 DP" in md24 and "capacity: on-demand: " in md24
