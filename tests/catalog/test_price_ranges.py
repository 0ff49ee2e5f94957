"""Ranges that hold the price evidence: every estimated instance rate has a
sourced low/high (price_ranges.yaml), carried into `run_usd_range`, the break-even line and
"too close to call"; an observed rate has none."""

from __future__ import annotations

import dataclasses
import json

import pytest
import yaml

from accelstack.catalog import load_catalog
from accelstack.cost.compare import compare
from accelstack.cost.guard import check_budget, verdict_json
from accelstack.errors import CatalogError
from accelstack.resolve import resolve
from accelstack.spec import parse_spec

from .. import factories


def _spec(preset: str, budget: dict[str, float] | None = None) -> dict:
    return factories.preset(preset, None if budget is None else {"budget": budget})


def span_for(instance_type: str, option: str, estimate: bool) -> tuple[float, float, str] | None:
    return load_catalog().price_span(instance_type, option, estimate)


def test_every_estimated_instance_rate_has_a_sourced_span() -> None:
    cat = load_catalog()
    for r in cat.instance_rates:
        span = span_for(r.type or "", r.option or "", r.estimate)
        if not r.estimate:
            assert span is None
            continue
        assert span is not None, (r.region, r.type, r.option)
        lo, hi, source = span
        assert 0 < lo <= 1 <= hi and source
    assert all(len(row.source) > 40 for row in cat.price_ranges)
    assert cat.price_ranges


def test_the_capacity_block_estimates_span_minus_13_plus_40() -> None:
    lo, hi, src = span_for("trn2.48xlarge", "capacity-block", True) or (0, 0, "")
    assert (lo, hi) == pytest.approx((0.87, 1.40))
    assert "34.61" in src and "39.80" in src
    assert span_for("p5.48xlarge", "capacity-block", True)[:2] == pytest.approx((0.87, 1.40))  # type: ignore[index]


def test_an_overlay_row_moves_the_span(tmp_path: pytest.TempPathFactory) -> None:
    """price_ranges.yaml is a catalog section: a user's overlay row replaces the bundled one."""
    over = tmp_path / "overlay"  # type: ignore[operator]
    over.mkdir()
    row = {"option": "capacity-block", "low": -0.05, "high": 0.10, "source": "our quote, 2026-11"}
    (over / "price_ranges.yaml").write_text(yaml.safe_dump({"price_ranges": [row]}))
    cat = load_catalog(overlay=over)
    assert cat.price_span("trn2.48xlarge", "capacity-block", True) == pytest.approx(
        (0.95, 1.10, "our quote, 2026-11")
    )


def test_an_estimated_rate_without_a_span_fails_closed() -> None:
    with pytest.raises(CatalogError, match="no price range for the estimated spot rate of p5"):
        span_for("p5.48xlarge", "spot", True)


def test_run_usd_range_carries_the_price_span() -> None:
    stack = resolve(parse_spec(_spec("llama3-70b-trn2"), "t"))
    moved = dataclasses.replace(
        stack,
        pools=tuple(
            dataclasses.replace(
                p,
                purchase_option="capacity-block",
                purchase=stack.catalog.purchase("capacity-block"),
            )
            if p.name == stack.workload_pool.name
            else p
            for p in stack.pools
        ),
    )
    v = check_budget(moved)
    assert v.run.price_factors == pytest.approx((0.87, 1.40))
    lo, hi = v.run.run_usd_range
    flat = dataclasses.replace(v.run, price_factors=(1.0, 1.0))
    f_lo, f_hi = flat.run_usd_range
    assert lo < f_lo and hi > f_hi
    # the pool's part moves by exactly the span at each end
    lo_w, hi_w = v.run.wall_hours_range or (0, 0)
    lo_b, hi_b = v.run.billed_pool_hours_range or (lo_w, hi_w)
    pool = v.run.pool_hourly_usd
    assert f_hi - f_lo + pool * (0.40 * hi_b + 0.13 * lo_b) == pytest.approx(hi - lo)
    doc = json.loads(verdict_json(v))
    assert doc["training"]["price_factor_range"] == pytest.approx({"low": 0.87, "high": 1.40})


def test_an_observed_rate_has_no_price_span() -> None:
    v = check_budget(resolve(parse_spec(_spec("llama3-70b-p5"), "t")))  # p5 on-demand: observed
    assert v.run.price_factors == (1.0, 1.0)


def test_price_span_makes_a_pick_too_close_to_call() -> None:
    """With the MFU given (no MFU range), trn2's Capacity Block looked clearly cheaper than
    p5's; with both rates' spans (-13%/+40%) the run-cost ranges overlap: too close to call,
    and the break-even line prints the estimated price's span."""
    d = _spec("llama3-70b-trn2", {"mfu": 0.35, "max_hourly_usd": 100000})
    cmp = compare(resolve(parse_spec(d, "t")), ["trn2.48xlarge", "p5.48xlarge"])
    p = cmp.cheapest
    assert p is not None and (p.instance_type, p.option) == ("trn2.48xlarge", "capacity-block")
    assert p.break_even is not None and p.break_even.too_close
    line = p.break_even.line()
    assert "(now $23.51, an estimate: $20.45-$32.91)" in line
    row = next(
        o
        for c in cmp.candidates
        for o in c.options
        if c.instance_type == "trn2.48xlarge" and o.option == "capacity-block"
    )
    assert row.instance_rate_range == pytest.approx((23.51 * 0.87, 23.51 * 1.40))


# ---- every estimated rate, not only the workload pool's ---------------------------------


def test_every_estimated_service_rate_has_a_sourced_span() -> None:
    cat = load_catalog()
    for r in cat.service_rates:
        span = cat.price_span(r.item or "", "service", r.estimate)
        if not r.estimate:
            assert span is None
            continue
        assert span is not None, (r.region, r.item)
        assert 0 < span[0] <= 1 <= span[1] and span[2]
    assert {r.item for r in cat.service_rates if r.estimate} >= {
        "fsx-lustre-persistent2-1000",
        "container-insights-node",
    }


def _mixed_on_p5() -> dict:
    """mixed-trn2-p5 with the job on the p5 pool: the trn2 pool (an estimated on-demand
    rate, -10%/+30%) and FSx (an estimated service rate) are not the workload pool."""
    d = _spec("mixed-trn2-p5")
    d["workload"]["pool"] = "h100"
    return d


def test_other_pools_and_services_carry_their_spans_into_the_run_range() -> None:
    """Before, `run_usd_range` varied only the workload pool's rate: the trn2 pool beside the
    p5 job and every estimated service were priced at one figure at both ends."""
    from accelstack.cost.pricing import price_stack

    stack = resolve(parse_spec(_mixed_on_p5(), "t"))
    cost = price_stack(stack)
    trn2 = next(i for i in cost.items if i.pool == "trn2" and i.unit == "instance-hour")
    assert trn2.estimate and trn2.span == pytest.approx((0.90, 1.30))
    v = check_budget(stack)
    assert v.run.price_factors == (1.0, 1.0)  # p5 on-demand: observed
    other = v.run.stack_hourly_usd - v.run.pool_hourly_usd
    o_lo, o_hi = v.run.other_hourly_range or (other, other)
    assert o_lo < other - 0.09 * trn2.hourly_usd and o_hi > other + 0.29 * trn2.hourly_usd
    lo, hi = v.run.run_usd_range
    f_lo, f_hi = dataclasses.replace(v.run, other_hourly_range=None).run_usd_range
    lo_w, hi_w = v.run.wall_hours_range or (0, 0)
    assert lo == pytest.approx(f_lo - (other - o_lo) * lo_w)
    assert hi == pytest.approx(f_hi + (o_hi - other) * hi_w)
    doc = json.loads(verdict_json(v))
    h = doc["hourly_usd_range"]
    assert h["low"] < doc["hourly_usd"] < h["high"]
    row = next(i for i in doc["items"] if i["pool"] == "trn2" and i["unit"] == "instance-hour")
    assert row["hourly_usd_range"] == pytest.approx(
        {"low": trn2.hourly_usd * 0.90, "high": trn2.hourly_usd * 1.30}
    )


def test_an_estimated_service_rate_without_a_span_fails_closed() -> None:
    from accelstack.cost.pricing import price_stack

    cat = load_catalog()
    bare = cat.model_copy(
        update={"price_ranges": tuple(r for r in cat.price_ranges if r.option != "service")}
    )
    stack = resolve(parse_spec(_spec("llama3-70b-p5"), "t"), bare)
    with pytest.raises(
        CatalogError, match="no price range for the estimated service rate of "
    ) as e:
        price_stack(stack)
    assert "overlay (--catalog DIR or ACCELSTACK_CATALOG_DIR): price_ranges.yaml, under " in str(
        e.value
    )
    assert "`price_ranges:`, e.g. {option: service, types: [" in str(e.value)
