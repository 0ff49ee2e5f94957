"""Fitting the run model to public training records (catalog records.yaml, throughput.yaml).

Every record is compared in the estimate's own FLOPs basis (6N + 12 L H S):

* `implied_mfu`: the MFU a record implies at its own scale. accelerator_hours: training FLOPs
  / (hours x 3600 x peak) - for a whole-run record that is steady state x scaling x goodput;
  tokens_per_chip_second: tokens/s x FLOPs per token / peak; tflops_per_chip: TFLOPS / peak.
* `reference_mfu`: a steady-state record's implied MFU divided by the scaling efficiency at
  its scale (nodes, tokens per chip per step): the reference the curves are fitted at.
* `fit_curve`: mfu_ref = intercept + slope x log10(params_billion) + an offset per stack
  (centred on 0), least squares by alternating the line and the offsets; `residual` is the
  largest relative miss left. Only steady-state records enter a curve.
* `fit_scaling`: the node term from record pairs at two node counts with the same per-chip
  batch; the batch term from pairs at the same size whose per-chip batch differs.
* `fit_other_loss`: the goodput's "other" fraction that best reproduces the whole-run records
  from steady state x scaling x goodput (least squares of the log ratio).
* `reproduce`: the real estimate for a record, returning the figure it publishes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from accelstack.catalog import Catalog
from accelstack.catalog.records import TrainingRecord
from accelstack.catalog.throughput import MfuCurve
from accelstack.cost.estimate import (
    TrainingEstimate,
    attention_precision_factor,
    estimate_training,
    training_flops,
)
from accelstack.errors import CatalogError
from accelstack.spec import Workload


@dataclass(frozen=True)
class Fit:
    intercept: float
    slope: float
    params_range: tuple[float, float]
    stacks: dict[str, float]
    residual: float


def _peak(catalog: Catalog, rec: TrainingRecord) -> float:
    return catalog.families[rec.family].peak_tflops[rec.precision] * 1e12


def _flops(rec: TrainingRecord) -> tuple[float, float]:
    """(FLOPs per token, total FLOPs) of the record's run."""
    f = training_flops(
        rec.params_billion, rec.tokens_billion, rec.layers, rec.hidden_size, rec.sequence_length
    )
    return f.per_token, f.total


def instance_for(catalog: Catalog, family: str) -> str:
    """The family's instance type with the most chips (the estimate is per chip anyway)."""
    types = [i for i in catalog.instances.values() if i.family == family and i.chips > 0]
    if not types:
        raise CatalogError(f"family {family} has no accelerated instance type")
    return max(types, key=lambda i: (i.chips, i.name)).name


def record_nodes(catalog: Catalog, rec: TrainingRecord) -> int:
    per_node = catalog.instance(instance_for(catalog, rec.family)).chips
    return max(1, math.ceil(rec.chips / per_node))


def implied_mfu(catalog: Catalog, rec: TrainingRecord) -> float:
    """The MFU a record implies at its own scale, in the estimate's FLOPs basis."""
    per_token, total = _flops(rec)
    peak = _peak(catalog, rec)
    kind, value = rec.reported.kind, rec.reported.value
    if kind == "accelerator_hours":
        return total / (value * 3600.0 * peak)
    if kind == "tokens_per_chip_second":
        return value * per_token / peak
    return value * 1e12 / peak


def scale_efficiency(catalog: Catalog, rec: TrainingRecord) -> float:
    """Scaling at the record's scale, x the long-sequence attention term of FP8 runs."""
    eff = catalog.throughput.scaling.efficiency(
        record_nodes(catalog, rec), rec.tokens_per_chip, sequence=rec.sequence_per_rank
    )
    return eff * attention_precision_factor(catalog, rec.family, record_workload(rec))


def fit_sequence(catalog: Catalog) -> tuple[float, float, float]:
    """(exponent, lowest, highest) of the long-sequence term from the record pairs
    throughput.yaml names (one stack, one model, one node, full per-chip batch, two sequence
    lengths): each pair's exponent = -ln(MFU_b / MFU_a) / ln(term_a / term_b)."""
    by_id = {r.id: r for r in catalog.records}
    sc = catalog.throughput.scaling
    exps = []
    for a, b in sc.sequence_pairs:
        ra, rb = by_id[a], by_id[b]
        sa, sb = (max(r.sequence_per_rank or 0, sc.reference_sequence) for r in (ra, rb))
        ratio = implied_mfu(catalog, rb) / implied_mfu(catalog, ra)
        exps.append(-math.log(ratio) / math.log(sb / sa))
    if not exps:
        return 0.0, 0.0, 0.0
    return sum(exps) / len(exps), min(exps), max(exps)


def reference_mfu(catalog: Catalog, rec: TrainingRecord) -> float:
    """A steady-state record's MFU at the reference scale (one node, a full per-chip batch)."""
    if rec.kind != "steady_state":
        raise CatalogError(f"record {rec.id} is {rec.kind}: only steady-state records fit curves")
    return implied_mfu(catalog, rec) / scale_efficiency(catalog, rec)


def _line(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    xs = [math.log10(p) for p, _ in points]
    ys = [m for _, m in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0
    return my - slope * mx, slope


def fit_curve(points: Sequence[tuple[float, str, float]]) -> Fit:
    """Least squares of mfu on log10(params) with a centred offset per stack.

    points: (params_billion, stack, reference mfu)."""
    if not points:
        raise CatalogError("cannot fit an MFU curve to no records")
    stacks = sorted({s for _, s, _ in points})
    offsets = dict.fromkeys(stacks, 0.0)
    intercept = slope = 0.0
    for _ in range(200):
        intercept, slope = _line([(p, m - offsets[s]) for p, s, m in points])
        for s in stacks:
            res = [m - intercept - slope * math.log10(p) for p, t, m in points if t == s]
            offsets[s] = sum(res) / len(res)
        centre = sum(offsets.values()) / len(offsets)
        offsets = {s: o - centre for s, o in offsets.items()}
    intercept, slope = _line([(p, m - offsets[s]) for p, s, m in points])
    miss = [abs(intercept + slope * math.log10(p) + offsets[s] - m) / m for p, s, m in points]
    sizes = [p for p, _, _ in points]
    return Fit(intercept, slope, (min(sizes), max(sizes)), offsets, max(miss))


def fit_records(catalog: Catalog, records: Sequence[TrainingRecord]) -> Fit:
    return fit_curve([(r.params_billion, r.stack, reference_mfu(catalog, r)) for r in records])


def fit_family_curve(catalog: Catalog, curve: MfuCurve) -> Fit:
    """Refit one catalog curve from the steady-state records it names."""
    by_id = {r.id: r for r in catalog.records}
    return fit_records(catalog, [by_id[i] for i in curve.records])


def fit_scaling(catalog: Catalog) -> tuple[float, float]:
    """(loss per node doubling, batch exponent) from the record pairs throughput.yaml names."""
    by_id = {r.id: r for r in catalog.records}
    sc = catalog.throughput.scaling
    losses = []
    for a, b in sc.node_pairs:
        ra, rb = by_id[a], by_id[b]
        ratio = implied_mfu(catalog, rb) / implied_mfu(catalog, ra)
        doublings = math.log2(record_nodes(catalog, rb) / record_nodes(catalog, ra))
        losses.append((1 - ratio) / doublings)
    loss = sum(losses) / len(losses)
    exps = []
    for a, b in sc.batch_pairs:
        ra, rb = by_id[a], by_id[b]
        na, nb = record_nodes(catalog, ra), record_nodes(catalog, rb)
        node = (1 - loss * math.log2(nb)) / (1 - loss * math.log2(na))
        batch = implied_mfu(catalog, rb) / implied_mfu(catalog, ra) / node
        full = sc.full_batch_tokens_per_chip
        ta, tb = (min(1.0, (r.tokens_per_chip or full) / full) for r in (ra, rb))
        exps.append(math.log(batch) / math.log(tb / ta))
    return loss, sum(exps) / len(exps)


def record_workload(rec: TrainingRecord) -> Workload:
    """The record's run as a spec's workload would give it."""
    gbs = None
    if rec.global_batch_tokens and rec.sequence_length:
        gbs = max(1, round(rec.global_batch_tokens / rec.sequence_length))
    return Workload.model_validate(
        {
            "model": {
                "params_billion": rec.params_billion,
                "layers": rec.layers,
                "hidden_size": rec.hidden_size,
            },
            "tokens_billion": rec.tokens_billion,
            "sequence_length": rec.sequence_length,
            "precision": rec.precision,
            "global_batch_size": gbs,
            "context_parallel": rec.context_parallel if rec.context_parallel > 1 else None,
            "entrypoint": f"record:{rec.id}",
        }
    )


def record_estimate(catalog: Catalog, rec: TrainingRecord) -> TrainingEstimate:
    """The estimate accelstack gives for the record's run (its stack's offset, no override)."""
    inst = instance_for(catalog, rec.family)
    nodes = record_nodes(catalog, rec)
    return estimate_training(catalog, inst, nodes, record_workload(rec), stack=rec.stack)


def reproduce(catalog: Catalog, rec: TrainingRecord) -> float:
    """The estimate's figure for what the record reports: steady-state records by the step
    throughput at their scale, whole-run records by steady state x goodput (no one-time
    hours: a model card's GPU-hours count the run, not the cluster's bring-up)."""
    est = record_estimate(catalog, rec)
    kind = rec.reported.kind
    if rec.kind == "whole_run":
        hours = est.compute_hours / est.goodput
        if kind != "accelerator_hours":
            raise CatalogError(f"record {rec.id}: a whole-run record reports accelerator_hours")
        return est.chips * hours
    if kind == "tokens_per_chip_second":
        return est.steady_state_tokens_per_second_per_chip
    if kind == "tflops_per_chip":
        return est.mfu * est.peak_tflops_per_chip
    return est.chips * est.compute_hours


def fit_other_loss(catalog: Catalog, records: Sequence[TrainingRecord]) -> float:
    """The goodput's other-loss fraction that best reproduces `records` (whole-run ones):
    least squares of log(reproduced / reported) over a fine grid of 0..0.5."""
    g = catalog.throughput.goodput

    def err(other: float) -> float:
        total = 0.0
        for rec in records:
            est = record_estimate(catalog, rec)
            known = est.parts.failures + est.parts.checkpoint
            got = est.chips * est.compute_hours * (1 + known + other)
            total += math.log(got / rec.reported.value) ** 2
        return total

    grid = [i / 1000 for i in range(0, 501)]
    best = min(grid, key=err)
    return best if records else g.other_loss_fraction


def held_out_scatter(catalog: Catalog, curve: MfuCurve) -> tuple[float, float] | None:
    """(lowest, highest) published / predicted over the held-out steady-state records of the
    curve's family and precisions (predicted with the record's stack where the curve has it,
    else at the centre); None when the curve has none."""
    ratios = [
        rec.reported.value / reproduce(catalog, rec)
        for rec in catalog.records
        if rec.held_out
        and rec.kind == "steady_state"
        and rec.family == curve.family
        and rec.precision in curve.precisions
    ]
    return (min(ratios), max(ratios)) if ratios else None
