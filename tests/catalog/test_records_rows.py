"""prices.yaml rows: sourced and dated; estimates say so; spot is observed, never a rule."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from accelstack.catalog import CATALOG_DIR, load_catalog
from accelstack.errors import CatalogError

CATALOG = load_catalog()
RATES = CATALOG.instance_rates


def test_every_row_is_sourced_and_dated() -> None:
    for r in RATES:
        assert r.source.strip() and re.match(r"^\d{4}(-\d{2}){0,2}$", r.as_of), r


def test_no_spot_row_is_an_on_demand_multiple_presented_as_fact() -> None:
    for r in RATES:
        if r.option == "spot":
            assert "x 0.3" not in (r.note or "") and "rule of thumb" not in r.source, r
            assert "SpotPrice" in r.source, r  # observed data (SkyPilot per-zone spot column)
            if not r.estimate:
                assert "observed" in (r.note or ""), r


def test_savings_plans_and_capacity_blocks_are_marked_estimates_with_reasons() -> None:
    for r in RATES:
        if (r.option or "").startswith("savings-plan") or r.option == "capacity-block":
            assert r.estimate and r.source.startswith("estimate"), r


@pytest.mark.parametrize(
    ("region", "itype"),
    [
        ("us-east-1", "trn1.32xlarge"),
        ("us-east-2", "trn2.48xlarge"),
        ("us-east-1", "p5.48xlarge"),
        ("us-east-2", "p5.48xlarge"),
        ("us-west-2", "p5.48xlarge"),
        ("us-east-2", "p5e.48xlarge"),
        ("us-east-2", "p5en.48xlarge"),
    ],
)
def test_capacity_block_rows_where_aws_offers_them(region: str, itype: str) -> None:
    assert CATALOG.has_rate(region, itype, "capacity-block")


def test_trn2_on_demand_is_an_explicit_estimate_with_its_reasoning() -> None:
    r = CATALOG.instance_rate("us-east-2", "trn2.48xlarge", "on-demand")
    assert r.estimate and "no AWS-published rate" in r.source and r.note
    spot = CATALOG.instance_rate("us-east-2", "trn2.48xlarge", "spot")
    assert not spot.estimate and spot.usd < r.usd


def test_observed_spot_differs_per_region() -> None:
    p5 = {
        reg: CATALOG.instance_rate(reg, "p5.48xlarge", "spot").usd
        for reg in ("us-east-1", "us-east-2", "us-west-2")
    }
    assert len(set(p5.values())) == 3
    assert not CATALOG.has_rate("us-east-2", "p5.4xlarge", "spot")  # none observed: refused


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
@pytest.mark.parametrize("as_of", ["", "late 2024", "2024/12"])
def test_a_row_without_a_date_does_not_load(tmp_path: Path, as_of: str) -> None:
    for f in CATALOG_DIR.glob("*.yaml"):
        shutil.copy(f, tmp_path / f.name)
    text = (tmp_path / "prices.yaml").read_text()
    text = text.replace('as_of: "2024-12"', f'as_of: "{as_of}"', 1)
    (tmp_path / "prices.yaml").write_text(text)
    with pytest.raises(CatalogError, match="every row needs a source and as_of"):
        load_catalog(tmp_path)
