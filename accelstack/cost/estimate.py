"""Training-run estimate: the step model x scaling, goodput, wall hours, ranges.

Formulas (docs/cost.md has the worked derivation):

* Counted FLOPs per token = 6 x N (dense: forward 2N + backward 4N; a mixture of experts: its
  active parameters) plus, when the spec gives `sequence_length`, `layers` and `hidden_size`,
  the attention term 12 x L x W x S (PaLM, Chowdhery et al. 2022, appendix B; W = heads x
  head_dim, default the hidden size): what MFU reports. They are never the executed FLOPs.
* Step MFU at this scale = the step model's MFU (accelstack.cost.step: executed dense work at
  the dense rate, causal attention at the attention rate, the tensor-parallel and expert
  terms, recompute and the pipeline bubble, at the run's layout) x the node and batch terms.
  The MFU comes from, in order: `budget.mfu` ("given": the step MFU at this scale), a trial
  measurement ("measured"; one taken on fewer nodes is carried to this node count through the
  scaling model), or the step model ("fitted" inside the records' sizes and sequences,
  "extrapolated" otherwise or where the family/precision has no record of its own,
  "unmodelled" for a mixture of experts without a fitted expert term).
* Compute hours = counted FLOPs / (chips x peak dense FLOPS at the precision x step MFU) / 3600.
* Goodput = 1 / (1 + failures + checkpoint stalls + other losses): failures = nodes x
  interruptions per node-hour x hours lost each; checkpoint stalls = training state / (nodes x
  write throughput) per checkpoint interval; other losses (evaluation, slow phases) fitted to
  whole-run records. Wall hours = compute hours / goodput + one-time hours (bring-up, Neuron
  compile).
* Every figure has a low/high range: the MFU's from the fit's residuals and the stacks' rates
  (wider where extrapolated: accelstack.cost.pick), scaling's and goodput's from their
  coefficients' uncertainty.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from accelstack.catalog import Catalog
from accelstack.catalog.sizing import MemoryFit, memory_fit, training_state_bytes
from accelstack.cost import measurements
from accelstack.cost.pick import (
    MfuBasis,
    MfuPick,
    Range,
    curve_pick,
    scaling,
    tokens_per_chip,
)
from accelstack.cost.rates import default_layout, shape_of
from accelstack.cost.step import Layout, ModelShape
from accelstack.errors import CatalogError
from accelstack.resolve.advice import batch_warning
from accelstack.spec import Measured, Workload

__all__ = ["MfuBasis", "MfuPick", "Range", "tokens_per_chip"]

FLOPS_CONVENTION = "PaLM appendix B: 6N + 12 x layers x (heads x head_dim) x seq per token"


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
    attention_width: int | None = None,
    attention_layers: int | None = None,
) -> Flops:
    """Counted FLOPs: 6N per token, plus 12 L W S per token when the attention inputs are
    given (W: `attention_width`, default the hidden size; L: `attention_layers`, default every
    layer)."""
    shape = ModelShape(
        params_billion=params_billion,
        layers=layers,
        hidden_size=hidden_size,
        attention_layers=attention_layers,
    )
    dense, attention = shape.counted_flops(sequence_length)
    if attention and attention_width and hidden_size:
        attention *= attention_width / hidden_size
    return Flops(dense, attention, tokens_billion * 1e9)


def workload_flops(workload: Workload) -> Flops:
    """The counted FLOPs of a spec's run (a mixture of experts: its active parameters)."""
    dense, attention = shape_of(workload).counted_flops(workload.sequence_length)
    return Flops(dense, attention, workload.tokens_billion * 1e9)


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
        return self.mfu_basis in ("extrapolated", "unmodelled")

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
    layout: Layout | None = None,
) -> TrainingEstimate:
    """Estimate one training run of `workload` on `nodes` x `instance_type`.

    `fit`: the resolved pool's memory fit (`ResolvedPool.memory_fit`) for a stack; None for a
    public training record, which has no stack: the fit is worked out here.

    `private_pull`: the image comes from the stack's private ECR through its VPC's ECR
    endpoints (`Stack.private_image_pull`), not through the NAT gateway.

    `layout`: how the step runs (a layout search's pick, a record's published layout); None:
    the default layout (accelstack.cost.rates.default_layout).

    MFU: `mfu` (budget.mfu) when given, else a measurement of this instance type, model size
    and precision from `measured` (the spec's calibration), else the step model (at the
    centre of its stacks, or `stack`'s rates when named: used to reproduce records).
    """
    peak = _peak_tflops(catalog, instance_type, workload.precision)
    chips = nodes * catalog.instance(instance_type).chips
    stack = stack if stack is not None else workload.stack
    layout = layout or default_layout(catalog, instance_type, workload)
    pick = mfu_for(catalog, instance_type, nodes, workload, mfu, measured, stack, layout)
    m = workload.model
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
        flops=workload_flops(workload),
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


def mfu_for(
    catalog: Catalog,
    instance_type: str,
    nodes: int,
    workload: Workload,
    given: float | None,
    measured: Sequence[Measured],
    stack: str | None = None,
    layout: Layout | None = None,
) -> MfuPick:
    """budget.mfu, else a measurement (carried to this run through the step model), else the
    step model."""
    if given is not None:
        return MfuPick(given, given, given, "given", "spec budget.mfu (the step MFU at this scale)")
    layout = layout or default_layout(catalog, instance_type, workload)
    hit = find_measured(measured, instance_type, workload)
    if hit is not None:
        return _measured_pick(catalog, hit, instance_type, nodes, workload, layout)
    return curve_pick(catalog, instance_type, nodes, workload, layout, stack)


def _measured_pick(
    catalog: Catalog,
    m: Measured,
    instance_type: str,
    nodes: int,
    workload: Workload,
    layout: Layout,
) -> MfuPick:
    """A measurement, carried from the sequence, model, layout and chips it ran at to this run
    through the step model (accelstack.cost.measurements.carry); its range: the measured
    spread, the records' own, per node and per sequence doubling carried, and the stacks'
    rates where the measurement's stack has none."""
    spreads = catalog.throughput.spreads
    chips = nodes * catalog.instance(instance_type).chips
    eff, eff_range = scaling(catalog, nodes, tokens_per_chip(workload, chips))
    carried = measurements.carry(catalog, m, instance_type, workload, layout, chips)
    at = m.nodes or nodes
    rel = spreads.measured + (m.mfu_spread or 0.0)  # the records' own spread on top
    rel += spreads.carried_per_node_doubling * abs(math.log2(nodes / at))
    rel += spreads.carried_per_sequence_doubling * carried.sequence_doublings
    source = f"{m.file}, {m.date}, {m.steps} steps on {at} node(s){carried.note}"
    if m.mfu_spread:
        source += f" ({m.records} records, spread +-{m.mfu_spread:.0%})"
    if m.nodes is None:
        source += " (node count not recorded: taken as the spec's)"
    warning = stale_sdk(m, current_sdk(catalog, m.instance_type, workload))
    mfu, (lo, hi) = carried.mfu, carried.span
    return MfuPick(
        mfu,
        mfu * lo * (1 - rel),
        mfu * hi * (1 + rel),
        "measured",
        source,
        eff,
        eff_range,
        None,
        warning,
    )


def find_measured(
    measured: Sequence[Measured], instance_type: str, workload: Workload
) -> Measured | None:
    """The measurement of this instance type, precision and model (its size within 1%, or
    the spec model a scaled-down reference run stands for) at the workload's sequence per
    rank or the nearest measured, the newest (accelstack.cost.measurements.select)."""
    return measurements.select(measured, instance_type, workload)


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
