"""Training-run estimate: FLOPs, wall hours, accelerator hours, run cost, USD per million tokens.

Formulas (docs/cost.md has the worked derivation):

* Training FLOPs per token = 6 x N (dense: forward 2N + backward 4N) plus, when the spec gives
  `sequence_length`, `layers` and `hidden_size`, the attention term 12 x L x H x S. This is the
  PaLM convention (Chowdhery et al., "PaLM: Scaling Language Modeling with Pathways", 2022,
  appendix B: 6N + 12 L H Q T per token, with H x Q = d_model). Chinchilla (Hoffmann et al.
  2022, appendix F) counts attention slightly differently; we follow PaLM because MFU figures
  (PaLM, Llama 3) are reported against it.
* Wall hours = FLOPs / (chips x peak dense FLOPS at the precision x MFU) / 3600 x the catalog's training_overhead_factor.
* MFU: `budget.mfu` when set, else the family's MFU curve for the precision, evaluated at the
  model size (instances.yaml `mfu_curves`: fitted to records.yaml, or an explicit estimate where
  no public record exists; accelstack.cost.mfu fits them). The estimate says which.
* Run cost = the whole stack's hourly cost (every pool, control plane, system nodes, NAT,
  storage prorated per hour) x wall hours; the workload-pool-only figure is shown beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from accelstack.catalog import Catalog
from accelstack.errors import CatalogError
from accelstack.spec import Measured, Workload

FLOPS_CONVENTION = "PaLM appendix B: 6N + 12 x layers x hidden x seq per token"

#: Where an estimate's MFU came from (printed as "MFU source = ...").
MfuBasis = Literal["fitted to records", "estimate (no public record)", "budget.mfu", "measured"]


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
class TrainingEstimate:
    instance_type: str
    nodes: int
    chips: int
    precision: str
    peak_tflops_per_chip: float
    mfu: float
    mfu_source: str  # "spec budget.mfu" or the curve's description
    mfu_from_spec: bool
    flops: Flops
    compute_hours: float
    overhead_factor: float
    overhead_source: str
    wall_hours: float
    min_nodes: int  # memory fit
    mfu_basis: MfuBasis = "budget.mfu"
    mfu_warning: str | None = None  # e.g. a measurement taken on another SDK

    @property
    def mfu_origin(self) -> str:
        """One line for reports: the basis, then the detail."""
        if self.mfu_from_spec:
            return "MFU source = budget.mfu"
        if self.mfu_basis == "measured":
            warn = f"; WARNING: {self.mfu_warning}" if self.mfu_warning else ""
            return f"MFU source = measured ({self.mfu_source}){warn}"
        return f"MFU source = {self.mfu_basis}: {self.mfu_source}"

    @property
    def mfu_is_estimate(self) -> bool:
        """True when the MFU has no record, measurement or user figure behind it."""
        return self.mfu_basis == "estimate (no public record)"

    @property
    def accelerator_hours(self) -> float:
        return self.chips * self.wall_hours

    @property
    def node_hours(self) -> float:
        return self.nodes * self.wall_hours

    @property
    def tokens(self) -> float:
        return self.flops.tokens


def estimate_training(
    catalog: Catalog,
    instance_type: str,
    nodes: int,
    workload: Workload,
    mfu: float | None = None,
    measured: Sequence[Measured] = (),
) -> TrainingEstimate:
    """Estimate one training run of `workload` on `nodes` x `instance_type`.

    MFU: `mfu` (budget.mfu) when given, else a measurement of this instance type, model size
    and precision from `measured` (the spec's calibration), else the family's curve.
    """
    from accelstack.catalog.sizing import memory_fit

    inst = catalog.instance(instance_type)
    fam = catalog.families[inst.family]
    if inst.chips <= 0:
        raise CatalogError(f"{instance_type} has no accelerators; cannot estimate training time")
    peak = fam.peak_tflops.get(workload.precision)
    if peak is None:
        raise CatalogError(
            f"no {workload.precision} peak figure for {fam.accelerator} "
            f"(have: {', '.join(fam.peak_tflops)})"
        )
    m = workload.model
    used_mfu, source, basis, warning = _mfu_for(catalog, instance_type, workload, mfu, measured)
    flops = training_flops(
        m.params_billion,
        workload.tokens_billion,
        m.layers,
        m.hidden_size,
        workload.sequence_length,
    )
    chips = nodes * inst.chips
    seconds = flops.total / (chips * peak * 1e12 * used_mfu)
    compute_hours = seconds / 3600.0
    fit = memory_fit(catalog, instance_type, m.params_billion, workload.precision)
    return TrainingEstimate(
        instance_type=instance_type,
        nodes=nodes,
        chips=chips,
        precision=workload.precision,
        peak_tflops_per_chip=peak,
        mfu=used_mfu,
        mfu_source=source,
        mfu_from_spec=mfu is not None,
        flops=flops,
        compute_hours=compute_hours,
        overhead_factor=catalog.defaults.training_overhead_factor,
        overhead_source=catalog.defaults.training_overhead_source,
        wall_hours=compute_hours * catalog.defaults.training_overhead_factor,
        min_nodes=fit.min_nodes,
        mfu_basis=basis,
        mfu_warning=warning,
    )


def _mfu_for(
    catalog: Catalog,
    instance_type: str,
    workload: Workload,
    override: float | None,
    measured: Sequence[Measured],
) -> tuple[float, str, MfuBasis, str | None]:
    """(mfu, source, basis, warning): budget.mfu, else a measurement, else the curve."""
    hit = None if override is not None else find_measured(measured, instance_type, workload)
    if hit is not None:
        warning = stale_sdk(hit, current_sdk(catalog, instance_type, workload))
        return hit.mfu, measured_source(hit), "measured", warning
    fam = catalog.family_of(instance_type).name
    p = workload.model.params_billion
    return (*_mfu(catalog, fam, workload.precision, p, override), None)


def find_measured(
    measured: Sequence[Measured], instance_type: str, workload: Workload
) -> Measured | None:
    """The newest measurement of this instance type, precision and model size (within 1%)."""
    size = workload.model.params_billion
    hits = [
        m
        for m in measured
        if m.instance_type == instance_type
        and m.precision == workload.precision
        and abs(m.params_billion - size) <= 0.01 * size
    ]
    return max(hits, key=lambda m: m.date) if hits else None


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


def _mfu(
    catalog: Catalog, family: str, precision: str, params_billion: float, override: float | None
) -> tuple[float, str, MfuBasis]:
    """budget.mfu when given, else the family's curve at this model size."""
    if override is not None:
        return override, "spec budget.mfu", "budget.mfu"
    curve = catalog.mfu_curve(family, precision)
    lo, hi = curve.params_range or (0.0, 0.0)
    where = f"{family} {precision} curve at {params_billion:g}B (sizes {lo:g}-{hi:g}B"
    if curve.basis == "records":
        detail = f"{where}, {len(curve.records)} records in records.yaml)"
        return curve.mfu(params_billion), detail, "fitted to records"
    detail = f"{where}, copied from {curve.copy_of}; measure, then set budget.mfu)"
    return curve.mfu(params_billion), detail, "estimate (no public record)"


@dataclass(frozen=True)
class RunCost:
    wall_hours: float
    stack_hourly_usd: float
    pool_hourly_usd: float
    tokens: float
    estimate: bool  # any price behind it is an estimate

    @property
    def run_usd(self) -> float:
        return self.stack_hourly_usd * self.wall_hours

    @property
    def pool_run_usd(self) -> float:
        return self.pool_hourly_usd * self.wall_hours

    @property
    def usd_per_million_tokens(self) -> float:
        return self.run_usd / (self.tokens / 1e6)

    @property
    def pool_usd_per_million_tokens(self) -> float:
        return self.pool_run_usd / (self.tokens / 1e6)
