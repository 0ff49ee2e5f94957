"""The step model (accelstack/cost/step.py): counted FLOPs kept apart from executed ones, a
dense and an attention rate per stack, activation checkpointing, context, tensor and
pipeline parallelism as inputs, and a measurement carried through it to another shape."""

from __future__ import annotations

from typing import Any

import pytest

from accelstack.catalog import load_catalog
from accelstack.cost.estimate import estimate_training
from accelstack.cost.mfu import published_tokens, record_estimate
from accelstack.cost.rates import carry_mfu, default_layout, links_for, rates_for, shape_of
from accelstack.cost.step import Layout, Links, ModelShape, Rates, seconds_per_token, step_work
from accelstack.spec import Workload

CAT = load_catalog()
BY_ID = {r.id: r for r in CAT.records}
L8B = ModelShape(params_billion=8.03, layers=32, hidden_size=4096)


def _wl(seq: int, precision: str = "bf16", stack: str | None = None, **extra: Any) -> Workload:
    return Workload.model_validate(
        {
            "model": {"params_billion": 8.03, "layers": 32, "hidden_size": 4096},
            "tokens_billion": 100,
            "sequence_length": seq,
            "precision": precision,
            "global_batch_size": max(1, 1_048_576 // seq),
            "stack": stack,
            "entrypoint": "t.py",
            **extra,
        }
    )


def _ref(seq: int, stack: str | None, precision: str = "bf16", **extra: Any) -> float:
    est = estimate_training(CAT, "p5.48xlarge", 1, _wl(seq, precision, stack, **extra))
    assert est.pick.reference is not None
    return est.pick.reference


def test_counted_and_executed_flops_are_kept_apart() -> None:
    """Counted: 6N + 12 L H S (what MFU reports); executed causal attention: half of it."""
    w = step_work(L8B, 8192, Layout(), 8, 8)
    attention = 12 * 32 * 4096 * 8192
    assert w.counted == pytest.approx(6 * 8.03e9 + attention)
    assert w.dense == pytest.approx(6 * 8.03e9) and w.attention == pytest.approx(attention / 2)
    full = step_work(L8B, 8192, Layout(activation_checkpointing="full"), 8, 8)
    assert (full.dense, full.attention) == pytest.approx((w.dense * 4 / 3, w.attention * 4 / 3))
    sel = step_work(L8B, 8192, Layout(activation_checkpointing="selective"), 8, 8)
    assert (sel.dense, sel.attention) == pytest.approx((w.dense, w.attention * 4 / 3))
    assert full.counted == w.counted  # recompute is executed, never counted
    # context parallelism splits the tokens, not a token's attention FLOPs
    assert step_work(L8B, 8192, Layout(context_parallel=4), 8, 8).attention == w.attention


def test_counted_mfu_rises_with_sequence_where_attention_runs_above_half_the_dense_rate() -> None:
    """One global exponent made MFU fall ~20% from 8K to 32K on every stack. Now: a stack whose
    attention kernel runs above half its dense rate (torchtitan's fitted rates) gains counted
    MFU with sequence (+10-20% from 4K to 32K, as SDPA on H100 measures), one below it
    (llm-foundry's 2023 Triton kernel with checkpointing) loses it, as its table shows."""
    curve = CAT.mfu_curve("h100", "bf16")
    step = CAT.step_family("h100")
    for stack, rises in (("torchtitan", True), ("llm-foundry", False)):
        assert (step.attention_stacks[stack] > curve.rate(8.03, stack) / 2) == rises
        gain = _ref(32768, stack) / _ref(4096, stack)
        assert (gain > 1.05) if rises else (gain < 0.9), (stack, gain)
    assert 1.05 < _ref(32768, "torchtitan") / _ref(4096, "torchtitan") < 1.25


def test_rising_or_falling_is_the_rates_ratio() -> None:
    """Counted MFU rises with sequence exactly when attention runs above half the dense rate."""
    peaks = (989e12, 989e12)
    links = Links(chip=None, network=1e9, chips_per_node=8)
    for attention, up in ((0.4, True), (0.2, False)):
        short, long = (step_work(L8B, s, Layout(), 8, 8) for s in (4096, 65536))
        rates = Rates(dense=0.6, attention=attention)
        mfu = [
            w.counted / seconds_per_token(w, rates, *peaks, links) / 989e12 for w in (short, long)
        ]
        assert (mfu[1] > mfu[0]) == up


def test_fp8_attention_runs_at_the_bf16_rate_once() -> None:
    """FP8 long-sequence rows lost twice before (the BF16-attention share and the exponent):
    now only the linears speed up, attention keeps its BF16 time per token."""
    layout = default_layout(CAT, "p5.48xlarge", _wl(131072))
    work = step_work(shape_of(_wl(131072)), 131072, layout, 8, 8)
    links = links_for(CAT, "p5.48xlarge")
    t = {}
    for precision, peak in (("bf16", 989e12), ("fp8", 1979e12)):
        rates = rates_for(CAT, "h100", precision, 8.03, "nemo")
        t[precision] = seconds_per_token(work, rates, peak, 989e12, links)
        attention_only = Rates(dense=1e9, attention=rates.attention)
        t[precision + "-attn"] = seconds_per_token(work, attention_only, peak, 989e12, links)
    assert t["bf16-attn"] == pytest.approx(t["fp8-attn"], rel=1e-6)
    assert t["fp8"] < t["bf16"]  # the linears at the FP8 rate


@pytest.mark.parametrize(
    "rid",
    [
        "nemo-24.03-llama2-7b-h100-seq4096-cp1-fp8",
        "nemo-24.03-llama2-7b-h100-seq32768-cp2-fp8",
        "nemo-24.03-llama2-7b-h100-seq262144-cp8-fp8",
        "nemo-24.03-llama2-7b-h100-seq524288-cp16-fp8",
    ],
)
def test_nemo_long_sequence_fp8_rows_are_reproduced(rid: str) -> None:
    """NVIDIA's Llama 2 7B FP8 table at 4K-512K tokens with context parallelism: within 10%
    (the exponent and the double FP8 penalty put 512K at a fraction of it before)."""
    rec = BY_ID[rid]
    est = record_estimate(CAT, rec)
    ratio = est.steady_state_tokens_per_second_per_chip / published_tokens(CAT, rec)
    assert ratio == pytest.approx(1.0, abs=0.10)


def test_context_parallelism_costs_what_the_stack_shows() -> None:
    step = CAT.step_family("h100")
    nemo, titan = (step.context_parallel_loss_stacks[s] for s in ("nemo", "torchtitan"))
    assert nemo < 0.05 < titan  # NeMo's CP32 rows hold their rate; torchtitan's CP8 do not
    w = _wl(131072, "fp8", "torchtitan")
    plain = estimate_training(CAT, "p5.48xlarge", 1, w)
    cp = estimate_training(CAT, "p5.48xlarge", 1, w.model_copy(update={"context_parallel": 8}))
    assert cp.mfu < plain.mfu


def test_default_layout_and_the_tensor_parallel_term() -> None:
    def tp(params: float) -> int:
        wl = Workload.model_validate(
            {"model": {"params_billion": params}, "tokens_billion": 1, "entrypoint": "t.py"}
        )
        return default_layout(CAT, "p5.48xlarge", wl).tensor_parallel

    assert (tp(8.03), tp(15), tp(70), tp(405)) == (1, 2, 4, 8)
    wl = _wl(8192, stack="torchtitan")
    one = estimate_training(CAT, "p5.48xlarge", 8, wl)
    eight = estimate_training(CAT, "p5.48xlarge", 8, wl, layout=Layout(tensor_parallel=8))
    assert eight.mfu < one.mfu * 0.9  # torchtitan 8B at TP8 lost ~30% (2025-06 rows)
    assert "TP8" in eight.mfu_source


def test_the_pipeline_bubble() -> None:
    layout = Layout(pipeline_parallel=8, micro_batch=1, global_batch=64)
    assert layout.bubble(64) == pytest.approx(1 + 7 / 8)  # 8 micro-batches, 1F1B
    inter = Layout(pipeline_parallel=8, virtual_pipeline=2, global_batch=64)
    assert inter.bubble(64) == pytest.approx(1 + 7 / 16)
    assert Layout(pipeline_parallel=8).bubble(64) == 1.0  # batch unknown: no bubble priced


def test_a_measurement_is_carried_through_the_step_model() -> None:
    """What the lead's calibrate calls: an MFU measured at 4K on one node carried to 32K on
    16 nodes moves by the model's own ratio, the node term included; the same point is the
    identity."""
    shape = shape_of(_wl(4096))
    at = (shape, 4096, Layout(global_batch=256), 8)
    assert carry_mfu(CAT, "p5.48xlarge", "bf16", 0.5, at, at) == pytest.approx(0.5)
    there = (shape, 32768, Layout(global_batch=256), 128)
    carried = carry_mfu(CAT, "p5.48xlarge", "bf16", 0.5, at, there, stack="torchtitan")
    model = _ref(32768, "torchtitan") / _ref(4096, "torchtitan")
    node = CAT.throughput.scaling.efficiency(16, 256 * 32768 / 128)
    assert carried == pytest.approx(0.5 * model * node, rel=0.02)
