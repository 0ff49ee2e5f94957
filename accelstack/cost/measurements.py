"""Measurements as evidence: which of the spec's calibration entries a workload uses, and how
it is carried to the workload through the two-rate step model. The seam between `accelstack
calibrate` (accelstack/cost/calibrate.py) and the run model (accelstack/cost/estimate.py):
estimate calls `select` and `carry`.

Keys: instance type, precision, model (its size within 1%, or the spec model a scaled-down
reference run stands for: `MeasuredTarget`), sequence per rank, tokens per chip and training
stack. Measurements at different sequence lengths are kept apart, never averaged: `select`
takes the one at the workload's sequence per rank (an entry that recorded none matches any),
else the nearest length measured (in doublings), the workload's stack first, then the newest.

`carry` moves the measured MFU from what ran to the workload through the step model
(accelstack.cost.rates.carry_mfu): x the model's MFU of the workload's shape, sequence,
layout and chips / the model's MFU of what ran (its recorded shape, sequence, chips, one
sequence per micro-batch, activation checkpointing; the layout below). The dense and
attention rates move the mix: a measurement at 4K carried to 32K gains the attention work at
the attention rate, a scaled-down run (1 of 80 layers, whose input embedding is a lookup)
gains the layers it did not run at the rates of the spec's model. Where the measurement's
stack has no rates of its own, every stack's rates (and the centre) span the carried value.

The layout that ran: tensor parallelism 1 for the shipped reference benchmark (it runs
DistributedDataParallel), else the workload's degree capped at the chips that ran; no pipeline
and no context parallelism (the sequence per rank is what the record names).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from accelstack.catalog import Catalog
from accelstack.catalog.flops import ModelShape
from accelstack.cost.rates import At, carry_mfu, shape_of, stack_candidates
from accelstack.cost.step import Layout
from accelstack.spec import Measured, MeasuredShape, Workload

SIZE_TOLERANCE = 0.01  # a measurement's model is the spec's within 1% of its size
#: The training stack the shipped reference benchmark records (accelstack/trial/reference.py
#: TRAINING_STACK; tests/cost/test_measurements.py holds the two equal): data parallel only.
REFERENCE_STACK = "accelstack-reference"


def _near(a: float, b: float) -> bool:
    return abs(a - b) <= SIZE_TOLERANCE * b


def same_model(m: Measured, workload: Workload) -> bool:
    """The measurement ran the workload's model, or a scaled-down run of it (its target)."""
    model = workload.model
    if _near(m.params_billion, model.params_billion):
        return True
    t = m.target
    if t is None or not _near(t.params_billion, model.params_billion):
        return False
    return all(
        want is None or got is None or want == got
        for want, got in ((model.layers, t.layers), (model.hidden_size, t.hidden_size))
    )


def by_sequence(
    measured: Sequence[Measured], instance_type: str, workload: Workload
) -> dict[int | None, list[Measured]]:
    """Every measurement of this instance type, precision and model, per sequence length per
    rank it ran at (None: not recorded), newest first."""
    out: dict[int | None, list[Measured]] = {}
    for m in sorted(measured, key=lambda m: m.date, reverse=True):
        here = m.instance_type == instance_type and m.precision == workload.precision
        if here and same_model(m, workload):
            out.setdefault(m.sequence_length, []).append(m)
    return out


def sequence_per_rank(workload: Workload) -> int | None:
    seq = workload.sequence_length
    return None if seq is None else math.ceil(seq / (workload.context_parallel or 1))


def _doublings(a: int | None, b: int | None) -> float:
    """|log2(a / b)|; 0 when either is not known."""
    return abs(math.log2(a / b)) if a and b else 0.0


def select(measured: Sequence[Measured], instance_type: str, workload: Workload) -> Measured | None:
    """The measurement `price` uses: at the workload's sequence per rank (or one that
    recorded no length; a workload without a length takes any), else at the nearest length
    measured (fewest doublings away; the longer of two as near); the workload's training
    stack first, then the newest."""
    groups = by_sequence(measured, instance_type, workload)
    if not groups:
        return None
    seq = sequence_per_rank(workload)
    away = {length: _doublings(length, seq) for length in groups}
    nearest = min(away.values())
    lengths = [k for k, d in away.items() if d == nearest]
    longest = max((k for k in lengths if k is not None), default=None)
    hits = [m for k in lengths if k is None or k == longest for m in groups[k]]
    own = [m for m in hits if workload.stack is not None and m.stack == workload.stack]
    return max(own or hits, key=lambda m: m.date)


def ran_shape(m: Measured, workload: Workload) -> ModelShape:
    """The step model's view of what ran: the recorded shape (a mixture of experts' width
    from `ffn_hidden`), else the spec's model (a measurement of it that recorded no shape)."""
    s = m.shape
    if s is None:
        return replace(shape_of(workload), params_billion=m.params_billion)
    moe = bool(s.experts and s.top_k)
    return ModelShape(
        params_billion=m.params_billion,
        active_params_billion=s.active_params_billion,
        layers=s.layers,
        hidden_size=s.hidden_size,
        experts=s.experts if moe else None,
        experts_per_token=s.top_k if moe else None,
        expert_hidden_size=s.ffn_hidden if moe else None,
        vocab=s.vocab,
    )


def target_shape(m: Measured, workload: Workload) -> ModelShape:
    """The spec's model, with the vocabulary the measurement recorded (its target's, else
    what ran), so the input-embedding lookup is treated alike at both ends."""
    t: MeasuredShape | None = m.target or m.shape
    return replace(shape_of(workload), vocab=t.vocab if t is not None else None)


def ran_layout(m: Measured, target: Layout, chips: int) -> Layout:
    """The layout that ran (the module docstring)."""
    tp = 1 if m.stack == REFERENCE_STACK else max(1, min(target.tensor_parallel, chips))
    seq = m.sequence_length
    batch = m.tokens_per_chip * chips / seq if m.tokens_per_chip and seq else None
    return Layout(
        tensor_parallel=tp,
        global_batch=batch,
        activation_checkpointing="full" if m.activation_checkpointing else "none",
    )


@dataclass(frozen=True)
class Carried:
    """A measurement carried to the workload: the MFU, the low and high factors the stacks'
    rates span around it, how far it was carried and a note for the source line."""

    mfu: float
    span: tuple[float, float]
    sequence_doublings: float
    note: str


def _ends(
    catalog: Catalog, m: Measured, workload: Workload, layout: Layout, chips: int
) -> tuple[At, At]:
    per_node = catalog.instance(m.instance_type).chips
    ran_chips = m.chips or (m.nodes * per_node if m.nodes else chips)
    measured: At = (
        ran_shape(m, workload),
        m.sequence_length or workload.sequence_length,
        ran_layout(m, layout, ran_chips),
        ran_chips,
    )
    return measured, (target_shape(m, workload), workload.sequence_length, layout, chips)


def carry(
    catalog: Catalog,
    m: Measured,
    instance_type: str,
    workload: Workload,
    layout: Layout,
    chips: int,
) -> Carried:
    """The measurement carried to `workload` at `layout` on `chips` chips (the module
    docstring), with the span of every stack's rates where the measurement's stack has none."""
    measured, target = _ends(catalog, m, workload, layout, chips)
    family = catalog.instance(instance_type).family
    curve = catalog.mfu_curve(family, m.precision)
    step = catalog.step_family(family)
    named = m.stack if m.stack in curve.stacks else None

    def at(stack: str | None, parts: tuple[str | None, str | None] | None = None) -> float:
        args = (catalog, instance_type, m.precision, m.mfu, measured, target)
        return carry_mfu(*args, stack=stack, parts=parts)

    mfu = at(named)
    spanned = [at(d, (a, c)) for d, a, c in stack_candidates(curve, step, m.stack)]
    span = (min(spanned) / mfu, max(spanned) / mfu)
    seq_doublings = _doublings(measured[1], target[1])
    return Carried(mfu, span, seq_doublings, _note(m, workload, measured, target, mfu))


def layout_label(layout: Layout) -> str:
    """ "TP4 PP2 CP2, full recompute": the parallel degrees above 1 (TP always)."""
    parts = [f"TP{layout.tensor_parallel}"]
    parts += [f"PP{layout.pipeline_parallel}"] if layout.pipeline_parallel > 1 else []
    parts += [f"CP{layout.context_parallel}"] if layout.context_parallel > 1 else []
    ckpt = layout.activation_checkpointing
    return " ".join(parts) + (f", {ckpt} recompute" if ckpt != "none" else "")


def _note(m: Measured, workload: Workload, measured: At, target: At, mfu: float) -> str:
    """What the carry moved, for the source line ('' when nothing did)."""
    moved = []
    (ran, seq_ran, ran_layout, chips_ran), (spec, seq, layout, chips) = measured, target
    if not _near(m.params_billion, workload.model.params_billion):
        moved.append(
            f"{ran.layers} of {spec.layers} layers ({m.params_billion:g}B) -> the spec's "
            f"{workload.model.params_billion:g}B"
        )
    if seq_ran != seq and seq_ran and seq:
        moved.append(f"{seq_ran:,} -> {seq:,} tokens")
    if chips_ran != chips:
        moved.append(f"{chips_ran} -> {chips} chips")
    per_chip = [
        round(lay.global_batch * n / c) if lay.global_batch and n else None
        for lay, n, c in ((ran_layout, seq_ran, chips_ran), (layout, seq, chips))
    ]
    if None not in per_chip and per_chip[0] != per_chip[1]:
        moved.append(f"per-chip batch {per_chip[0]:,} -> {per_chip[1]:,} tokens")
    if layout_label(ran_layout) != layout_label(layout):
        moved.append(f"{layout_label(ran_layout)} -> {layout_label(layout)}")
    if not moved:
        return ""
    return f"; carried through the step model (x{mfu / m.mfu:.3f}): {', '.join(moved)}"
