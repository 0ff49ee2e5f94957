"""Public training records: the estimate reproduces every one within +-15%, the MFU curves in
instances.yaml are the least-squares fit to them, and estimates say where their MFU came from."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest
import yaml

from accelstack.catalog import CATALOG_DIR, Catalog, load_catalog
from accelstack.catalog.records import load_records
from accelstack.cost.estimate import estimate_training
from accelstack.cost.mfu import fit_curve, fit_family_curve, implied_mfu, reproduce
from accelstack.errors import CatalogError
from accelstack.spec import Workload

TOLERANCE = 0.15
CATALOG = load_catalog()


@pytest.mark.parametrize("rec", CATALOG.records, ids=lambda r: r.id)
def test_every_record_is_reproduced_within_15_percent(rec: object) -> None:
    from accelstack.catalog.records import TrainingRecord

    assert isinstance(rec, TrainingRecord)
    got = reproduce(CATALOG, rec)
    assert got == pytest.approx(rec.reported.value, rel=TOLERANCE), (
        f"{rec.id}: estimate {got:.4g} vs reported {rec.reported.value:.4g} "
        f"({rec.reported.kind}, overheads {'in' if rec.overheads_included else 'out'})"
    )


def test_the_brief_minimum_records_are_present() -> None:
    ids = {r.id for r in CATALOG.records}
    for need in (
        "llama3.1-8b-meta-card",
        "llama3.1-70b-meta-card",
        "llama3.1-405b-meta-card",
        "llama3-405b-paper-16k-gpus",
        "neuron-2.24-llama3.1-8b-trn1",
        "neuron-2.24-llama3.1-70b-trn1",
        "nemo-25.11-llama3-8b-fp8",
        "nemo-25.11-llama3-70b-fp8",
    ):
        assert need in ids
    for rec in CATALOG.records:
        assert rec.source and rec.date
        if rec.id.startswith("nemo"):
            assert rec.precision == "fp8"  # NeMo's published H100 numbers are FP8 runs


@pytest.mark.parametrize(
    ("family", "index"),
    [(n, i) for n, f in CATALOG.families.items() for i, c in enumerate(f.mfu_curves) if c.records],
)
def test_catalog_coefficients_are_the_fit_to_their_records(family: str, index: int) -> None:
    curve = CATALOG.families[family].mfu_curves[index]
    fit = fit_family_curve(CATALOG, curve)
    assert curve.intercept == pytest.approx(fit.intercept, abs=5e-4)
    assert curve.slope == pytest.approx(fit.slope, abs=5e-4)
    assert curve.params_range == pytest.approx(fit.params_range)


def test_every_record_is_used_by_exactly_one_curve() -> None:
    used = [r for f in CATALOG.families.values() for c in f.mfu_curves for r in c.records]
    assert sorted(used) == sorted(r.id for r in CATALOG.records)


def test_fit_recovers_a_known_line_and_a_flat_group() -> None:
    pts = [(p, 0.1 + 0.05 * math.log10(p)) for p in (1, 10, 100)]
    fit = fit_curve(pts)
    assert (fit.intercept, fit.slope, fit.params_range) == (
        pytest.approx(0.1),
        pytest.approx(0.05),
        (1, 100),
    )
    flat = fit_curve([(70, 0.3), (70, 0.4)])
    assert flat.slope == 0 and flat.intercept == pytest.approx(0.35)


def test_overhead_treatment_changes_the_implied_mfu() -> None:
    rec = next(r for r in CATALOG.records if r.id == "llama3.1-405b-meta-card")
    without = rec.model_copy(update={"overheads_included": False})
    factor = CATALOG.defaults.training_overhead_factor
    assert implied_mfu(CATALOG, rec) == pytest.approx(implied_mfu(CATALOG, without) * factor)


def _wl(params: float, precision: str = "bf16") -> Workload:
    return Workload.model_validate(
        {
            "model": {"params_billion": params},
            "tokens_billion": 100,
            "precision": precision,
            "entrypoint": "t.py",
        }
    )


def test_mfu_depends_on_model_size_and_family() -> None:
    small = estimate_training(CATALOG, "p5.48xlarge", 4, _wl(8))
    large = estimate_training(CATALOG, "p5.48xlarge", 4, _wl(405))
    assert small.mfu < 0.6 * large.mfu  # small models at roughly half the utilisation
    trn1 = estimate_training(CATALOG, "trn1.32xlarge", 4, _wl(70))
    h100 = estimate_training(CATALOG, "p5.48xlarge", 4, _wl(70))
    assert trn1.mfu != h100.mfu
    # outside the records' sizes the curve is flat
    tiny = estimate_training(CATALOG, "p5.48xlarge", 4, _wl(1))
    assert tiny.mfu == small.mfu == pytest.approx(CATALOG.mfu_curve("h100", "bf16").mfu(8.03))


@pytest.mark.parametrize(
    ("itype", "basis"),
    [
        ("p5.48xlarge", "fitted to records"),
        ("trn1.32xlarge", "fitted to records"),
        ("trn2.48xlarge", "estimate (no public record)"),
        ("trn3.48xlarge", "estimate (no public record)"),
        ("p5en.48xlarge", "estimate (no public record)"),
    ],
)
def test_estimate_says_where_its_mfu_came_from(itype: str, basis: str) -> None:
    est = estimate_training(CATALOG, itype, 2, _wl(70))
    assert est.mfu_basis == basis and not est.mfu_from_spec
    assert est.mfu_origin.startswith(f"MFU source = {basis}")
    override = estimate_training(CATALOG, itype, 2, _wl(70), mfu=0.5)
    assert override.mfu == 0.5 and override.mfu_basis == "budget.mfu"
    assert override.mfu_origin == "MFU source = budget.mfu"


def test_estimate_curves_copy_their_reference_family() -> None:
    trn1 = CATALOG.mfu_curve("trainium", "bf16")
    for fam in ("trainium2", "trainium3"):
        curve = CATALOG.mfu_curve(fam, "bf16")
        assert curve.basis == "estimate" and curve.mfu(70) == trn1.mfu(70)
    assert CATALOG.mfu_curve("h200", "fp8").mfu(8) == CATALOG.mfu_curve("h100", "fp8").mfu(8)


def _broken_catalog(tmp_path: Path, edit: object) -> Path:
    for f in CATALOG_DIR.glob("*.yaml"):
        shutil.copy(f, tmp_path / f.name)
    data = yaml.safe_load((tmp_path / "instances.yaml").read_text())
    edit(data)  # type: ignore[operator]
    (tmp_path / "instances.yaml").write_text(yaml.safe_dump(data))
    return tmp_path


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["families"]["h100"]["mfu_curves"].pop(), "need exactly one for fp8"),
        (
            lambda d: d["families"]["h100"]["mfu_curves"][0]["records"].append("nope"),
            "unknown record 'nope'",
        ),
        (
            lambda d: d["families"]["trainium"]["mfu_curves"][0]["records"].append(
                "llama3.1-8b-meta-card"
            ),
            "is h100/bf16",
        ),
        (
            lambda d: d["families"]["trainium2"]["mfu_curves"][0].update(copy_of="nope"),
            "copy_of a known family",
        ),
    ],
)
def test_a_broken_curve_does_not_load(tmp_path: Path, edit: object, message: str) -> None:
    with pytest.raises(CatalogError, match=message):
        load_catalog(_broken_catalog(tmp_path, edit))


def test_a_broken_record_does_not_load(tmp_path: Path) -> None:
    path = tmp_path / "records.yaml"
    data = yaml.safe_load((CATALOG_DIR / "records.yaml").read_text())
    data["records"][0]["reported"]["kind"] = "gpu_days"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(CatalogError, match=r"records\[0\]\.reported\.kind"):
        load_records(path)
    data["records"][0]["reported"]["kind"] = "accelerator_hours"
    data["records"].append(data["records"][0])
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(CatalogError, match="duplicate record id"):
        load_records(path)


def test_catalog_type_is_used(catalog: Catalog) -> None:
    assert catalog.records == CATALOG.records
