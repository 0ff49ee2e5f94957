"""Training-run estimate: steady-state throughput x scaling, goodput, wall hours, ranges.

Formulas (docs/cost.md has the worked derivation):

* Training FLOPs per token = 6 x N (dense: forward 2N + backward 4N) plus, when the spec gives
  `sequence_length`, `layers` and `hidden_size`, the attention term 12 x L x H x S (PaLM,
  Chowdhery et al. 2022, appendix B); MFU figures (PaLM, Llama 3, llm-foundry) use it.
* Step MFU at this scale = reference steady-state MFU (throughput.yaml curve at the model size,
  one node, a full per-chip batch) x scaling efficiency (node count, tokens per chip per step).
  The MFU comes from, in order: `budget.mfu` ("given": the step MFU at this scale), a trial
  measurement ("measured"; one taken on fewer nodes is carried to this node count through the
  scaling model), or the curve ("fitted" inside the records' sizes, "extrapolated" otherwise
  or when the family/precision has no record of its own).
* Compute hours = FLOPs / (chips x peak dense FLOPS at the precision x step MFU) / 3600.
* Goodput = 1 / (1 + failures + checkpoint stalls + other losses): failures = nodes x
  interruptions per node-hour x hours lost each; checkpoint stalls = training state / (nodes x
  write throughput) per checkpoint interval; other losses (evaluation, slow phases) fitted to
  whole-run records. Wall hours = compute hours / goodput + one-time hours (bring-up, Neuron
  compile).
* Every figure has a low/high range: the MFU's from the spread of its records (the stacks'
  offsets and the fit's residual; wider where extrapolated), scaling's and goodput's from
  their coefficients' uncertainty.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from accelstack.catalog import Catalog
from accelstack.catalog.sizing import MemoryFit, memory_fit, training_state_bytes
from accelstack.catalog.throughput import MfuCurve
from accelstack.cost import measurements
from accelstack.errors import CatalogError
from accelstack.resolve.advice import batch_warning
from accelstack.spec import Measured, Workload

FLOPS_CONVENTION = "PaLM appendix B: 6N + 12 x layers x hidden x seq per token"

#: Where an estimate's MFU came from (JSON `training.mfu_basis`).
MfuBasis = Literal["fitted", "extrapolated", "measured", "given"]
Range = tuple[float, float]


@dataclass(frozen=True)
class Flops:
    dense_per_token: float
    attention_per_token: float
    tokens: float

    @property
    def per_token(self) -> float:
        return self.dense_per_token + self.attention_per_token

    @property
    def total(self) -> float:
        return self.per_token * self.tokens


def training_flops(
    params_billion: float,
    tokens_billion: float,
    layers: int | None = None,
    hidden_size: int | None = None,
    sequence_length: int | None = None,
) -> Flops:
    """6N per token, plus 12 L H S per token when all three attention inputs are given."""
    dense = 6.0 * params_billion * 1e9
    attention = 0.0
    if layers and hidden_size and sequence_length:
        attention = 12.0 * layers * hidden_size * sequence_length
    return Flops(dense, attention, tokens_billion * 1e9)


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
    reference: float | None = None  # steady state at one node and a full per-chip batch
    warning: str | None = None
    stack: str | None = None  # the stack whose curve offset was used (None: the centre)


@dataclass(frozen=True)
class GoodputParts:
    failures: float
    checkpoint: float
    other: float
    spread: float
    one_time_hours: float
    one_time_note: str

    @property
    def losses(self) -> float:
        return self.failures + self.checkpoint + self.other

    @property
    def goodput(self) -> float:
        return 1.0 / (1.0 + self.losses)

    @property
    def range(self) -> Range:
        return (
            1.0 / (1.0 + self.losses * (1.0 + self.spread)),
            1.0 / (1.0 + self.losses * (1.0 - self.spread)),
        )


@dataclass(frozen=True)
class TrainingEstimate:
    instance_type: str
    nodes: int
    chips: int
    precision: str
    peak_tflops_per_chip: float
    pick: MfuPick
    flops: Flops
    parts: GoodputParts
    min_nodes: int  # memory fit
    mfu_from_spec: bool = False
    warnings: tuple[str, ...] = field(default_factory=tuple)
    params_billion: float = 0.0  # all parameters (the memory fit's and checkpoints' size)
    active_params_billion: float | None = None  # a mixture of experts: per token (FLOPs)
    expert_parallel: int | None = None  # the memory fit's expert-parallel degree

    # ---- the step MFU ---------------------------------------------------------------
    @property
    def mfu(self) -> float:
        return self.pick.mfu

    @property
    def mfu_range(self) -> Range:
        return (self.pick.low, self.pick.high)

    @property
    def mfu_basis(self) -> MfuBasis:
        return self.pick.basis

    @property
    def mfu_source(self) -> str:
        return self.pick.source

    @property
    def mfu_warning(self) -> str | None:
        return self.pick.warning

    @property
    def mfu_origin(self) -> str:
        """One line for reports: the basis, then the detail."""
        warn = f"; WARNING: {self.mfu_warning}" if self.mfu_warning else ""
        return f"MFU {self.mfu_basis}: {self.mfu_source}{warn}"

    @property
    def mfu_is_estimate(self) -> bool:
        """True when the MFU has no record of its own, measurement or user figure behind it."""
        return self.mfu_basis == "extrapolated"

    @property
    def scaling_efficiency(self) -> float:
        return self.pick.scaling

    # ---- throughput and time --------------------------------------------------------
    def _tokens_per_chip_s(self, mfu: float) -> float:
        return mfu * self.peak_tflops_per_chip * 1e12 / self.flops.per_token

    @property
    def steady_state_tokens_per_second_per_chip(self) -> float:
        return self._tokens_per_chip_s(self.mfu)

    @property
    def steady_state_tokens_range(self) -> Range:
        return (self._tokens_per_chip_s(self.pick.low), self._tokens_per_chip_s(self.pick.high))

    def _compute_hours(self, mfu: float) -> float:
        return self.flops.total / (self.chips * self.peak_tflops_per_chip * 1e12 * mfu) / 3600

    @property
    def compute_hours(self) -> float:
        return self._compute_hours(self.mfu)

    @property
    def goodput(self) -> float:
        return self.parts.goodput

    @property
    def goodput_range(self) -> Range:
        return self.parts.range

    @property
    def one_time_hours(self) -> float:
        return self.parts.one_time_hours

    @property
    def wall_hours(self) -> float:
        return self.compute_hours / self.goodput + self.one_time_hours

    @property
    def wall_hours_range(self) -> Range:
        g_lo, g_hi = self.goodput_range
        fast = self._compute_hours(self.pick.high) / g_hi + self.one_time_hours
        slow = self._compute_hours(self.pick.low) / g_lo + self.one_time_hours
        return (fast, slow)

    @property
    def overhead_factor(self) -> float:
        """Wall hours per compute hour (goodput losses and one-time hours)."""
        return self.wall_hours / self.compute_hours

    @property
    def overhead_source(self) -> str:
        p = self.parts
        return (
            f"goodput {self.goodput:.3f}: failures {p.failures:.3f} + checkpoint stalls "
            f"{p.checkpoint:.3f} + other {p.other:.3f}; {p.one_time_note}"
        )

    @property
    def accelerator_hours(self) -> float:
        return self.chips * self.wall_hours

    @property
    def node_hours(self) -> float:
        return self.nodes * self.wall_hours

    @property
    def tokens(self) -> float:
        return self.flops.tokens


def tokens_per_chip(workload: Workload, chips: int) -> float | None:
    """Tokens per chip per optimizer step, when the spec gives the batch and sequence."""
    if workload.global_batch_size and workload.sequence_length and chips > 0:
        return workload.global_batch_size * workload.sequence_length / chips
    return None


def workload_fit(catalog: Catalog, instance_type: str, workload: Workload) -> MemoryFit:
    """The workload's memory fit on `instance_type` (all parameters; the experts across
    workload.expert_parallel chips when set)."""
    m = workload.model
    return memory_fit(
        catalog,
        instance_type,
        m.params_billion,
        workload.precision,
        m.expert_params_billion,
        workload.expert_parallel,
    )


def _peak_tflops(catalog: Catalog, instance_type: str, precision: str) -> float:
    """The peak TFLOPS per chip of `instance_type` at `precision`; refused in one line for a
    type without accelerators or a precision without a peak figure."""
    inst = catalog.instance(instance_type)
    fam = catalog.families[inst.family]
    if inst.chips <= 0:
        raise CatalogError(f"{instance_type} has no accelerators; cannot estimate training time")
    peak = fam.peak_tflops.get(precision)
    if peak is None:
        raise CatalogError(
            f"no {precision} peak figure for {fam.accelerator} (have: {', '.join(fam.peak_tflops)})"
        )
    return peak


def estimate_training(
    catalog: Catalog,
    instance_type: str,
    nodes: int,
    workload: Workload,
    mfu: float | None = None,
    measured: Sequence[Measured] = (),
    stack: str | None = None,
    private_pull: bool = False,
    fit: MemoryFit | None = None,
) -> TrainingEstimate:
    """Estimate one training run of `workload` on `nodes` x `instance_type`.

    `fit`: the resolved pool's memory fit (`ResolvedPool.memory_fit`) for a stack; None for a
    public training record, which has no stack: the fit is worked out here.

    `private_pull`: the image comes from the stack's private ECR through its VPC's ECR
    endpoints (`Stack.private_image_pull`), not through the NAT gateway.

    MFU: `mfu` (budget.mfu) when given, else a measurement of this instance type, model size
    and precision from `measured` (the spec's calibration), else the family's curve (at the
    centre of its stacks, or `stack`'s offset when named: used to reproduce records).
    """
    peak = _peak_tflops(catalog, instance_type, workload.precision)
    chips = nodes * catalog.instance(instance_type).chips
    stack = stack if stack is not None else workload.stack
    pick = mfu_for(catalog, instance_type, nodes, workload, mfu, measured, stack)
    m = workload.model
    flops = training_flops(  # a mixture of experts: the active parameters per token
        m.compute_params_billion,
        workload.tokens_billion,
        m.layers,
        m.hidden_size,
        workload.sequence_length,
    )
    parts = goodput_parts(catalog, instance_type, nodes, workload, measured, private_pull)
    fit = fit if fit is not None else workload_fit(catalog, instance_type, workload)
    warning = batch_warning(workload, chips)
    return TrainingEstimate(
        instance_type=instance_type,
        nodes=nodes,
        chips=chips,
        precision=workload.precision,
        peak_tflops_per_chip=peak,
        pick=pick,
        flops=flops,
        parts=parts,
        min_nodes=fit.min_nodes,
        mfu_from_spec=mfu is not None,
        warnings=(warning,) if warning else (),
        params_billion=m.params_billion,
        active_params_billion=m.active_params_billion,
        expert_parallel=workload.expert_parallel,
    )


# ---------------------------------------------------------------------------------------
# Steady-state MFU x scaling
# ---------------------------------------------------------------------------------------


def sequence_per_rank(workload: Workload) -> tuple[float | None, float | None]:
    """(tokens of a sequence per rank, the same without the context-parallel credit): with
    `context_parallel` each rank holds sequence_length / cp; unmeasured beyond one public
    record, so the range's low end takes no credit for it."""
    seq = workload.sequence_length
    if not seq:
        return None, None
    cp = workload.context_parallel or 1
    return seq / cp, float(seq)


def scaling(
    catalog: Catalog, nodes: int, per_chip: float | None, workload: Workload | None = None
) -> tuple[float, Range]:
    """Scaling efficiency against one node with a full per-chip batch and a sequence of at
    most the reference length per rank, and its range (node coefficient +-spread, the
    sequence exponent's fitted range, context parallelism credited at the high end only)."""
    sc = catalog.throughput.scaling
    loss = sc.loss_per_node_doubling
    seq, seq_no_cp = sequence_per_rank(workload) if workload is not None else (None, None)
    e_lo, e_hi = sc.sequence_exponent_range or (sc.sequence_exponent, sc.sequence_exponent)
    eff = sc.efficiency(nodes, per_chip, sequence=seq)
    low = sc.efficiency(nodes, per_chip, loss * (1 + sc.spread), seq_no_cp, max(e_hi, e_lo))
    high = sc.efficiency(nodes, per_chip, loss * (1 - sc.spread), seq, min(e_lo, e_hi))
    return eff, (low, high)


def precision_mix(dense: float, attention: float, ratio: float) -> float:
    """Share of the precision's peak a step reaches when the dense FLOPs run at it and the
    attention FLOPs at the BF16 rate (`ratio`: the precision's peak / BF16's)."""
    return (dense + attention) / (dense + attention * ratio)


def attention_precision_factor(catalog: Catalog, family: str, workload: Workload) -> float:
    """FP8 step MFU at a long sequence relative to the reference sequence: the linears run
    at FP8, attention (flash attention) at the BF16 rate, and its share of the FLOPs grows
    with the sequence (12 L H S per token). 1 for BF16, at or below the reference length,
    or where the spec lacks layers/hidden_size."""
    peaks = catalog.families[family].peak_tflops
    bf16 = peaks.get("bf16")
    own = peaks.get(workload.precision)
    m, seq = workload.model, workload.sequence_length
    ref_seq = catalog.throughput.scaling.reference_sequence
    if not (bf16 and own and own > bf16 and m.layers and m.hidden_size and seq):
        return 1.0
    if seq <= ref_seq:
        return 1.0
    dense = 6.0 * m.compute_params_billion * 1e9
    at = 12.0 * m.layers * m.hidden_size
    ratio = own / bf16
    return precision_mix(dense, at * seq, ratio) / precision_mix(dense, at * ref_seq, ratio)


def mfu_for(
    catalog: Catalog,
    instance_type: str,
    nodes: int,
    workload: Workload,
    given: float | None,
    measured: Sequence[Measured],
    stack: str | None = None,
) -> MfuPick:
    """budget.mfu, else a measurement (carried to this node count), else the curve."""
    if given is not None:
        return MfuPick(given, given, given, "given", "spec budget.mfu (the step MFU at this scale)")
    inst = catalog.instance(instance_type)
    per_chip = tokens_per_chip(workload, nodes * inst.chips)
    eff, eff_range = scaling(catalog, nodes, per_chip, workload)
    hit = find_measured(measured, instance_type, workload)
    if hit is not None:
        return _measured_pick(catalog, hit, nodes, workload, eff, eff_range)
    curve = catalog.mfu_curve(inst.family, workload.precision)
    ref, lo, hi, basis, source = curve_point(catalog, curve, workload, stack)
    mix = attention_precision_factor(catalog, inst.family, workload)
    if mix < 1.0:
        ref, lo = ref * mix, lo * mix  # the high end: attention at the low precision too
        source += (
            f"; long-sequence attention at the BF16 rate (x{mix:.3f} against "
            f"{catalog.throughput.scaling.reference_sequence:,} tokens)"
        )
    used = stack if stack in curve.stacks else None
    moe = workload.model.active_params_billion
    if moe is not None:
        source += (
            f"; mixture of experts: the curve at its {moe:g}B active of "
            f"{workload.model.params_billion:g}B (no MoE record: the experts' all-to-all is "
            "not modelled)"
        )
    return MfuPick(
        ref * eff,
        lo * eff_range[0],
        hi * eff_range[1],
        basis,
        source,
        eff,
        eff_range,
        ref,
        stack=used,
    )


def curve_point(
    catalog: Catalog, curve: MfuCurve, workload: Workload, stack: str | None = None
) -> tuple[float, float, float, MfuBasis, str]:
    """(reference MFU, low, high, basis, source) of a curve at the workload's model size."""
    p = workload.model.compute_params_billion  # a mixture of experts: its active size
    spreads = catalog.throughput.spreads
    named = stack
    unmeasured = stack is not None and stack not in curve.stacks
    if unmeasured:  # no record of that stack on this curve: the centre with the spread
        stack = None
    ref = curve.reference(p, stack)
    offsets = [0.0, *curve.stacks.values()] if stack is None else [curve.stacks[stack]]
    base = curve.reference(p)
    lo_c = base + min(offsets) * curve.factor
    hi_c = base + max(offsets) * curve.factor
    outside = curve.decades_outside(p)
    rel = max(curve.residual, spreads.minimum) + curve.extra_spread
    rel = min(0.9, rel + spreads.per_decade_outside * outside)
    # never narrower than the scatter of the records held out of the fit
    s_lo, s_hi = curve.held_out_scatter or (1.0, 1.0)
    extra = curve.extra_spread + spreads.per_decade_outside * outside  # beyond the records
    f_lo = max(0.05, min(1 - rel, s_lo * (1 - extra)))
    f_hi = max(1 + rel, s_hi * (1 + extra))
    lo_s, hi_s = curve.params_range or (p, p)
    sizes = f"{lo_s:g}B" if lo_s == hi_s else f"{lo_s:g}-{hi_s:g}B"
    n = len(curve.records)
    stacks = ", ".join(sorted(curve.stacks)) or "one stack"
    if stack is not None:
        stacks = f"stack {stack}, offset {curve.stacks[stack]:+.3f} of {stacks}"
    elif unmeasured:
        stacks = f"{stacks}; {named} has no record here: the centre, the stacks' spread"
    if curve.from_curve is not None:
        src = curve.from_curve
        detail = f"x {curve.factor:g}, " if curve.factor != 1 else ""
        beyond = f"; beyond the records' sizes to {p:g}B" if outside > 0 else ""
        source = (
            f"extrapolated from {src.family} {src.precision} ({detail}{n} records, {sizes}; "
            f"{stacks}{beyond}): {curve.reason}"
        )
        return ref, lo_c * f_lo, hi_c * f_hi, "extrapolated", source
    fitted = f"{curve.family} {workload.precision} curve, {n} steady-state records ({stacks})"
    if outside > 0:
        source = f"extrapolated beyond the records' sizes ({sizes}) to {p:g}B: {fitted}"
        return ref, lo_c * f_lo, hi_c * f_hi, "extrapolated", source
    source = f"{fitted} at {p:g}B (sizes {sizes})"
    return ref, lo_c * f_lo, hi_c * f_hi, "fitted", source


def _measured_pick(
    catalog: Catalog,
    m: Measured,
    nodes: int,
    workload: Workload,
    eff: float,
    eff_range: Range,
) -> MfuPick:
    """A measurement, carried from its node count to `nodes` through the scaling model."""
    spreads = catalog.throughput.spreads
    chips_per_node = catalog.instance(m.instance_type).chips
    at = m.nodes or nodes
    eff_at, _ = scaling(catalog, at, tokens_per_chip(workload, at * chips_per_node), workload)
    base, carried = measurements.carry(m, workload, _counted_per_token)
    mfu = base * eff / eff_at
    rel = spreads.measured + (m.mfu_spread or 0.0)  # the records' own spread on top
    source = f"{m.file}, {m.date}, {m.steps} steps on {at} node(s){carried}"
    if m.mfu_spread:
        source += f" ({m.records} records, spread +-{m.mfu_spread:.0%})"
    if m.nodes is None:
        source += " (node count not recorded: taken as the spec's)"
    elif at != nodes:
        rel += spreads.carried_per_node_doubling * abs(math.log2(nodes / at))
        source += f", carried to {nodes} node(s) through the scaling model (x{eff / eff_at:.3f})"
    warning = stale_sdk(m, current_sdk(catalog, m.instance_type, workload))
    return MfuPick(
        mfu, mfu * (1 - rel), mfu * (1 + rel), "measured", source, eff, eff_range, None, warning
    )


def find_measured(
    measured: Sequence[Measured], instance_type: str, workload: Workload
) -> Measured | None:
    """The measurement of this instance type, precision and model (its size within 1%, or
    the spec model a scaled-down reference run stands for) at the workload's sequence per
    rank, the newest (accelstack.cost.measurements.select)."""
    return measurements.select(measured, instance_type, workload)


def _counted_per_token(
    params_billion: float, layers: int | None, hidden: int | None, sequence: int | None
) -> float:
    """The counted FLOPs per token (FLOPS_CONVENTION) that `measurements.carry` holds to."""
    return training_flops(params_billion, 1.0, layers, hidden, sequence).per_token


def measured_source(m: Measured) -> str:
    return f"{m.file}, {m.date}, {m.steps} steps"


def current_sdk(catalog: Catalog, instance_type: str, workload: Workload) -> str:
    """The SDK identity a trial on this type would run today: the spec's image, else the
    default image of the training path the type runs, as the trial records it."""
    return workload.image or catalog.default_image(instance_type, workload.framework) or ""


def stale_sdk(m: Measured, current: str) -> str | None:
    """A warning when the measurement ran on another SDK than the one in use now."""
    if not current or m.sdk == current:
        return None
    return f"measured on {m.sdk}, the spec now uses {current}: re-run `accelstack trial`"


# ---------------------------------------------------------------------------------------
# Goodput and one-time hours
# ---------------------------------------------------------------------------------------


def goodput_parts(
    catalog: Catalog,
    instance_type: str,
    nodes: int,
    workload: Workload,
    measured: Sequence[Measured] = (),
    private_pull: bool = False,
) -> GoodputParts:
    """Failures, checkpoint stalls and other losses (fractions of step time), one-time hours
    (the image pull through the NAT gateway unless `private_pull`)."""
    g = catalog.throughput.goodput
    failures = nodes * g.interruptions_per_node_hour * g.lost_hours_per_interruption
    state = training_state_bytes(catalog, workload.model.params_billion, workload.precision)
    write_s = state / (nodes * g.checkpoint_write_gb_per_s_per_node * 1e9)
    checkpoint = write_s / 3600.0 / g.checkpoint_interval_hours
    hours, note = one_time_hours(catalog, instance_type, workload, measured)
    pull = catalog.scale.image_delivery.pull_hours(nodes, g.image_pull_gb_per_node, private_pull)
    hours += pull
    path = " via the ECR endpoints" if private_pull else ""  # else through the NAT gateway
    note += (
        f" + image pull {pull:.2f} h ({nodes} x {g.image_pull_gb_per_node:g} GB{path}, scale.yaml)"
    )
    return GoodputParts(failures, checkpoint, g.other_loss_fraction, g.spread, hours, note)


def one_time_hours(
    catalog: Catalog, instance_type: str, workload: Workload, measured: Sequence[Measured] = ()
) -> tuple[float, str]:
    """Bring-up, plus the graph compile on device kinds that compile (measured by a trial
    when the calibration has it, else the catalog's estimate)."""
    g = catalog.throughput.goodput
    kind = catalog.families[catalog.instance(instance_type).family].device_kind
    hit = find_measured(measured, instance_type, workload)
    note = f"bring-up {g.bring_up_hours:g} h ({g.bring_up_source})"
    compile_h = g.compile_hours.get(kind, 0.0)
    if hit is not None and hit.compile_s is not None and kind in g.compile_hours:
        compile_h = hit.compile_s / 3600.0
        note += f" + compile {compile_h:.2f} h (measured by the trial)"
    elif compile_h:
        note += f" + compile {compile_h:g} h (estimate: {g.compile_source})"
    return g.bring_up_hours + compile_h, note


@dataclass(frozen=True)
class RunCost:
    wall_hours: float
    stack_hourly_usd: float
    pool_hourly_usd: float
    tokens: float
    estimate: bool  # any price behind it is an estimate
    billed_pool_hours: float | None = None  # a Capacity Block bills its whole window
    wall_hours_range: Range | None = None
    billed_pool_hours_range: Range | None = None
    extra_usd: float = 0.0  # one-off lines (data transfer) of the run
    # the workload pool's instance rate: low/high factors when it is an estimate
    # (price_ranges.yaml), (1, 1) for an observed rate
    price_factors: Range = (1.0, 1.0)
    # everything but the workload pool per hour with its estimated rates at their spans'
    # low and high (price_ranges.yaml: other pools, FSx, ...); None: no span
    other_hourly_range: Range | None = None

    def _run(
        self, wall: float, billed: float | None, price: float = 1.0, other: float | None = None
    ) -> float:
        pool_hours = wall if billed is None else billed
        if other is None:
            other = self.stack_hourly_usd - self.pool_hourly_usd
        return other * wall + self.pool_hourly_usd * price * pool_hours + self.extra_usd

    @property
    def run_usd(self) -> float:
        return self._run(self.wall_hours, self.billed_pool_hours)

    @property
    def run_usd_range(self) -> Range:
        """Fastest run at the lowest plausible price to the slowest at the highest."""
        lo_w, hi_w = self.wall_hours_range or (self.wall_hours, self.wall_hours)
        lo_b, hi_b = self.billed_pool_hours_range or (None, None)
        lo_p, hi_p = self.price_factors
        lo_o, hi_o = self.other_hourly_range or (None, None)
        return (self._run(lo_w, lo_b, lo_p, lo_o), self._run(hi_w, hi_b, hi_p, hi_o))

    @property
    def pool_run_usd(self) -> float:
        return self.pool_hourly_usd * (self.billed_pool_hours or self.wall_hours)

    @property
    def usd_per_million_tokens(self) -> float:
        return self.run_usd / (self.tokens / 1e6)

    @property
    def pool_usd_per_million_tokens(self) -> float:
        return self.pool_run_usd / (self.tokens / 1e6)
