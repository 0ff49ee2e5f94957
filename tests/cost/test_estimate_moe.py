"""Mixture-of-experts models: FLOPs and the MFU curve's size from the active
parameters, the memory fit (all experts, sharded across every chip: expert parallelism plus
ZeRO) from the total; DeepSeek-V3's published 2.788M H800 GPU-hours as the documented check
(arXiv 2412.19437: 671B total, 37B active, 14.8T tokens, 2,048 H800 GPUs, FP8)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from accelstack.catalog import load_catalog
from accelstack.cost.compare import compare
from accelstack.cost.estimate import estimate_training
from accelstack.cost.guard import check_budget, verdict_json
from accelstack.errors import SpecError
from accelstack.resolve import resolve
from accelstack.spec import Workload, parse_spec

from .. import factories

CAT = load_catalog()
#: DeepSeek-V3 technical report (arXiv 2412.19437), abstract: "2.788M H800 GPU hours for its
#: full training"; 671B total / 37B activated per token; 14.8T tokens; 2,048 H800 GPUs
DSV3_GPU_HOURS = 2.788e6


def _dsv3(**over: Any) -> Workload:
    model = {"params_billion": 671, "active_params_billion": 37, "layers": 61, "hidden_size": 7168}
    body: dict[str, Any] = {
        "model": model,
        "tokens_billion": 14800,
        "sequence_length": 4096,
        "precision": "fp8",
        "global_batch_size": 15360,
        "entrypoint": "t.py",
    }
    body.update(over)
    return Workload.model_validate(body)


def test_flops_from_active_memory_from_total() -> None:
    moe = estimate_training(CAT, "p5.48xlarge", 256, _dsv3())
    assert moe.flops.dense_per_token == pytest.approx(6 * 37e9)
    # the memory fit holds all 671B (20 p5, not the 2 that 37B would need)
    assert moe.min_nodes == 20
    dense37 = estimate_training(
        CAT,
        "p5.48xlarge",
        256,
        _dsv3(model={"params_billion": 37, "layers": 61, "hidden_size": 7168}),
    )
    assert dense37.min_nodes == 2
    assert moe.compute_hours == pytest.approx(dense37.compute_hours)  # the curve at 37B
    assert "mixture of experts: the curve at its 37B active of 671B" in moe.mfu_source
    assert (moe.params_billion, moe.active_params_billion) == (671, 37)


def test_deepseek_v3_gpu_hours_is_the_documented_check(capsys: pytest.CaptureFixture[str]) -> None:
    """2,048 GPUs = 256 p5.48xlarge (H800: the H100's dense FP8 rate, less NVLink bandwidth).
    The published full-training GPU-hours lie inside the estimate's range; the centre is
    about 1.46x optimistic (no MoE record in the curve: the all-to-all is not modelled)."""
    e = estimate_training(CAT, "p5.48xlarge", 256, _dsv3())
    assert e.chips == 2048
    centre = e.chips * e.compute_hours / e.goodput
    g_lo, g_hi = e.goodput_range
    low = e.chips * e._compute_hours(e.pick.high) / g_hi
    high = e.chips * e._compute_hours(e.pick.low) / g_lo
    with capsys.disabled():
        print(
            f"\nDeepSeek-V3: estimate {centre / 1e6:.2f}M GPU-hours ({low / 1e6:.2f}-"
            f"{high / 1e6:.2f}M), published {DSV3_GPU_HOURS / 1e6:.3f}M: published / estimate "
            f"{DSV3_GPU_HOURS / centre:.2f}"
        )
    assert low <= DSV3_GPU_HOURS <= high
    assert 1.2 < DSV3_GPU_HOURS / centre < 1.7


def _spec(**model: Any) -> dict[str, Any]:
    return factories.preset(
        "llama3-405b-p5", {f"workload.model.{key}": value for key, value in model.items()}
    )


def test_more_active_than_total_is_refused_in_one_line() -> None:
    with pytest.raises(SpecError) as exc:
        resolve(parse_spec(_spec(params_billion=37, active_params_billion=671), "stacks/t.yaml"))
    text = str(exc.value).strip()
    assert "workload.model.active_params_billion" in text
    assert "671 is more than params_billion 37" in text and len(text.splitlines()) == 1


def test_compare_and_json_use_both_sizes() -> None:
    d = _spec(params_billion=671, active_params_billion=37)
    d["storage"]["fsx_lustre_gib"] = 38400  # the checkpoint of all 671B (the rule says so)
    stack = resolve(parse_spec(d, "t"))
    (c,) = compare(stack, ["p5.48xlarge"], chips=8 * 64).candidates
    assert c.min_nodes == 20  # the memory fit of the total
    doc = json.loads(verdict_json(check_budget(stack)))
    assert doc["training"]["params_billion"] == 671
    assert doc["training"]["active_params_billion"] == 37


def test_active_parameters_do_not_recompile_neuron_graphs() -> None:
    """The pre-compile marker hashes what the graphs depend on; the active parameters only
    change the FLOPs accounting."""
    from accelstack.render.pods import precompile_key

    d = factories.preset("trn1-standalone")
    plain = resolve(parse_spec(d, "t"))
    d["workload"]["model"]["active_params_billion"] = 1.0
    moe = resolve(parse_spec(d, "t"))
    assert precompile_key(plain, plain.workload_pool) == precompile_key(moe, moe.workload_pool)
    d["workload"]["model"]["params_billion"] = 9.0
    other = resolve(parse_spec(d, "t"))
    assert precompile_key(other, other.workload_pool) != precompile_key(plain, plain.workload_pool)


# ---- expert parallelism: a degree of its own in the memory fit ------------------------


def test_expert_parallelism_shards_the_experts_across_its_group_only() -> None:
    """DeepSeek-V3's published layout (EP64 across 8 nodes, arXiv 2412.19437 sec. 3.2): the
    experts' weights and gradients over 64 chips, the optimizer state and the rest over all
    2,048; 36 p5 nodes at least (20 with every byte over every chip, as before)."""
    plain = estimate_training(CAT, "p5.48xlarge", 256, _dsv3())
    ep64 = estimate_training(CAT, "p5.48xlarge", 256, _dsv3(expert_parallel=64))
    assert (plain.min_nodes, ep64.min_nodes) == (20, 36)
    assert ep64.expert_parallel == 64
    # the throughput, and so the GPU-hours check, does not depend on the degree
    assert ep64.compute_hours == pytest.approx(plain.compute_hours)
    lo = ep64.chips * ep64._compute_hours(ep64.pick.high) / ep64.goodput_range[1]
    hi = ep64.chips * ep64._compute_hours(ep64.pick.low) / ep64.goodput_range[0]
    assert lo <= DSV3_GPU_HOURS <= hi
    # a wider group needs fewer nodes for the experts, but at least the nodes it spans
    assert estimate_training(CAT, "p5.48xlarge", 256, _dsv3(expert_parallel=256)).min_nodes == 32


def _ep_spec(ep: int, **model: Any) -> dict[str, Any]:
    d = _spec(**model)
    d["workload"]["expert_parallel"] = ep
    d["storage"]["fsx_lustre_gib"] = 38400
    return d


@pytest.mark.parametrize(
    ("ep", "model", "message"),
    [
        (64, {}, "64 needs workload.model.active_params_billion: a dense model has no experts"),
        (
            48,
            {"params_billion": 671, "active_params_billion": 37},
            "48 does not divide the workload pool's 512 chips (64 x p5.48xlarge): "
            "expert-parallel groups must tile the job (nearest: 32 or 64)",
        ),
        (
            16,
            {"params_billion": 671, "active_params_billion": 37},
            "expert_parallel 16 puts 148 GiB of expert state on each chip, over the 64 GiB "
            "usable per chip of p5.48xlarge: use at least 37",
        ),
    ],
)
def test_a_bad_expert_parallel_degree_is_refused_in_one_line(
    ep: int, model: dict[str, Any], message: str
) -> None:
    with pytest.raises(SpecError) as exc:  # spec rules, then the stack's (the memory fit)
        resolve(parse_spec(_ep_spec(ep, **model), "stacks/t.yaml"))
    text = str(exc.value).strip()
    assert len(text.splitlines()) == 1
    assert "workload.expert_parallel" in text and message in text


def test_expert_parallel_flows_into_resolve_compare_and_json() -> None:
    stack = resolve(parse_spec(_ep_spec(64, params_billion=671, active_params_billion=37), "t"))
    assert stack.workload_memory_fit is not None
    assert stack.workload_memory_fit.min_nodes == 36  # 64 p5 in the preset: it fits
    (c,) = compare(stack, ["p5.48xlarge"], chips=8 * 64).candidates
    assert c.min_nodes == 36
    # a type whose chips cannot hold the experts' shard at this degree is not a candidate
    (t,) = compare(stack, ["trn1.32xlarge"], chips=8 * 64).candidates
    assert t.reason is not None and "expert_parallel 64 puts 37 GiB" in t.reason
    doc = json.loads(verdict_json(check_budget(stack)))
    assert doc["training"]["expert_parallel"] == 64 and doc["training"]["min_nodes"] == 36
    # a pool smaller than the fit is refused by the memory-fit rule, naming the minimum
    d = _ep_spec(64, params_billion=671, active_params_billion=37)
    d["pools"][0]["nodes"] = 32
    with pytest.raises(SpecError) as exc:
        resolve(parse_spec(d, "t"))
    assert "use at least 36 nodes" in str(exc.value)
