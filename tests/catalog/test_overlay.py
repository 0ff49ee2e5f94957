"""The user's catalog overlay (`--catalog DIR` / ACCELSTACK_CATALOG_DIR): read on top of the
bundled catalog with the same validation; a new instance type is a catalog-only change that
leaves every existing preset's plan as it is."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from accelstack.catalog import CATALOG_DIR, load_catalog
from accelstack.catalog.overlay import ENV, FILES, merge
from accelstack.catalog.refresh import default_target
from accelstack.cli import main
from accelstack.errors import AccelstackError, CatalogError
from accelstack.resolve import resolve
from accelstack.spec import load_spec

from ..conftest import PRESETS, ROOT, preset_ids
from ..helpers_plan import plan_stack

#: Not an AWS type: a row of trn2's family at half the size, under a name the bundled catalog
#: does not have yet.
PLACEHOLDER = next(
    n
    for n in ("trn2.24xlarge", "trn2.12xlarge", "trn2.6xlarge")
    if n not in load_catalog().instances
)


def placeholder_overlay(tmp: Path) -> Path:
    """An overlay that adds one instance type: its row, where it is offered, its price."""
    bundled = yaml.safe_load((CATALOG_DIR / "instances.yaml").read_text())
    row = dict(bundled["instances"]["trn2.48xlarge"])
    row.update(chips=8, vcpus=96, memory_gib=1024, accelerator_memory_gib=768, compare=False)
    row.update(network_cards=8, efa_interfaces=8, source="placeholder (overlay test)")
    offers = yaml.safe_load((CATALOG_DIR / "offerings.yaml").read_text())
    zones = offers["regions"]["us-east-2"]["types"]["trn2.48xlarge"]
    d = tmp / "overlay"
    d.mkdir()
    (d / "instances.yaml").write_text(yaml.safe_dump({"instances": {PLACEHOLDER: row}}))
    (d / "offerings_extra.yaml").write_text(
        yaml.safe_dump({"regions": {"us-east-2": {"types": {PLACEHOLDER: zones}}}})
    )
    price = {
        "region": "us-east-2",
        "type": PLACEHOLDER,
        "option": "on-demand",
        "usd": 22.5,
        "as_of": "2026-11",
        "estimate": True,
        "source": "placeholder (overlay test)",
    }
    (d / "prices.yaml").write_text(yaml.safe_dump({"instances": [price]}))
    return d


@pytest.fixture(scope="module")
def overlay(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return placeholder_overlay(tmp_path_factory.mktemp("catalog"))


def test_merge_adds_rows_and_replaces_by_identity() -> None:
    base = {"a": {"x": 1, "y": {"z": [1, 2]}}, "rows": [{"id": "r1", "v": 1}, {"id": "r2"}]}
    top = {"a": {"y": {"z": [3]}}, "rows": [{"id": "r1", "v": 2}, {"id": "r3"}]}
    assert merge(base, top) == {
        "a": {"x": 1, "y": {"z": [3]}},
        "rows": [{"id": "r1", "v": 2}, {"id": "r2"}, {"id": "r3"}],
    }


def test_the_overlay_adds_a_type_and_keeps_the_bundled_ones(overlay: Path) -> None:
    bundled = load_catalog()
    cat = load_catalog(overlay=overlay)
    assert PLACEHOLDER in cat.instances and PLACEHOLDER not in bundled.instances
    assert set(bundled.instances) < set(cat.instances)
    assert cat.instance_rate("us-east-2", PLACEHOLDER, "on-demand").usd == 22.5
    assert len(cat.instance_rates) == len(bundled.instance_rates) + 1
    assert cat.compare_candidates() == bundled.compare_candidates()


@pytest.mark.parametrize("preset", PRESETS, ids=preset_ids())
def test_a_catalog_row_added_changes_no_preset_plan(overlay: Path, preset: Path) -> None:
    """The plan of every preset under the overlay is its golden plan, byte for byte."""
    cat = load_catalog(overlay=overlay)
    plan = plan_stack(resolve(load_spec(preset), cat))
    golden = ROOT / "tests" / "golden" / "plan" / f"{preset.stem}.json"
    assert plan.to_json() == golden.read_text()


def _bad_overlay(tmp_path: Path, text: str, name: str = "instances.yaml") -> Path:
    d = tmp_path / "bad"
    d.mkdir()
    (d / name).write_text(text)
    return d


def test_a_bad_overlay_row_is_one_line_naming_the_overlay_file(tmp_path: Path) -> None:
    d = _bad_overlay(tmp_path, "instances:\n  x.large: {family: nope}\n")
    with pytest.raises(CatalogError) as err:
        load_catalog(overlay=d)
    line = str(err.value)
    assert "\n" not in line and line.startswith(str(d.resolve() / "instances.yaml"))


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("instances.yml", "x: 1\n", "not a catalog file"),
        ("prices.yaml", "instances: [\n", "cannot read catalog file"),
    ],
)
def test_unreadable_or_unknown_overlay_files_are_refused(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    d = _bad_overlay(tmp_path, text, name)
    with pytest.raises(CatalogError, match=message):
        load_catalog(overlay=d)


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_cli_reads_the_overlay_from_the_flag_and_the_environment(
    overlay: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    preset = str(ROOT / "stacks" / "trn1-multinode.yaml")
    bad = _bad_overlay(tmp_path, "instances:\n  x.large: {family: nope}\n")
    assert main(["--catalog", str(bad), "price", preset]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(bad.resolve() / "instances.yaml") in err[0]
    assert main(["--catalog", str(tmp_path / "missing"), "price", preset]) == 2
    assert "not a directory" in capsys.readouterr().err
    assert main(["price", preset]) == 0  # the flag held for one command only
    capsys.readouterr()
    monkeypatch.setenv(ENV, str(bad))
    assert main(["price", preset]) == 2
    assert str(bad.resolve() / "instances.yaml") in capsys.readouterr().err


def test_prices_refresh_writes_into_the_overlay_never_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV, raising=False)
    with pytest.raises(AccelstackError, match="never into the installed package"):
        default_target()
    monkeypatch.setenv(ENV, str(tmp_path))
    assert default_target() == tmp_path.resolve() / "prices.yaml"


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
@pytest.mark.parametrize("name", FILES)
def test_an_unknown_top_level_key_is_refused_in_every_overlay_file(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A misspelt section (`instance:` for `instances:`) would be merged and never read: a
    negotiated price that silently never applies. It is one line naming the file and the key,
    with a "did you mean", exit 2."""
    bundled = yaml.safe_load((CATALOG_DIR / name).read_text())
    key = next(iter(bundled))
    typo = key[:-1] if len(key) > 4 else key + "x"
    d = _bad_overlay(tmp_path, yaml.safe_dump({typo: {}}), name)
    with pytest.raises(CatalogError) as err:
        load_catalog(overlay=d)
    line = str(err.value)
    assert "\n" not in line and line.startswith(f"{d.resolve() / name}: '{typo}': ")
    assert f"did you mean '{key}'?" in line
    preset = str(ROOT / "stacks" / "trn1-multinode.yaml")
    assert main(["--catalog", str(d), "price", preset]) == 2
    err_lines = capsys.readouterr().err.strip().splitlines()
    assert len(err_lines) == 1 and f"'{typo}'" in err_lines[0]


def test_price_and_check_say_which_overlay_is_in_effect(
    overlay: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    preset = str(ROOT / "stacks" / "trn1-multinode.yaml")
    # 3 rows: one instance type, one region's offerings, one price
    note = f"overlay in effect: 3 rows from {overlay.resolve()}"
    assert main(["--catalog", str(overlay), "price", preset, "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert note in err.splitlines() and note not in out  # stdout stays the JSON
    assert main(["--catalog", str(overlay), "check", preset]) == 0
    assert note in capsys.readouterr().err.splitlines()
    assert main(["price", preset]) == 0
    assert "overlay in effect" not in capsys.readouterr().err  # none: nothing said
