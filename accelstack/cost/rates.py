"""The step model's inputs from the catalog: rates per family, precision and stack, links,
the default layout, and the step's throughput at one layout (accelstack.cost.step does the
arithmetic; throughput.yaml holds the fitted numbers).

`step_point` gives the reference throughput (one node's scaling aside: the node and batch
terms of throughput.yaml `scaling` go on top in accelstack.cost.estimate); `carry_mfu` moves a
measured MFU from the shape and layout it ran at to another through the model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from accelstack.catalog import Catalog
from accelstack.catalog.throughput import MfuCurve, StepFamily
from accelstack.cost.step import (
    Layout,
    Links,
    ModelShape,
    Rates,
    StepWork,
    seconds_per_token,
    step_work,
)
from accelstack.errors import CatalogError
from accelstack.spec import Workload


def shape_of(workload: Workload) -> ModelShape:
    """The step model's view of a spec's model."""
    m = workload.model
    return ModelShape(
        params_billion=m.params_billion,
        active_params_billion=m.active_params_billion,
        layers=m.layers,
        hidden_size=m.hidden_size,
        heads=m.heads,
        head_dim=m.head_dim,
        attention_layers=m.attention_layers,
        experts=m.experts,
        experts_per_token=m.experts_per_token,
        expert_hidden_size=m.expert_hidden_size,
        moe_layers=m.moe_layers,
    )


def default_layout(catalog: Catalog, instance_type: str, workload: Workload) -> Layout:
    """The layout a spec's run is taken to have: tensor parallelism by the model's active size
    (throughput.yaml scaling.default_tensor_parallel, at most one node's chips), the spec's
    context and expert parallelism, activation checkpointing and global batch; no pipeline
    (a layout search passes its own `Layout`)."""
    chips = catalog.instance(instance_type).chips
    size = workload.model.compute_params_billion
    tp = min(catalog.throughput.scaling.tensor_parallel_for(size), max(1, chips))
    return Layout(
        tensor_parallel=tp,
        context_parallel=workload.context_parallel or 1,
        expert_parallel=workload.expert_parallel,
        global_batch=workload.global_batch_size,
        activation_checkpointing=workload.activation_checkpointing,
    )


def links_for(catalog: Catalog, instance_type: str) -> Links:
    """Chip link (the family's, GB/s per chip) and network (EFA Gbps / chips) in bytes/s."""
    inst = catalog.instance(instance_type)
    fam = catalog.families[inst.family]
    chip = fam.chip_link_gb_per_s * 1e9 if fam.chip_link_gb_per_s else None
    network = inst.efa_gbps / 8 * 1e9 / max(inst.chips, 1)
    return Links(chip=chip, network=max(network, 1e9), chips_per_node=max(inst.chips, 1))


def attention_rate(
    catalog: Catalog, curve: MfuCurve, step: StepFamily, size: float, stack: str | None
) -> float:
    """The attention rate (of the BF16 peak) of `stack` (its own, else the centre); relative to
    the dense rate where the family borrows another's attention-to-dense ratio."""
    own = step.attention_stacks.get(stack or "", step.attention_centre)
    rate = own if own is not None else 0.0
    if not step.attention_relative_to_dense or step.from_family is None:
        return rate
    own_bf16 = catalog.mfu_curve(curve.family, "bf16")  # the attention runs at BF16
    base = catalog.mfu_curve(step.from_family, "bf16")
    return rate * own_bf16.rate(size) / base.rate(size)


def rates_for(
    catalog: Catalog,
    family: str,
    precision: str,
    size: float,
    stack: str | None,
    experts: bool = True,
    parts: tuple[str | None, str | None] | None = None,
) -> Rates:
    """The rates of `stack` on the family's curve at this (active) size (None: the centre);
    `experts`: with the fitted expert term (False: the expert GEMMs at the dense rate, no
    all-to-all: the dense-only step); `parts`: the stacks whose (attention rate,
    context-parallel loss) to take instead (default: `stack`'s, else the centre)."""
    curve = catalog.mfu_curve(family, precision)
    step = catalog.step_family(family)
    term = step.experts if experts else None
    attention, context = parts if parts is not None else (stack, stack)
    return Rates(
        dense=curve.rate(size, stack if stack in curve.stacks else None),
        attention=attention_rate(catalog, curve, step, size, attention),
        context_parallel_loss=step.context_parallel_loss_stacks.get(
            context or "", step.context_parallel_loss_centre
        ),
        tensor_parallel_efficiency=step.tensor_parallel_efficiency,
        half_rate_tokens=term.half_rate_tokens if term else None,
        all_to_all_efficiency=term.all_to_all_efficiency if term else None,
    )


@dataclass(frozen=True)
class StepPoint:
    """One step at one layout: tokens/s per chip (before the node and batch terms), counted
    FLOPs per token and the counted MFU against the precision's peak."""

    tokens_per_second: float
    counted_per_token: float
    peak: float

    @property
    def mfu(self) -> float:
        return self.tokens_per_second * self.counted_per_token / self.peak


def peaks(catalog: Catalog, family: str, precision: str) -> tuple[float, float]:
    """(the precision's peak, the BF16 peak) of a family, FLOP/s."""
    fam = catalog.families[family].peak_tflops
    if precision not in fam:
        raise CatalogError(f"no {precision} peak figure for family {family}")
    return fam[precision] * 1e12, fam.get("bf16", fam[precision]) * 1e12


def point(
    catalog: Catalog, instance_type: str, precision: str, work: StepWork, rates: Rates
) -> StepPoint:
    """The step of `work` at `rates` on `instance_type`."""
    family = catalog.instance(instance_type).family
    peak, bf16 = peaks(catalog, family, precision)
    seconds = seconds_per_token(work, rates, peak, bf16, links_for(catalog, instance_type))
    return StepPoint(1.0 / seconds, work.counted, peak)


def work_for(
    catalog: Catalog,
    instance_type: str,
    shape: ModelShape,
    sequence: int | None,
    layout: Layout,
    chips: int,
) -> StepWork:
    return step_work(
        shape, sequence, layout, chips, links_for(catalog, instance_type).chips_per_node
    )


#: (dense stack, attention stack, context-parallel stack) of one candidate in a range
Candidate = tuple[str | None, str | None, str | None]


def stack_candidates(curve: MfuCurve, step: StepFamily, stack: str | None) -> list[Candidate]:
    """The rate combinations a range spans: the named stack's own rates where the fit has
    them, else every stack's (and the centre) for that part; an unnamed stack (or one
    without records on the curve) spans every stack's and the centre for each part."""
    named = stack if stack is not None and stack in curve.stacks else None

    def options(known: dict[str, float] | list[str]) -> list[str | None]:
        if named is not None and named in known:
            return [named]
        return [None, *sorted(known)]

    dense = [named] if named is not None else [None, *sorted(curve.stacks)]
    return [
        (d, a, c)
        for d in dense
        for a in options(step.attention_stacks)
        for c in options(step.context_parallel_loss_stacks)
    ]


def scale_at(
    catalog: Catalog, instance_type: str, sequence: int | None, layout: Layout, chips: int
) -> float:
    """The node and batch terms (throughput.yaml scaling) of a run of `chips` chips."""
    per_node = max(catalog.instance(instance_type).chips, 1)
    nodes = max(1, math.ceil(chips / per_node))
    tokens = layout.global_batch * sequence / chips if layout.global_batch and sequence else None
    return catalog.throughput.scaling.efficiency(nodes, tokens)


#: One end of a carry: (shape, sequence, layout, chips)
At = tuple[ModelShape, int | None, Layout, int]


def carry_mfu(
    catalog: Catalog,
    instance_type: str,
    precision: str,
    mfu: float,
    measured: At,
    target: At,
    stack: str | None = None,
    parts: tuple[str | None, str | None] | None = None,
) -> float:
    """A measured MFU (counted, against the precision's peak) carried to another model,
    sequence length, layout or chip count through the step model: x the model's MFU at the
    target / its MFU where the measurement ran, each `(shape, sequence, layout, chips)`, the
    node and batch terms included. Both ends take the rates of `stack` (`parts`: the
    attention and context-parallel stacks, as `rates_for`) at the target's size: a
    measurement stands for the target's model (a scaled-down run has its layers' kernels), so
    what moves is the work mix (dense, attention, experts, links, bubble) and the scale,
    never the size the curve's rate is read at."""
    family = catalog.instance(instance_type).family
    rates = rates_for(
        catalog, family, precision, target[0].compute_params_billion, stack, parts=parts
    )

    def model_mfu(at: At) -> float:
        shape, sequence, layout, chips = at
        work = work_for(catalog, instance_type, shape, sequence, layout, chips)
        step = point(catalog, instance_type, precision, work, rates)
        return step.mfu * scale_at(catalog, instance_type, sequence, layout, chips)

    there, here = model_mfu(measured), model_mfu(target)
    if not (math.isfinite(here) and there > 0):
        raise CatalogError("cannot carry a measurement through a step of no work")
    return mfu * here / there
