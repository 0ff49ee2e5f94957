"""The purchase-options table (catalog/purchase_options.yaml): one row per option the spec
allows, validated like the rest of the catalog, and read by every layer."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from accelstack.catalog import CATALOG_DIR, PURCHASE_OPTIONS, Catalog, load_catalog
from accelstack.catalog.purchase import FILE
from accelstack.cost.compare import COMMITMENT_YEARS, COMPARE_OPTIONS, DEFAULT_OPTIONS
from accelstack.cost.pricing import PricingContext, _billed_option, _market_option
from accelstack.errors import CatalogError


def test_one_row_per_option_of_the_spec_in_order(catalog: Catalog) -> None:
    assert tuple(catalog.purchase_options) == PURCHASE_OPTIONS
    for row in catalog.purchase_options.values():
        assert row.sources and all(s in catalog.purchase_sources for s in row.sources)
        assert all("https://" in catalog.purchase_sources[s] for s in row.sources)


def test_compare_reads_its_options_from_the_table(catalog: Catalog) -> None:
    rows = catalog.purchase_options
    assert tuple(n for n, r in rows.items() if r.comparable) == COMPARE_OPTIONS
    assert set(DEFAULT_OPTIONS) <= set(COMPARE_OPTIONS)
    assert all(rows[n].commitment_years == y for n, y in COMMITMENT_YEARS.items())


@pytest.mark.parametrize("option", PURCHASE_OPTIONS)
def test_every_option_is_billed_as_itself_in_its_own_market(catalog: Catalog, option: str) -> None:
    """A node group of the option's capacity type, or a fleet of its market, is billed under the
    option the spec chose; in another market it falls back to that market's first option."""
    row = catalog.purchase_options[option]
    ctx = PricingContext(catalog, "us-east-1", {"p": option}, [])
    assert _billed_option("p", row.capacity_type, ctx) == (option, "")
    assert _market_option(catalog, option, row.fleet_market) == option
    other = next(r for r in catalog.purchase_options.values() if r.fleet_market != row.fleet_market)
    assert _market_option(catalog, option, other.fleet_market) != option


def _copy(tmp_path: Path) -> Path:
    base = tmp_path / "catalog"
    shutil.copytree(CATALOG_DIR, base, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    return base


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["purchase_options"].pop("spot"), "the spec allows exactly"),
        (
            lambda d: d["purchase_options"]["spot"].update(capacity_type="SPOTTY"),
            "purchase_options.spot.capacity_type",
        ),
        (
            lambda d: d["purchase_options"]["spot"].update(sources=["NOPE"]),
            "purchase_options.spot.sources: unknown 'NOPE'",
        ),
        (
            lambda d: d["purchase_options"]["spot"].update(price_key="bid"),
            "purchase_options.spot.price_key: unknown option 'bid'",
        ),
        (lambda d: d["purchase_options"]["spot"].update(color="red"), "spot.color"),
    ],
)
def test_a_broken_table_is_one_line_naming_the_file(tmp_path: Path, change, message) -> None:
    base = _copy(tmp_path)
    path = base / FILE
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(CatalogError) as err:
        load_catalog(base)
    line = str(err.value)
    assert "\n" not in line and line.startswith(str(path)) and message in line
