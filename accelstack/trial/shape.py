"""The reference benchmark's model shape: a Llama-shaped decoder at the spec's size, and how
it is scaled down to fit one device (standard library only: `accelstack trial --reference`
copies this file beside the trial scripts as `accelstack_shape.py`; the benchmark,
`accelstack_reference.py`, imports it on the node).

The shape (Llama 3 conventions, meta-llama/llama-models@084b88e9 models/sku_list.py: 8B, 70B
and 405B all have head dimension 128 (`n_heads` = `dim` / 128), 8 KV heads and a vocabulary of
`VOCAB_SIZE = 128256`, untied input and output embeddings, a SwiGLU MLP):

    params = 2 V h                                  (input embedding + output head)
           + L (h (h + 2 kv d) + h h                (q, k, v, o projections)
                + 3 h f + 2 h)                      (SwiGLU MLP, two RMSNorms)
           + h                                      (final norm)

The spec gives params, L and h; the MLP width f is solved from them and rounded to a
multiple of 256 (32 below a width of 2,048), which gives back Llama 3's 14,336 / 28,672 /
53,248 for 8.03B / 70.6B / 405B. A mixture of experts (`active` given, with `experts` E and
`top_k` k) replaces the MLP by E experts of width f_e and a router (h E):
total - active = L (E - k) 3 h f_e.

Scaled to fit one device (`fit`), in this order, each step recorded in the shape's notes:
fewer layers (never below one), then fewer experts (never below top_k + 1), then a smaller
vocabulary (never below 1,024); hidden size, heads and KV heads are never changed. Memory
per device: the training state at 16 bytes per parameter (FP32 weights and gradients and
AdamW's two FP32 moments; autocast keeps the weights in FP32), the activations autograd
keeps for the backward pass (`activation_bytes`), the logits and a reserve.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

#: meta-llama/llama-models@084b88e9 models/sku_list.py (VOCAB_SIZE, n_kv_heads, dim / n_heads)
LLAMA3_VOCAB = 128256
LLAMA3_KV_HEADS = 8
LLAMA3_HEAD_DIM = 128
#: FP32 weights + FP32 gradients + AdamW's exp_avg and exp_avg_sq (FP32): bytes per parameter
STATE_BYTES_PER_PARAM = 16
#: Share of a device's memory the fit plans for, and a reserve for the runtime, the CUDA/Neuron
#: context and allocator fragmentation (the benchmark's own choice: a margin, not a fact)
USABLE_FRACTION = 0.85
RESERVE_BYTES = 2 * 2**30
MIN_VOCAB = 1024


class ShapeError(ValueError):
    """The spec's sizes do not make a Llama shape, or not even one layer fits."""


@dataclass(frozen=True)
class Shape:
    """A Llama-shaped decoder; `experts` 0 is dense. `notes`: how it was scaled."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    vocab: int
    ffn: int
    experts: int = 0
    top_k: int = 0
    notes: tuple[str, ...] = field(default=(), compare=False)

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def _attention(self) -> int:
        h, d = self.hidden, self.head_dim
        return h * (self.heads * d + 2 * self.kv_heads * d) + self.heads * d * h

    def _mlp(self, experts: int) -> int:
        return experts * 3 * self.hidden * self.ffn

    def layer_params(self) -> int:
        """One decoder layer: attention, MLP (all experts and the router), two norms."""
        router = self.hidden * self.experts if self.experts else 0
        return self._attention() + self._mlp(self.experts or 1) + router + 2 * self.hidden

    def params(self) -> int:
        return 2 * self.vocab * self.hidden + self.layers * self.layer_params() + self.hidden

    def active_params(self) -> int:
        """The parameters a token passes through (a mixture of experts: top_k experts)."""
        if not self.experts:
            return self.params()
        per_layer = self.layer_params() - self._mlp(self.experts - self.top_k)
        return 2 * self.vocab * self.hidden + self.layers * per_layer + self.hidden

    def as_record(self) -> dict[str, Any]:
        """The fields a trial record carries (accelstack/trial/runner.py SHAPE_FIELDS)."""
        out: dict[str, Any] = {
            "layers": self.layers,
            "hidden_size": self.hidden,
            "heads": self.heads,
            "kv_heads": self.kv_heads,
            "vocab": self.vocab,
            "ffn_hidden": self.ffn,
        }
        if self.experts:
            out.update(experts=self.experts, top_k=self.top_k)
        return out


def _round(width: float, hidden: int) -> int:
    multiple = 256 if hidden >= 2048 else 32
    return max(multiple, round(width / multiple) * multiple)


def _heads(hidden: int, heads: int | None, kv_heads: int | None) -> tuple[int, int]:
    heads = heads or max(1, hidden // LLAMA3_HEAD_DIM)
    kv = kv_heads or min(LLAMA3_KV_HEADS, heads)
    if hidden % heads or heads % kv:
        raise ShapeError(
            f"hidden size {hidden} with {heads} heads and {kv} KV heads: the hidden size must "
            "divide by the heads and the heads by the KV heads (give --heads / --kv-heads)"
        )
    return heads, kv


def llama_shape(
    params_billion: float,
    layers: int,
    hidden: int,
    *,
    heads: int | None = None,
    kv_heads: int | None = None,
    vocab: int | None = None,
    ffn: int | None = None,
    active_params_billion: float | None = None,
    experts: int | None = None,
    top_k: int | None = None,
) -> Shape:
    """The Llama shape of a model of `params_billion` with `layers` x `hidden` (the MLP width
    solved from the size unless `ffn` is given; a mixture of experts from `active` and E, k)."""
    heads, kv = _heads(hidden, heads, kv_heads)
    base = Shape(layers, hidden, heads, kv, vocab or LLAMA3_VOCAB, ffn or 1)
    total = params_billion * 1e9
    if active_params_billion is not None:
        return _moe_shape(base, total, active_params_billion * 1e9, experts, top_k, ffn)
    if ffn is None:
        fixed = base.params() - layers * base._mlp(1)
        width = (total - fixed) / (layers * 3 * hidden)
        if width <= 0:
            raise ShapeError(_no_room(params_billion, base))
        base = replace(base, ffn=_round(width, hidden))
    return base


def _moe_shape(
    base: Shape,
    total: float,
    active: float,
    experts: int | None,
    top_k: int | None,
    ffn: int | None,
) -> Shape:
    if not experts or not top_k or not 0 < top_k < experts:
        raise ShapeError(
            "a mixture of experts needs its expert count and top-k (--experts E --top-k K, "
            "0 < K < E): the spec gives only its total and active sizes"
        )
    if ffn is None:
        width = (total - active) / (base.layers * (experts - top_k) * 3 * base.hidden)
        if width <= 0:
            raise ShapeError("model.active_params_billion must be below params_billion")
        ffn = _round(width, base.hidden)
    return replace(base, ffn=ffn, experts=experts, top_k=top_k)


def _no_room(params_billion: float, s: Shape) -> str:
    return (
        f"{params_billion:g}B with {s.layers} layers of hidden size {s.hidden} leaves no room "
        f"for an MLP at vocabulary {s.vocab:,}, {s.heads} heads and {s.kv_heads} KV heads: "
        "check model.params_billion / layers / hidden_size, or give --ffn-hidden"
    )


def activation_bytes(s: Shape, tokens: int, capacity_factor: float = 1.25) -> int:
    """Bytes autograd keeps for one layer's backward pass over `tokens` tokens, counted from
    the benchmark's own layer (accelstack/trial/reference.py) under BF16 autocast: the FP32
    residual stream and RMSNorm inputs (4 B), the BF16 projection inputs and outputs, the
    attention kernel's q, k, v and output (2 B), the SwiGLU MLP's three intermediates; x 1.25
    for the casts and temporaries autocast adds (a margin)."""
    h, kv = s.hidden, s.kv_heads * s.head_dim
    attention = 4 * h + 2 * h + 2 * (h + 2 * kv) + 2 * (h + kv) + 2 * h
    if s.experts:
        routed = capacity_factor * s.top_k
        mlp = 4 * h + 2 * h + 4 * s.experts + routed * (2 * h + 8 * s.ffn) + 2 * s.top_k * h
    else:
        mlp = 4 * h + 2 * h + 8 * s.ffn
    return math.ceil(1.25 * tokens * (attention + mlp))


def memory_bytes(s: Shape, tokens: int, checkpointing: bool) -> int:
    """Training state + activations + logits for one micro-batch of `tokens` tokens."""
    state = STATE_BYTES_PER_PARAM * s.params()
    per_layer = activation_bytes(s, tokens)
    # checkpointing keeps each layer's FP32 input and recomputes one layer at a time
    acts = s.layers * 4 * tokens * s.hidden + per_layer if checkpointing else s.layers * per_layer
    logits = tokens * s.vocab * (2 + 4 + 4)  # BF16 logits, their FP32 copy and its gradient
    return state + acts + logits + 4 * tokens * s.hidden


def fit(
    s: Shape,
    device_bytes: int,
    tokens: int,
    *,
    checkpointing: bool = False,
    max_layers: int | None = None,
) -> Shape:
    """`s` with as many of its layers as one device holds (at most `max_layers`), then fewer
    experts, then a smaller vocabulary; `notes` say what changed. ShapeError: not even one
    layer of the smallest allowed shape fits."""
    budget = device_bytes * USABLE_FRACTION - RESERVE_BYTES
    want = min(s.layers, max_layers or s.layers)
    notes = [] if want == s.layers else [f"layers capped at {want} of {s.layers} (--max-layers)"]
    for cand in _candidates(replace(s, layers=1)):
        per_layer = memory_bytes(replace(cand, layers=2), tokens, checkpointing) - memory_bytes(
            cand, tokens, checkpointing
        )
        room = budget - memory_bytes(cand, tokens, checkpointing)
        if room < 0:
            continue
        layers = min(want, 1 + int(room // per_layer))
        if layers < s.layers and not notes:
            notes.append(f"layers {layers} of {s.layers} (fewer layers to fit one device)")
        notes += _changes(s, cand)
        return replace(cand, layers=layers, notes=(*notes, _budget_note(device_bytes)))
    raise ShapeError(
        f"not even one layer of this shape fits one device ({device_bytes / 2**30:,.1f} GiB at "
        f"{tokens:,} tokens per micro-batch): shorten --sequence-lengths or "
        "--micro-batch-tokens, or use --checkpointing"
    )


def _candidates(one: Shape) -> list[Shape]:
    """One-layer shapes from the spec's down: fewer experts (halving, down to top_k + 1),
    then a smaller vocabulary (halving, down to MIN_VOCAB)."""
    out = [one]
    cur = one
    while cur.experts and cur.experts > cur.top_k + 1:
        cur = replace(cur, experts=max(cur.top_k + 1, cur.experts // 2))
        out.append(cur)
    while cur.vocab > MIN_VOCAB:
        cur = replace(cur, vocab=max(MIN_VOCAB, cur.vocab // 2))
        out.append(cur)
    return out


def _changes(spec: Shape, ran: Shape) -> list[str]:
    notes = []
    if ran.experts != spec.experts:
        notes.append(f"experts {ran.experts} of {spec.experts} (to fit one device)")
    if ran.vocab != spec.vocab:
        notes.append(f"vocabulary {ran.vocab:,} of {spec.vocab:,} (to fit one device)")
    return notes


def _budget_note(device_bytes: int) -> str:
    return (
        f"planned for {device_bytes / 2**30:,.1f} GiB per device x {USABLE_FRACTION:g} less "
        f"{RESERVE_BYTES / 2**30:g} GiB"
    )
