"""FLOPs per token of a model shape: the counted convention and the executed work, one function
each, for every layer that needs them (the step model in accelstack/cost/step.py, `calibrate`'s
physical bound, the spec rule `calibration-mfu-band`). Arithmetic only; no catalog fact.

Counted (what MFU reports; PaLM, Chowdhery et al. 2022, appendix B): 6 x active parameters +
12 x attention layers x attention width x sequence per token, the full attention square.

Executed (`executed_flops`), per token:

* dense: 6 x (active parameters - routed expert parameters - the input embedding): the input
  embedding (vocabulary x hidden, when the shape names its vocabulary) is a lookup, no matrix
  product; its untied output head is a matrix product and stays in;
* routed experts: 6 x the routed expert parameters a token passes (top-k of each MoE layer);
* causal attention: half of the counted 12 L W S, since a causal kernel skips the blocks above
  the diagonal (FlashAttention's benchmark counts causal attention FLOPs as half of the full
  square: Dao-AILab/flash-attention@0469c727 benchmarks/benchmark_flash_attention.py:27-30);
* activation checkpointing (`RECOMPUTE`): `full` recomputes the forward pass (2 of the 6 per
  parameter, a third more of both), `selective` the attention core only (a third more of it).

Without a vocabulary, a top-k or a sequence, the term that needs it is left at its count (the
input embedding inside the dense 6N) or out (no attention): a lower bound of what ran, never
more. The step model's rates were fitted to records that name no vocabulary, so their dense
work is 6N as counted.
"""

from __future__ import annotations

from dataclasses import dataclass

#: (dense, attention) share of the step's FLOPs recomputed, by activation checkpointing
RECOMPUTE = {"none": (0.0, 0.0), "selective": (0.0, 1 / 3), "full": (1 / 3, 1 / 3)}
#: The share of the counted attention term a causal kernel executes (see the docstring)
CAUSAL_EXECUTED = 0.5


@dataclass(frozen=True)
class ModelShape:
    """What the FLOPs (and the step model) read of a model: a spec's workload.model, a
    record's shape or what a measurement ran."""

    params_billion: float
    active_params_billion: float | None = None
    layers: int | None = None
    hidden_size: int | None = None
    heads: int | None = None
    head_dim: int | None = None
    attention_layers: int | None = None
    experts: int | None = None
    experts_per_token: int | None = None
    expert_hidden_size: int | None = None
    moe_layers: int | None = None
    vocab: int | None = None  # the input embedding's rows (a lookup); None: not known

    @property
    def compute_params_billion(self) -> float:
        """Parameters a token passes through: the active ones of a mixture of experts."""
        return self.active_params_billion or self.params_billion

    @property
    def attention_width(self) -> int | None:
        """Query heads x head width (default: the hidden size)."""
        if self.heads and self.head_dim:
            return self.heads * self.head_dim
        return self.hidden_size

    @property
    def full_attention_layers(self) -> int | None:
        return self.attention_layers if self.attention_layers is not None else self.layers

    @property
    def is_moe(self) -> bool:
        return self.active_params_billion is not None

    @property
    def expert_shape_known(self) -> bool:
        """True when the expert term can be computed (experts, top-k, width, hidden)."""
        return bool(
            self.is_moe
            and self.experts
            and self.experts_per_token
            and self.expert_hidden_size
            and self.hidden_size
            and self.layers
        )

    @property
    def routed_expert_params(self) -> float:
        """Routed expert parameters a token passes (top-k of each MoE layer, SwiGLU)."""
        if not self.expert_shape_known:
            return 0.0
        layers = self.moe_layers if self.moe_layers is not None else self.layers
        return float(
            (layers or 0)
            * (self.experts_per_token or 0)
            * 3
            * (self.hidden_size or 0)
            * (self.expert_hidden_size or 0)
        )

    @property
    def input_embedding_params(self) -> float:
        """Parameters of the input embedding (a lookup): vocabulary x hidden, when known."""
        return float((self.vocab or 0) * (self.hidden_size or 0))

    def counted_flops(self, sequence: int | None) -> tuple[float, float]:
        """(dense, attention) counted FLOPs per token: 6N and 12 L W S (0 without the
        attention inputs)."""
        dense = 6.0 * self.compute_params_billion * 1e9
        layers, width = self.full_attention_layers, self.attention_width
        attention = 12.0 * layers * width * sequence if layers and width and sequence else 0.0
        return dense, attention


@dataclass(frozen=True)
class ExecutedFlops:
    """Executed FLOPs per token: dense GEMMs, routed expert GEMMs, causal attention."""

    dense: float
    expert: float
    attention: float

    @property
    def total(self) -> float:
        return self.dense + self.expert + self.attention


def executed_flops(
    shape: ModelShape, sequence: int | None, recompute: str = "none"
) -> ExecutedFlops:
    """The FLOPs a training step executes per token (the module docstring), with
    `recompute` (none | selective | full) activation checkpointing."""
    counted_dense, counted_attention = shape.counted_flops(sequence)
    re_dense, re_attention = RECOMPUTE.get(recompute, (0.0, 0.0))
    expert = 6.0 * shape.routed_expert_params
    lookup = 6.0 * shape.input_embedding_params
    dense = max(counted_dense - expert - lookup, 0.0)
    return ExecutedFlops(
        dense=dense * (1 + re_dense),
        expert=expert * (1 + re_dense),
        attention=counted_attention * CAUSAL_EXECUTED * (1 + re_attention),
    )


def counted_per_token(shape: ModelShape, sequence: int | None) -> float:
    """Counted FLOPs per token (6N + 12 L W S)."""
    return sum(shape.counted_flops(sequence))


def executed_share(shape: ModelShape, sequence: int | None, recompute: str = "none") -> float:
    """Executed / counted FLOPs per token: a counted MFU x this is the share of the peak the
    step executed at (at least)."""
    counted = counted_per_token(shape, sequence)
    return executed_flops(shape, sequence, recompute).total / counted if counted > 0 else 0.0
