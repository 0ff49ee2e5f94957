"""Training-run estimate: FLOPs, wall hours, MFU source, run cost, USD per million tokens."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accelstack.catalog import Catalog, load_catalog
from accelstack.cost.estimate import RunCost, estimate_training, training_flops
from accelstack.cost.guard import check_budget
from accelstack.errors import CatalogError
from accelstack.resolve import resolve
from accelstack.spec import Workload, load_spec, parse_spec

from .conftest import STACKS

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
    est = estimate_training(catalog, "p5.48xlarge", 16, workload())
    chips = 16 * 8
    flops = 100e9 * (6 * 70e9 + 12 * 80 * 8192 * 8192)
    mfu = catalog.mfu_curve("h100", "bf16").mfu(70)
    assert 0.30 < mfu < 0.35  # the records-fitted H100 BF16 curve at 70B
    compute_h = flops / (chips * 989e12 * mfu) / 3600
    assert est.chips == chips
    assert est.compute_hours == pytest.approx(compute_h)
    assert est.wall_hours == pytest.approx(
        compute_h * load_catalog().defaults.training_overhead_factor
    )
    assert est.accelerator_hours == pytest.approx(
        chips * compute_h * load_catalog().defaults.training_overhead_factor
    )
    assert est.mfu == mfu and not est.mfu_from_spec and est.mfu_basis == "fitted to records"


def test_mfu_override_and_precision(catalog: Catalog) -> None:
    base = estimate_training(catalog, "trn2.48xlarge", 4, workload())
    faster = estimate_training(catalog, "trn2.48xlarge", 4, workload(), mfu=0.8)
    assert faster.mfu_from_spec and faster.mfu_source == "spec budget.mfu"
    assert faster.wall_hours == pytest.approx(base.wall_hours * base.mfu / 0.8)
    fp8 = estimate_training(catalog, "trn2.48xlarge", 4, workload(precision="fp8"))
    assert fp8.peak_tflops_per_chip == 1299
    assert fp8.wall_hours == pytest.approx(base.wall_hours * 667 / 1299)


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
    rc = RunCost(est.wall_hours, 100.0, 80.0, est.tokens, False)
    assert rc.run_usd == pytest.approx(100.0 * est.wall_hours)
    assert rc.pool_run_usd == pytest.approx(80.0 * est.wall_hours)
    assert rc.usd_per_million_tokens == pytest.approx(rc.run_usd / (tokens * 1e3))
    # more nodes, same work: wall hours fall in proportion
    double = estimate_training(
        catalog, "trn1.32xlarge", nodes * 2, workload(tokens_billion=tokens), mfu=mfu
    )
    assert double.wall_hours == pytest.approx(est.wall_hours / 2)


def test_preset_run_cost_is_whole_stack_times_wall_hours() -> None:
    v = check_budget(resolve(load_spec(STACKS / "mixed-trn2-p5.yaml")))
    assert v.run.run_usd == pytest.approx(v.cost.hourly_usd * v.estimate.wall_hours)
    # the idle h100 pool is billed during the run: whole stack > workload pool
    assert v.run.pool_hourly_usd == pytest.approx(v.cost.pool_hourly_usd("trn2"))
    assert v.cost.pool_hourly_usd("h100") > 100
    assert v.run.run_usd > v.run.pool_run_usd + 100 * v.estimate.wall_hours


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
