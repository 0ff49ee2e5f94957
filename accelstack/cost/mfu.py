"""Fitting the run model to public training records (catalog records.yaml, throughput.yaml).

Every record is compared in tokens per chip-second, the quantity a run's hours follow from,
and reported in the estimate's counted-FLOPs basis (6N + 12 L W S):

* `implied_mfu`: the counted MFU a record implies at its own scale (accelerator_hours:
  training FLOPs / (hours x 3600 x peak); tokens_per_chip_second: tokens/s x counted FLOPs per
  token / peak; tflops_per_chip: TFLOPS / peak).
* `fit_family`: the step model of one family at once (accelstack.cost.step): a dense-rate line
  against log10(active parameters) per curve (family and precisions) with a centred offset per
  stack, an attention rate per stack with sequence evidence (rows spanning at least 4x in
  sequence length), the tensor-parallel efficiency and the expert term where the family's
  step entry is fitted; least squares of log(predicted / published tokens per chip-second)
  over every steady-state record of the family, each at its own layout and scale.
* `fit_scaling`: the node term from record pairs at two node counts with the same per-chip
  batch; the batch term from pairs at the same size whose per-chip batch differs.
* `fit_other_loss`: the goodput's "other" fraction that best reproduces the whole-run records
  from steady state x scaling x goodput (least squares of the log ratio).
* `reproduce`: the real estimate for a record, returning the figure it publishes; the ranges
  (`residual_range`, the MoE term's, `unmodelled_moe`) are its lowest and highest
  published / reproduced, written by tools/fit_throughput.py.

The held-out rows (tests/data/heldout.yaml) are never an input here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from accelstack.catalog import Catalog
from accelstack.catalog.records import TrainingRecord
from accelstack.catalog.throughput import MfuCurve
from accelstack.cost.estimate import TrainingEstimate, estimate_training, training_flops
from accelstack.cost.lsq import least_squares
from accelstack.cost.rates import links_for, peaks, point, rates_for, work_for
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

#: A stack's rows must span at least this ratio of sequence lengths for its own attention
#: rate to be fitted (else it takes the centre).
SEQUENCE_EVIDENCE = 4.0


def _peak(catalog: Catalog, rec: TrainingRecord) -> float:
    return catalog.families[rec.family].peak_tflops[rec.precision] * 1e12


def record_shape(rec: TrainingRecord) -> ModelShape:
    return ModelShape(
        params_billion=rec.params_billion,
        active_params_billion=rec.active_params_billion,
        layers=rec.layers,
        hidden_size=rec.hidden_size,
        heads=rec.heads,
        head_dim=rec.head_dim,
        attention_layers=rec.attention_layers,
        experts=rec.experts,
        experts_per_token=rec.experts_per_token,
        expert_hidden_size=rec.expert_hidden_size,
        moe_layers=rec.moe_layers,
    )


def record_layout(rec: TrainingRecord) -> Layout:
    """The layout the record ran (unpublished parts: 1 and no checkpointing)."""
    seqs = (
        rec.batch_tokens / rec.sequence_length if rec.batch_tokens and rec.sequence_length else None
    )
    return Layout(
        tensor_parallel=rec.tensor_parallel or 1,
        pipeline_parallel=rec.pipeline_parallel or 1,
        virtual_pipeline=rec.virtual_pipeline or 1,
        context_parallel=rec.context_parallel,
        expert_parallel=rec.expert_parallel,
        micro_batch=rec.micro_batch or 1,
        global_batch=rec.global_batch or seqs,
        activation_checkpointing=rec.activation_checkpointing,
    )


def _counted(rec: TrainingRecord) -> tuple[float, float]:
    """(counted FLOPs per token, total counted FLOPs) of the record's run."""
    dense, attention = record_shape(rec).counted_flops(rec.sequence_length)
    return dense + attention, (dense + attention) * rec.tokens_billion * 1e9


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
    """The counted MFU a record implies at its own scale (the estimate's FLOPs basis)."""
    per_token, total = _counted(rec)
    peak = _peak(catalog, rec)
    kind, value = rec.reported.kind, rec.reported.value
    if kind == "accelerator_hours":
        return total / (value * 3600.0 * peak)
    if kind == "tokens_per_chip_second":
        return value * per_token / peak
    return value * 1e12 / peak


def published_tokens(catalog: Catalog, rec: TrainingRecord) -> float:
    """A steady-state record's tokens per chip-second (a TFLOPS figure through its counted
    FLOPs per token)."""
    return implied_mfu(catalog, rec) * _peak(catalog, rec) / _counted(rec)[0]


# ---------------------------------------------------------------------------------------
# The step model's fit, one family at a time
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Row:
    """One record, its work computed once (the fit only varies the rates)."""

    rec: TrainingRecord
    curve: int  # index into the family's fitted curves
    work: StepWork
    scale: float  # the node and batch terms at the record's scale
    observed: float  # tokens per chip-second
    peaks: tuple[float, float]  # the precision's and the BF16 peak, FLOP/s
    links: Links

    @property
    def size(self) -> float:
        return self.rec.active_params_billion or self.rec.params_billion

    @property
    def moe(self) -> bool:
        return bool(self.work.expert)


@dataclass(frozen=True)
class CurveFit:
    intercept: float
    slope: float
    params_range: tuple[float, float]
    stacks: dict[str, float]
    sequence_range: tuple[int, int] | None
    records: tuple[str, ...]


@dataclass(frozen=True)
class FamilyFit:
    """One family's fitted step model; the step terms are None where the family's step
    entry is extrapolated (its rates come from another family)."""

    family: str
    curves: dict[tuple[str, ...], CurveFit]
    attention_centre: float | None = None
    attention_stacks: dict[str, float] = field(default_factory=dict)
    context_parallel_loss: dict[str, float] = field(default_factory=dict)
    tensor_parallel_efficiency: float | None = None
    half_rate_tokens: float | None = None
    all_to_all_efficiency: float | None = None
    moe_records: tuple[str, ...] = ()
    rms: float = 0.0


def family_rows(catalog: Catalog, family: str) -> tuple[list[MfuCurve], list[_Row]]:
    """The family's fitted curves and every steady-state record of them, work computed."""
    curves = [c for c in catalog.throughput.curves if c.family == family and c.basis == "fitted"]
    inst = instance_for(catalog, family)
    links = links_for(catalog, inst)
    rows = []
    for rec in catalog.records:
        idx = next((i for i, c in enumerate(curves) if rec.precision in c.precisions), None)
        if rec.family != family or rec.kind != "steady_state" or idx is None:
            continue
        layout = record_layout(rec)
        work = step_work(
            record_shape(rec), rec.sequence_length, layout, rec.chips, links.chips_per_node
        )
        scale = catalog.throughput.scaling.efficiency(
            record_nodes(catalog, rec), rec.tokens_per_chip
        )
        pk = peaks(catalog, family, rec.precision)
        rows.append(_Row(rec, idx, work, scale, published_tokens(catalog, rec), pk, links))
    return curves, rows


@dataclass(frozen=True)
class _Params:
    """The parameter vector's names and how to read rates from it."""

    names: list[str]
    stacks: list[list[str]]  # per curve: its stacks (the first is the offset reference)
    sizes: list[tuple[float, float]]  # per curve: its records' sizes
    attention: list[str]  # stacks with their own attention rate
    context: list[str]  # stacks with their own context-parallel loss
    borrowed: Rates | None  # an extrapolated family's step terms
    #: an extrapolated family that keeps its source's attention-to-dense ratio: the source's
    #: BF16 dense curve (attention = the source's centre x dense / that curve's rate)
    relative: MfuCurve | None


def _param_layout(catalog: Catalog, family: str, rows: list[_Row], n_curves: int) -> _Params:
    entry = catalog.throughput.step_for(family)
    if entry is None:
        raise CatalogError(f"throughput: step: no entry for family {family}")
    fitted = entry.basis == "fitted"
    stacks = [sorted({r.rec.stack for r in rows if r.curve == c}) for c in range(n_curves)]
    sizes = [_extent([r.size for r in rows if r.curve == c]) for c in range(n_curves)]
    names: list[str] = []
    for c in range(n_curves):
        slope = [f"m:{c}"] if sizes[c][0] < sizes[c][1] else []  # one size: no slope
        names += [f"i:{c}", *slope] + [f"o:{c}:{s}" for s in stacks[c][1:]]
    attention = sorted(s for s in {r.rec.stack for r in rows} if fitted and _spans(rows, s))
    names += [f"a:{s}" for s in attention]
    context = sorted({r.rec.stack for r in rows if r.rec.context_parallel > 1} if fitted else ())
    names += [f"c:{s}" for s in context]
    if fitted and any(r.work.tensor_parallel for r in rows):
        names.append("tp")
    if fitted and any(r.moe for r in rows):
        names += ["mh", "a2a"]
    borrowed, relative = (None, None) if fitted else _borrowed(catalog, family)
    return _Params(names, stacks, sizes, attention, context, borrowed, relative)


def _extent(values: list[float]) -> tuple[float, float]:
    return (min(values), max(values)) if values else (1.0, 1.0)


def _borrowed(catalog: Catalog, family: str) -> tuple[Rates, MfuCurve | None]:
    """An extrapolated family's step terms, and the source's BF16 dense curve where the
    attention keeps the source's attention-to-dense ratio."""
    step = catalog.step_family(family)
    rates = Rates(
        dense=0.0,
        attention=step.attention_centre or 0.0,
        context_parallel_loss=step.context_parallel_loss_centre,
        tensor_parallel_efficiency=step.tensor_parallel_efficiency,
        half_rate_tokens=step.experts.half_rate_tokens if step.experts else None,
        all_to_all_efficiency=step.experts.all_to_all_efficiency if step.experts else None,
    )
    if not step.attention_relative_to_dense or step.from_family is None:
        return rates, None
    return rates, catalog.mfu_curve(step.from_family, "bf16")


def _spans(rows: list[_Row], stack: str) -> bool:
    seqs = [r.rec.sequence_length for r in rows if r.rec.stack == stack and r.rec.sequence_length]
    return bool(seqs) and max(seqs) / min(seqs) >= SEQUENCE_EVIDENCE


@dataclass(frozen=True)
class _Terms:
    """What every record's rates share at one parameter vector, worked out once per vector
    (the fit evaluates every record at each of its Jacobian's columns)."""

    named: dict[str, float]
    attention: float | None  # the mean of the stacks' own attention rates (None: none fitted)
    context_centre: float  # the mean context-parallel loss (a stack without its own takes it)


def _terms(p: _Params, x: Sequence[float]) -> _Terms:
    named = dict(zip(p.names, x, strict=True))
    own = [named[f"a:{s}"] for s in p.attention]
    b = p.borrowed
    losses = [named[f"c:{s}"] for s in p.context]
    centre = sum(losses) / len(losses) if losses else (b.context_parallel_loss if b else 0.0)
    return _Terms(named, sum(own) / len(own) if own else None, centre)


def _rates(p: _Params, t: _Terms, row: _Row) -> Rates:
    """The rates of a record's stack at the parameters of `t`."""
    c, stack = row.curve, row.rec.stack
    lo, hi = p.sizes[c]
    size = min(max(row.size, lo), hi)
    named = t.named
    offset = named.get(f"o:{c}:{stack}", 0.0)
    dense = named[f"i:{c}"] + named.get(f"m:{c}", 0.0) * math.log10(size) + offset
    if t.attention is not None:
        attention = named[f"a:{stack}"] if stack in p.attention else t.attention
    elif p.relative is not None and p.borrowed is not None:
        attention = p.borrowed.attention * dense / p.relative.rate(row.size)
    else:
        attention = p.borrowed.attention if p.borrowed else 0.3
    b = p.borrowed
    return Rates(
        dense=dense,
        attention=attention,
        context_parallel_loss=named.get(f"c:{stack}", t.context_centre),
        tensor_parallel_efficiency=named.get("tp", b.tensor_parallel_efficiency if b else None),
        half_rate_tokens=named.get("mh", b.half_rate_tokens if b else None),
        all_to_all_efficiency=named.get("a2a", b.all_to_all_efficiency if b else None),
    )


def _predict(p: _Params, t: _Terms, row: _Row) -> float:
    seconds = seconds_per_token(row.work, _rates(p, t, row), *row.peaks, row.links)
    return row.scale / seconds


#: (start, low, high) of each parameter kind
_BOUNDS = {
    "i": (0.4, -1.0, 2.0),
    "m": (0.0, -1.0, 1.0),
    "o": (0.0, -1.0, 1.0),
    "a": (0.3, 0.05, 1.0),
    "c": (0.02, 0.0, 0.5),
    "tp": (1.0, 0.05, 20.0),
    "mh": (500.0, 0.0, 1e5),
    "a2a": (1.0, 0.05, 20.0),
}


def fit_family(catalog: Catalog, family: str) -> FamilyFit:
    """The least-squares step model of one family (every steady-state record of its fitted
    curves at once), offsets re-centred on 0 per curve."""
    curves, rows = family_rows(catalog, family)
    if not rows:
        raise CatalogError(f"family {family} has no steady-state record to fit")
    p = _param_layout(catalog, family, rows, len(curves))
    kinds = [n.split(":")[0] for n in p.names]
    start = [_BOUNDS[k][0] for k in kinds]
    x, cost = least_squares(
        lambda v: [math.log(_predict(p, t, r) / r.observed) for t in [_terms(p, v)] for r in rows],
        start,
        [_BOUNDS[k][1] for k in kinds],
        [_BOUNDS[k][2] for k in kinds],
    )
    return _family_fit(family, curves, rows, p, x, math.sqrt(cost / len(rows)))


def _family_fit(
    family: str, curves: list[MfuCurve], rows: list[_Row], p: _Params, x: list[float], rms: float
) -> FamilyFit:
    named = dict(zip(p.names, x, strict=True))
    fits: dict[tuple[str, ...], CurveFit] = {}
    for c, curve in enumerate(curves):
        offsets = {s: named.get(f"o:{c}:{s}", 0.0) for s in p.stacks[c]}
        centre = sum(offsets.values()) / len(offsets)
        seqs = [r.rec.sequence_length for r in rows if r.curve == c and r.rec.sequence_length]
        ids = tuple(r.rec.id for r in rows if r.curve == c)
        fits[tuple(curve.precisions)] = CurveFit(
            intercept=named[f"i:{c}"] + centre,
            slope=named.get(f"m:{c}", 0.0),
            params_range=p.sizes[c],
            stacks={s: o - centre for s, o in offsets.items()},
            sequence_range=(min(seqs), max(seqs)) if seqs else None,
            records=ids,
        )
    attention = {s: named[f"a:{s}"] for s in p.attention}
    return FamilyFit(
        family=family,
        curves=fits,
        attention_centre=sum(attention.values()) / len(attention) if attention else None,
        attention_stacks=attention,
        context_parallel_loss={s: named[f"c:{s}"] for s in p.context},
        tensor_parallel_efficiency=named.get("tp"),
        half_rate_tokens=named.get("mh"),
        all_to_all_efficiency=named.get("a2a"),
        moe_records=tuple(r.rec.id for r in rows if r.moe) if "mh" in named else (),
        rms=rms,
    )


# ---------------------------------------------------------------------------------------
# Scaling and goodput
# ---------------------------------------------------------------------------------------


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
    """The record's run as a spec's workload would give it (its layout: `record_layout`)."""
    gbs = None
    if rec.batch_tokens and rec.sequence_length:
        gbs = max(1, round(rec.batch_tokens / rec.sequence_length))
    model = {
        k: getattr(rec, k)
        for k in (
            "params_billion",
            "active_params_billion",
            "layers",
            "hidden_size",
            "heads",
            "head_dim",
            "attention_layers",
            "experts",
            "experts_per_token",
            "expert_hidden_size",
            "moe_layers",
        )
        if getattr(rec, k) is not None
    }
    return Workload.model_validate(
        {
            "model": model,
            "tokens_billion": rec.tokens_billion,
            "sequence_length": rec.sequence_length,
            "precision": rec.precision,
            "global_batch_size": gbs,
            "context_parallel": rec.context_parallel if rec.context_parallel > 1 else None,
            "expert_parallel": rec.expert_parallel,
            "activation_checkpointing": rec.activation_checkpointing,
            "entrypoint": f"record:{rec.id}",
        }
    )


def record_estimate(
    catalog: Catalog, rec: TrainingRecord, stack: str | None = None
) -> TrainingEstimate:
    """The estimate accelstack gives for the record's run, at its published layout (its
    stack's rates unless `stack` is given; "" for the centre)."""
    inst = instance_for(catalog, rec.family)
    nodes = record_nodes(catalog, rec)
    return estimate_training(
        catalog,
        inst,
        nodes,
        record_workload(rec),
        stack=rec.stack if stack is None else stack,
        layout=record_layout(rec),
    )


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


# ---------------------------------------------------------------------------------------
# Ranges: the reproduced records' residuals
# ---------------------------------------------------------------------------------------


def ratio(catalog: Catalog, rec: TrainingRecord) -> float:
    """published / reproduced of a steady-state record."""
    return rec.reported.value / reproduce(catalog, rec)


#: Folds of the cross-validation that gives the ranges (rows dealt round-robin in the
#: family's record order: every FOLDS-th row is predicted by a fit without it)
FOLDS = 5


def with_family_fit(catalog: Catalog, fit: FamilyFit) -> Catalog:
    """The catalog with one family's fitted coefficients in place of its committed ones."""
    curves = []
    for c in catalog.throughput.curves:
        f = fit.curves.get(c.precisions) if c.family == fit.family else None
        curves.append(
            c
            if f is None
            else c.model_copy(
                update={
                    "intercept": f.intercept,
                    "slope": f.slope,
                    "params_range": f.params_range,
                    "stacks": f.stacks,
                    "sequence_range": f.sequence_range,
                    "records": f.records,
                }
            )
        )
    steps = []
    for st in catalog.throughput.step:
        if st.family != fit.family or fit.attention_centre is None:
            steps.append(st)
            continue
        losses = fit.context_parallel_loss
        experts = st.experts
        if (
            experts is not None
            and fit.half_rate_tokens is not None
            and fit.all_to_all_efficiency is not None
        ):
            experts = experts.model_copy(
                update={
                    "half_rate_tokens": fit.half_rate_tokens,
                    "all_to_all_efficiency": fit.all_to_all_efficiency,
                }
            )
        steps.append(
            st.model_copy(
                update={
                    "attention_centre": fit.attention_centre,
                    "attention_stacks": fit.attention_stacks,
                    "context_parallel_loss_centre": sum(losses.values()) / len(losses)
                    if losses
                    else 0.0,
                    "context_parallel_loss_stacks": losses,
                    "tensor_parallel_efficiency": fit.tensor_parallel_efficiency,
                    "experts": experts,
                }
            )
        )
    tp = catalog.throughput.model_copy(update={"curves": tuple(curves), "step": tuple(steps)})
    return catalog.model_copy(update={"throughput": tp})


def cross_validated(catalog: Catalog, family: str) -> dict[str, float]:
    """published / predicted of every steady-state record of the family, each predicted by
    the step model fitted without its fold (FOLDS folds, rows dealt round-robin)."""
    _, rows = family_rows(catalog, family)
    out: dict[str, float] = {}
    for k in range(FOLDS):
        left = {r.rec.id for i, r in enumerate(rows) if i % FOLDS == k}
        if not left:
            continue
        kept = tuple(r for r in catalog.records if r.id not in left)
        fit = fit_family(catalog.model_copy(update={"records": kept}), family)
        fold = with_family_fit(catalog, fit)
        out.update({rid: ratio(fold, r) for rid in left for r in [_by_id(catalog, rid)]})
    return out


def _by_id(catalog: Catalog, rid: str) -> TrainingRecord:
    return next(r for r in catalog.records if r.id == rid)


def residual_range(
    catalog: Catalog, curve: MfuCurve, ratios: dict[str, float]
) -> tuple[float, float] | None:
    """(lowest, highest) cross-validated published / predicted over the curve's records
    (dense and mixture-of-experts alike: one fit, one range)."""
    got = [ratios[i] for i in curve.records if i in ratios]
    return (min(got), max(got)) if got else None


def moe_residual_range(ratios: dict[str, float], ids: Sequence[str]) -> tuple[float, float]:
    """(lowest, highest) cross-validated published / predicted over the family's MoE records."""
    got = [ratios[i] for i in ids if i in ratios]
    return min(got), max(got)


def dense_only_tokens(catalog: Catalog, rec: TrainingRecord) -> float:
    """A record's tokens per chip-second from the dense step alone: its expert GEMMs at the
    dense rate, no all-to-all (what a mixture of experts gets where no expert term is fitted)."""
    inst = instance_for(catalog, rec.family)
    size = rec.active_params_billion or rec.params_billion
    rates = rates_for(catalog, rec.family, rec.precision, size, rec.stack, experts=False)
    work = work_for(
        catalog, inst, record_shape(rec), rec.sequence_length, record_layout(rec), rec.chips
    )
    step = point(catalog, inst, rec.precision, work, rates)
    scale = catalog.throughput.scaling.efficiency(record_nodes(catalog, rec), rec.tokens_per_chip)
    return step.tokens_per_second * scale


def unmodelled_moe(catalog: Catalog, ids: Sequence[str]) -> tuple[float, tuple[float, float]]:
    """(centre, (lowest, highest)) of published / the dense-only step over MoE records (the
    geometric mean and extremes): a mixture of experts where no expert term is fitted."""
    by_id = {r.id: r for r in catalog.records}
    got = [published_tokens(catalog, by_id[i]) / dense_only_tokens(catalog, by_id[i]) for i in ids]
    centre = math.exp(sum(math.log(v) for v in got) / len(got))
    return centre, (min(got), max(got))


__all__ = ["training_flops"]
