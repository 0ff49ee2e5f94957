"""Calibration as evidence: a record's model must fit the accelerators it ran on, it must time
enough steps, its device must be the instance type's, its world size is the chips it ran on,
and its executed FLOP/s stay within the device's dense peak; a measurement above the fitted
curve is kept and moves the estimate. Records of one key that disagree beyond a sourced
tolerance are refused; records at different sequence lengths are kept apart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from accelstack.catalog import Catalog, load_catalog
from accelstack.catalog.flops import ModelShape, executed_flops
from accelstack.cli import main
from accelstack.cost.calibrate import (
    PoolFacts,
    calibrate_spec,
    measure,
    record_mfu,
    release_tolerance,
)
from accelstack.cost.estimate import estimate_training
from accelstack.cost.measurements import select
from accelstack.cost.rates import point, rates_for, work_for
from accelstack.cost.step import Layout
from accelstack.errors import SpecError
from accelstack.spec import Workload

from .. import factories

#: one H100's BF16 peak x 8 chips, / 6N FLOPs per token of an 8.03B model (seq 128, no L/H)
PEAK_8 = 8 * 989e12
H100 = {"h100": PoolFacts("nvidia")}


def _tps(mfu: float, params: float = 8.03, chips: int = 8) -> float:
    return mfu * chips * 989e12 / (6 * params * 1e9)


def _rec(**over: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "date": "2026-11-20T10:00:00+00:00",
        "pool": "h100",
        "instance_type": "p5.48xlarge",
        "device_kind": "nvidia",
        "nodes": 1,
        "world_size": 8,
        "steps": 19,
        "tokens_per_s": _tps(0.40),
        "params_billion": 8.03,
        "sequence_length": 128,
        "precision": "bf16",
        "sdk": "x",
    }
    rec.update(over)
    return rec


def _write(path: Path, *recs: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


def _refusal(cat: Catalog, path: Path, pools: dict[str, PoolFacts] | None = None) -> str:
    with pytest.raises(SpecError) as exc:
        measure(cat, [path], pools or H100)
    lines = str(exc.value).strip().splitlines()
    assert len(lines) == 1
    return lines[0]


def _workload(**over: Any) -> Workload:
    data: dict[str, Any] = {
        "model": {"params_billion": 8.03},
        "tokens_billion": 1,
        "entrypoint": "x",
        "sequence_length": 128,
    }
    data.update(over)
    return Workload.model_validate(data)


def test_a_record_whose_model_does_not_fit_its_accelerators_is_refused(
    cat: Catalog, tmp_path
) -> None:
    """70.6B on 1 p5 (the memory fit says 3) at MFU 0.45 cannot have trained that model."""
    rec = _rec(params_billion=70.6, tokens_per_s=_tps(0.45, 70.6))
    assert record_mfu(cat, rec) == pytest.approx(0.45, rel=1e-3)
    line = _refusal(cat, _write(tmp_path / "r.jsonl", rec))
    assert "line 1" in line and "a 70.6B model at bf16 needs 1,052 GiB" in line
    assert "the 8 accelerator(s) of p5.48xlarge it ran on hold 512 usable" in line
    assert "(at least 3 x p5.48xlarge)" in line
    # on 3 nodes it fits and is a measurement
    ok = _rec(params_billion=70.6, nodes=3, world_size=24, tokens_per_s=3 * _tps(0.45, 70.6))
    (m,) = measure(cat, [_write(tmp_path / "r3.jsonl", ok)], H100)
    assert m.mfu == pytest.approx(0.45, rel=1e-3) and (m.nodes, m.chips) == (3, 24)


def test_too_few_steps_are_refused(cat: Catalog, tmp_path) -> None:
    need = cat.throughput.calibration.min_steps
    line = _refusal(cat, _write(tmp_path / "r.jsonl", _rec(steps=need - 1)))
    assert f"{need - 1} timed steps; calibrate needs at least {need}" in line
    assert measure(cat, [_write(tmp_path / "ok.jsonl", _rec(steps=need))])


def test_a_measurement_at_nvidias_published_level_is_accepted(cat: Catalog, tmp_path) -> None:
    """NeMo's Llama 3.1 8B BF16 recipe on DGX-H100 runs at an MFU of about 0.66, counted as accelstack counts:
    the old ceiling (the best record x 1.23 = 0.542) refused it as implausible."""
    per_token = 6 * 8.03e9 + 12 * 32 * 4096 * 8192  # counted as accelstack counts
    rec = _rec(
        tokens_per_s=0.66 * PEAK_8 / per_token, sequence_length=8192, layers=32, hidden_size=4096
    )
    (m,) = measure(cat, [_write(tmp_path / "r.jsonl", rec)], H100)
    assert m.mfu == pytest.approx(0.66) and m.sequence_length == 8192 and m.chips == 8


def test_executed_flops_above_the_peak_are_refused(cat: Catalog, tmp_path) -> None:
    """The physical bound: 6 x the parameters without the input embedding, plus half the
    counted attention (a causal kernel), per token, x tokens/s, within 989 TFLOP/s."""
    shape = {"layers": 32, "hidden_size": 4096, "vocab": 128256, "sequence_length": 8192}
    ran = ModelShape(params_billion=8.03, layers=32, hidden_size=4096, vocab=128256)
    per_token = executed_flops(ran, 8192).total
    assert per_token == pytest.approx(6 * (8.03e9 - 128256 * 4096) + 6 * 32 * 4096 * 8192)
    at_peak = 8 * 989e12 / per_token
    (m,) = measure(cat, [_write(tmp_path / "ok.jsonl", _rec(tokens_per_s=0.99 * at_peak, **shape))])
    assert m.mfu > 0.9  # counted MFU credits the embedding and the full attention square
    line = _refusal(cat, _write(tmp_path / "r.jsonl", _rec(tokens_per_s=1.02 * at_peak, **shape)))
    assert "executes at least 1,009 TFLOP/s per accelerator" in line
    assert "above the NVIDIA H100 80GB SXM's dense bf16 peak of 989" in line
    # activation checkpointing executes another forward pass: the same rate is over the peak
    ckpt = _rec(tokens_per_s=0.8 * at_peak, activation_checkpointing=True, **shape)
    assert "executes at least 1,055 TFLOP/s" in _refusal(cat, _write(tmp_path / "c.jsonl", ckpt))


def test_a_measurement_above_the_curve_moves_the_estimate(cat: Catalog, tmp_path) -> None:
    wl = _workload()
    curve = estimate_training(cat, "p5.48xlarge", 1, wl)
    rec = _rec(tokens_per_s=_tps(curve.mfu * 1.5))
    (m,) = measure(cat, [_write(tmp_path / "r.jsonl", rec)], H100)
    est = estimate_training(cat, "p5.48xlarge", 1, wl, measured=[m])
    assert est.pick.basis == "measured" and est.mfu == pytest.approx(m.mfu, rel=1e-6)
    assert est.mfu == pytest.approx(1.5 * curve.mfu, rel=1e-3)


def test_a_two_gpu_run_recorded_as_one_node_is_read_as_two_gpus(cat: Catalog, tmp_path) -> None:
    """World size 2 on one p5.48xlarge that says 2 devices ran: its MFU is over 2 chips (the
    old reading over 8 gave a quarter of it); the node count stays 1. The world size must be
    the nodes x chips the record names or the device count it says ran: world size 2 on one
    p5.48xlarge with no device count is refused (which is it?)."""
    rec = _rec(world_size=2, devices=2, tokens_per_s=_tps(0.45, chips=2))
    (m,) = measure(cat, [_write(tmp_path / "r.jsonl", rec)], H100)
    assert m.mfu == pytest.approx(0.45, rel=1e-6) and (m.chips, m.nodes) == (2, 1)
    bare = {k: v for k, v in rec.items() if k != "devices"}
    line = _refusal(cat, _write(tmp_path / "b.jsonl", bare))
    assert "world size 2 is 2 accelerators, not the 1 x p5.48xlarge (8) the record names" in line
    assert '"devices": 2 if 2 of them ran, or correct "nodes"' in line
    # the record's own device count wins over its world size
    (d,) = measure(cat, [_write(tmp_path / "d.jsonl", {**rec, "world_size": 8, "devices": 2})])
    assert d.mfu == pytest.approx(0.45, rel=1e-6) and d.chips == 2
    # a Neuron pool: processes per chip from the pool (64 ranks on 16 trn2 chips)
    trn = _rec(
        pool="trn2",
        instance_type="trn2.48xlarge",
        device_kind="neuron",
        world_size=64,
        tokens_per_s=0.4 * 16 * 667e12 / (6 * 8.03e9),
    )
    (t,) = measure(cat, [_write(tmp_path / "t.jsonl", trn)], {"trn2": PoolFacts("neuron", 4)})
    assert t.chips == 16 and t.mfu == pytest.approx(0.4, rel=1e-6)
    # more ranks than the nodes named hold: a wrong node count, refused
    line = _refusal(cat, _write(tmp_path / "w.jsonl", _rec(world_size=16)))
    assert "world size 16 is 16 accelerators, more than the 1 x p5.48xlarge (8)" in line


def test_a_record_from_another_device_than_the_types_is_refused(cat: Catalog, tmp_path) -> None:
    """An H200 run labelled p5.4xlarge (one H100) would calibrate H100 at H200 speed."""
    h200 = _rec(
        instance_type="p5.4xlarge",
        world_size=1,
        device_model="NVIDIA H200",
        params_billion=1.0,
        tokens_per_s=_tps(0.4, 1.0, chips=1),
    )
    line = _refusal(cat, _write(tmp_path / "r.jsonl", h200))
    assert line.endswith(
        "line 1: ran on NVIDIA H200 (p5e.48xlarge, p5en.48xlarge), but p5.4xlarge has NVIDIA "
        "H100 80GB SXM: a record from another device cannot calibrate this type (re-label it "
        "with the type it ran on)"
    )
    ok = {**h200, "device_model": "NVIDIA H100 80GB HBM3"}
    (m,) = measure(cat, [_write(tmp_path / "ok.jsonl", ok)], H100)
    assert m.device_model == "NVIDIA H100 80GB HBM3" and m.chips == 1
    # a device the catalog names for no family: fail closed, with the way to add it
    a100 = {**h200, "device_model": "NVIDIA A100-SXM4-80GB"}
    line = _refusal(cat, _write(tmp_path / "a.jsonl", a100))
    assert "which the catalog does not name for p5.4xlarge's NVIDIA H100 80GB SXM" in line
    assert "families.h100.device_names" in line and "catalog overlay" in line
    # a Neuron host that neuron-ls names as another family's type
    trn1 = _rec(
        pool="trn2",
        instance_type="trn2.48xlarge",
        device_kind="neuron",
        world_size=64,
        host_instance_type="trn1.32xlarge",
        tokens_per_s=0.4 * 16 * 667e12 / (6 * 8.03e9),
    )
    line = _refusal(cat, _write(tmp_path / "n.jsonl", trn1), {"trn2": PoolFacts("neuron", 4)})
    assert "ran on a trn1.32xlarge (AWS Trainium, neuron-ls), but trn2.48xlarge has AWS" in line


def test_the_shape_comes_from_the_record(cat: Catalog, tmp_path) -> None:
    """A record that ran at 32,768 tokens counts its attention at 32,768, whatever the spec
    says; one without a shape takes none (the spec's, as the trial recorded it)."""
    rec = _rec(layers=32, hidden_size=4096, sequence_length=32768, tokens_per_s=_tps(0.3))
    per_token = 6 * 8.03e9 + 12 * 32 * 4096 * 32768
    assert record_mfu(cat, rec) == pytest.approx(_tps(0.3) * per_token / PEAK_8)


def test_records_at_different_lengths_are_kept_apart(cat: Catalog, tmp_path) -> None:
    """MFU rises with the sequence on current kernels: two lengths are two measurements,
    neither averaged nor refused as disagreeing; `price` uses the spec's, else the nearest
    (carried through the step model: tests/cost/test_measurements.py)."""
    a = _write(tmp_path / "a.jsonl", _rec(sequence_length=4096, tokens_per_s=_tps(0.40)))
    b = _write(tmp_path / "b.jsonl", _rec(sequence_length=8192, tokens_per_s=_tps(0.55)))
    ms = measure(cat, [a, b], H100)
    assert sorted((m.sequence_length, m.records) for m in ms) == [(4096, 1), (8192, 1)]
    pick = select(ms, "p5.48xlarge", _workload(sequence_length=8192))
    assert pick is not None and pick.sequence_length == 8192
    near = select(ms, "p5.48xlarge", _workload(sequence_length=16384))
    assert near is not None and near.sequence_length == 8192  # one doubling, not two
    short = select(ms, "p5.48xlarge", _workload(sequence_length=2048))
    assert short is not None and short.sequence_length == 4096
    # context parallelism: each rank holds 16,384 / 2 tokens
    cp = select(ms, "p5.48xlarge", _workload(sequence_length=16384, context_parallel=2))
    assert cp is not None and cp.sequence_length == 8192


def test_an_mfu_below_the_floor_is_refused(cat: Catalog, tmp_path) -> None:
    line = _refusal(cat, _write(tmp_path / "r.jsonl", _rec(tokens_per_s=_tps(0.01))))
    assert "MFU 0.01 " in line and "is below 0.05, the floor of a training step" in line


def test_the_release_tolerance_comes_from_public_record_pairs(cat: Catalog) -> None:
    tol, pair = release_tolerance(cat)
    assert 0.15 < tol < 0.20 and pair == "nemo-24.07-llama3-8b-fp8 vs nemo-25.11-llama3-8b-fp8"


def test_records_that_disagree_are_refused_not_averaged(cat: Catalog, tmp_path) -> None:
    """The issue's case: MFU 0.30 and 0.50 of one key were averaged to 0.40 with +-5%."""
    a = _write(tmp_path / "a.jsonl", _rec(tokens_per_s=_tps(0.30)))
    b = _write(tmp_path / "b.jsonl", _rec(tokens_per_s=_tps(0.50)))
    with pytest.raises(SpecError) as exc:
        measure(cat, [a, b])
    line = str(exc.value)
    assert "MFU 0.3 and b.jsonl line 1's 0.5 differ by 50%" in line
    assert "beyond the 18% two public releases of one benchmark differ by" in line


def test_records_that_agree_are_kept_with_their_spread(cat: Catalog, tmp_path) -> None:
    a = _write(tmp_path / "a.jsonl", _rec(tokens_per_s=_tps(0.38)))
    b = _write(tmp_path / "b.jsonl", _rec(tokens_per_s=_tps(0.42)))
    (m,) = measure(cat, [a, b])
    assert m.mfu == pytest.approx(0.40, rel=1e-6)
    assert m.mfu_spread == pytest.approx(0.05, abs=1e-4)
    est = estimate_training(cat, "p5.48xlarge", 1, _workload(), measured=[m])
    lo, hi = est.mfu_range
    rel = cat.throughput.spreads.measured + 0.05
    assert (lo, hi) == pytest.approx((est.mfu * (1 - rel), est.mfu * (1 + rel)))
    assert "(2 records, spread +-5%)" in est.mfu_source
    one = measure(cat, [a])[0]
    assert one.mfu_spread is None


def test_cli_refuses_in_one_line_and_writes_nothing(tmp_path, capsys) -> None:
    d = factories.preset("llama3-70b-p5")
    d["name"] = "calib"
    d["budget"] = {"max_hourly_usd": 1000}
    (tmp_path / "stacks").mkdir()
    spec = tmp_path / "stacks" / "calib.yaml"
    spec.write_text(yaml.safe_dump(d, sort_keys=False))
    before = spec.read_text()
    bad = _write(tmp_path / "r.jsonl", _rec(params_billion=70.6, tokens_per_s=_tps(0.45, 70.6)))
    assert main(["calibrate", str(bad), "--spec", str(spec)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "(at least 3 x p5.48xlarge)" in err
    assert spec.read_text() == before


# ---- a scaled-down reference run carried to the spec's model ---------------------------


def _reference_record(cat: Catalog, mfu_ran: float) -> dict[str, Any]:
    """1 of 80 layers of Llama 3 70B's shape on 8 H100, as the reference benchmark writes."""
    from accelstack.trial import shape as planner

    full = planner.llama_shape(70.6, 80, 8192)
    ran = planner.Shape(1, 8192, 64, 8, 128256, full.ffn)
    params = ran.params() / 1e9
    per_token = 6 * params * 1e9 + 12 * 1 * 8192 * 8192
    return _rec(
        params_billion=params,
        tokens_per_s=mfu_ran * PEAK_8 / per_token,
        sequence_length=8192,
        **ran.as_record(),
        target={"params_billion": 70.6, **full.as_record()},
        training_stack="accelstack-reference",
    )


def test_a_scaled_down_run_is_carried_to_the_spec_model(cat: Catalog, tmp_path) -> None:
    """One layer of 70B's shape spends a third of its counted FLOPs on the input embedding, a
    lookup: carried through the step model (the spec's rates at both ends), the full 80-layer
    model's MFU is lower than what ran; the carry adds the spec's TP4 and node count."""
    rec = _reference_record(cat, 0.45)
    (m,) = measure(cat, [_write(tmp_path / "r.jsonl", rec)], H100)
    assert m.target is not None and m.target.layers == 80 and m.shape is not None
    wl = _workload(
        model={"params_billion": 70.6, "layers": 80, "hidden_size": 8192}, sequence_length=8192
    )
    est = estimate_training(cat, "p5.48xlarge", 3, wl, measured=[m])
    assert est.pick.basis == "measured"
    assert "carried through the step model (x0." in est.mfu_source
    assert "1 of 80 layers (2.95701B) -> the spec's 70.6B, 8 -> 24 chips, TP1 -> TP4" in (
        est.mfu_source
    )
    # the factor by hand, on one node: the step model's MFU of each shape at the centre's rates
    # of the 70.6B (the measurement stands for it), the lookup left out where the vocabulary
    # is recorded
    one_node = estimate_training(cat, "p5.48xlarge", 1, wl, measured=[m])
    rates = rates_for(cat, "h100", "bf16", 70.6, None)

    def mfu(shape: ModelShape, tp: int) -> float:
        work = work_for(cat, "p5.48xlarge", shape, 8192, Layout(tensor_parallel=tp), 8)
        return point(cat, "p5.48xlarge", "bf16", work, rates).mfu

    ran = ModelShape(params_billion=m.params_billion, layers=1, hidden_size=8192, vocab=128256)
    spec = ModelShape(params_billion=70.6, layers=80, hidden_size=8192, vocab=128256)
    factor = mfu(spec, 4) / mfu(ran, 1)
    assert one_node.mfu == pytest.approx(0.45 * factor, rel=1e-6)
    assert 0.4 < factor < 0.9
    # a spec of another size or shape is not this measurement's
    other = _workload(model={"params_billion": 8.03, "layers": 32, "hidden_size": 4096})
    assert select([m], "p5.48xlarge", other) is None


# ---- a mixture of experts: FLOPs from the active parameters ---------------------------

#: Mixtral-8x7B-like: 46.7B in all, 12.9B active per token
MOE_TOTAL, MOE_ACTIVE = 46.7, 12.9


def test_a_mixture_of_experts_record_counts_its_active_flops(cat: Catalog, tmp_path) -> None:
    """MFU from 6 x the active parameters: counted from the total, a MoE's MFU of 0.40 came
    out 1.45 (and was refused)."""
    tps = 4 * _tps(0.40, MOE_ACTIVE)
    rec = _rec(
        params_billion=MOE_TOTAL,
        active_params_billion=MOE_ACTIVE,
        nodes=4,
        world_size=32,
        tokens_per_s=tps,
    )
    assert record_mfu(cat, rec) == pytest.approx(0.40, rel=1e-3)
    # a record without the field takes the spec's active size when it ran the spec's model
    plain = _write(
        tmp_path / "moe.jsonl",
        _rec(params_billion=MOE_TOTAL, nodes=4, world_size=32, tokens_per_s=tps),
    )
    (m,) = measure(cat, [plain], H100, (MOE_TOTAL, MOE_ACTIVE))
    assert m.mfu == pytest.approx(0.40, rel=1e-3) and m.params_billion == MOE_TOTAL
    assert "executes at least 1,432 TFLOP/s" in _refusal(cat, plain)  # the total's FLOPs
    # a proxy of another size keeps its own count
    proxy = _rec(params_billion=8.03, nodes=1)
    assert record_mfu(cat, proxy) == pytest.approx(0.40, rel=1e-3)


def test_the_trial_records_the_active_size_of_the_spec_model(monkeypatch) -> None:
    from accelstack.trial import runner

    monkeypatch.setenv("ACCELSTACK_TRIAL_PARAMS_BILLION", str(MOE_TOTAL))
    monkeypatch.setenv("ACCELSTACK_TRIAL_ACTIVE_PARAMS_BILLION", str(MOE_ACTIVE))
    timer = runner._Timer()
    assert runner._active_params(timer) == MOE_ACTIVE  # not counted: the spec's model
    timer.params = MOE_TOTAL * 1e9
    assert runner._active_params(timer) == MOE_ACTIVE  # counted, the spec's size
    timer.params = 1e6  # a proxy model: its own count is its FLOPs
    assert runner._active_params(timer) is None
    assert "active_params_billion" in runner.RECORD_FIELDS


def test_fp8_above_the_old_band_is_evidence_within_the_peak(cat: Catalog, tmp_path) -> None:
    """trn2 FP8 at MFU 0.6 of its FP8 peak (780 TFLOP/s of 1,299) was refused by the old band
    (the trn1 BF16 best x the FP8 gain); it is within the chip's peak, so it is kept."""
    inst = cat.instance("trn2.48xlarge")
    peak = cat.families[inst.family].peak_tflops["fp8"] * 1e12 * inst.chips
    rec = _rec(
        pool="trn2",
        instance_type="trn2.48xlarge",
        device_kind="neuron",
        world_size=64,
        precision="fp8",
        tokens_per_s=0.6 * peak / (6 * 8.03e9),
    )
    (m,) = measure(cat, [_write(tmp_path / "r.jsonl", rec)], {"trn2": PoolFacts("neuron", 4)})
    assert m.mfu == pytest.approx(0.6, rel=1e-6) and m.chips == 16


# ---- what calibrate writes, validate accepts ---------------------------------------------


def _spec_with(calibration: list[dict[str, Any]]) -> dict[str, Any]:
    d = factories.preset("llama3-70b-p5")
    d["calibration"] = calibration
    return d


def _entry(**over: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "instance_type": "p5.48xlarge",
        "params_billion": 8.03,
        "mfu": 0.9,
        "tokens_per_second": 1.0,
        "file": "r.jsonl",
        "date": "2026-11-20",
        "steps": 9,
        "sdk": "x",
        "sequence_length": 32768,
        "shape": {"layers": 32, "hidden_size": 4096, "vocab": 128256},
    }
    entry.update(over)
    return entry


def test_the_spec_rule_bounds_a_calibration_by_the_peak_not_a_band() -> None:
    """Counted MFU 0.9 at 32K executes 0.56 of the peak (the attention square is counted in
    full): the old 0.75 ceiling refused what `calibrate` accepts; above the peak it is refused."""
    from accelstack.resolve import resolve
    from accelstack.spec import parse_spec

    resolve(parse_spec(_spec_with([_entry()]), "stacks/llama3-70b-p5.yaml"))
    with pytest.raises(SpecError) as err:
        resolve(parse_spec(_spec_with([_entry(mfu=1.8)]), "stacks/llama3-70b-p5.yaml"))
    (line,) = [str(p) for p in err.value.problems]
    assert line.startswith("stacks/llama3-70b-p5.yaml: calibration[0].mfu: 1.8 executes at least")
    assert "above the NVIDIA H100 80GB SXM's dense bf16 peak of 989" in line
    # without the shape it ran at, the executed FLOPs are 6N only: 0.9 fits, 1.01 does not
    bare = {k: v for k, v in _entry().items() if k not in ("shape", "sequence_length")}
    resolve(parse_spec(_spec_with([bare]), "stacks/llama3-70b-p5.yaml"))
    with pytest.raises(SpecError):
        resolve(parse_spec(_spec_with([{**bare, "mfu": 1.01}]), "stacks/llama3-70b-p5.yaml"))


@pytest.mark.slow
def test_what_calibrate_accepts_always_validates(cat: Catalog, tmp_path) -> None:
    """Records anywhere between the floor and the physical bound, at any length, shape,
    checkpointing and device count: every one `measure` accepts is written and validates."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    d = factories.preset("llama3-70b-p5")
    d["name"] = "calib"
    (tmp_path / "stacks").mkdir()
    spec = tmp_path / "stacks" / "calib.yaml"
    clean = yaml.safe_dump(d, sort_keys=False)

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        share=st.floats(0.05, 1.0),
        seq=st.sampled_from([512, 4096, 32768, 131072]),
        layers=st.integers(1, 32),
        vocab=st.sampled_from([None, 32000, 128256]),
        ckpt=st.booleans(),
        chips=st.integers(1, 8),
    )
    def check(share: float, seq: int, layers: int, vocab: int | None, ckpt: bool, chips: int):
        shape = ModelShape(params_billion=1.5, layers=layers, hidden_size=4096, vocab=vocab)
        recompute = "full" if ckpt else "none"
        tps = share * chips * 989e12 / executed_flops(shape, seq, recompute).total
        rec = _rec(
            params_billion=1.5,
            world_size=chips,
            tokens_per_s=tps,
            sequence_length=seq,
            layers=layers,
            hidden_size=4096,
            activation_checkpointing=ckpt,
            **({"vocab": vocab} if vocab else {}),
        )
        try:
            measured = measure(cat, [_write(tmp_path / "r.jsonl", rec)], H100)
        except SpecError:
            return  # refused by calibrate (below the floor): nothing to write
        spec.write_text(clean)
        calibrate_spec(spec, measured, cat)  # resolves the written spec: the rules run

    check()
