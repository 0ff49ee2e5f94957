"""Training-run estimate: FLOPs, wall hours, MFU source, run cost, USD per million tokens."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accelstack.catalog import Catalog
from accelstack.cost.estimate import RunCost, estimate_training, training_flops
from accelstack.cost.guard import check_budget
from accelstack.cost.rates import default_layout, point, rates_for, shape_of, work_for
from accelstack.errors import CatalogError
from accelstack.resolve import resolve
from accelstack.spec import Workload, load_spec, parse_spec

from ..conftest import STACKS

WL: dict[str, Any] = {
    "model": {"params_billion": 70, "layers": 80, "hidden_size": 8192},
    "tokens_billion": 100,
    "sequence_length": 8192,
    "entrypoint": "t.py",
}


def workload(**changes: Any) -> Workload:
    d = copy.deepcopy(WL)
    d.update(changes)
    return Workload.model_validate(d)


def test_flops_palm_convention() -> None:
    f = training_flops(70, 100, 80, 8192, 8192)
    assert f.dense_per_token == 6 * 70e9
    assert f.attention_per_token == 12 * 80 * 8192 * 8192
    assert f.total == pytest.approx(100e9 * (6 * 70e9 + 12 * 80 * 8192 * 8192))


def test_no_attention_term_without_sequence_length() -> None:
    f = training_flops(70, 100, 80, 8192, None)
    assert f.attention_per_token == 0 and f.total == pytest.approx(6 * 70e9 * 100e9)
    assert training_flops(70, 100, None, None, 8192).attention_per_token == 0


def test_wall_hours_formula(catalog: Catalog) -> None:
    """wall = FLOPs / (chips x peak x step MFU x scaling) / goodput + one-time hours."""
    wl = workload()
    est = estimate_training(catalog, "p5.48xlarge", 16, wl)
    chips = 16 * 8
    flops = 100e9 * (6 * 70e9 + 12 * 80 * 8192 * 8192)
    layout = default_layout(catalog, "p5.48xlarge", wl)
    assert layout.tensor_parallel == 4  # 70B: the records' NVIDIA recipes run TP4
    work = work_for(catalog, "p5.48xlarge", shape_of(wl), 8192, layout, chips)
    ref = point(
        catalog, "p5.48xlarge", "bf16", work, rates_for(catalog, "h100", "bf16", 70, None)
    ).mfu
    assert 0.45 < ref < 0.60  # the H100 BF16 step at 70B, the centre of the stacks (one node)
    assert est.pick.reference == pytest.approx(ref)
    sc = catalog.throughput.scaling
    eff = 1 - sc.loss_per_node_doubling * 4  # 16 nodes, 512 x 8192 / 128 = 32K tokens/chip
    assert est.scaling_efficiency == pytest.approx(eff)
    assert est.mfu == pytest.approx(ref * eff)
    compute_h = flops / (chips * 989e12 * ref * eff) / 3600
    assert est.compute_hours == pytest.approx(compute_h)
    g = catalog.throughput.goodput
    failures = 16 * g.interruptions_per_node_hour * g.lost_hours_per_interruption
    stall = 70e9 * 16 / (16 * g.checkpoint_write_gb_per_s_per_node * 1e9) / 3600
    goodput = 1 / (1 + failures + stall + g.other_loss_fraction)
    assert est.goodput == pytest.approx(goodput)
    pull = catalog.scale.image_delivery.pull_hours(16, g.image_pull_gb_per_node)  # 16 nodes
    assert est.wall_hours == pytest.approx(compute_h / goodput + g.bring_up_hours + pull)
    assert est.accelerator_hours == pytest.approx(chips * est.wall_hours)
    assert not est.mfu_from_spec and est.mfu_basis == "fitted"
    lo, hi = est.wall_hours_range
    assert lo < est.wall_hours < hi


def test_more_nodes_lose_scaling_efficiency_and_goodput(catalog: Catalog) -> None:
    small = estimate_training(catalog, "p5.48xlarge", 16, workload())
    big = estimate_training(catalog, "p5.48xlarge", 256, workload(global_batch_size=4096))
    assert big.scaling_efficiency < small.scaling_efficiency
    assert big.parts.failures == pytest.approx(small.parts.failures * 16)
    # 16x the nodes is less than 16x faster
    assert big.compute_hours > small.compute_hours / 16


def test_per_chip_batch_below_one_sequence_warns_and_costs_efficiency(catalog: Catalog) -> None:
    full = estimate_training(catalog, "trn2.48xlarge", 64, workload(global_batch_size=1024))
    thin = estimate_training(catalog, "trn2.48xlarge", 64, workload(global_batch_size=256))
    assert not full.warnings
    assert thin.scaling_efficiency < full.scaling_efficiency
    (warning,) = thin.warnings
    assert "256 sequences on 1,024 chips is 0.25 sequence per chip" in warning
    assert ">= 4 chips" in warning


def test_mfu_override_and_precision(catalog: Catalog) -> None:
    base = estimate_training(catalog, "trn2.48xlarge", 4, workload())
    faster = estimate_training(catalog, "trn2.48xlarge", 4, workload(), mfu=0.8)
    assert faster.mfu_from_spec and faster.mfu_basis == "given"
    assert faster.compute_hours == pytest.approx(base.compute_hours * base.mfu / 0.8)
    assert faster.mfu_range == (0.8, 0.8)
    fp8 = estimate_training(catalog, "trn2.48xlarge", 4, workload(precision="fp8"))
    assert fp8.peak_tflops_per_chip == 1299
    # no FP8 record on Trainium2: the BF16 throughput, no FP8 speed-up credited
    assert fp8.compute_hours == pytest.approx(base.compute_hours, rel=1e-3)
    assert fp8.mfu_basis == "extrapolated" and "no FP8 speed-up credited" in fp8.mfu_source
    assert fp8.mfu_range[1] / fp8.mfu_range[0] > base.mfu_range[1] / base.mfu_range[0]


def test_memory_fit_minimum_nodes(catalog: Catalog) -> None:
    est = estimate_training(catalog, "p5.48xlarge", 1, workload())
    # 70e9 x 16 B = 1043 GiB of state; 640 GiB x 0.8 = 512 usable per node -> 3 nodes
    assert est.min_nodes == 3
    assert estimate_training(catalog, "trn2.48xlarge", 1, workload()).min_nodes == 1


def test_cpu_type_refused(catalog: Catalog) -> None:
    with pytest.raises(CatalogError, match="no accelerators"):
        estimate_training(catalog, "m6i.xlarge", 1, workload())


@settings(max_examples=40, deadline=None)
@given(nodes=st.integers(1, 64), tokens=st.floats(0.1, 10_000), mfu=st.floats(0.05, 1.0))
def test_run_cost_scales(catalog: Catalog, nodes: int, tokens: float, mfu: float) -> None:
    est = estimate_training(
        catalog, "trn1.32xlarge", nodes, workload(tokens_billion=tokens), mfu=mfu
    )
    rc = RunCost(
        est.wall_hours, 100.0, 80.0, est.tokens, False, wall_hours_range=est.wall_hours_range
    )
    assert rc.run_usd == pytest.approx(100.0 * est.wall_hours)
    assert rc.pool_run_usd == pytest.approx(80.0 * est.wall_hours)
    assert rc.usd_per_million_tokens == pytest.approx(rc.run_usd / (tokens * 1e3))
    lo, hi = rc.run_usd_range
    assert lo <= rc.run_usd <= hi
    # more nodes, same work, the same given step MFU: compute hours fall in proportion
    double = estimate_training(
        catalog, "trn1.32xlarge", nodes * 2, workload(tokens_billion=tokens), mfu=mfu
    )
    assert double.compute_hours == pytest.approx(est.compute_hours / 2)


def test_preset_run_cost_is_whole_stack_times_wall_hours() -> None:
    v = check_budget(resolve(load_spec(STACKS / "mixed-trn2-p5.yaml")))
    assert v.run.billed_pool_hours is None  # on-demand: billed by the hour
    # plus the run's image pulls through the NAT gateway (4 nodes x 20 GB x $0.045/GB)
    assert v.run.extra_usd == pytest.approx(4 * 20 * 0.045)
    assert v.run.run_usd == pytest.approx(
        v.cost.hourly_usd * v.estimate.wall_hours + v.run.extra_usd
    )
    # the idle h100 pool is billed during the run: whole stack > workload pool
    assert v.run.pool_hourly_usd == pytest.approx(v.cost.pool_hourly_usd("trn2"))
    assert v.cost.pool_hourly_usd("h100") > 100
    assert v.run.run_usd > v.run.pool_run_usd + 100 * v.estimate.wall_hours
    assert any(x.startswith("inter-AZ data: none estimated") for x in v.data_lines)


def test_budget_mfu_is_used_and_reported() -> None:
    data = {
        "name": "demo",
        "region": "us-east-2",
        "cluster": {"public_access_cidrs": ["203.0.113.0/24"], "creator_admin": True},
        "pools": [{"name": "trn2", "instance_type": "trn2.48xlarge", "nodes": 2}],
        "workload": {**WL, "model": {"params_billion": 8}, "image": "registry.example/train:1"},
        "budget": {"mfu": 0.55},
    }
    v = check_budget(resolve(parse_spec(data, "test")))
    assert v.estimate.mfu == 0.55 and v.estimate.mfu_from_spec
