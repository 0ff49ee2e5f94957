"""The parallel layout deadline sizing prices a run at: a bounded TP x PP x CP x DP search
(`search`), where a data-parallel rank spans as many chips as tensor x pipeline x context
parallelism take (across nodes when PP or CP need it). docs/cost.md, "Deadline sizing with
layouts", has the rules; in short, for `nodes` x `instance_type`:

* degrees: tensor parallelism a power of two up to a node's chips (and dividing the heads
  when the spec gives them); pipeline parallelism a power of two up to the layers (1 without
  them); context parallelism the spec's `context_parallel`, else a power of two leaving at
  least throughput.yaml layouts.min_context_tokens per rank; activation checkpointing the
  spec's, or full recompute where the spec's does not fit. One sequence per micro-batch, no
  virtual pipeline stages;
* data parallelism DP = chips / (TP x PP x CP), a whole number (no chip idles), at most the
  global batch (every rank takes at least one sequence per step);
* memory per chip: the training state sharded over every chip (ZeRO-3 / FSDP: the memory
  fit's assumption, accelstack.catalog.sizing) + the first pipeline stage's activations
  (accelstack.catalog.sizing.activation_gib), within the usable share of the chip's memory;
* speed: the step model's MFU at the layout (accelstack.cost.step: the tensor-parallel link
  term, the context-parallel attention loss, the pipeline bubble (PP - 1) / micro-batches,
  recompute), x the node and batch terms, at the rates `price` would use (the stack's, else
  the centre). The fastest layout wins; ties go to the smaller model-parallel span.

The chosen layout says what limits it (`LayoutFit.limits`): the global batch, the memory,
the node's chips, the bubble. At most a few hundred step evaluations per node count (about
2 ms): bench/pricing.py times a 405B deadline compare.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from accelstack.catalog import Catalog
from accelstack.catalog.sizing import MemoryFit, activation_gib, state_gib_per_chip
from accelstack.cost.pick import moe_mode
from accelstack.cost.rates import point, rates_for, scale_at, shape_of, work_for
from accelstack.cost.step import Layout, Rates
from accelstack.spec import Workload


@dataclass(frozen=True)
class LayoutFit:
    """A layout that fits `nodes` nodes: its degrees, memory per chip and step MFU (the
    model's centre, the node and batch terms included), and what limits it."""

    layout: Layout
    nodes: int
    chips: int
    data_parallel: int
    mfu: float
    state_gib: float
    activation_gib: float
    usable_gib: float
    limits: tuple[str, ...] = ()

    @property
    def memory_gib(self) -> float:
        return self.state_gib + self.activation_gib

    def label(self) -> str:
        """'TP8 PP2 CP1 DP64 on 128 nodes (full recompute)'."""
        lay = self.layout
        recompute = lay.activation_checkpointing
        return (
            f"TP{lay.tensor_parallel} PP{lay.pipeline_parallel} CP{lay.context_parallel} "
            f"DP{self.data_parallel} on {self.nodes:,} node(s)"
            + (f" ({recompute} recompute)" if recompute != "none" else "")
        )

    def describe(self) -> str:
        """The label and what limits it, one line."""
        return f"layout {self.label()}; " + "; ".join(self.limits)


def _powers(most: int) -> list[int]:
    """1, 2, 4, ... up to `most` (at least [1])."""
    return [2**k for k in range(int(math.log2(max(1, most))) + 1)]


@dataclass(frozen=True)
class _Space:
    """The degrees the search tries for one workload on one instance type."""

    tensor: tuple[int, ...]
    pipeline: tuple[int, ...]
    context: tuple[int, ...]
    recompute: tuple[str, ...]


def space(catalog: Catalog, instance_type: str, workload: Workload) -> _Space:
    """The bounded search space (the module docstring)."""
    model, per_node = workload.model, catalog.instance(instance_type).chips
    heads = model.heads
    tensor = [t for t in _powers(per_node) if not heads or heads % t == 0]
    pipeline = _powers(model.layers) if model.layers else [1]
    seq, least = workload.sequence_length, catalog.throughput.layouts.min_context_tokens
    if workload.context_parallel:
        context = [workload.context_parallel]
    else:
        context = _powers(seq // least) if seq and seq >= least else [1]
    own = workload.activation_checkpointing
    recompute = (own,) if own == "full" else (own, "full")
    return _Space(tuple(tensor), tuple(pipeline), tuple(context), recompute)


def activation_span(
    catalog: Catalog, instance_type: str, workload: Workload, fit: MemoryFit, chips: int
) -> int:
    """The smallest tensor x context span whose activations (one sequence per micro-batch, the
    spec's recompute) fit a chip beside the state sharded over `chips`: deadline sizing tries
    node counts whose chips divide by it (accelstack.cost.compare). The largest span when
    none does."""
    sp = space(catalog, instance_type, workload)
    room = fit.usable_gib_per_node / max(1, catalog.instance(instance_type).chips)
    room -= state_gib_per_chip(fit, chips)
    model, seq = workload.model, workload.sequence_length
    pairs = sorted((tp * cp, tp, cp) for tp in sp.tensor for cp in sp.context)
    for span, tp, cp in pairs:
        lay = Layout(
            tensor_parallel=tp, context_parallel=cp, activation_checkpointing=sp.recompute[0]
        )
        per_rank = math.ceil(seq / cp) if seq else None
        if activation_gib(catalog, model.layers, model.hidden_size, per_rank, lay, None) < room:
            return span
    return pairs[-1][0]


def batch_knees(catalog: Catalog, instance_type: str, workload: Workload) -> tuple[int, ...]:
    """Node counts at which the global batch gives every data-parallel rank exactly one
    sequence for some span (TP x PP x CP): one node more forces a wider span (a deeper
    pipeline, a larger bubble). Deadline sizing steps onto them rather than over them."""
    gbs = workload.global_batch_size
    if not gbs:
        return ()
    sp, per_node = space(catalog, instance_type, workload), catalog.instance(instance_type).chips
    spans = {tp * pp * cp for tp in sp.tensor for pp in sp.pipeline for cp in sp.context}
    return tuple(sorted({gbs * s // per_node for s in spans if gbs * s % per_node == 0}))


@dataclass(frozen=True)
class _Job:
    """What every candidate of one search shares."""

    catalog: Catalog
    instance_type: str
    workload: Workload
    fit: MemoryFit
    rates: Rates
    nodes: int
    chips: int


def _candidates(job: _Job, sp: _Space) -> Iterator[Layout]:
    gbs = job.workload.global_batch_size
    for tp in sp.tensor:
        for pp in sp.pipeline:
            for cp in sp.context:
                span = tp * pp * cp
                if span > job.chips or job.chips % span:
                    continue
                if gbs and job.chips // span > gbs:
                    continue  # more ranks than sequences: a wider span must feed them
                for ckpt in sp.recompute:
                    yield Layout(
                        tensor_parallel=tp,
                        pipeline_parallel=pp,
                        context_parallel=cp,
                        expert_parallel=job.workload.expert_parallel,
                        global_batch=gbs,
                        activation_checkpointing=ckpt,
                    )


def span_of(layout: Layout) -> int:
    """TP x PP x CP: the chips one data-parallel rank spans."""
    return layout.tensor_parallel * layout.pipeline_parallel * layout.context_parallel


def _evaluate(job: _Job, layout: Layout) -> LayoutFit:
    """The layout's memory per chip and, where it fits, its step MFU (0 where it does not:
    the step is not evaluated)."""
    cat, wl = job.catalog, job.workload
    seq = wl.sequence_length
    acts = activation_gib(
        cat,
        wl.model.layers,
        wl.model.hidden_size,
        math.ceil(seq / layout.context_parallel) if seq else None,
        layout,
        layout.microbatches(job.chips),
    )
    state = state_gib_per_chip(job.fit, job.chips)
    usable = job.fit.usable_gib_per_node / max(1, cat.instance(job.instance_type).chips)
    mfu = 0.0
    if state + acts <= usable:
        work = work_for(cat, job.instance_type, shape_of(wl), seq, layout, job.chips)
        step = point(cat, job.instance_type, wl.precision, work, job.rates)
        mfu = step.mfu * scale_at(cat, job.instance_type, seq, layout, job.chips)
    dp = job.chips // span_of(layout)
    return LayoutFit(layout, job.nodes, job.chips, dp, mfu, state, acts, usable)


def search(
    catalog: Catalog,
    instance_type: str,
    nodes: int,
    workload: Workload,
    fit: MemoryFit,
    stack: str | None = None,
) -> LayoutFit | None:
    """The fastest layout of `workload` on `nodes` x `instance_type` that fits (None: none
    does: too few chips for the state and activations, or the batch cannot feed them)."""
    family = catalog.instance(instance_type).family
    shape = shape_of(workload)
    mode = moe_mode(shape, catalog.step_family(family))
    curve = catalog.mfu_curve(family, workload.precision)
    named = stack if stack in curve.stacks else None
    rates = rates_for(
        catalog,
        family,
        workload.precision,
        shape.compute_params_billion,
        named,
        experts=mode == "modelled",
    )
    chips = nodes * catalog.instance(instance_type).chips
    job = _Job(catalog, instance_type, workload, fit, rates, nodes, chips)
    tried = [
        _evaluate(job, lay) for lay in _candidates(job, space(catalog, instance_type, workload))
    ]
    fitting = [f for f in tried if f.memory_gib <= f.usable_gib]
    if not fitting:
        return None
    best = max(fitting, key=_rank)
    return _with_limits(job, best, tried)


def _rank(f: LayoutFit) -> tuple[float, int, bool]:
    lay = f.layout
    return (round(f.mfu, 9), -span_of(lay), lay.activation_checkpointing == "none")


def _with_limits(job: _Job, best: LayoutFit, tried: list[LayoutFit]) -> LayoutFit:
    """`best` with what limits it: the batch, the memory, the node's chips, the bubble."""
    lay, gbs = best.layout, job.workload.global_batch_size
    per_node = job.catalog.instance(job.instance_type).chips
    limits = []
    if gbs:
        dp = best.data_parallel
        whole = (
            ""
            if gbs % dp == 0
            else (
                f"; a framework that needs a whole number per rank takes a batch of "
                f"{gbs // dp * dp:,} or {-(-gbs // dp) * dp:,}"
            )
        )
        limits.append(
            f"global batch {gbs:,}: {gbs / dp:.2f} sequence(s) per data-parallel rank per step"
            + (" (the batch sets the span)" if dp * 2 > gbs else "")
            + whole
        )
    recomputes = lay.activation_checkpointing != "none"
    ruled = [
        f
        for f in tried
        if f.memory_gib > f.usable_gib
        and (
            span_of(f.layout) < span_of(lay)
            or (recomputes and f.layout.activation_checkpointing == "none")
        )
    ]
    limits.append(
        f"memory {best.memory_gib:,.1f} of {best.usable_gib:,.1f} GiB per chip (state "
        f"{best.state_gib:,.1f} + activations {best.activation_gib:,.1f})"
        + (
            f"; memory rules out {len(ruled)} layout(s) of a narrower span or less recompute"
            if ruled
            else ""
        )
    )
    if lay.tensor_parallel == per_node:
        limits.append(f"TP at a node's {per_node} chips")
    if lay.pipeline_parallel > 1:
        limits.append(f"pipeline bubble x{lay.bubble(best.chips):.3f}")
    return LayoutFit(
        best.layout,
        best.nodes,
        best.chips,
        best.data_parallel,
        best.mfu,
        best.state_gib,
        best.activation_gib,
        best.usable_gib,
        tuple(limits),
    )
