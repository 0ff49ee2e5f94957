"""One table of catalog sections (accelstack/catalog/sections.py) drives loading, validation
and the overlay: every bundled catalog file may be overlaid, overlay errors name the overlay
file and the YAML path, a missing fact says what to add to the overlay, and prices.yaml names
its shared source texts once (`sources:`)."""

from __future__ import annotations

import collections
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from accelstack.catalog import CATALOG_DIR, Catalog, catalog_file, load_catalog
from accelstack.catalog.overlay import ENV, check_dir
from accelstack.catalog.sections import FILES, SECTIONS
from accelstack.errors import CatalogError, MissingPrice, SpecError
from accelstack.resolve import resolve
from accelstack.spec import parse_spec

from .. import factories


def bundled(name: str) -> dict[str, Any]:
    return yaml.safe_load((CATALOG_DIR / name).read_text())  # type: ignore[no-any-return]


def overlay_of(tmp: Path, files: dict[str, Any]) -> Path:
    d = tmp / "overlay"
    d.mkdir(exist_ok=True)
    for name, data in files.items():
        (d / name).write_text(yaml.safe_dump(data, sort_keys=False))
    return d


def _record_change() -> dict[str, Any]:
    row = dict(bundled("records.yaml")["records"][0])
    row["source"] = "overlay test"
    return {"records": [row]}


def _cb_rate() -> dict[str, Any]:
    row = {
        "region": "us-east-2",
        "type": "p5e.48xlarge",
        "option": "capacity-block",
        "usd": 12.34,
        "as_of": "2026-11",
        "estimate": True,
        "source": "overlay test: a quoted Capacity Block rate",
    }
    return {"instances": [row]}


def _tables(overlay: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any, Any]:
    from accelstack.plan.diff import replace_table
    from accelstack.plan.rolls import roll_table
    from accelstack.resolve.placeholders import placeholder_table

    monkeypatch.setenv(ENV, str(overlay))
    return placeholder_table(), replace_table(), roll_table()


#: Per catalog file: an overlay file holding one change, and what the loaded catalog shows for
#: it (the modules that read a file themselves: through `catalog_file`).
CHANGES: dict[str, tuple[dict[str, Any], Callable[[Catalog, Path], object], object]] = {
    "instances.yaml": (
        {"defaults": {"system_nodes": 7}},
        lambda c, d: c.defaults.system_nodes,
        7,
    ),
    "offerings.yaml": ({"source": "overlay test"}, lambda c, d: c.offerings_source, "overlay test"),
    "price_ranges.yaml": (
        {"price_ranges": [{"option": "capacity-block", "low": -0.05, "high": 0.1, "source": "t"}]},
        lambda c, d: c.price_span("trn2.48xlarge", "capacity-block", True),
        (0.95, 1.1, "t"),
    ),
    "offerings_extra.yaml": (
        {"regions": {"us-east-2": {"types": {"trn1.32xlarge": ["use2-az1"]}}}},
        lambda c, d: "trn1.32xlarge" in c.regions["us-east-2"].estimated_types,
        True,
    ),
    "prices.yaml": (
        _cb_rate(),
        lambda c, d: c.instance_rate("us-east-2", "p5e.48xlarge", "capacity-block").usd,
        12.34,
    ),
    "records.yaml": (_record_change(), lambda c, d: c.records[0].source, "overlay test"),
    "throughput.yaml": (
        {"goodput": {"image_pull_gb_per_node": 99}},
        lambda c, d: c.throughput.goodput.image_pull_gb_per_node,
        99,
    ),
    "capacity_blocks.yaml": (
        {"capacity_blocks": {"max_instances_per_account": 512}},
        lambda c, d: c.capacity_blocks.max_instances_per_account,
        512,
    ),
    "launch.yaml": (
        {"fault_tolerance": {"job_restarts": 9}},
        lambda c, d: c.launch.fault_tolerance.job_restarts,
        9,
    ),
    "purchase_options.yaml": (
        {"purchase_options": {"spot": {"billing": "overlay test"}}},
        lambda c, d: c.purchase("spot").billing,
        "overlay test",
    ),
    "scale.yaml": (
        {"limits": {"nodes_per_node_group": {"value": 300}}},
        lambda c, d: c.scale.limits.nodes_per_node_group.value,
        300,
    ),
    "resilience.yaml": (
        {"checkpoint": {"keep": 5}},
        lambda c, d: c.resilience.checkpoint.keep,
        5,
    ),
    "placeholders.yaml": (
        {"example_accounts": [{"id": "999988887777", "source": "overlay test"}]},
        lambda c, d: (
            "999988887777"
            in [a["id"] for a in catalog_file("placeholders.yaml", d)["example_accounts"]]
        ),
        True,
    ),
    "replacements.yaml": (
        {"stateful_types": ["aws:overlay/test:Test"]},
        lambda c, d: catalog_file("replacements.yaml", d)["stateful_types"],
        ["aws:overlay/test:Test"],
    ),
}


def test_the_table_names_every_bundled_file_once() -> None:
    on_disk = sorted(p.name for p in CATALOG_DIR.glob("*.yaml"))
    assert sorted(FILES) == on_disk
    assert len(set(FILES)) == len(SECTIONS)
    assert sorted(CHANGES) == on_disk  # each file has an overlay test below


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CHANGES))
def test_each_catalog_file_can_be_overlaid(tmp_path: Path, name: str) -> None:
    change, read, want = CHANGES[name]
    d = overlay_of(tmp_path, {name: change})
    assert check_dir(d) == d.resolve()  # the overlay accepts the file
    before = read(load_catalog(), CATALOG_DIR)
    assert before != want
    assert read(load_catalog(overlay=d), d.resolve()) == want


def test_placeholder_and_replacement_tables_read_the_overlay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = overlay_of(
        tmp_path,
        {
            "placeholders.yaml": CHANGES["placeholders.yaml"][0],
            "replacements.yaml": CHANGES["replacements.yaml"][0],
        },
    )
    placeholders, replacements, rolls = _tables(d, monkeypatch)
    assert "999988887777" in placeholders.accounts
    assert "123456789012" in placeholders.accounts  # the bundled rows stay
    assert replacements.stateful == frozenset({"aws:overlay/test:Test"})
    assert rolls.sources  # node_rolls still come from the bundled file


def test_a_capacity_block_rate_override_changes_the_comparison(tmp_path: Path) -> None:
    from accelstack.cost.compare import compare
    from accelstack.resolve import resolve

    d = overlay_of(tmp_path, {"prices.yaml": _cb_rate()})
    cat = load_catalog(overlay=d)
    data = factories.preset("p5e-capacity-block")
    stack = resolve(parse_spec(data, "p5e-capacity-block.yaml"), cat)
    cb = compare(stack, ["p5e.48xlarge"], options=["capacity-block"]).candidates[0].options[0]
    assert cb.instance_rate_usd == 12.34


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_a_new_family_and_type_come_from_the_overlay_alone(tmp_path: Path) -> None:
    """A new accelerator family (its row, a type, offerings, a price, its step model's curves and
    step entry, and a Python environment on the DLAMI) is overlay files only."""
    inst = bundled("instances.yaml")
    family = dict(inst["families"]["trainium2"], accelerator="Overlay Trainium")
    row = dict(inst["instances"]["trn2.48xlarge"], family="overlaytrn", compare=False)
    curves = [
        dict(c, family="overlaytrn")
        for c in bundled("throughput.yaml")["curves"]
        if c["family"] == "trainium2"
    ]
    envs = bundled("launch.yaml")["dlami_python_envs"]
    env = next(e for e in envs if "trainium2" in e["families"])
    zones = bundled("offerings.yaml")["regions"]["us-east-2"]["types"]["trn2.48xlarge"]
    price = dict(_cb_rate()["instances"][0], type="ovl1.48xlarge", option="on-demand")
    d = overlay_of(
        tmp_path,
        {
            "instances.yaml": {
                "families": {"overlaytrn": family},
                "instances": {"ovl1.48xlarge": row},
            },
            "throughput.yaml": {
                "curves": curves,
                "step": [
                    dict(s, family="overlaytrn")
                    for s in bundled("throughput.yaml")["step"]
                    if s["family"] == "trainium2"
                ],
            },
            "launch.yaml": {
                "dlami_python_envs": [dict(env, families=[*env["families"], "overlaytrn"])]
            },
            "offerings_extra.yaml": {"regions": {"us-east-2": {"types": {"ovl1.48xlarge": zones}}}},
            "prices.yaml": {"instances": [price]},
        },
    )
    cat = load_catalog(overlay=d)
    assert cat.family_of("ovl1.48xlarge").accelerator == "Overlay Trainium"
    assert cat.mfu_curve("overlaytrn", "bf16") is not None
    assert cat.instance_rate("us-east-2", "ovl1.48xlarge", "on-demand").usd == 12.34
    assert len(cat.launch.dlami_python_envs) == len(envs)  # replaced by identity, not added


def test_an_overlay_error_names_the_overlay_file_and_the_row(tmp_path: Path) -> None:
    good = _cb_rate()["instances"][0]
    bad = dict(good, type="p5.48xlarge", usd="lots")
    d = overlay_of(tmp_path, {"prices.yaml": {"instances": [good, bad]}})
    with pytest.raises(CatalogError) as err:
        load_catalog(overlay=d)
    line = str(err.value)
    assert "\n" not in line
    assert line.startswith(f"{d.resolve() / 'prices.yaml'}: instances[1].usd: ")


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_an_overlay_section_error_names_its_file_and_path(tmp_path: Path) -> None:
    d = overlay_of(tmp_path, {"placeholders.yaml": {"example_accounts": [{"id": "1"}]}})
    with pytest.raises(CatalogError) as err:
        load_catalog(overlay=d)
    line = str(err.value)
    assert line.startswith(f"{d.resolve() / 'placeholders.yaml'}: ")
    assert "example_accounts[0].source: Field required" in line  # its index in the overlay


def test_a_missing_price_says_what_to_add_to_the_overlay() -> None:
    cat = load_catalog()
    with pytest.raises(MissingPrice) as err:
        cat.instance_rate("us-east-2", "p5e.48xlarge", "spot")
    msg = str(err.value)
    assert "--catalog DIR or ACCELSTACK_CATALOG_DIR" in msg
    assert "prices.yaml, under `instances:`" in msg
    assert "type: p5e.48xlarge, option: spot" in msg
    assert str(CATALOG_DIR) not in msg and "accelstack/catalog" not in msg


def test_a_spec_on_an_unpriced_option_says_what_to_add_to_the_overlay() -> None:
    data = factories.preset("p5e-capacity-block")
    data["pools"][0]["purchase"] = {"option": "spot"}
    with pytest.raises(SpecError) as err:
        resolve(parse_spec(data, "p5e-capacity-block.yaml"))
    msg = str(err.value)
    assert "pools[0].purchase.option" in msg and "prices.yaml, under `instances:`" in msg
    assert "accelstack/catalog" not in msg


def test_every_price_source_reference_resolves() -> None:
    prices = bundled("prices.yaml")
    sources = prices["sources"]
    rows = [*prices["instances"], *prices["services"]]
    refs = [r["source_ref"] for r in rows if "source_ref" in r]
    assert refs and set(refs) <= set(sources)
    assert set(sources) <= set(refs)  # no unused source
    assert all(("source" in r) != ("source_ref" in r) for r in rows)
    loaded = {
        (r.region, r.type or r.item, r.option): r.source
        for r in (
            *load_catalog(CATALOG_DIR).instance_rates,
            *load_catalog(CATALOG_DIR).service_rates,
        )
    }
    for r in rows:
        text = sources[r["source_ref"]] if "source_ref" in r else r["source"]
        assert loaded[(r["region"], r.get("type") or r.get("item"), r.get("option"))] == text


def test_no_price_source_text_is_spelled_out_twice() -> None:
    """A source shared by several rows lives once under `sources:` (rows name its key)."""
    prices = bundled("prices.yaml")
    rows = [*prices["instances"], *prices["services"]]
    counts = collections.Counter(r["source"] for r in rows if "source" in r)
    assert [text for text, n in counts.items() if n > 1] == []


def test_an_unknown_source_reference_names_the_file_and_row(tmp_path: Path) -> None:
    row = {k: v for k, v in _cb_rate()["instances"][0].items() if k != "source"}
    d = overlay_of(
        tmp_path, {"prices.yaml": {"instances": [dict(row, source_ref="skypilot-on-demnd")]}}
    )
    with pytest.raises(CatalogError) as err:
        load_catalog(overlay=d)
    line = str(err.value)
    assert line.startswith(f"{d.resolve() / 'prices.yaml'}: instances[")
    assert ".source_ref: 'skypilot-on-demnd' is not a key of `sources:`" in line
    assert "did you mean 'skypilot-on-demand'" in line
