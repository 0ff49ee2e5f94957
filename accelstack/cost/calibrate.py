"""`accelstack calibrate`: trial records -> measurements in the spec, as evidence.

Each record (one JSON line per node and timed segment, written by accelstack/trial/runner.py)
gives whole-job tokens/s on the accelerators that ran. What ran comes from the record, never
from the spec: the model (counted by the trial, given, or else the spec's), its shape (layers,
hidden size, heads, KV heads, vocabulary, experts; reported by the reference benchmark or the
entrypoint, else the spec's and marked so), the sequence length, the device and its count.

    chips = the record's device count (its world size over the processes per accelerator)
    mfu   = tokens/s x FLOPs per token / (chips x peak at the precision)

with FLOPs per token = 6N + 12 L H S (accelstack.cost.estimate.training_flops, the estimate's
own counted basis). The world size is read as the chips it ran on: a 2-GPU run recorded as one
p5.48xlarge node is 2 GPUs (MFU over 2, not 8), and more ranks than the nodes named hold is
refused. A record is refused in one line (`check_record`) when

* its device kind is not its pool's (a CPU run recorded as p5);
* its device contradicts the instance type's accelerator (CUDA's device name against the
  catalog's `families.<f>.device_names`; a Neuron host's instance type from neuron-ls): an
  H200 run labelled p5.4xlarge;
* it timed fewer than throughput.yaml calibration.min_steps steps;
* the model that ran does not fit the chips it ran on (accelstack.catalog.sizing.memory_fit,
  the state sharded over every chip: the least any run needs);
* it executed more FLOP/s per chip than the device's dense peak (instances.yaml
  peak_tflops; the executed FLOPs per token are a lower bound:
  accelstack.catalog.flops.executed_flops, the step model's own): the physical bound;
* its MFU is below throughput.yaml spreads.mfu_floor.

The spec rule `calibration-mfu-band` holds every calibration entry to the same floor and
bound (from the entry's MFU and recorded shape), so what `calibrate` writes validates.

A measurement above the fitted curve is evidence, not an error: it is kept and moves the
estimate. Records of one key (instance type, model and shape, precision, sequence per rank,
tokens per chip, training stack) are averaged when they agree within the release tolerance
(throughput.yaml calibration.release_pairs), refused naming both otherwise; records at
different sequence lengths are different keys, kept apart (accelstack.cost.measurements
carries them). The result goes into the spec's `calibration` list with its provenance,
replacing an earlier measurement of the same key. The spec file is edited as text (only the
top-level `calibration:` block is replaced or appended, comments elsewhere kept), re-validated,
and written atomically (accelstack.files.write_text_atomic).
"""

from __future__ import annotations

import fnmatch
import json
import math
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from accelstack.catalog import Catalog, Family
from accelstack.catalog.flops import ModelShape, executed_flops
from accelstack.catalog.sizing import memory_fit
from accelstack.cost.estimate import training_flops
from accelstack.cost.mfu import implied_mfu
from accelstack.errors import Problem, SpecError
from accelstack.files import write_text_atomic
from accelstack.resolve import resolve
from accelstack.spec import Measured, MeasuredShape, MeasuredTarget, load_spec, parse_spec

REQUIRED = (
    "instance_type",
    "nodes",
    "world_size",
    "device_kind",
    "steps",
    "tokens_per_s",
    "params_billion",
    "date",
)
_SHAPE = tuple(MeasuredShape.model_fields)


@dataclass(frozen=True)
class PoolFacts:
    """What calibrate knows of a spec pool: its device kind and processes per accelerator."""

    device_kind: str
    ranks_per_device: int = 1


def _bad(path: Path, where: str, what: str) -> SpecError:
    return SpecError([Problem(str(path), where, what)])


def read_records(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """The JSON lines of one records file; a bad line is one problem naming file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise _bad(path, "", f"cannot be read: {exc.strerror or exc}") from None
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _bad(path, f"line {n}", f"is not JSON ({exc.msg})") from None
        missing = [k for k in REQUIRED if not isinstance(rec, dict) or rec.get(k) in (None, "")]
        if missing:
            raise _bad(path, f"line {n}", f"lacks {', '.join(missing)} (a trial record has them)")
        out.append((n, rec))
    if not out:
        raise _bad(path, "", "holds no trial records")
    return out


def _precision(rec: dict[str, Any]) -> str:
    return str(rec.get("precision") or "bf16")


def _peak(catalog: Catalog, rec: dict[str, Any]) -> float:
    """The device's dense peak at the record's precision, FLOP/s per chip."""
    return catalog.family_of(str(rec["instance_type"])).peak_tflops[_precision(rec)] * 1e12


def _compute_params(rec: dict[str, Any]) -> float:
    """FLOPs come from the active parameters of a mixture of experts."""
    return float(rec.get("active_params_billion") or rec["params_billion"])


def chips_ran(catalog: Catalog, rec: dict[str, Any], ranks: int = 1) -> int:
    """Accelerators the record ran on: its `devices`, else its world size over `ranks`
    processes per accelerator (the pool's)."""
    if rec.get("devices"):
        return int(rec["devices"])
    return max(1, math.ceil(int(rec["world_size"]) / max(1, ranks)))


def record_mfu(catalog: Catalog, rec: dict[str, Any], chips: int | None = None) -> float:
    """tokens/s x counted FLOPs per token / (chips x peak); a mixture of experts' FLOPs
    from its active parameters (`active_params_billion`), its memory fit from the total."""
    flops = training_flops(
        _compute_params(rec),
        1.0,
        rec.get("layers"),
        rec.get("hidden_size"),
        rec.get("sequence_length"),
    )
    chips = chips if chips is not None else chips_ran(catalog, rec)
    return float(rec["tokens_per_s"]) * flops.per_token / (chips * _peak(catalog, rec))


def executed_tflops(catalog: Catalog, rec: dict[str, Any], chips: int) -> float:
    """FLOP/s per chip the record's steps executed, at least (TFLOP/s):
    accelstack.catalog.flops.executed_flops of the shape that ran."""
    shape = ModelShape(
        params_billion=_compute_params(rec),
        layers=rec.get("layers"),
        hidden_size=rec.get("hidden_size"),
        vocab=rec.get("vocab"),
    )
    recompute = "full" if rec.get("activation_checkpointing") else "none"
    per_token = executed_flops(shape, rec.get("sequence_length"), recompute).total
    return float(rec["tokens_per_s"]) * per_token / chips / 1e12


def _tokens_s(rec: dict[str, Any]) -> str:
    value = float(rec["tokens_per_s"])
    return f"{value:,.1f}" if value >= 10 else f"{value:.3g}"


def _framework(rec: dict[str, Any]) -> str | None:
    fw = rec.get("framework")
    if isinstance(fw, dict):
        return ", ".join(f"{k} {v}" for k, v in sorted(fw.items()))
    return str(fw) if fw else None


def check_record(
    catalog: Catalog,
    rec: dict[str, Any],
    where: tuple[Path, int],
    pools: dict[str, PoolFacts],
) -> int:
    """Refuse (one line) a record that cannot be a measurement of its instance type (the
    module docstring's list); the chips it ran on otherwise."""
    path, n = where
    itype = str(rec["instance_type"])
    if itype not in catalog.accelerated_types():
        raise _bad(path, f"line {n}", f"instance_type {itype!r} is not a known accelerated type")
    facts = pools.get(str(rec.get("pool") or ""))
    _check_kind(catalog, rec, where, facts)
    _check_device(catalog, rec, where)
    chips = _check_world(catalog, rec, where, facts.ranks_per_device if facts else 1)
    _check_steps(catalog, rec, where)
    _check_memory_fit(catalog, rec, where, chips)
    _check_bound(catalog, rec, where, chips)
    return chips


def _check_kind(
    catalog: Catalog, rec: dict[str, Any], where: tuple[Path, int], facts: PoolFacts | None
) -> None:
    itype = str(rec["instance_type"])
    kind = catalog.family_of(itype).device_kind
    want = facts.device_kind if facts else kind
    if rec["device_kind"] != kind or rec["device_kind"] != want:
        raise _bad(
            where[0],
            f"line {where[1]}",
            f"ran on device kind {rec['device_kind']!r}, but {itype} (pool "
            f"{rec.get('pool') or '?'}) is {want}: a record from another device kind cannot "
            "calibrate this pool",
        )


def _types_of(catalog: Catalog, family: str) -> str:
    return ", ".join(n for n, i in catalog.instances.items() if i.family == family)


def _named_by(catalog: Catalog, device: str) -> list[str]:
    """The families whose device_names match what the device called itself."""
    return [
        name
        for name, fam in catalog.families.items()
        if any(fnmatch.fnmatchcase(device, pat) for pat in fam.device_names)
    ]


def _check_device(catalog: Catalog, rec: dict[str, Any], where: tuple[Path, int]) -> None:
    """The device that ran is the instance type's accelerator: CUDA's device name against
    families.<f>.device_names, a Neuron host's own instance type against the record's."""
    itype = str(rec["instance_type"])
    family = catalog.instance(itype).family
    fam = catalog.families[family]
    host = rec.get("host_instance_type")
    if host and catalog.instances.get(host) and catalog.instance(host).family != family:
        other = catalog.family_of(host)
        _device_refused(where, f"a {host} ({other.accelerator}, neuron-ls)", itype, fam)
    device = rec.get("device_model")
    if not device or not fam.device_names:
        return
    owners = _named_by(catalog, str(device))
    if family in owners:
        return
    if owners:
        types = "; ".join(_types_of(catalog, f) for f in owners)
        _device_refused(where, f"{device} ({types})", itype, fam)
    raise _bad(
        where[0],
        f"line {where[1]}",
        f"ran on {device!r}, which the catalog does not name for {itype}'s {fam.accelerator} "
        f"(instances.yaml families.{family}.device_names: {', '.join(fam.device_names)}); if "
        "it is one, add its name there in a catalog overlay (--catalog DIR)",
    )


def _device_refused(where: tuple[Path, int], ran: str, itype: str, fam: Family) -> None:
    raise _bad(
        where[0],
        f"line {where[1]}",
        f"ran on {ran}, but {itype} has {fam.accelerator}: a record from another device "
        "cannot calibrate this type (re-label it with the type it ran on)",
    )


def _check_world(catalog: Catalog, rec: dict[str, Any], where: tuple[Path, int], ranks: int) -> int:
    """The chips that ran: the nodes x chips the record names, or fewer where the record says
    how many devices ran (`devices`: a part of a node); never more than the nodes hold."""
    itype, nodes = str(rec["instance_type"]), int(rec["nodes"])
    chips = chips_ran(catalog, rec, ranks)
    named = nodes * catalog.instance(itype).chips
    if chips > named:
        raise _bad(
            where[0],
            f"line {where[1]}",
            f"world size {rec['world_size']} is {chips} accelerators, more than the {nodes} x "
            f"{itype} ({named}) the record names: a wrong node count?",
        )
    if chips < named and not rec.get("devices"):
        raise _bad(
            where[0],
            f"line {where[1]}",
            f"world size {rec['world_size']} is {chips} accelerators, not the {nodes} x "
            f"{itype} ({named}) the record names, and the record says no device count: add "
            f'"devices": {chips} if {chips} of them ran, or correct "nodes"',
        )
    return chips


def _check_steps(catalog: Catalog, rec: dict[str, Any], where: tuple[Path, int]) -> None:
    need = catalog.throughput.calibration.min_steps
    if int(rec["steps"]) < need:
        raise _bad(
            where[0],
            f"line {where[1]}",
            f"{int(rec['steps'])} timed steps; calibrate needs at least {need} "
            f"(throughput.yaml calibration.min_steps): run `accelstack trial --steps "
            f"{need + 1}` or more",
        )


def _check_memory_fit(
    catalog: Catalog, rec: dict[str, Any], where: tuple[Path, int], chips: int
) -> None:
    """A record's model must fit the chips it ran on (accelstack.catalog.sizing.memory_fit)."""
    itype = str(rec["instance_type"])
    params, precision = float(rec["params_billion"]), _precision(rec)
    fit = memory_fit(catalog, itype, params, precision)
    usable = fit.usable_gib_per_node * chips / catalog.instance(itype).chips
    if fit.required_gib <= usable:
        return
    raise _bad(
        where[0],
        f"line {where[1]}",
        f"a {params:g}B model at {precision} needs {fit.required_gib:,.0f} GiB for its training "
        f"state, but the {chips} accelerator(s) of {itype} it ran on hold {usable:,.0f} usable "
        f"(at least {fit.min_nodes} x {itype}): it cannot have trained that model (a smaller "
        "proxy recorded with the full size?)",
    )


def _check_bound(
    catalog: Catalog, rec: dict[str, Any], where: tuple[Path, int], chips: int
) -> None:
    """Executed FLOP/s per chip within the dense peak; MFU above the catalog's floor."""
    itype, precision = str(rec["instance_type"]), _precision(rec)
    fam = catalog.family_of(itype)
    rate, peak = executed_tflops(catalog, rec, chips), _peak(catalog, rec) / 1e12
    if rate > peak:
        raise _bad(
            where[0],
            f"line {where[1]}",
            f"executes at least {rate:,.0f} TFLOP/s per accelerator ({_tokens_s(rec)} tokens/s"
            f" on {chips}; 6 x the parameters without the input embedding + half the "
            f"attention term per token), above the {fam.accelerator}'s dense {precision} peak "
            f"of {peak:,.0f} (instances.yaml peak_tflops): a proxy model recorded with the "
            "full size, a wrong device count?",
        )
    floor = catalog.throughput.spreads.mfu_floor
    mfu = record_mfu(catalog, rec, chips)
    if mfu < floor:
        raise _bad(
            where[0],
            f"line {where[1]}",
            f"MFU {mfu:.3g} ({_tokens_s(rec)} tokens/s on {chips} x "
            f"{fam.accelerator}) is below {floor:g}, the floor of a training step "
            "(throughput.yaml spreads.mfu_floor; the spec rule calibration-mfu-band): a stalled "
            "or input-bound run, or the wrong device?",
        )


def release_tolerance(catalog: Catalog) -> tuple[float, str]:
    """The largest relative gap, (max - min) / mean of their MFUs, between two public records
    of one benchmark at two software releases (throughput.yaml calibration.release_pairs)."""
    by_id = {r.id: r for r in catalog.records}
    gaps = []
    for a, b in catalog.throughput.calibration.release_pairs:
        ma, mb = implied_mfu(catalog, by_id[a]), implied_mfu(catalog, by_id[b])
        gaps.append((abs(ma - mb) / ((ma + mb) / 2), f"{a} vs {b}"))
    return max(gaps)


def _model_label(rec: dict[str, Any]) -> str:
    source = rec.get("params_source") or "spec"
    name = f"{rec['model']} " if rec.get("model") else ""
    return f"{name}{float(rec['params_billion']):g}B ({source})"


def _shape(rec: dict[str, Any]) -> MeasuredShape | None:
    fields = {k: rec.get(k) for k in _SHAPE if rec.get(k) is not None}
    return MeasuredShape(**fields) if fields else None


def _target(rec: dict[str, Any]) -> MeasuredTarget | None:
    t = rec.get("target")
    if not isinstance(t, dict) or not t.get("params_billion"):
        return None
    return MeasuredTarget(**{k: v for k, v in t.items() if k in MeasuredTarget.model_fields})


@dataclass(frozen=True)
class Scored:
    """One checked record: where it came from, its chips and MFU."""

    path: Path
    line: int
    rec: dict[str, Any]
    chips: int
    mfu: float


Key = tuple[Any, ...]


def record_key(rec: dict[str, Any]) -> Key:
    """Instance type, model (size and shape), precision, sequence, tokens per chip, stack,
    activation checkpointing (a run that recomputes executes more per token: another
    measurement)."""
    shape = tuple(rec.get(k) for k in _SHAPE)
    tokens = rec.get("tokens_per_chip")
    return (
        str(rec["instance_type"]),
        round(float(rec["params_billion"]), 6),
        _precision(rec),
        rec.get("sequence_length"),
        shape,
        round(float(tokens)) if tokens else None,
        rec.get("training_stack") or None,
        bool(rec.get("activation_checkpointing")),
    )


def _one(catalog: Catalog, recs: list[Scored]) -> Measured:
    newest = max(recs, key=lambda s: str(s.rec["date"]))
    r = newest.rec
    compile_s = [float(s.rec["compile_s"]) for s in recs if s.rec.get("compile_s") is not None]
    mfus = [s.mfu for s in recs]
    mean = statistics.fmean(mfus)
    spread = (max(mfus) - min(mfus)) / (2 * mean)
    per_node = catalog.instance(str(r["instance_type"])).chips
    tokens = r.get("tokens_per_chip")
    return Measured.model_validate(
        dict(
            instance_type=str(r["instance_type"]),
            params_billion=float(r["params_billion"]),
            precision=_precision(r),
            mfu=mean,
            tokens_per_second=statistics.fmean(float(s.rec["tokens_per_s"]) for s in recs),
            file=newest.path.name,
            date=str(r["date"])[:10],
            steps=min(int(s.rec["steps"]) for s in recs),
            records=len(recs),
            sdk=str(r.get("sdk") or "unknown"),
            framework=_framework(r),
            nodes=math.ceil(newest.chips / per_node),  # the nodes the chips that ran fill
            world_size=int(r["world_size"]),
            device_kind=str(r["device_kind"]),
            model=_model_label(r),
            compile_s=statistics.fmean(compile_s) if compile_s else None,
            mfu_spread=round(spread, 4) if spread > 0 else None,
            sequence_length=r.get("sequence_length"),
            tokens_per_chip=float(tokens) if tokens else None,
            stack=r.get("training_stack") or None,
            chips=newest.chips,
            device_model=r.get("device_model") or None,
            host_instance_type=r.get("host_instance_type") or None,
            shape=_shape(r),
            shape_source=r.get("shape_source") or None,
            target=_target(r),
            compiled=r.get("compiled"),
            activation_checkpointing=r.get("activation_checkpointing"),
        )
    )


def check_agreement(catalog: Catalog, recs: Sequence[Scored]) -> None:
    """Records of one key must agree: MFUs further apart than two public releases of one
    benchmark ((max - min) / mean beyond the release tolerance) are not one measurement and
    are refused, naming both records."""
    if len(recs) < 2:
        return
    lo, hi = min(recs, key=lambda s: s.mfu), max(recs, key=lambda s: s.mfu)
    gap = (hi.mfu - lo.mfu) / statistics.fmean(s.mfu for s in recs)
    tol, pair = release_tolerance(catalog)
    if gap <= tol:
        return
    raise _bad(
        lo.path,
        f"line {lo.line}",
        f"MFU {lo.mfu:.3g} and {hi.path.name} line {hi.line}'s {hi.mfu:.3g} differ by {gap:.0%} "
        f"for the same instance type, model, precision and sequence, beyond the {tol:.0%} two "
        f"public releases of one benchmark differ by ({pair}, throughput.yaml "
        "calibration.release_pairs): they are not one measurement; re-run the trial or "
        "calibrate them separately",
    )


def with_active(rec: dict[str, Any], moe: tuple[float, float] | None) -> dict[str, Any]:
    """The record with the spec's active size (`moe`: total, active) when it ran the spec's
    mixture of experts (its params_billion within 1% of the total) and names none itself."""
    if moe is None or rec.get("active_params_billion"):
        return rec
    total, active = moe
    if abs(float(rec["params_billion"]) - total) > 0.01 * total:
        return rec
    return {**rec, "active_params_billion": active}


def measure(
    catalog: Catalog,
    files: Sequence[Path],
    pools: dict[str, PoolFacts] | None = None,
    moe: tuple[float, float] | None = None,
) -> list[Measured]:
    """One Measured per key (`record_key`) over every record; each record checked first
    (`check_record`), then each key's agreement (`check_agreement`); the mean is kept with
    its spread (`mfu_spread`). `pools`: the spec's pools by name; `moe`: the spec's (total,
    active) parameters of a mixture of experts (`with_active`)."""
    groups: dict[Key, list[Scored]] = {}
    for f in files:
        for n, raw in read_records(f):
            rec = with_active(raw, moe)
            chips = check_record(catalog, rec, (f, n), pools or {})
            scored = Scored(f, n, rec, chips, record_mfu(catalog, rec, chips))
            groups.setdefault(record_key(rec), []).append(scored)
    for recs in groups.values():
        check_agreement(catalog, recs)
    return [_one(catalog, recs) for _, recs in sorted(groups.items(), key=lambda kv: repr(kv[0]))]


_BLOCK = re.compile(r"^calibration:.*\n(?:(?:[ \t#-].*|)\n)*", re.MULTILINE)


def measured_key(m: Measured) -> Key:
    """The key of a stored measurement (`record_key` of the records it came from)."""
    shape = tuple(getattr(m.shape, k) if m.shape else None for k in _SHAPE)
    tokens = round(m.tokens_per_chip) if m.tokens_per_chip else None
    return (
        m.instance_type,
        round(m.params_billion, 6),
        m.precision,
        m.sequence_length,
        shape,
        tokens,
        m.stack,
        bool(m.activation_checkpointing),
    )


def _merged(old: Sequence[Measured], new: Sequence[Measured]) -> list[Measured]:
    fresh = {measured_key(m) for m in new}
    return [*(m for m in old if measured_key(m) not in fresh), *new]


def calibrate_spec(spec_path: Path, measured: Sequence[Measured], catalog: Catalog) -> str:
    """The spec text with its calibration block replaced (validated); written atomically."""
    text = spec_path.read_text(encoding="utf-8")
    old = load_spec(spec_path).calibration
    rows = [m.model_dump(exclude_none=True) for m in _merged(old, measured)]
    block = "calibration:  # written by `accelstack calibrate` from trial records\n"
    block += yaml.safe_dump(rows, sort_keys=False, default_flow_style=False, width=1000)
    body = _BLOCK.sub("", text).rstrip("\n") + "\n"
    new_text = body + block
    # refuse before writing: the spec rules, then the rules on the resolved stack
    resolve(parse_spec(yaml.safe_load(new_text), str(spec_path)), catalog)
    write_text_atomic(spec_path, new_text)
    return new_text
