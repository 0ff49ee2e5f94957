"""The step model: a training step's time per token from two rates and explicit inputs.

docs/cost.md, "The step model", has the derivation. Per token and chip (a chip's share of the
job's tokens), the executed work (accelstack.catalog.flops.executed_flops, the one function
`calibrate` and the spec rules bound a measurement with) is

* dense: 6 x (active parameters - routed expert parameters) FLOPs at the dense (GEMM) rate,
  a fraction of the precision's peak (less the input embedding, a lookup, when the shape
  names its vocabulary: a measurement's; specs and records name none);
* routed experts: 6 x (MoE layers x top-k x 3 x hidden x expert width) FLOPs at the dense
  rate x M / (M + half_rate_tokens), M the tokens one expert gets per micro-batch;
* causal attention: 6 x attention layers x attention width x sequence FLOPs (half of the
  counted 12 L H S: a causal kernel skips the masked half) at the attention rate, a fraction
  of the BF16 peak at every precision (flash attention runs in BF16 under FP8 training);
* activation checkpointing: `full` recomputes the forward (a third more of each), `selective`
  the attention core only;
* tensor parallelism: 16 x layers x hidden x (TP - 1) bytes over the chip link at the
  tensor-parallel efficiency; the experts' all-to-all: 8 x top-k x hidden bytes per MoE layer,
  the share leaving the chip split between the chip link (inside the node) and EFA (across
  nodes), at the all-to-all efficiency;
* a pipeline of PP stages with VP virtual stages and m micro-batches per step waits
  (PP - 1) / (VP x m) of its step (the bubble);
* context parallelism of degree CP keeps (1 - loss)^log2(CP) of the attention rate (the ring
  exchange of keys and values), `loss` fitted per stack.

The counted FLOPs, what MFU reports, stay 6 x active parameters + 12 x layers x width x
sequence (PaLM appendix B, the full attention square); they are never the executed ones.
Context parallelism splits a sequence's tokens over ranks but not its attention FLOPs per
token; it enters through the attention rate's loss, the tokens per expert and the micro-batches. This module holds no
catalog facts: the rates come from throughput.yaml through accelstack.cost.estimate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from accelstack.catalog.flops import ModelShape as ModelShape
from accelstack.catalog.flops import executed_flops


@dataclass(frozen=True)
class Layout:
    """How the step runs: parallel degrees, micro-batch, activation checkpointing."""

    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    virtual_pipeline: int = 1
    context_parallel: int = 1
    expert_parallel: int | None = None
    micro_batch: int = 1
    global_batch: float | None = None  # sequences per step (the bubble's micro-batches)
    activation_checkpointing: str = "none"

    def microbatches(self, chips: int) -> float | None:
        """Micro-batches each pipeline runs per step (None: the batch is not known)."""
        if not self.global_batch:
            return None
        dp = chips / (self.tensor_parallel * self.pipeline_parallel * self.context_parallel)
        return max(1.0, self.global_batch / (max(dp, 1.0) * self.micro_batch))

    def bubble(self, chips: int) -> float:
        """Step time / busy time of the pipeline: 1 + (PP - 1) / (VP x micro-batches)."""
        m = self.microbatches(chips)
        if self.pipeline_parallel <= 1 or m is None:
            return 1.0
        return 1.0 + (self.pipeline_parallel - 1) / (self.virtual_pipeline * m)


@dataclass(frozen=True)
class Links:
    """Bandwidths per chip, bytes/s: the chip link (None: unpublished) and the network."""

    chip: float | None
    network: float
    chips_per_node: int


@dataclass(frozen=True)
class StepWork:
    """Executed work per token and chip, and what moves over the links."""

    counted: float
    dense: float
    expert: float
    attention: float
    tokens_per_expert: float | None
    all_to_all: tuple[float, float]  # bytes inside the node, across nodes
    tensor_parallel: float  # bytes over the chip link
    bubble: float
    context_doublings: float = 0.0  # log2 of the context-parallel degree


def step_work(
    shape: ModelShape, sequence: int | None, layout: Layout, chips: int, chips_per_node: int
) -> StepWork:
    """The executed work of one token's share on one chip."""
    executed = executed_flops(shape, sequence, layout.activation_checkpointing)
    tp_bytes = 0.0
    if layout.tensor_parallel > 1 and shape.layers and shape.hidden_size:
        tp_bytes = 16.0 * shape.layers * shape.hidden_size * (layout.tensor_parallel - 1)
    tokens, a2a = _expert_traffic(shape, sequence, layout, chips_per_node)
    return StepWork(
        counted=sum(shape.counted_flops(sequence)),
        dense=executed.dense,
        expert=executed.expert,
        attention=executed.attention,
        tokens_per_expert=tokens,
        all_to_all=a2a,
        tensor_parallel=tp_bytes,
        bubble=layout.bubble(chips),
        context_doublings=math.log2(max(layout.context_parallel, 1)),
    )


def default_expert_parallel(shape: ModelShape, chips_per_node: int) -> int:
    """Expert parallelism when none is given: the experts over one node's chips."""
    return max(1, min(shape.experts or 1, chips_per_node))


def _expert_traffic(
    shape: ModelShape, sequence: int | None, layout: Layout, chips_per_node: int
) -> tuple[float | None, tuple[float, float]]:
    """(tokens per expert per micro-batch, all-to-all bytes inside / across nodes)."""
    if not shape.expert_shape_known or not sequence:
        return None, (0.0, 0.0)
    ep = layout.expert_parallel or default_expert_parallel(shape, chips_per_node)
    experts, k = shape.experts or 1, shape.experts_per_token or 1
    local = layout.micro_batch * sequence / (layout.tensor_parallel * layout.context_parallel)
    layers = shape.moe_layers if shape.moe_layers is not None else shape.layers
    volume = 8.0 * k * (shape.hidden_size or 0) * (layers or 0)
    inside = (min(ep, chips_per_node) - 1) / ep
    across = max(0, ep - chips_per_node) / ep
    return local * k * ep / experts, (volume * inside, volume * across)


@dataclass(frozen=True)
class Rates:
    """The rates a step runs at: dense (of the precision's peak), attention (of the BF16
    peak), the link efficiencies and the expert GEMM's half-rate tokens (None: no term)."""

    dense: float
    attention: float
    tensor_parallel_efficiency: float | None = None
    half_rate_tokens: float | None = None
    all_to_all_efficiency: float | None = None
    #: the attention rate's loss per doubling of the context-parallel degree (ring exchange)
    context_parallel_loss: float = 0.0


def seconds_per_token(
    work: StepWork, rates: Rates, peak: float, bf16_peak: float, links: Links
) -> float:
    """Time of one token's share on one chip (peaks in FLOP/s, links in bytes/s)."""
    dense = max(rates.dense, 1e-3)
    kept = float((1.0 - min(rates.context_parallel_loss, 0.9)) ** work.context_doublings)
    t = work.dense / (dense * peak) + work.attention / (
        max(rates.attention * kept, 1e-3) * bf16_peak
    )
    if work.expert:
        m = work.tokens_per_expert
        gemm = (
            1.0 if m is None or rates.half_rate_tokens is None else m / (m + rates.half_rate_tokens)
        )
        t += work.expert / (dense * max(gemm, 1e-3) * peak)
    if rates.all_to_all_efficiency and links.chip and any(work.all_to_all):
        inside, across = work.all_to_all
        t += (inside / links.chip + across / links.network) / rates.all_to_all_efficiency
    if rates.tensor_parallel_efficiency and links.chip and work.tensor_parallel:
        t += work.tensor_parallel / (links.chip * rates.tensor_parallel_efficiency)
    return t * work.bubble
