"""Deadline sizing with layouts (accelstack/cost/layout.py, the deadline walk in
accelstack/cost/compare.py): a TP x PP x CP x DP search where a data-parallel rank spans
several chips (across nodes when the span needs it), priced through the step model (the
pipeline bubble included), each layout within a chip's memory; on-demand sizes above the
capacity threshold flagged, Capacity Blocks held to their limits.

The issue's case: Llama 3.1 405B on 15T tokens in 90 days was "not available" on every type
(a data-parallel rank could span at most one node). Meta trained it on 16,384 H100 with TP8
PP16 DP128 CP1 (arXiv 2407.21783, Table 4)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from accelstack.catalog import load_catalog
from accelstack.catalog.sizing import activation_gib, memory_fit
from accelstack.cli import main
from accelstack.cost.compare import DeadlineSizer, compare, grained, render
from accelstack.cost.layout import search, span_of
from accelstack.cost.step import Layout
from accelstack.resolve import Stack, resolve
from accelstack.spec import parse_spec

from .. import factories

CAT = load_catalog()
DAYS_90 = 90 * 24


def _stack(preset: str = "llama3-405b-p5", **workload: Any) -> Stack:
    d = factories.preset(preset)
    d["budget"] = {}
    d["workload"].update(workload)
    return resolve(parse_spec(d, "t"))


def _degrees(layout: str) -> dict[str, int]:
    head = layout.split(";")[0]
    return {k: int(head.split(k, 1)[1].split()[0]) for k in ("TP", "PP", "CP", "DP")}


def test_a_405b_run_on_15t_tokens_in_90_days_is_offered_a_layout_on_p5() -> None:
    stack = _stack(tokens_billion=15_000)
    cmp = compare(stack, ["p5.48xlarge"], deadline_hours=DAYS_90)
    (c,) = cmp.candidates
    assert c.available and c.wall_hours <= DAYS_90
    assert 1_000 < c.nodes < stack.catalog.scale.max_pool_nodes  # thousands of GPUs
    deg = _degrees(c.layout)
    assert deg["TP"] * deg["PP"] * deg["CP"] * deg["DP"] == c.chips == c.nodes * 8
    assert deg["DP"] <= 1024 < c.chips  # a rank spans several chips: the batch feeds 1,024
    assert deg["TP"] == 8 and "TP at a node's 8 chips" in c.layout
    used, usable = (float(x) for x in c.layout.split("memory ")[1].split(" GiB")[0].split(" of "))
    assert used <= usable == pytest.approx(80 * 0.8)
    # the row names the layout and what limits it, and the pick carries it as an assumption
    text = render(cmp)
    assert c.layout in text and "global batch 1,024:" in c.layout
    assert cmp.fastest is not None and c.layout in cmp.fastest.assumptions
    # thousands of on-demand p5 are flagged; Capacity Blocks cannot hold them (256 per account)
    (od,) = c.options
    assert od.option == "on-demand" and od.capacity is not None
    assert "above 256 instances (scale.yaml on_demand_capacity)" in od.capacity
    assert f"quota L-417A185B to {c.nodes * 192:,}" in od.capacity
    assert c.refused and "exceed the 256 an account can hold" in c.refused[0]


def test_the_capacity_threshold_is_overridable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = factories.preset("llama3-405b-p5")
    d["budget"] = factories.UNLIMITED
    d["workload"]["tokens_billion"] = 15_000
    (tmp_path / "stacks").mkdir()
    path = factories.write_spec(tmp_path / "stacks", {**d, "name": "big405"})
    args = ["compare", str(path), "--instance-types", "p5.48xlarge"]
    args += ["--deadline-hours", str(DAYS_90), "--format", "json"]
    assert main([*args, "--capacity-nodes", "4096"]) == 0
    (cand,) = json.loads(capsys.readouterr().out)["candidates"]
    (row,) = cand["options"]
    assert cand["nodes"] > 256 and row["capacity"] is None
    assert main([*args, "--capacity-nodes", "1000"]) == 0
    (cand,) = json.loads(capsys.readouterr().out)["candidates"]
    assert "(--capacity-nodes)" in cand["options"][0]["capacity"]


def test_activation_memory_follows_megatrons_estimate() -> None:
    """405B at 8,192 tokens, TP8: 126 layers x 8,192 x 16,384 x 34 bytes / 8 = 67 GiB on the
    first stage, more than an H100 holds beside anything else; CP2 halves it, full recompute
    keeps 2 bytes per layer plus one layer's 34; a pipeline fed fewer micro-batches than it
    has stages holds fewer."""
    one = 8192 * 16384 / 8 / 2**30
    full = activation_gib(CAT, 126, 16384, 8192, Layout(tensor_parallel=8), None)
    assert full == pytest.approx(126 * 34 * one) and 66 < full < 68
    cp = activation_gib(CAT, 126, 16384, 4096, Layout(tensor_parallel=8), None)
    assert cp == pytest.approx(full / 2)
    ckpt = Layout(tensor_parallel=8, activation_checkpointing="full")
    assert activation_gib(CAT, 126, 16384, 8192, ckpt, None) == pytest.approx((126 * 2 + 34) * one)
    pp = Layout(tensor_parallel=8, pipeline_parallel=16)
    assert activation_gib(CAT, 126, 16384, 8192, pp, 16) == pytest.approx(full)
    assert activation_gib(CAT, 126, 16384, 8192, pp, 4) == pytest.approx(full / 4)
    assert activation_gib(CAT, None, 16384, 8192, pp, 4) == 0.0  # no layers: not counted


def _fit(stack: Stack, itype: str) -> Any:
    m = stack.workload.model
    return memory_fit(stack.catalog, itype, m.params_billion, stack.workload.precision)


@pytest.mark.parametrize("nodes", [16, 64, 512, 2048, 4096])
def test_every_layout_the_search_offers_fits_and_is_fed(nodes: int) -> None:
    stack = _stack()
    wl, fit = stack.workload, _fit(stack, "p5.48xlarge")
    found = search(CAT, "p5.48xlarge", nodes, wl, fit)
    assert found is not None
    lay = found.layout
    assert found.data_parallel * span_of(lay) == nodes * 8
    assert wl.global_batch_size and found.data_parallel <= wl.global_batch_size
    assert found.memory_gib <= found.usable_gib
    assert lay.tensor_parallel <= 8 and lay.pipeline_parallel <= 126
    assert math.ceil(8192 / lay.context_parallel) >= CAT.throughput.layouts.min_context_tokens


def test_full_recompute_where_the_spec_recompute_does_not_fit() -> None:
    """Context parallelism fixed at 1 by the spec: 405B's 67 GiB of activations at TP8 do not
    fit beside its state on 64 p5, so the search recomputes and says memory limited it."""
    stack = _stack(context_parallel=1)
    found = search(CAT, "p5.48xlarge", 64, stack.workload, _fit(stack, "p5.48xlarge"))
    assert found is not None and found.layout.activation_checkpointing == "full"
    assert "(full recompute)" in found.label()
    assert any("memory rules out" in x for x in found.limits)


def test_the_pipeline_bubble_is_priced() -> None:
    """A batch of 64 sequences on 128 p5 (1,024 chips): each rank must span 16 chips; with
    context parallelism off, that is a pipeline of 2 fed one micro-batch, whose bubble the
    step model prices (x2)."""
    stack = _stack(context_parallel=1, global_batch_size=64, activation_checkpointing="full")
    found = search(CAT, "p5.48xlarge", 128, stack.workload, _fit(stack, "p5.48xlarge"))
    assert found is not None and found.layout.pipeline_parallel == 2
    assert found.layout.bubble(1024) == pytest.approx(2.0)
    assert "pipeline bubble x2.000" in found.limits
    wider = _stack(context_parallel=1, global_batch_size=128, activation_checkpointing="full")
    fed = search(CAT, "p5.48xlarge", 128, wider.workload, _fit(wider, "p5.48xlarge"))
    assert fed is not None and fed.layout.pipeline_parallel == 1
    assert fed.mfu > found.mfu * 1.5


def test_deadline_sizing_takes_the_fewest_node_count_it_tries() -> None:
    """The node count below the chosen one that the walk would try (a multiple of the grain)
    misses the deadline at its own best layout."""
    stack = _stack(tokens_billion=15_000)
    (c,) = compare(stack, ["p5.48xlarge"], deadline_hours=DAYS_90).candidates
    sizer = DeadlineSizer(stack, "p5.48xlarge", _fit(stack, "p5.48xlarge"))
    below = max(k for k in range(c.nodes - 64, c.nodes) if sizer.grained(k) == k)
    at = sizer.at(below)
    assert at is None or at.hours > DAYS_90
    assert grained(2000) % 16 == 0 and grained(100, 2) == 100 and grained(101, 2) == 102
