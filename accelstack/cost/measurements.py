"""Measurements as evidence: which of the spec's calibration entries a workload uses, and a
measurement carried to the spec's model. The seam between `accelstack calibrate`
(accelstack/cost/calibrate.py) and the run model (accelstack/cost/estimate.py): estimate calls
`select` and `carry`; nothing here imports the model, which hands in its FLOPs convention.

Keys: instance type, precision, model (its size within 1%, or the spec model a scaled-down
reference run stands for: `MeasuredTarget`), sequence per rank, tokens per chip and training
stack. Measurements at different sequence lengths are kept apart, never averaged: `select`
takes the one at the workload's sequence per rank (an entry that recorded none matches any),
and `by_sequence` hands every length to whoever carries a measurement across lengths.

`carry` holds the executed FLOP rate of what ran (one rate for dense and attention FLOPs) and
re-expresses it in the counted convention for the spec's model at the same sequence: a
reference run of 1 of 80 layers executes no lookup FLOPs for its large input embedding, which
the counted 6N credits; held at its executed rate, the spec's full model gets the MFU its own
FLOP mix implies.

Executed FLOPs per token (`executed_per_token`, a lower bound of what a step computes): the
dense 6 x N without the input embedding (a lookup, no matrix product), and half of the
counted attention term 12 L H S, since a causal kernel skips the blocks above the diagonal
(FlashAttention's benchmark counts causal attention FLOPs as half of the full square:
Dao-AILab/flash-attention@0469c727 benchmarks/benchmark_flash_attention.py:27-30); activation
checkpointing adds one more forward pass (2 N' + 2 L H S).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from accelstack.spec import Measured, MeasuredShape, Workload

#: A causal kernel executes this share of the counted attention term (see the docstring)
CAUSAL_EXECUTED = 0.5
SIZE_TOLERANCE = 0.01  # a measurement's model is the spec's within 1% of its size
#: (params_billion, layers, hidden_size, sequence) -> counted FLOPs per token (estimate's)
CountedFlops = Callable[[float, int | None, int | None, int | None], float]


def executed_per_token(
    params_billion: float,
    layers: int | None,
    hidden: int | None,
    sequence: int | None,
    vocab: int | None = None,
    checkpointing: bool = False,
) -> float:
    """FLOPs a training step executes per token, at least (the docstring's lower bound)."""
    dense = params_billion * 1e9 - (vocab or 0) * (hidden or 0)
    attention = 0.0
    if layers and hidden and sequence:
        attention = 12.0 * layers * hidden * sequence * CAUSAL_EXECUTED
    passes = 4 / 3 if checkpointing else 1.0  # forward again: 2 of the 6 per parameter
    return passes * (6.0 * max(dense, 0.0) + attention)


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
    rank it ran at (None: not recorded), newest first: what a model that carries a
    measurement across sequence lengths starts from."""
    out: dict[int | None, list[Measured]] = {}
    for m in sorted(measured, key=lambda m: m.date, reverse=True):
        here = m.instance_type == instance_type and m.precision == workload.precision
        if here and same_model(m, workload):
            out.setdefault(m.sequence_length, []).append(m)
    return out


def sequence_per_rank(workload: Workload) -> int | None:
    seq = workload.sequence_length
    return None if seq is None else math.ceil(seq / (workload.context_parallel or 1))


def select(measured: Sequence[Measured], instance_type: str, workload: Workload) -> Measured | None:
    """The measurement `price` uses: at the workload's sequence per rank (or one that
    recorded no length; a workload without a length takes any), the workload's training
    stack first, then the newest."""
    groups = by_sequence(measured, instance_type, workload)
    seq = sequence_per_rank(workload)
    if seq is None:
        hits = [m for ms in groups.values() for m in ms]
    else:
        hits = [*groups.get(seq, []), *groups.get(None, [])]
    if not hits:
        return None
    own = [m for m in hits if workload.stack is not None and m.stack == workload.stack]
    return max(own or hits, key=lambda m: m.date)


def _executed(shape: MeasuredShape, params: float, seq: int | None, ckpt: bool) -> float:
    return executed_per_token(params, shape.layers, shape.hidden_size, seq, shape.vocab, ckpt)


def carry(m: Measured, workload: Workload, counted: CountedFlops) -> tuple[float, str]:
    """(step MFU of the workload's model, note): the measurement as it is when it ran the
    spec's model; a scaled-down run's executed FLOP rate held and counted for the spec's
    model at the measured sequence. The two-rate model replaces this (and carries across
    sequence lengths)."""
    t, ran = m.target, m.shape
    if t is None or ran is None or _near(m.params_billion, workload.model.params_billion):
        return m.mfu, ""
    model, seq, ckpt = workload.model, m.sequence_length, bool(m.activation_checkpointing)
    ran_active = ran.active_params_billion or m.params_billion
    ran_exec = _executed(ran, ran_active, seq, ckpt)
    ran_counted = counted(ran_active, ran.layers, ran.hidden_size, seq)
    spec = MeasuredShape(
        layers=model.layers or t.layers,
        hidden_size=model.hidden_size or t.hidden_size,
        vocab=t.vocab,
    )
    spec_exec = _executed(spec, model.compute_params_billion, seq, ckpt)
    spec_counted = counted(model.compute_params_billion, spec.layers, spec.hidden_size, seq)
    if min(ran_exec, ran_counted, spec_exec, spec_counted) <= 0:
        return m.mfu, ""
    factor = (ran_exec / ran_counted) * (spec_counted / spec_exec)
    note = (
        f"; {ran.layers} of {spec.layers} layers ran ({m.params_billion:g}B): carried to the "
        f"spec's {model.params_billion:g}B at the same executed FLOP rate (x{factor:.3f})"
    )
    return m.mfu * factor, note
