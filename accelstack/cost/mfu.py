"""MFU curves fitted to public training records (catalog records.yaml).

For every record, `implied_mfu` is the step MFU the estimate would need to reproduce it, in the
estimate's own FLOPs basis (accelstack.cost.estimate.training_flops: 6N + 12 L H S):

* accelerator_hours: training FLOPs / (hours x 3600 x peak); when the hours include the run's
  overheads, times the catalog's training_overhead_factor (the estimate applies it the same way);
* tokens_per_chip_second: tokens/s x FLOPs per token / peak;
* tflops_per_chip: TFLOPS / peak.

`fit_curve` fits mfu = intercept + slope x log10(params_billion) by least squares over the
records of one family and precision group (slope 0 when they share one size); the coefficients
live in instances.yaml and tests/test_records.py checks they match a refit. `reproduce` runs the
real estimate for a record and returns the figure comparable to what the record reports.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from accelstack.catalog import Catalog, MfuCurve
from accelstack.catalog.records import TrainingRecord
from accelstack.cost.estimate import TrainingEstimate, estimate_training, training_flops
from accelstack.errors import CatalogError
from accelstack.spec import Workload


@dataclass(frozen=True)
class Fit:
    intercept: float
    slope: float
    params_range: tuple[float, float]


def _peak(catalog: Catalog, rec: TrainingRecord) -> float:
    return catalog.families[rec.family].peak_tflops[rec.precision] * 1e12


def implied_mfu(catalog: Catalog, rec: TrainingRecord) -> float:
    """The step MFU (overheads excluded) a record implies, in the estimate's FLOPs basis."""
    flops = training_flops(
        rec.params_billion, rec.tokens_billion, rec.layers, rec.hidden_size, rec.sequence_length
    )
    peak = _peak(catalog, rec)
    kind, value = rec.reported.kind, rec.reported.value
    if kind == "accelerator_hours":
        mfu = flops.total / (value * 3600.0 * peak)
    elif kind == "tokens_per_chip_second":
        mfu = value * flops.per_token / peak
    else:
        mfu = value * 1e12 / peak
    if rec.overheads_included:
        mfu *= catalog.defaults.training_overhead_factor
    return mfu


def fit_curve(points: Sequence[tuple[float, float]]) -> Fit:
    """Least squares of mfu on log10(params_billion); points are (params_billion, mfu)."""
    if not points:
        raise CatalogError("cannot fit an MFU curve to no records")
    xs = [math.log10(p) for p, _ in points]
    ys = [m for _, m in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0
    sizes = [p for p, _ in points]
    return Fit(my - slope * mx, slope, (min(sizes), max(sizes)))


def fit_family_curve(catalog: Catalog, curve: MfuCurve) -> Fit:
    """Refit one catalog curve from the records it names."""
    by_id = {r.id: r for r in catalog.records}
    recs = [by_id[i] for i in curve.records]
    return fit_curve([(r.params_billion, implied_mfu(catalog, r)) for r in recs])


def _instance_for(catalog: Catalog, family: str) -> str:
    """The family's instance type with the most chips (the estimate is per chip anyway)."""
    types = [i for i in catalog.instances.values() if i.family == family and i.chips > 0]
    if not types:
        raise CatalogError(f"family {family} has no accelerated instance type")
    return max(types, key=lambda i: (i.chips, i.name)).name


def record_estimate(catalog: Catalog, rec: TrainingRecord) -> TrainingEstimate:
    """The estimate accelstack gives for the record's run (catalog MFU curve, no override)."""
    inst = catalog.instance(_instance_for(catalog, rec.family))
    nodes = max(1, math.ceil((rec.chips or inst.chips) / inst.chips))
    workload = Workload.model_validate(
        {
            "model": {
                "params_billion": rec.params_billion,
                "layers": rec.layers,
                "hidden_size": rec.hidden_size,
            },
            "tokens_billion": rec.tokens_billion,
            "sequence_length": rec.sequence_length,
            "precision": rec.precision,
            "entrypoint": f"record:{rec.id}",
        }
    )
    return estimate_training(catalog, inst.name, nodes, workload)


def reproduce(catalog: Catalog, rec: TrainingRecord) -> float:
    """The estimate's figure for what the record reports (same kind, same overhead treatment)."""
    est = record_estimate(catalog, rec)
    hours = est.wall_hours if rec.overheads_included else est.compute_hours
    kind = rec.reported.kind
    if kind == "accelerator_hours":
        return est.chips * hours
    if kind == "tokens_per_chip_second":
        return est.tokens / (hours * 3600.0 * est.chips)
    factor = est.overhead_factor if rec.overheads_included else 1.0
    return est.mfu * est.peak_tflops_per_chip / factor
