"""The step MFU the estimate uses when no measurement or `budget.mfu` is given: the step model
(accelstack.cost.step, rates from throughput.yaml) at the run's model, sequence and layout, x
the node and batch terms, with the range the fit's residuals give.

Range: the step at every stack's rates (or the named stack's, spanning the parts the fit has
no rate of that stack for) spans the centre; x the lowest and highest cross-validated
published / predicted of the curve's records (with the family's MoE records' for a modelled
mixture of experts), never narrower than spreads.minimum; widened by the curve's
extra_spread (an extrapolated family), per decade of model size and per doubling of sequence
beyond the records'; never above the physical ceiling (every executed FLOP at its peak). A mixture of experts on a family
without a fitted expert term is "unmodelled": the dense step at the active size x the MoE
factor of the fitted family's records (throughput.yaml unmodelled_moe), with their extremes as
the range.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from accelstack.catalog import Catalog
from accelstack.catalog.throughput import MfuCurve, StepFamily
from accelstack.cost.rates import (
    StepPoint,
    point,
    rates_for,
    shape_of,
    stack_candidates,
    work_for,
)
from accelstack.cost.step import Layout, ModelShape, Rates, StepWork
from accelstack.spec import Workload

#: Where an estimate's MFU came from (JSON `training.mfu_basis`).
MfuBasis = Literal["fitted", "extrapolated", "unmodelled", "measured", "given"]
Range = tuple[float, float]
#: How a run's experts are stepped: none, the fitted expert term, or unmodelled
MoeMode = Literal["dense", "modelled", "unmodelled"]


@dataclass(frozen=True)
class MfuPick:
    """The step MFU at this scale, its range, and where it came from."""

    mfu: float
    low: float
    high: float
    basis: MfuBasis
    source: str
    scaling: float = 1.0
    scaling_range: Range = (1.0, 1.0)
    reference: float | None = None  # the step's MFU at one node and a full per-chip batch
    warning: str | None = None
    stack: str | None = None  # the stack whose rates were used (None: the centre)


def tokens_per_chip(workload: Workload, chips: int) -> float | None:
    """Tokens per chip per optimizer step, when the spec gives the batch and sequence."""
    if workload.global_batch_size and workload.sequence_length and chips > 0:
        return workload.global_batch_size * workload.sequence_length / chips
    return None


def scaling(catalog: Catalog, nodes: int, per_chip: float | None) -> tuple[float, Range]:
    """Scaling efficiency against one node with a full per-chip batch, and its range (the
    node coefficient +-spread)."""
    sc = catalog.throughput.scaling
    loss = sc.loss_per_node_doubling
    eff = sc.efficiency(nodes, per_chip)
    low = sc.efficiency(nodes, per_chip, loss * (1 + sc.spread))
    high = sc.efficiency(nodes, per_chip, loss * (1 - sc.spread))
    return eff, (low, high)


def moe_mode(shape: ModelShape, step: StepFamily) -> MoeMode:
    if not shape.is_moe:
        return "dense"
    return "modelled" if step.experts is not None and shape.expert_shape_known else "unmodelled"


@dataclass(frozen=True)
class _Run:
    """What one curve pick evaluates: the run's work and where it runs."""

    catalog: Catalog
    instance_type: str
    precision: str
    shape: ModelShape
    work: StepWork
    mode: MoeMode

    def at(
        self, stack: str | None, parts: tuple[str | None, str | None] | None = None
    ) -> StepPoint:
        family = self.catalog.instance(self.instance_type).family
        rates = rates_for(
            self.catalog,
            family,
            self.precision,
            self.shape.compute_params_billion,
            stack,
            experts=self.mode == "modelled",
            parts=parts,
        )
        return point(self.catalog, self.instance_type, self.precision, self.work, rates)

    def bound(self) -> float:
        """The physical ceiling: the step's MFU with every executed FLOP at its peak (the
        link terms and the bubble as fitted)."""
        centre = self.at(None)
        family = self.catalog.instance(self.instance_type).family
        rates = rates_for(
            self.catalog,
            family,
            self.precision,
            self.shape.compute_params_billion,
            None,
            experts=self.mode == "modelled",
        )
        peak = Rates(
            1.0,
            1.0,
            rates.tensor_parallel_efficiency,
            rates.half_rate_tokens,
            rates.all_to_all_efficiency,
        )
        at_peak = point(self.catalog, self.instance_type, self.precision, self.work, peak)
        return max(at_peak.mfu, centre.mfu)


def curve_pick(
    catalog: Catalog,
    instance_type: str,
    nodes: int,
    workload: Workload,
    layout: Layout,
    stack: str | None = None,
) -> MfuPick:
    """The step model's MFU for `workload` at `layout` on `nodes` x `instance_type`."""
    inst = catalog.instance(instance_type)
    curve = catalog.mfu_curve(inst.family, workload.precision)
    step = catalog.step_family(inst.family)
    shape = shape_of(workload)
    chips = nodes * inst.chips
    work = work_for(catalog, instance_type, shape, workload.sequence_length, layout, chips)
    run = _Run(catalog, instance_type, workload.precision, shape, work, moe_mode(shape, step))
    named = stack if stack in curve.stacks else None
    ref = run.at(named).mfu
    spanned = [run.at(d, (a, c)).mfu for d, a, c in stack_candidates(curve, step, stack)]
    factor, (f_lo, f_hi) = _residual(catalog, curve, step, run.mode)
    extra = _extra_spread(catalog, curve, shape, workload.sequence_length)
    low = min(spanned) * f_lo * (1 - extra)
    high = min(max(spanned) * f_hi * (1 + extra), run.bound())
    eff, eff_range = scaling(catalog, nodes, tokens_per_chip(workload, chips))
    basis = _basis(curve, run.mode, shape, workload.sequence_length)
    source = _source(catalog, curve, step, run, (named, stack), layout, workload.sequence_length)
    return MfuPick(
        ref * factor * eff,
        low * eff_range[0],
        high * eff_range[1],
        basis,
        source,
        eff,
        eff_range,
        ref * factor,
        stack=named,
    )


def _residual(
    catalog: Catalog, curve: MfuCurve, step: StepFamily, mode: MoeMode
) -> tuple[float, Range]:
    """(centre factor, (low, high) factors) from the fit's residuals: the curve's dense
    records, the family's MoE records, or the unmodelled MoE factor and range."""
    floor = catalog.throughput.spreads.minimum
    if mode == "unmodelled":
        um = catalog.throughput.unmodelled_moe
        if um is None:
            return 1.0, (1 - floor, 1 + floor)
        lo, hi = um.range
        return um.centre, (min(lo, um.centre * (1 - floor)), max(hi, um.centre * (1 + floor)))
    lo, hi = curve.residual_range or (1.0, 1.0)
    if mode == "modelled" and step.experts is not None:  # the MoE records' own as well
        lo, hi = min(lo, step.experts.residual_range[0]), max(hi, step.experts.residual_range[1])
    return 1.0, (min(lo, 1 - floor), max(hi, 1 + floor))


def _extra_spread(
    catalog: Catalog, curve: MfuCurve, shape: ModelShape, sequence: int | None
) -> float:
    """Widening beyond the records: an extrapolated curve's spread, per decade of size and
    per doubling of sequence outside the records' (at most 0.9)."""
    sp = catalog.throughput.spreads
    outside = sp.per_decade_outside * curve.decades_outside(shape.compute_params_billion)
    longer = sp.per_doubling_outside * curve.doublings_outside(sequence)
    return min(0.9, curve.extra_spread + outside + longer)


def _basis(curve: MfuCurve, mode: MoeMode, shape: ModelShape, sequence: int | None) -> MfuBasis:
    if mode == "unmodelled":
        return "unmodelled"
    beyond = curve.decades_outside(shape.compute_params_billion) or curve.doublings_outside(
        sequence
    )
    return "extrapolated" if curve.from_curve is not None or beyond else "fitted"


def _source(
    catalog: Catalog,
    curve: MfuCurve,
    step: StepFamily,
    run: _Run,
    stacks_used: tuple[str | None, str | None],
    layout: Layout,
    sequence: int | None,
) -> str:
    """One line: the curve, the rates used, the layout, and what lies beyond the records."""
    named, asked = stacks_used
    shape = run.shape
    size = shape.compute_params_billion
    rates = rates_for(catalog, curve.family, run.precision, size, named, run.mode == "modelled")
    stacks = ", ".join(sorted(curve.stacks)) or "one stack"
    who = (
        f"stack {named}, offset {curve.stacks[named]:+.3f} of {stacks}"
        if named
        else (
            f"the centre of {stacks}"
            + (f"; {asked} has no record here: the stacks' spread" if asked else "")
        )
    )
    lo_s, hi_s = curve.params_range or (size, size)
    seq = curve.sequence_range
    fitted = (
        f"{curve.family} {run.precision} step model, {len(curve.records)} records "
        f"({lo_s:g}-{hi_s:g}B"
        + (f", sequences {seq[0]:,}-{seq[1]:,}" if seq else "")
        + f"; {who}): dense {rates.dense:.3f} of peak, attention {rates.attention:.3f} of the "
        f"BF16 peak, TP{layout.tensor_parallel}"
        + (f" PP{layout.pipeline_parallel}" if layout.pipeline_parallel > 1 else "")
        + (f" CP{layout.context_parallel}" if layout.context_parallel > 1 else "")
        + (
            f", {layout.activation_checkpointing} recompute"
            if layout.activation_checkpointing != "none"
            else ""
        )
    )
    notes = [fitted]
    if curve.from_curve is not None:
        notes.insert(
            0,
            f"extrapolated from {curve.from_curve.family} {curve.from_curve.precision}"
            + (f" x {curve.factor:g}" if curve.factor != 1 else "")
            + f": {curve.reason}",
        )
    if curve.decades_outside(size):
        notes.append(f"beyond the records' sizes to {size:g}B")
    if curve.doublings_outside(sequence):
        notes.append(f"beyond the records' sequence lengths to {sequence:,}")
    notes.append(_moe_note(catalog, step, run))
    return "; ".join(n for n in notes if n)


def _moe_note(catalog: Catalog, step: StepFamily, run: _Run) -> str:
    shape = run.shape
    if run.mode == "dense":
        return ""
    active = f"{shape.compute_params_billion:g}B active of {shape.params_billion:g}B"
    if run.mode == "modelled" and step.experts is not None:
        return (
            f"mixture of experts ({active}): expert term fitted to {len(step.experts.records)} "
            f"{step.family} MoE records"
        )
    why = (
        "the spec gives no experts / experts_per_token / expert_hidden_size"
        if step.experts is not None
        else f"no fitted expert term on {step.family}"
    )
    um = catalog.throughput.unmodelled_moe
    factor = f" x {um.centre:.2f} ({um.source})" if um else ""
    return f"mixture of experts unmodelled ({why}): the dense step at {active}{factor}"
