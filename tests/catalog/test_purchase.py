"""The purchase-options table (catalog/purchase_options.yaml): one row per option the spec
allows, validated like the rest of the catalog, and read by every layer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from accelstack.catalog import CATALOG_DIR, PURCHASE_OPTIONS, Catalog, load_catalog
from accelstack.catalog.purchase import FILE
from accelstack.cli import main
from accelstack.cost.compare import compare
from accelstack.cost.pricing import PricingContext, _billed_option, _market_option
from accelstack.errors import CatalogError
from accelstack.resolve import Stack, resolve
from accelstack.spec import parse_spec

from ..conftest import STACKS


def test_one_row_per_option_of_the_spec_in_order(catalog: Catalog) -> None:
    assert tuple(catalog.purchase_options) == PURCHASE_OPTIONS
    for row in catalog.purchase_options.values():
        assert row.sources and all(s in catalog.purchase_sources for s in row.sources)
        assert all("https://" in catalog.purchase_sources[s] for s in row.sources)


def test_compare_reads_its_options_from_the_table(catalog: Catalog) -> None:
    rows, lists = catalog.purchase_options, catalog.option_lists
    assert lists.comparable == tuple(n for n, r in rows.items() if r.comparable)
    assert lists.compare_default == ("on-demand", "capacity-block")
    assert set(lists.compare_default) <= set(lists.comparable)
    assert dict(lists.commitment_years) == {"savings-plan-1y": 1, "savings-plan-3y": 3}
    assert lists.needs_reservation == ("capacity-block", "reservation")
    assert catalog.option_lists is lists  # computed once per catalog


#: An overlay of purchase_options.yaml: spot compared by default, the 3-year plan not at all.
OVERLAY = {
    "purchase_options": {
        "spot": {"compare_default": True},
        "savings-plan-3y": {"comparable": False},
    }
}


def _p5_stack(catalog: Catalog) -> Stack:
    data = yaml.safe_load((STACKS / "llama3-70b-p5.yaml").read_text())
    return resolve(parse_spec(data, "llama3-70b-p5.yaml", catalog), catalog)


def test_an_overlay_of_the_table_changes_compares_options(tmp_path: Path) -> None:
    """compare's option lists come from the loaded catalog, never the bundled file alone."""
    d = tmp_path / "overlay"
    d.mkdir()
    (d / FILE).write_text(yaml.safe_dump(OVERLAY))
    bundled, overlaid = load_catalog(), load_catalog(overlay=d)
    assert overlaid.option_lists.compare_default == ("on-demand", "spot", "capacity-block")
    assert compare(_p5_stack(bundled), ["p5.48xlarge"]).options == ("on-demand", "capacity-block")
    stack = _p5_stack(overlaid)
    cmp = compare(stack, ["p5.48xlarge"])
    assert cmp.options == ("on-demand", "spot", "capacity-block")
    assert "spot" in {o.option for o in cmp.candidates[0].options}
    assert compare(_p5_stack(bundled), ["p5.48xlarge"], options=["savings-plan-3y"]).options
    with pytest.raises(CatalogError, match=r"'savings-plan-3y' \(allowed: on-demand, spot, "):
        compare(stack, ["p5.48xlarge"], options=["savings-plan-3y"])


def test_the_compare_command_reads_the_overlay_of_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    d = tmp_path / "overlay"
    d.mkdir()
    (d / FILE).write_text(yaml.safe_dump(OVERLAY))
    spec = str(STACKS / "llama3-70b-p5.yaml")
    args = ["compare", spec, "--instance-types", "p5.48xlarge", "--format", "json"]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["options"] == ["on-demand", "capacity-block"]
    monkeypatch.setenv("ACCELSTACK_CATALOG_DIR", str(d))
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["options"] == ["on-demand", "spot", "capacity-block"]


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
