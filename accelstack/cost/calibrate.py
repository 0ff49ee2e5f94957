"""`accelstack calibrate`: trial records -> measured MFU per instance type and model.

Each record (one JSON line per node, written by accelstack/trial/runner.py) gives whole-job
tokens/s on `nodes` x `instance_type`. Its MFU, in the estimate's own FLOPs basis:

    mfu = tokens/s x FLOPs per token / (nodes x chips per instance x peak at the precision)

with FLOPs per token = 6N + 12 L H S (accelstack.cost.estimate.training_flops), N the size of
the model that actually ran (counted by the trial, given, or else the spec's). A record is
refused in one line when its device kind is not the one of the pool it names (a CPU run
recorded as trn2), or when its MFU lies outside the catalog's plausible band for a training
step (throughput.yaml spreads.mfu_band). Records of the same instance type, model size and
precision are averaged; the result goes into the spec's `calibration` list with its provenance
(file, newest date, steps, SDK, node count, world size, device kind, model), replacing an
earlier measurement of the same key. `price` carries a measurement taken on fewer nodes to the
pool's node count through the scaling model, and says so. The spec file is edited as text (only the top-level
`calibration:` block is replaced or appended, comments elsewhere kept), re-validated, and
written atomically (accelstack.files.write_text_atomic).
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from accelstack.catalog import Catalog
from accelstack.catalog.records import TrainingRecord
from accelstack.catalog.sizing import memory_fit
from accelstack.catalog.throughput import MfuCurve
from accelstack.cost.estimate import training_flops
from accelstack.cost.mfu import implied_mfu
from accelstack.errors import CatalogError, Problem, SpecError
from accelstack.files import write_text_atomic
from accelstack.resolve import resolve
from accelstack.spec import Measured, load_spec, parse_spec

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


def record_mfu(catalog: Catalog, rec: dict[str, Any]) -> float:
    """tokens/s x FLOPs per token / (chips x peak); a mixture of experts' FLOPs from its
    active parameters (`active_params_billion`), its memory fit from the total."""
    inst = catalog.instance(str(rec["instance_type"]))
    fam = catalog.families[inst.family]
    precision = str(rec.get("precision") or "bf16")
    peak = fam.peak_tflops[precision] * 1e12
    flops = training_flops(
        float(rec.get("active_params_billion") or rec["params_billion"]),
        1.0,
        rec.get("layers"),
        rec.get("hidden_size"),
        rec.get("sequence_length"),
    )
    chips = int(rec["nodes"]) * inst.chips
    return float(rec["tokens_per_s"]) * flops.per_token / (chips * peak)


def _framework(rec: dict[str, Any]) -> str | None:
    fw = rec.get("framework")
    if isinstance(fw, dict):
        return ", ".join(f"{k} {v}" for k, v in sorted(fw.items()))
    return str(fw) if fw else None


def check_record(
    catalog: Catalog, rec: dict[str, Any], where: tuple[Path, int], pools: dict[str, str]
) -> None:
    """Refuse (one line) a record from another device kind than its pool, or one whose MFU
    is not a plausible training step. `pools`: the spec's pool name -> device kind."""
    path, n = where
    itype = str(rec["instance_type"])
    if itype not in catalog.accelerated_types():
        raise _bad(path, f"line {n}", f"instance_type {itype!r} is not a known accelerated type")
    kind = catalog.families[catalog.instance(itype).family].device_kind
    pool = str(rec.get("pool") or "")
    want = pools.get(pool, kind)
    if rec["device_kind"] != kind or rec["device_kind"] != want:
        raise _bad(
            path,
            f"line {n}",
            f"ran on device kind {rec['device_kind']!r}, but {itype} (pool {pool or '?'}) is "
            f"{want}: a record from another device kind cannot calibrate this pool",
        )
    _check_steps(catalog, rec, where)
    _check_memory_fit(catalog, rec, where)
    mfu = record_mfu(catalog, rec)
    lo, hi, why = mfu_band(catalog, itype, str(rec.get("precision") or "bf16"))
    if not lo <= mfu <= hi:
        raise _bad(
            path,
            f"line {n}",
            f"MFU {mfu:.3g} ({float(rec['tokens_per_s']):,.1f} tokens/s on {rec['nodes']} x "
            f"{itype}, {float(rec['params_billion']):g}B) is outside the plausible {lo:.3g}-"
            f"{hi:.3g} for a training step ({why}; a CPU run, a proxy model recorded with the "
            "full size, a wrong node count?)",
        )


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


def _check_memory_fit(catalog: Catalog, rec: dict[str, Any], where: tuple[Path, int]) -> None:
    """A record's model must fit the nodes it ran on (accelstack.catalog.sizing.memory_fit)."""
    itype, nodes = str(rec["instance_type"]), int(rec["nodes"])
    params, precision = float(rec["params_billion"]), str(rec.get("precision") or "bf16")
    fit = memory_fit(catalog, itype, params, precision)
    if fit.fits(nodes):
        return
    raise _bad(
        where[0],
        f"line {where[1]}",
        f"a {params:g}B model at {precision} needs at least {fit.min_nodes} x {itype} for its "
        f"training state ({fit.required_gib:,.0f} GiB; {fit.usable_gib_per_node:,.0f} usable "
        f"per node), but the record ran on {nodes}: it cannot have trained that model "
        "(a smaller proxy recorded with the full size?)",
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


def fp8_speedup(catalog: Catalog) -> tuple[float, str]:
    """The largest throughput gain FP8 gives over BF16 in the public record pairs of one
    stack, model and scale (throughput.yaml calibration.fp8_speedup_pairs)."""
    by_id = {r.id: r for r in catalog.records}
    gains = []
    for a, b in catalog.throughput.calibration.fp8_speedup_pairs:
        ra, rb = by_id[a], by_id[b]
        gain = (implied_mfu(catalog, rb) * _peak(catalog, rb)) / (
            implied_mfu(catalog, ra) * _peak(catalog, ra)
        )
        gains.append((gain, f"{a} vs {b}"))
    return max(gains)


def _peak(catalog: Catalog, rec: TrainingRecord) -> float:
    return catalog.families[rec.family].peak_tflops[rec.precision]


def _best(catalog: Catalog, curve: MfuCurve, family: str) -> tuple[float, str]:
    """The best public MFU of the curve's records (an extrapolated curve: its source
    curve's, or held out of it), at this curve's peak: x the conservative factor and, where
    the factor withholds a faster precision's gain, x the largest public FP8 gain (at most
    the peak ratio) - a measurement may show a speed-up the estimate does not credit, but
    not more than any public pair did."""
    by_id = {r.id: r for r in catalog.records}
    src = curve.from_curve
    fam, precs = (src.family, (src.precision,)) if src else (family, curve.precisions)
    held = [r for r in catalog.records if r.held_out and r.family == fam and r.precision in precs]
    best = max(implied_mfu(catalog, r) for r in (*(by_id[i] for i in curve.records), *held))
    if curve.factor >= 1:
        return best, ""
    gain, _ = fp8_speedup(catalog)
    gain = min(gain, 1 / curve.factor)
    return best * curve.factor * gain, (
        f" x {curve.factor:g} (its conservative factor) x {gain:.2f} (the largest public FP8 "
        "gain, calibration.fp8_speedup_pairs):"
    )


def mfu_band(catalog: Catalog, instance_type: str, precision: str) -> tuple[float, float, str]:
    """(low, high, why): a plausible steady-state MFU on this family at this precision. Low:
    spreads.mfu_band's floor. High: the best public record of the family's curve or held out
    of it (an extrapolated curve: its source curve's, at this curve's peak: `_best`) x (1 +
    the release tolerance + the measured spread + the curve's extra_spread), never above
    spreads.mfu_band's ceiling."""
    lo, hi = catalog.throughput.spreads.mfu_band
    family = catalog.instance(instance_type).family
    try:
        curve = catalog.mfu_curve(family, precision)
    except CatalogError:
        return lo, hi, "no curve for the family: the catalog's general band"
    src = curve.from_curve
    best, scaled = _best(catalog, curve, family)
    tol, _ = release_tolerance(catalog)
    margin = tol + catalog.throughput.spreads.measured + curve.extra_spread
    top = min(hi, best * (1 + margin))
    whose = f"{src.family} {src.precision} (its source curve)" if src else f"{family} {precision}"
    extra = ", the extrapolated curve's spread" if curve.extra_spread else ""
    why = (
        f"{family} {precision}: the best public record of {whose}{scaled} {best:.3f} "
        f"(records.yaml) + {margin:.0%} (release tolerance, measured spread{extra})"
    )
    return lo, top, why


def _model_label(rec: dict[str, Any]) -> str:
    source = rec.get("params_source") or "spec"
    name = f"{rec['model']} " if rec.get("model") else ""
    return f"{name}{float(rec['params_billion']):g}B ({source})"


def _one(
    catalog: Catalog, recs: list[tuple[Path, dict[str, Any]]], key: tuple[str, float, str]
) -> Measured:
    itype, params, precision = key
    newest_file, newest = max(recs, key=lambda fr: str(fr[1]["date"]))
    compile_s = [float(r["compile_s"]) for _, r in recs if r.get("compile_s") is not None]
    mfus = [record_mfu(catalog, r) for _, r in recs]
    mean = statistics.fmean(mfus)
    spread = (max(mfus) - min(mfus)) / (2 * mean)
    return Measured(
        instance_type=itype,
        params_billion=params,
        precision=precision,
        mfu=mean,
        tokens_per_second=statistics.fmean(float(r["tokens_per_s"]) for _, r in recs),
        file=newest_file.name,
        date=str(newest["date"])[:10],
        steps=min(int(r["steps"]) for _, r in recs),
        records=len(recs),
        sdk=str(newest.get("sdk") or "unknown"),
        framework=_framework(newest),
        nodes=int(newest["nodes"]),
        world_size=int(newest["world_size"]),
        device_kind=str(newest["device_kind"]),
        model=_model_label(newest),
        compile_s=statistics.fmean(compile_s) if compile_s else None,
        mfu_spread=round(spread, 4) if spread > 0 else None,
    )


def check_agreement(catalog: Catalog, recs: Sequence[tuple[Path, int, dict[str, Any]]]) -> None:
    """Records of one (instance type, model size, precision) must agree: MFUs further apart
    than two public releases of one benchmark ((max - min) / mean beyond the release
    tolerance) are not one measurement and are refused, naming both records."""
    if len(recs) < 2:
        return
    scored = [(record_mfu(catalog, r), path, n) for path, n, r in recs]
    lo, hi = min(scored, key=lambda x: x[0]), max(scored, key=lambda x: x[0])
    gap = (hi[0] - lo[0]) / statistics.fmean(m for m, _, _ in scored)
    tol, pair = release_tolerance(catalog)
    if gap <= tol:
        return
    raise _bad(
        lo[1],
        f"line {lo[2]}",
        f"MFU {lo[0]:.3g} and {hi[1].name} line {hi[2]}'s {hi[0]:.3g} differ by {gap:.0%} for "
        f"the same instance type, model and precision, beyond the {tol:.0%} two public "
        f"releases of one benchmark differ by ({pair}, throughput.yaml "
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
    pools: dict[str, str] | None = None,
    moe: tuple[float, float] | None = None,
) -> list[Measured]:
    """One Measured per (instance type, model size, precision) over every record; each
    record checked first (`check_record`), then each group's agreement (`check_agreement`);
    the mean is kept with its spread (`mfu_spread`). `moe`: the spec's (total, active)
    parameters of a mixture of experts (`with_active`)."""
    groups: dict[tuple[str, float, str], list[tuple[Path, int, dict[str, Any]]]] = {}
    for f in files:
        for n, raw in read_records(f):
            rec = with_active(raw, moe)
            check_record(catalog, rec, (f, n), pools or {})
            key = (str(rec["instance_type"]), float(rec["params_billion"]), rec.get("precision"))
            groups.setdefault((key[0], key[1], str(key[2] or "bf16")), []).append((f, n, rec))
    for recs in groups.values():
        check_agreement(catalog, recs)
    return [
        _one(catalog, [(f, r) for f, _, r in recs], key) for key, recs in sorted(groups.items())
    ]


_BLOCK = re.compile(r"^calibration:.*\n(?:(?:[ \t#-].*|)\n)*", re.MULTILINE)


def _merged(old: Sequence[Measured], new: Sequence[Measured]) -> list[Measured]:
    def key(m: Measured) -> tuple[str, float, str]:
        return (m.instance_type, m.params_billion, m.precision)

    fresh = {key(m) for m in new}
    return [*(m for m in old if key(m) not in fresh), *new]


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
