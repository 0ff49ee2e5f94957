"""A measurement carried to another sequence length, model size and chip count through the
two-rate step model (accelstack/cost/measurements.py over accelstack.cost.rates.carry_mfu).

The done-when of the issue ("real one-device runs are accepted by calibrate and carried to
another sequence length within 10%") needs a real device; without one, the runs here are the
step model's own prediction of a one-H100 run at one length, scaled by a factor a real stack
might show over the model (1.25), written as the trial record the reference benchmark writes,
read by `calibrate` (its checks, its MFU), written into the spec, and priced at another length:
the price must land within 10% of the model's own prediction there x the same factor. Without
the carry (the old `select`), a spec at another length ignored the measurement and priced the
curve (the factor lost); a spec at the measured length took the measurement unchanged.
These runs check the carry's arithmetic (the model's ratio, the one-device world size, what
`calibrate` writes); a comparison against a second real measurement at the other length, one
that can fail, is tests/trial/test_reference.py (the CPU reference run)."""

from __future__ import annotations

import ast
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from accelstack.catalog import Catalog, load_catalog
from accelstack.catalog.flops import ModelShape, counted_per_token
from accelstack.cli import main
from accelstack.cost import measurements
from accelstack.cost.estimate import estimate_training
from accelstack.cost.rates import default_layout, point, rates_for, scale_at, shape_of, work_for
from accelstack.cost.step import Layout
from accelstack.spec import Workload, load_spec
from accelstack.trial import shape as planner

from .. import factories
from ..conftest import ROOT

#: what a team's stack shows over the step model's centre (a measurement above the curve)
OVER = 1.25
H100_NAME = "NVIDIA H100 80GB HBM3"  # what torch.cuda.get_device_name says on p5


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


def _model_mfu(
    cat: Catalog, itype: str, ran: ModelShape, size: float, seq: int, chips: int, tokens: int
) -> float:
    """The step model's MFU (centre rates of a `size`-billion model) of `ran` at `seq` on
    `chips` data-parallel chips with `tokens` tokens per chip per step, scale included."""
    layout = Layout(global_batch=tokens * chips / seq)
    rates = rates_for(cat, cat.instance(itype).family, "bf16", size, None)
    work = work_for(cat, itype, ran, seq, layout, chips)
    return point(cat, itype, "bf16", work, rates).mfu * scale_at(cat, itype, seq, layout, chips)


def _record(
    cat: Catalog, itype: str, ran: planner.Shape, size: float, seq: int, **extra: Any
) -> dict[str, Any]:
    """One record as the reference benchmark writes it on one H100 (world size 1), timed at
    OVER x the step model's prediction of that run."""
    shape = ModelShape(
        params_billion=ran.params() / 1e9,
        layers=ran.layers,
        hidden_size=ran.hidden,
        vocab=ran.vocab,
    )
    mfu = OVER * _model_mfu(cat, itype, shape, size, seq, 1, seq)
    peak = cat.family_of(itype).peak_tflops["bf16"] * 1e12
    rec: dict[str, Any] = {
        "schema": "accelstack-trial/2",
        "date": "2026-11-28T10:00:00+00:00",
        "pool": "h100",
        "instance_type": itype,
        "device_kind": "nvidia",
        "device_model": H100_NAME,
        "nodes": 1,
        "world_size": 1,
        "devices": 1,
        "steps": 19,
        "tokens_per_s": mfu * peak / counted_per_token(shape, seq),
        "tokens_per_chip": seq,
        "micro_batch": 1,
        "params_billion": ran.params() / 1e9,
        "params_source": "measured",
        "sequence_length": seq,
        "precision": "bf16",
        "sdk": "pytorch-2.11",
        "compiled": False,
        "activation_checkpointing": False,
        "training_stack": measurements.REFERENCE_STACK,
        "shape_source": "reported",
        **ran.as_record(),
    }
    rec.update(extra)
    return rec


def _spec(tmp: Path, itype: str, nodes: int, model: dict[str, Any], seq: int) -> Path:
    data = factories.eks_spec(
        itype,
        nodes,
        {
            "name": "carry",
            "budget": factories.UNLIMITED,
            "workload.model": model,
            "workload.sequence_length": seq,
            "workload.global_batch_size": max(1, nodes * 8 * 8192 // seq),
        },
    )
    (tmp / "stacks").mkdir(exist_ok=True)
    return factories.write_spec(tmp / "stacks", data)


def _calibrate_and_price(tmp: Path, spec: Path, rec: dict[str, Any]) -> dict[str, Any]:
    """`accelstack calibrate` of the record into the spec, then `accelstack price` (JSON)."""
    records = tmp / "records.jsonl"
    records.write_text(json.dumps(rec) + "\n")
    assert main(["calibrate", str(records), "--spec", str(spec)]) == 0
    return _price(spec)


def _price(spec: Path) -> dict[str, Any]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["price", str(spec), "--format", "json"]) == 0
    training: dict[str, Any] = json.loads(out.getvalue())["training"]
    return training


def _curve_mfu(cat: Catalog, spec: Path) -> float:
    """`price`'s figure for the spec without the measurement (the step model's curve pick)."""
    s = load_spec(spec)
    pool = s.pools[0]
    est = estimate_training(cat, pool.instance_type, pool.nodes or 1, s.workload)
    assert est.mfu_basis in ("fitted", "extrapolated")
    return est.mfu


def _model_of_spec(cat: Catalog, spec: Path, vocab: int) -> float:
    """The step model's own prediction for the spec's run (its model with the vocabulary the
    record names, its default layout, chips and batch), at the centre's rates."""
    s = load_spec(spec)
    pool, wl = s.pools[0], s.workload
    itype, chips = pool.instance_type, (pool.nodes or 1) * cat.instance(pool.instance_type).chips
    layout = default_layout(cat, itype, wl)
    shape = replace(shape_of(wl), vocab=vocab)
    rates = rates_for(cat, cat.instance(itype).family, "bf16", shape.compute_params_billion, None)
    work = work_for(cat, itype, shape, wl.sequence_length, layout, chips)
    step = point(cat, itype, "bf16", work, rates).mfu
    return step * scale_at(cat, itype, wl.sequence_length, layout, chips)


#: Llama 3.2 3B's shape (meta-llama/llama-models@084b88e9 models/sku_list.py: 28 layers, dim
#: 3072): small enough that its training state fits one H100 (calibrate's memory fit)
L3B = {"params_billion": 3.21, "layers": 28, "hidden_size": 3072}


@pytest.mark.parametrize(
    ("itype", "nodes", "measured", "priced"),
    [
        ("p5.4xlarge", 1, 4096, 32768),  # one H100 instance, priced at 32K
        ("p5.48xlarge", 2, 4096, 32768),  # 1 of 8 GPUs, priced on 16 GPUs at 32K
        ("p5.48xlarge", 2, 32768, 8192),  # down in length
    ],
)
def test_a_one_device_run_is_carried_to_another_sequence_within_10_percent(
    cat: Catalog, tmp_path: Path, itype: str, nodes: int, measured: int, priced: int
) -> None:
    full = planner.llama_shape(L3B["params_billion"], L3B["layers"], L3B["hidden_size"])
    rec = _record(cat, itype, full, L3B["params_billion"], measured)
    spec = _spec(tmp_path, itype, nodes, L3B, priced)
    model, curve = _model_of_spec(cat, spec, full.vocab), _curve_mfu(cat, spec)
    training = _calibrate_and_price(tmp_path, spec, rec)
    (row,) = yaml.safe_load(spec.read_text())["calibration"]
    assert (row["chips"], row["sequence_length"], row["world_size"]) == (1, measured, 1)
    assert training["mfu_basis"] == "measured"
    assert f"{measured:,} -> {priced:,} tokens" in training["mfu_source"]
    # the 10% asked of a carry: the model's own prediction at the other length comes back exactly
    assert training["mfu"] == pytest.approx(OVER * model, rel=0.01)
    rng = training["mfu_range"]
    assert rng["low"] < OVER * model < rng["high"]
    # the curve `price` uses without a measurement counts the input embedding (12% of 3.2B) as
    # dense work, a spec naming no vocabulary: 5-10% apart at these lengths
    assert training["mfu"] == pytest.approx(OVER * curve, rel=0.12)


def test_a_scaled_down_reference_run_is_carried_to_the_spec_model_and_length(
    cat: Catalog, tmp_path: Path
) -> None:
    """The reference benchmark's record shape: Llama 3.1 8B scaled by `planner.fit` to one
    80 GiB H100 at 4,096 tokens (fewer layers), its target the spec's model; priced as the full
    32-layer 8B at 16,384 tokens on 2 x p5.48xlarge. The model's prediction of the run that ran
    takes the rates of the spec's size: the layers that ran are the spec's layers."""
    full = planner.llama_shape(8.03, 32, 4096)
    ran = planner.fit(full, 80 * 2**30, 4096)
    assert ran.layers < full.layers and ran.hidden == full.hidden
    target = {"params_billion": 8.03, **full.as_record()}
    rec = _record(cat, "p5.48xlarge", ran, 8.03, 4096, target=target)
    llama8 = {"params_billion": 8.03, "layers": 32, "hidden_size": 4096}
    spec = _spec(tmp_path, "p5.48xlarge", 2, llama8, 16384)
    model, curve = _model_of_spec(cat, spec, full.vocab), _curve_mfu(cat, spec)
    training = _calibrate_and_price(tmp_path, spec, rec)
    assert training["mfu_basis"] == "measured"
    assert f"{ran.layers} of 32 layers" in training["mfu_source"]
    assert "4,096 -> 16,384 tokens, 1 -> 16 chips" in training["mfu_source"]
    assert training["mfu"] == pytest.approx(OVER * model, rel=0.01)
    assert training["mfu"] == pytest.approx(OVER * curve, rel=0.10)


def _measured(**over: Any) -> Any:
    from accelstack.spec import Measured

    data: dict[str, Any] = {
        "instance_type": "p5.48xlarge",
        "params_billion": 8.03,
        "mfu": 0.5,
        "tokens_per_second": 1.0,
        "file": "r.jsonl",
        "date": "2026-11-28",
        "steps": 19,
        "sdk": "x",
        "nodes": 1,
        "chips": 8,
        "sequence_length": 4096,
        "tokens_per_chip": 4096,
    }
    data.update(over)
    return Measured.model_validate(data)


def _wl(seq: int, **over: Any) -> Workload:
    data: dict[str, Any] = {
        "model": {"params_billion": 8.03, "layers": 32, "hidden_size": 4096},
        "tokens_billion": 1,
        "entrypoint": "x",
        "sequence_length": seq,
        "global_batch_size": 8 * 4096 // seq or 1,
    }
    data.update(over)
    return Workload.model_validate(data)


def test_the_range_widens_with_the_length_carried_and_the_stacks_unknown(cat: Catalog) -> None:
    """At its own length a measurement keeps +-5%; carried 3 doublings it adds 5% per doubling
    and, for a stack without rates of its own, every stack's attention rate."""
    at = estimate_training(cat, "p5.48xlarge", 1, _wl(4096), measured=[_measured()])
    assert at.mfu == pytest.approx(0.5) and at.mfu_range == pytest.approx((0.475, 0.525))
    m = _measured(stack="torchtitan")
    own = estimate_training(cat, "p5.48xlarge", 1, _wl(32768), measured=[m])
    unknown = estimate_training(cat, "p5.48xlarge", 1, _wl(32768), measured=[_measured()])
    assert own.mfu > 0.5 and unknown.mfu > 0.5  # attention work added at its rate
    lo, hi = own.mfu_range
    assert (lo / own.mfu, hi / own.mfu) == pytest.approx((0.8, 1.2))  # 5% + 3 x 5%
    u_lo, u_hi = unknown.mfu_range
    assert u_lo / unknown.mfu < 0.8 and u_hi / unknown.mfu > 1.2


def test_the_nearest_length_is_carried_and_named(cat: Catalog) -> None:
    short, long = _measured(sequence_length=4096), _measured(sequence_length=16384, mfu=0.6)
    est = estimate_training(cat, "p5.48xlarge", 1, _wl(32768), measured=[short, long])
    assert "16,384 -> 32,768 tokens" in est.mfu_source
    # the measured length itself: no carry, nothing named
    est = estimate_training(cat, "p5.48xlarge", 1, _wl(16384), measured=[short, long])
    assert est.mfu == pytest.approx(0.6) and "carried" not in est.mfu_source


def test_the_reference_stack_is_the_name_the_benchmark_records() -> None:
    """accelstack/trial/reference.py is node-side (torch): read, never imported."""
    tree = ast.parse((ROOT / "accelstack/trial/reference.py").read_text())
    names = {
        t.id: n.value.value
        for n in tree.body
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    assert names["TRAINING_STACK"] == measurements.REFERENCE_STACK


def test_calibrate_output_above_the_old_ceilings_validates_and_moves_the_estimate(
    cat: Catalog, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A one-H100 run of Llama 3.2 3B at 32K timed at a counted MFU of 0.80: above the old
    `calibrate` ceiling (the best record x 1.23 = 0.542) and the old spec-rule ceiling (0.75),
    within the physical bound (it executes about half the peak: the counted attention square
    is twice what a causal kernel runs). `calibrate` writes it, `validate` accepts the spec,
    and `price` moves from the curve to it."""
    full = planner.llama_shape(L3B["params_billion"], L3B["layers"], L3B["hidden_size"])
    rec = _record(cat, "p5.4xlarge", full, L3B["params_billion"], 32768)
    shape = ModelShape(
        params_billion=full.params() / 1e9, layers=28, hidden_size=3072, vocab=full.vocab
    )
    peak = cat.family_of("p5.4xlarge").peak_tflops["bf16"] * 1e12
    rec["tokens_per_s"] = 0.80 * peak / counted_per_token(shape, 32768)
    spec = _spec(tmp_path, "p5.4xlarge", 1, L3B, 32768)
    curve = _price(spec)["mfu"]
    training = _calibrate_and_price(tmp_path, spec, rec)
    (row,) = yaml.safe_load(spec.read_text())["calibration"]
    assert row["mfu"] == pytest.approx(0.80, rel=1e-3)
    capsys.readouterr()
    assert main(["validate", str(spec)]) == 0, capsys.readouterr()
    assert training["mfu_basis"] == "measured" and training["mfu"] > 1.3 * curve


#: One-GPU measurements reported against the former model (PyTorch 2.11 SDPA on an H100,
#: eager and compiled): the counted MFU rises "by roughly 10-20% from 4K to 32K". The middle of that report, as records
#: at both lengths: not the step model's own figures, so the comparison below can fail (the
#: former global exponent, min(1, 8192 / S) ** 0.165, carried 4K to 32K at x0.80: 31% under;
#: at the top of the reported range, +20%, the step model's carry is 11.4% under and fails).
REPORTED_RISE_4K_TO_32K = 1.15


def test_a_one_device_run_carried_to_32k_lands_within_10_percent_of_one_measured_there(
    cat: Catalog, tmp_path: Path
) -> None:
    """Two one-H100 records of Llama 3.2 3B, 4,096 and 32,768 tokens, the 32K one 15% higher
    in counted MFU. Calibrated from the 4K record alone, `price` at 32K carries it through the
    step model; calibrated from the 32K record, it prices the measurement there. The carried
    figure lands within 10% of the direct one (the model carries +6.4%: 7.5% under)."""
    full = planner.llama_shape(L3B["params_billion"], L3B["layers"], L3B["hidden_size"])
    shape = ModelShape(
        params_billion=full.params() / 1e9, layers=28, hidden_size=3072, vocab=full.vocab
    )
    peak = cat.family_of("p5.4xlarge").peak_tflops["bf16"] * 1e12
    base_mfu = 0.45
    priced: dict[int, float] = {}
    for seq, mfu in ((4096, base_mfu), (32768, base_mfu * REPORTED_RISE_4K_TO_32K)):
        rec = _record(cat, "p5.4xlarge", full, L3B["params_billion"], seq)
        rec["tokens_per_s"] = mfu * peak / counted_per_token(shape, seq)
        (tmp_path / str(seq)).mkdir()
        spec = _spec(tmp_path / str(seq), "p5.4xlarge", 1, L3B, 32768)
        training = _calibrate_and_price(tmp_path / str(seq), spec, rec)
        assert training["mfu_basis"] == "measured"
        priced[seq] = training["mfu"]
    assert priced[32768] == pytest.approx(base_mfu * REPORTED_RISE_4K_TO_32K, rel=1e-3)
    error = priced[4096] / priced[32768] - 1
    print(f"carried 4K -> 32K vs measured at 32K: {error:+.2%}")
    assert abs(error) < 0.10, f"carried 4K -> 32K is {error:+.1%} off the 32K measurement"
