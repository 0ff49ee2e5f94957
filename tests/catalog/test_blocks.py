"""EC2 Capacity Blocks for ML: durations, block sizes and limits from the EC2 User Guide
(catalog capacity_blocks.yaml), whole-window billing, and the spec rule that refuses a pool
over the per-block or per-account limit in one line."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from accelstack.catalog import Catalog
from accelstack.cli import main
from accelstack.cost.guard import check_budget
from accelstack.errors import SpecError
from accelstack.resolve import resolve
from accelstack.spec import load_spec, parse_spec

from .. import factories
from ..conftest import STACKS

CR = "cr-0123456789abcdef0"


def test_durations_are_daily_to_14_then_weekly_to_182(catalog: Catalog) -> None:
    cb = catalog.capacity_blocks
    days = cb.durations_days()
    assert days[:14] == tuple(range(1, 15))
    assert days[14:] == tuple(range(21, 183, 7))
    assert (cb.max_instances_per_block, cb.max_instances_per_account) == (64, 256)
    assert cb.instance_counts == (1, 2, 4, 8, 16, 32, 64)
    assert cb.single_zone and cb.billed_up_front and "capacity-blocks-how" in cb.source


@pytest.mark.parametrize(
    ("hours", "days"),
    [
        (0.5, 1),
        (24, 1),
        (24.01, 2),
        (14 * 24, 14),
        (14 * 24 + 1, 21),
        (22 * 24, 28),
        (182 * 24, 182),
        (182 * 24 + 1, 183),
        (200 * 24, 203),
    ],
)
def test_a_run_is_billed_for_the_window_that_holds_it(
    catalog: Catalog, hours: float, days: int
) -> None:
    """Past 182 days: full windows back to back, then the shortest one for the rest."""
    assert catalog.capacity_blocks.window_days(hours) == days


def test_bigger_pools_take_several_blocks(catalog: Catalog) -> None:
    cb = catalog.capacity_blocks
    assert cb.blocks_for(16) == (16,)
    assert cb.blocks_for(100) == (64, 32, 4)
    assert sum(cb.blocks_for(255)) == 255
    assert cb.over_limit(256) is None
    assert "257 instances exceed the 256" in (cb.over_limit(257) or "")


def test_price_bills_the_whole_window_up_front() -> None:
    v = check_budget(resolve(load_spec(STACKS / "p5e-capacity-block.yaml")))
    r = v.run
    assert r.billed_pool_hours is not None and r.billed_pool_hours % 24 == 0
    assert r.billed_pool_hours >= r.wall_hours
    other = v.cost.hourly_usd - r.pool_hourly_usd
    assert r.extra_usd == pytest.approx(8 * 20 * 0.045)  # image pulls through the NAT
    assert r.run_usd == pytest.approx(
        other * r.wall_hours + r.pool_hourly_usd * r.billed_pool_hours + r.extra_usd
    )
    assert v.blocks == (8,)


def _cb_spec(nodes: int) -> dict[str, Any]:
    d: dict[str, Any] = factories.preset("p5e-capacity-block")
    d["pools"][0]["nodes"] = nodes
    d.pop("budget", None)
    return d


@pytest.mark.parametrize(
    ("nodes", "message"),
    [
        (65, "65 nodes exceed the 64 instances of one Capacity Block"),
        (300, "300: 300 instances exceed the 256 an account can hold across Capacity Blocks"),
    ],
)
def test_a_capacity_block_pool_over_the_limits_is_refused_in_one_line(
    nodes: int, message: str
) -> None:
    with pytest.raises(SpecError) as err:
        resolve(parse_spec(_cb_spec(nodes), "cb.yaml"))
    lines = [str(p) for p in err.value.problems if "capacity" in str(p).lower()]
    assert len(lines) == 1 and "pools[0].nodes" in lines[0] and message in lines[0]


def _cb_reservations(*sizes: int) -> dict[str, Any]:
    d = _cb_spec(sum(sizes))
    purchase = d["pools"][0]["purchase"]
    purchase.pop("reservation_id", None)
    purchase["reservations"] = [{"id": f"cr-{i:017x}", "nodes": n} for i, n in enumerate(sizes)]
    return d


def test_a_pool_over_one_block_fits_as_several_blocks() -> None:
    spec = parse_spec(_cb_reservations(64, 8), "cb.yaml")
    assert spec.pools[0].nodes == 72


def test_each_block_behind_a_pool_holds_at_most_the_per_block_count() -> None:
    with pytest.raises(SpecError) as err:
        resolve(parse_spec(_cb_reservations(72, 8), "cb.yaml"))
    lines = [str(p) for p in err.value.problems if "Capacity Block" in str(p)]
    assert len(lines) == 1 and "pools[0].purchase.reservations[0].nodes" in lines[0]
    assert "72 exceeds the 64 instances of one Capacity Block" in lines[0]


def test_64_nodes_fit_one_block() -> None:
    spec = parse_spec(_cb_spec(64), "cb.yaml")
    assert spec.pools[0].nodes == 64


def test_validate_warns_when_the_batch_cannot_feed_every_rank(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    d = factories.preset("llama3-70b-trn2")
    d["pools"][0]["nodes"] = 64  # 1,024 chips
    d["workload"]["global_batch_size"] = 256
    d["budget"] = {"unlimited": True, "reason": "the warning, not the price, is under test"}
    path = tmp_path / "llama3-70b-trn2.yaml"
    path.write_text(yaml.safe_dump(d))
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "workload.global_batch_size: global batch of 256 sequences on 1,024 chips" in out
    assert "0.25 sequence per chip" in out


def test_a_calibration_below_the_floor_is_refused_in_one_line() -> None:
    d = factories.preset("llama3-70b-p5")
    d["calibration"] = [
        {
            "instance_type": "p5.48xlarge",
            "params_billion": 70.6,
            "mfu": 1.9e-7,
            "tokens_per_second": 0.01,
            "file": "records.jsonl",
            "date": "2026-11-20",
            "steps": 9,
            "sdk": "x",
        }
    ]
    with pytest.raises(SpecError) as err:
        resolve(parse_spec(d, "llama3-70b-p5.yaml"))
    (line,) = [str(p) for p in err.value.problems]
    assert "calibration[0].mfu: 1.9e-07 is below 0.05, the floor of a training step" in line


def test_capacity_block_prices_only_where_aws_offers_the_type(catalog: Catalog) -> None:
    offered = catalog.capacity_blocks.offered
    assert offered["trn2.48xlarge"] == ("us-east-2",) and catalog.capacity_blocks.offered_source
    rows = [r for r in catalog.instance_rates if r.option == "capacity-block"]
    assert rows
    for r in rows:
        assert r.region in offered.get(r.type or "", ()), (r.type, r.region)
        assert r.estimate and r.as_of and r.source
