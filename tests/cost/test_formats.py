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
    data_parallel_cap,
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


def test_data_parallel_cap_and_layout() -> None:
    assert data_parallel_cap(None, 3) is None
    assert data_parallel_cap(512, 3) == 512
    assert data_parallel_cap(2, 3) == 3  # never below the memory fit
    assert model_parallel_layout(512, 512, 8) is None
    tp = model_parallel_layout(3696, 512, 8)
    assert tp is not None and "must span 8 chips (tensor parallelism 8)" in tp
    pp = model_parallel_layout(8208, 512, 16)
    assert pp is not None and "tensor parallelism 16 x pipeline parallelism 2" in pp
    odd = model_parallel_layout(1136, 256, 8)
    assert odd is not None and "span 8 chips (tensor parallelism 8)" in odd


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_deadline_sizing_is_capped_by_the_global_batch() -> None:
    """An 8B model with a 256-sequence batch cannot feed more than 256 nodes (one sequence per
    data-parallel rank, a rank at most one node): a deadline that needs more is refused in
    one line naming the limit and the parallelism more nodes would need."""
    stack = _stack("mixed-trn2-p5", tokens_billion=2000)
    (c,) = compare(stack, ["p5.48xlarge"], deadline_hours=20).candidates
    assert c.reason is not None
    assert "cannot finish in 20 h within the global batch" in c.reason
    assert "on 256 node(s), the most that workload.global_batch_size 256 can feed" in c.reason
    assert "pipeline parallelism" in c.reason and "Raise workload.global_batch_size" in c.reason
    # a larger batch feeds more nodes: the same deadline is then met
    big = _stack("mixed-trn2-p5", tokens_billion=2000, global_batch_size=4096)
    (ok,) = compare(big, ["p5.48xlarge"], deadline_hours=20).candidates
    assert ok.available and ok.nodes > 256


def test_sizing_below_one_sequence_per_chip_states_the_parallelism() -> None:
    stack = _stack("mixed-trn2-p5", tokens_billion=200)
    (c,) = compare(stack, ["p5.48xlarge"], deadline_hours=20).candidates
    assert c.available and c.chips > 256
    assert any(
        "each data-parallel rank must span 2 chips (tensor parallelism 2)" in w for w in c.warnings
    )
    assert "WARNING: a global batch of 256 sequences" in render(
        compare(stack, ["p5.48xlarge"], deadline_hours=20)
    )
    (fed,) = compare(stack, ["p5.48xlarge"], deadline_hours=40).candidates
    assert fed.chips <= 256 and not any("must span" in w for w in fed.warnings)


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
    assert any("tensor parallelism 8" in w for w in cand["warnings"])


def test_markdown_rows_carry_blocks_refusals_and_warnings() -> None:
    from accelstack.cost.formats import comparison_markdown

    md = comparison_markdown(compare(_stack("llama3-405b-p5"), ["p5.48xlarge"], chips=8 * 100))
    assert "3 Capacity Block(s) (64, 32, 4)" in md
    md24 = comparison_markdown(compare(_stack("llama3-70b-p5"), ["p5.48xlarge"], deadline_hours=24))
    # 467 nodes today (scaling, goodput and the one-time hours decide the count): over 256
    assert re.search(r"capacity-block: \d{3} instances exceed the 256", md24)
    assert "warning: a global batch of 512 sequences" in md24
