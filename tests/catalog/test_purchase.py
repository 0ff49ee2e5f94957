"""The purchase-options table (catalog/purchase_options.yaml): one row per option the spec
allows, validated like the rest of the catalog, and read by every layer."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import get_args

import pytest
import yaml

from accelstack.catalog import CATALOG_DIR, PURCHASE_OPTIONS, Catalog, load_catalog
from accelstack.catalog.purchase import FILE
from accelstack.cli import main
from accelstack.cost.compare import compare
from accelstack.cost.pricing import PricingContext, _billed_option, _market_option
from accelstack.errors import CatalogError
from accelstack.resolve import Stack, resolve
from accelstack.spec import parse_spec, read_yaml
from accelstack.spec.models import PurchaseOption

from ..conftest import STACKS


def test_one_row_per_option_of_the_spec_in_order(catalog: Catalog) -> None:
    assert tuple(catalog.purchase_options) == PURCHASE_OPTIONS
    # the schema's literal (the spec package knows nothing of the catalog) names the same rows
    assert get_args(PurchaseOption) == PURCHASE_OPTIONS
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
    return resolve(parse_spec(data, "llama3-70b-p5.yaml"), catalog)


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


@pytest.mark.slow
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


#: An overlay billing a reservation at the 1-year plan's rate and refreshing no spot rates.
RATES_OVERLAY = {
    "purchase_options": {
        "reservation": {"price_key": "savings-plan-1y"},
        "spot": {"price_api": None},
    }
}


def _rates_overlay(tmp_path: Path) -> Path:
    d = tmp_path / "rates-overlay"
    d.mkdir()
    (d / FILE).write_text(yaml.safe_dump(RATES_OVERLAY))
    return d


def test_the_guards_billed_at_mark_reads_the_overlay_of_the_table(tmp_path: Path) -> None:
    """The cost report's "(billed at the X rate)" mark is the loaded catalog's price_key."""
    from accelstack.cost.guard import check_budget, render_report

    bundled, overlaid = load_catalog(), load_catalog(overlay=_rates_overlay(tmp_path))
    before = render_report(check_budget(_p5_stack(bundled)))
    after = render_report(check_budget(_p5_stack(overlaid)))
    mark = [ln for ln in after.splitlines() if ln.strip().startswith("reservation ")]
    assert mark and all("(billed at the savings-plan-1y rate)" in ln for ln in mark)
    assert "(billed at the on-demand rate)" in before
    assert "(billed at the on-demand rate)" not in after


def test_prices_refresh_fetches_the_overlays_refreshed_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from accelstack.catalog.refresh import AwsPriceSource, refresh_text

    class Recorder:
        def __init__(self) -> None:
            self.calls: list[str] = []

        def quote(self, region: str, instance_type: str, option: str) -> None:
            self.calls.append(option)

    text = (CATALOG_DIR / "prices.yaml").read_text()
    args = (["us-west-2"], ["trn1.32xlarge"])
    refresh_text(text, bundled := Recorder(), "2026-11-26", *args)
    assert "spot" in bundled.calls
    monkeypatch.setenv("ACCELSTACK_CATALOG_DIR", str(_rates_overlay(tmp_path)))
    refresh_text(text, overlaid := Recorder(), "2026-11-26", *args)
    assert overlaid.calls and "spot" not in overlaid.calls
    years = AwsPriceSource(None, None, lambda r: None, "2026-11-26").years
    assert dict(years) == {"savings-plan-1y": 1, "savings-plan-3y": 3}


@pytest.mark.slow
def test_no_module_loads_the_purchase_table_at_import() -> None:
    """Importing the cost guard, refresh and the CLI reads no purchase_options.yaml: every
    reader asks the catalog in effect when it runs (so an overlay counts)."""
    import subprocess
    import sys

    code = (
        "import accelstack.catalog.load as c, accelstack.catalog.purchase as p\n"
        "import accelstack.cost.guard, accelstack.catalog.refresh, accelstack.cost.compare\n"
        "import accelstack.cli.cost_cmds\n"
        "print(p.load_table.cache_info().currsize, c._load.cache_info().currsize)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "0"]


@pytest.mark.slow
def test_no_module_level_statement_reads_the_purchase_table() -> None:
    """The same, for every module: no statement outside a function calls a table loader."""
    import ast

    loaders = {"load_table", "load_catalog", "_load", "_read", "catalog_file"}
    found = []
    for path in sorted((CATALOG_DIR.parent).rglob("*.py")):
        for stmt in ast.parse(path.read_text()).body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                continue
            for node in ast.walk(stmt):
                func = node.func if isinstance(node, ast.Call) else None
                name = getattr(func, "id", getattr(func, "attr", None))
                if name in loaders:
                    found.append(f"{path.name}:{node.lineno}: {name}")
    assert found == []


def test_compares_help_names_no_fixed_option_list(capsys: pytest.CaptureFixture[str]) -> None:
    """`compare --help` loads no catalog, so it names no option: an overlay may add or drop
    comparable ones; it says where they come from and a wrong one lists them."""
    assert main(["compare", "--help"]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "compare_default" in shown and "comparable" in shown
    for option in PURCHASE_OPTIONS:
        assert option not in shown, option


def test_what_an_option_does_follows_its_row_not_its_name(tmp_path: Path) -> None:
    """Interruptible (Spot), a Capacity Block and the reference option are read from a row's
    own fields: an overlay that gives `reservation` the Spot capacity type makes the guard
    charge its interruptions; one that takes on-demand's place as the reference needs a row on
    On-Demand terms, else the table is refused in one line."""
    from accelstack.cost.guard import spot_factor

    d = tmp_path / "o"
    d.mkdir()
    (d / FILE).write_text(
        yaml.safe_dump({"purchase_options": {"reservation": {"capacity_type": "SPOT"}}})
    )
    bundled, overlaid = load_catalog(), load_catalog(overlay=d)
    assert bundled.option_lists.interruptible == ("spot",)
    assert overlaid.option_lists.interruptible == ("spot", "reservation")
    assert bundled.option_lists.capacity_block == ("capacity-block",)
    assert bundled.option_lists.reference == "on-demand"
    spec = copy.deepcopy(read_yaml(STACKS / "llama3-70b-p5.yaml"))
    spec["pools"][0]["purchase"] = {
        "option": "reservation",
        "reservation_id": "cr-0123456789abcdef0",
    }
    assert spot_factor(resolve(parse_spec(spec, "llama3-70b-p5.yaml"), bundled)) == 1.0
    assert spot_factor(resolve(parse_spec(spec, "llama3-70b-p5.yaml"), overlaid)) > 1.0
    other = tmp_path / "no-reference"  # load_catalog caches per directory
    other.mkdir()
    (other / FILE).write_text(
        yaml.safe_dump({"purchase_options": {"on-demand": {"reservation_id": "required"}}})
    )
    with pytest.raises(CatalogError, match="no ON_DEMAND row without a reservation or commitment"):
        load_catalog(overlay=other)


def test_prices_refresh_asks_the_api_each_row_names(monkeypatch: pytest.MonkeyPatch) -> None:
    from accelstack.catalog.refresh import AwsPriceSource

    called: list[tuple[str, str]] = []
    src = AwsPriceSource(None, None, lambda r: None, "2026-11-26")
    for name in ("on_demand", "spot", "capacity_block"):
        monkeypatch.setattr(src, name, lambda r, t, _n=name: called.append((_n, t)))
    monkeypatch.setattr(src, "savings_plan", lambda r, t, o: called.append(("savings_plan", o)))
    for option in ("on-demand", "spot", "savings-plan-3y", "capacity-block"):
        src.quote("us-east-1", "p5.48xlarge", option)
    assert [c[0] for c in called] == ["on_demand", "spot", "savings_plan", "capacity_block"]
    with pytest.raises(ValueError, match="names no price_api"):
        src.quote("us-east-1", "p5.48xlarge", "reservation")
