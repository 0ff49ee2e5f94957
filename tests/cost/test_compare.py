"""`accelstack compare`: figures per type and option; the pick equals a brute-force search."""

from __future__ import annotations

import copy
import re
from functools import lru_cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accelstack.catalog import CATALOG_DIR, PURCHASE_OPTIONS, Catalog, load_catalog
from accelstack.catalog.purchase import FILE, load_table, option_lists
from accelstack.catalog.sizing import memory_fit
from accelstack.cli import main
from accelstack.cost.compare import (
    DeadlineSizer,
    cheapest_target,
    compare,
    render,
    retarget_stack,
)
from accelstack.cost.guard import check_budget, estimate_for
from accelstack.cost.rates import default_layout
from accelstack.errors import AccelstackError, SpecError, VerdictError
from accelstack.resolve import resolve
from accelstack.resolve.retarget import retarget
from accelstack.spec import parse_spec

from .. import factories
from ..conftest import STACKS

# The bundled table's option lists (compare reads them from the stack's catalog).
_BUNDLED_OPTIONS = option_lists(load_table(CATALOG_DIR / FILE, PURCHASE_OPTIONS).purchase_options)
COMPARE_OPTIONS = _BUNDLED_OPTIONS.comparable
DEFAULT_OPTIONS = _BUNDLED_OPTIONS.compare_default

CR = "cr-0123456789abcdef0"

TN_IMAGE = "registry.example/torchneuron:2.14.3-neuronx-sdk2.33.0"


def data_of(preset: str) -> dict[str, Any]:
    return factories.preset(preset)


@lru_cache(maxsize=8)
def brute_force_table(preset: str) -> tuple[tuple[str, str, int, float, float, float, float], ...]:
    """Every (type, option) the catalog prices in the preset's region, priced through the
    `accelstack new` path: retarget the preset's YAML, re-validate, resolve, check_budget.
    Sized to the preset's chip budget (nodes = chips // chips per node; skipped below the
    memory fit); spot with the catalog's interruption overhead on wall hours and run cost; a
    Capacity Block pool billed for its whole window (the catalog's durations).
    Rows: (type, option, nodes, wall_hours, hourly, monthly, run). No budget applied."""
    cat = load_catalog()
    base = data_of(preset)
    base.pop("budget", None)
    region = base["region"]
    rows = []
    wl_pool = next(
        p
        for p in base["pools"]
        if p["name"] == (base["workload"].get("pool") or base["pools"][0]["name"])
    )
    chips = wl_pool["nodes"] * cat.instance(wl_pool["instance_type"]).chips
    spot = cat.defaults.spot_interruption
    for rate in cat.instance_rates:
        if rate.region != region or rate.type not in cat.compare_candidates():
            continue
        assert rate.type is not None and rate.option is not None
        fit = memory_fit(
            cat,
            rate.type,
            base["workload"]["model"]["params_billion"],
            base["workload"].get("precision", "bf16"),
        )
        nodes = chips // cat.instance(rate.type).chips
        if nodes < fit.min_nodes:
            continue
        factor = (
            spot.overhead_factor(nodes, cat.defaults.hours_per_month)
            if rate.option == "spot"
            else 1.0
        )
        src = copy.deepcopy(base)
        pool = next(p for p in src["pools"] if p["name"] == wl_pool["name"])
        pool["purchase"] = (
            {"option": rate.option, "reservation_id": CR}
            if rate.option == "capacity-block"
            else {"option": rate.option}
        )
        try:
            fw = cat.frameworks[cat.default_framework(cat.family_of(rate.type)) or ""]
            # `accelstack new --image`: the preset's image (or a path without one) cannot follow
            image = None if rate.type == wl_pool["instance_type"] else fw.default_image or TN_IMAGE
            spec = retarget(
                src,
                cat,
                name=base["name"],
                source=preset,
                instance_type=rate.type,
                nodes=nodes,
                image=image,
            ).spec
            stack = resolve(spec, cat)
        except SpecError:
            continue  # not offered there, wrong zone, preview: compare lists it unavailable
        v = check_budget(stack)
        wall = v.estimate.wall_hours * factor
        pool_hourly = v.cost.pool_hourly_usd(v.pool)  # `new` may rename the pool
        billed = wall
        if rate.option == "capacity-block":
            billed = cat.capacity_blocks.window_days(wall) * 24
        run = (v.cost.hourly_usd - pool_hourly) * wall + pool_hourly * billed + v.run.extra_usd
        rows.append(
            (rate.type, rate.option, nodes, wall, v.cost.hourly_usd, v.cost.monthly_usd, run)
        )
    return tuple(rows)


def brute_pick(
    preset: str,
    budget: dict[str, float],
    deadline: float | None,
    fastest: bool = False,
    options: tuple[str, ...] = DEFAULT_OPTIONS,
) -> tuple[str, str] | None:
    """Savings plans are commitments: never ranked."""
    ok = []
    for t, o, _n, wall, hourly, monthly, run in brute_force_table(preset):
        if o not in options or o.startswith("savings-plan"):
            continue
        if deadline is not None and wall > deadline:
            continue
        if hourly > budget.get("max_hourly_usd", float("inf")) + 1e-9:
            continue
        if monthly > budget.get("max_monthly_usd", float("inf")) + 1e-9:
            continue
        if run > budget.get("max_run_usd", float("inf")) + 1e-9:
            continue
        order = COMPARE_OPTIONS.index(o)
        ok.append(((wall, run, t, order) if fastest else (run, wall, t, order), (t, o)))
    return min(ok)[1] if ok else None


def stack_with(preset: str, budget: dict[str, float]) -> Any:
    d = data_of(preset)
    d["budget"] = budget
    return resolve(parse_spec(d, "test"))


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_table_matches_brute_force_figures() -> None:
    cmp = compare(stack_with("llama3-70b-p5", {}), options=COMPARE_OPTIONS)
    ours = {
        (c.instance_type, o.option): (c.nodes, o.wall_hours, o.hourly_usd, o.run_usd)
        for c in cmp.candidates
        for o in c.options
    }
    brute = {(t, o): (n, w, h, r) for t, o, n, w, h, _m, r in brute_force_table("llama3-70b-p5")}
    assert set(ours) == set(brute)
    for key, (n, w, h, r) in brute.items():
        assert ours[key][0] == n
        assert ours[key][1:] == pytest.approx((w, h, r), rel=1e-9)


@pytest.mark.slow  # about a second: make test (not test-fast)
@pytest.mark.parametrize("preset", ["llama3-70b-trn2", "p5e-capacity-block", "mixed-trn2-p5"])
def test_one_estimate_serves_every_option_of_a_candidate(preset: str) -> None:
    """compare estimates a candidate once and prices each option with it: the purchase option
    never changes the run's speed, at the default layout or at a deadline search's."""
    stack = stack_with(preset, {})
    cat = stack.catalog
    for cand in compare(stack, options=COMPARE_OPTIONS).candidates:
        if not cand.options:
            continue
        priced = [o for o in COMPARE_OPTIONS if cat.has_rate(stack.region, cand.instance_type, o)]
        layouts = [None, default_layout(cat, cand.instance_type, stack.workload)]
        for lay in layouts:
            ests = {
                o: estimate_for(retarget_stack(stack, cand.instance_type, cand.nodes, o), lay)
                for o in priced
            }
            first = next(iter(ests.values()))
            assert all(e == first for e in ests.values()), (cand.instance_type, lay)


def test_unavailable_types_say_why_never_zero() -> None:
    cmp = compare(stack_with("llama3-70b-p5", {}), options=COMPARE_OPTIONS)
    by = {c.instance_type: c for c in cmp.candidates}
    assert by["trn3.48xlarge"].reason == (
        "not available: preview type; the spec does not set preview: true"
    )
    west = compare(stack_with("trn1-multinode", {}))
    w = {c.instance_type: c for c in west.candidates}
    assert w["trn2.48xlarge"].reason is not None
    assert w["trn2.48xlarge"].reason.startswith("not available: not offered in us-west-2")
    assert w["p5e.48xlarge"].reason == (
        "not available: no price for p5e.48xlarge in us-west-2 in the catalog"
    )
    for c in [*cmp.candidates, *west.candidates]:
        assert all(o.hourly_usd > 0 for o in c.options)
    assert by["p5e.48xlarge"].unpriced == (
        "on-demand",
        "spot",
        "savings-plan-1y",
        "savings-plan-3y",
    )


def test_equal_chip_budget_sizes_nodes_per_type() -> None:
    """16 trn2 = 256 chips = 32 p5, not 16 of each; --chips overrides the spec's count."""
    cmp = compare(stack_with("llama3-70b-trn2", {}))
    by = {c.instance_type: c for c in cmp.candidates if c.available}
    assert cmp.sizing.basis == "chips" and cmp.sizing.chips == 256 and cmp.sizing.from_spec
    assert (by["trn2.48xlarge"].nodes, by["p5.48xlarge"].nodes) == (16, 32)
    assert {c.chips for c in by.values()} == {256}
    assert "same chip budget: 256 chips per candidate (the spec's workload pool)" in render(cmp)
    small = compare(stack_with("llama3-70b-trn2", {}), chips=64)
    sb = {c.instance_type: c for c in small.candidates}
    assert sb["p5.48xlarge"].nodes == 8 and sb["trn2.48xlarge"].nodes == 4
    # 70.6B needs 3 trn1.32xlarge for its training state; 32 chips give 2
    tiny = {
        c.instance_type: c for c in compare(stack_with("llama3-70b-trn2", {}), chips=32).candidates
    }
    assert tiny["trn1.32xlarge"].reason == (
        "not available: a 32-chip budget gives 2 node(s) of 16 chips; memory fit needs at least 3"
    )


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_equal_deadline_sizes_the_fewest_nodes_that_meet_it(catalog: Catalog) -> None:
    stack = stack_with("llama3-70b-p5", {})
    cmp = compare(stack, deadline_hours=300)
    assert cmp.sizing.basis == "deadline"
    assert "same deadline: the fewest nodes that finish within 300 h" in render(cmp)
    for c in cmp.candidates:
        if not c.available:
            continue
        assert c.wall_hours <= 300
        # the next smaller node count the walk tries misses it at its own best layout
        fit = memory_fit(catalog, c.instance_type, 70.6, "bf16")
        sizer = DeadlineSizer(stack, c.instance_type, fit)
        fewer = [k for k in range(fit.min_nodes, c.nodes) if sizer.grained(k) == k]
        at = sizer.at(fewer[-1]) if fewer else None
        assert c.nodes == c.min_nodes or at is None or at.hours > 300
    assert cmp.cheapest is not None and cmp.cheapest.wall_hours <= 300


def test_nodes_needed_follow_memory_fit(catalog: Catalog) -> None:
    d = data_of("trn1-finetune")  # 1 node of trn1.2xlarge, 1.1B params
    d["workload"]["model"]["params_billion"] = 70.6
    d["pools"][0]["nodes"] = 42  # 42 x 32 GiB x 0.8 holds 1,052 GiB of state
    d["budget"] = {}
    cmp = compare(resolve(parse_spec(d, "t")), ["trn1.32xlarge", "p5.48xlarge"], deadline_hours=1e9)
    by = {c.instance_type: c for c in cmp.candidates}
    # an easy deadline: memory fit alone sets the node count (1,052 GiB / 409.6 or 512 usable)
    assert by["p5.48xlarge"].min_nodes == 3 and by["trn1.32xlarge"].min_nodes == 3
    assert by["p5.48xlarge"].nodes == 3 and by["trn1.32xlarge"].chips == 3 * 16
    assert "memory fit sets 3" in by["p5.48xlarge"].sizing_note


@pytest.mark.slow  # 40 examples, each comparing every candidate by brute force
@settings(max_examples=40, deadline=None)
@given(
    preset=st.sampled_from(["llama3-70b-p5", "trn1-multinode", "mixed-trn2-p5"]),
    hourly=st.one_of(st.none(), st.floats(50, 2_000)),
    run=st.one_of(st.none(), st.floats(1_000, 1_000_000)),
    deadline=st.one_of(st.none(), st.floats(10, 3_000)),
    options=st.sampled_from([DEFAULT_OPTIONS, COMPARE_OPTIONS, ("on-demand", "spot")]),
)
def test_pick_equals_brute_force(
    preset: str,
    hourly: float | None,
    run: float | None,
    deadline: float | None,
    options: tuple[str, ...],
) -> None:
    budget = {k: v for k, v in (("max_hourly_usd", hourly), ("max_run_usd", run)) if v}
    stack = stack_with(preset, budget)
    chips = stack.workload_pool.nodes * stack.workload_pool.instance.chips
    cmp = compare(stack, deadline_hours=deadline, options=options, chips=chips)
    want = brute_pick(preset, budget, deadline, options=options)
    got = (cmp.cheapest.instance_type, cmp.cheapest.option) if cmp.cheapest else None
    assert got == want
    want_fast = brute_pick(preset, budget, deadline, fastest=True, options=options)
    within = cmp.fastest_within_budget
    got_fast = (within.instance_type, within.option) if within else None
    assert got_fast == want_fast
    # FASTEST is the fastest of all rows, whatever the budget and the deadline
    want_all = brute_pick(preset, {}, None, fastest=True, options=options)
    got_all = (cmp.fastest.instance_type, cmp.fastest.option) if cmp.fastest else None
    assert got_all == want_all


def test_spot_is_opt_in_and_carries_the_interruption_overhead(catalog: Catalog) -> None:
    stack = stack_with("llama3-70b-trn2", {})
    assert all(o.option in DEFAULT_OPTIONS for c in compare(stack).candidates for o in c.options)
    cmp = compare(stack, ["trn2.48xlarge"], options=("on-demand", "spot"))
    od, spot = cmp.candidates[0].options
    si = catalog.defaults.spot_interruption
    factor = si.overhead_factor(16, catalog.defaults.hours_per_month)
    assert si.estimate and si.source.startswith("estimate")
    assert factor > 1 and spot.overhead_factor == pytest.approx(factor)
    assert spot.wall_hours == pytest.approx(od.wall_hours * factor)
    nat_data = 16 * 20 * 0.045  # the run's image pulls through the NAT gateway
    assert spot.run_usd == pytest.approx(spot.hourly_usd * od.wall_hours * factor + nat_data)
    text = render(cmp)
    assert "spot: wall hours x interruption overhead; estimate:" in text
    assert cmp.cheapest is not None and cmp.cheapest.option == "spot"
    assert "spot interruption overhead" in " ".join(cmp.cheapest.estimates)


def test_savings_plans_are_commitments_never_picked() -> None:
    stack = stack_with("llama3-70b-trn2", {})
    cmp = compare(stack, ["trn2.48xlarge"], options=("on-demand", "savings-plan-3y"))
    od, sp = cmp.candidates[0].options
    assert not sp.ranked and sp.term_years == 3
    assert sp.commitment_usd == pytest.approx(sp.pool_hourly_usd * 8760 * 3)
    assert cmp.cheapest is not None and cmp.cheapest.option == "on-demand"  # sp is cheaper/h
    assert sp.hourly_usd < od.hourly_usd
    text = render(cmp)
    assert f"commitment ${sp.commitment_usd:,.0f} over 3y (pool), not ranked" in text
    (sp_row,) = [x for x in text.splitlines() if "savings-plan-3y" in x and "commitment" in x]
    assert sp_row.split()[7:9] == ["-", "-"]  # no run cost, no $/M tokens
    assert "savings plans: commitments" in text
    only_sp = compare(stack, ["trn2.48xlarge"], options=("savings-plan-1y",))
    assert only_sp.cheapest is None


def test_pick_says_when_it_depends_on_an_estimate_and_prints_assumptions() -> None:
    cmp = compare(stack_with("llama3-70b-trn2", {}), ["trn2.48xlarge", "p5.48xlarge"])
    text = render(cmp)
    assert cmp.cheapest is not None
    assert cmp.cheapest.instance_type == "trn2.48xlarge"
    assert "the trn2.48xlarge capacity-block price is an estimate" in cmp.cheapest.estimates
    assert any("MFU is an estimate" in e for e in cmp.cheapest.estimates)
    assert "this pick depends on an estimate:" in text
    assert "  assumption: MFU extrapolated: extrapolated from trainium bf16" in text
    assert "  assumption: sizing: same chip budget: 256 chips" in text
    assert "  assumption: price: estimate" in text
    d = data_of("trn1-multinode")
    d["workload"]["model"] = {"params_billion": 8.03}  # inside the trn1 records' sizes
    d.pop("budget", None)
    in_range = resolve(parse_spec(d, "test"))
    od = compare(in_range, ["trn1.32xlarge"], options=("on-demand",))
    assert od.cheapest is not None and not od.cheapest.depends_on_estimate
    assert "depends on an estimate" not in render(od)


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_cheapest_target_and_refusal() -> None:
    d = data_of("llama3-70b-p5")
    spec = parse_spec(d, "t")
    itype, nodes, option = cheapest_target(spec, options=("on-demand",))
    assert (itype, nodes, option) == ("trn2.48xlarge", 8, "on-demand")  # 128 chips
    assert brute_pick("llama3-70b-p5", d["budget"], None, options=COMPARE_OPTIONS) == (
        "trn1.32xlarge",
        "spot",
    )
    with pytest.raises(VerdictError, match="no candidate instance type fits"):
        cheapest_target(spec, deadline_hours=1)
    with pytest.raises(AccelstackError, match="unknown purchase option"):
        cheapest_target(spec, options=("reserved",))


def test_render_marks_cheapest_and_fastest() -> None:
    budget = data_of("llama3-70b-p5")["budget"]
    text = render(compare(stack_with("llama3-70b-p5", budget), deadline_hours=600, chips=256))
    assert "cheapest: 16 x trn2.48xlarge (capacity-block)" in text
    lines = [x for x in text.splitlines() if "CHEAPEST" in x and x.startswith("  ")]
    assert len(lines) == 1 and "trn2.48xlarge" in lines[0]
    assert "misses deadline" in text
    assert "trn3.48xlarge   not available: preview type" in text


def test_cli_compare(capsys: pytest.CaptureFixture[str]) -> None:
    spec = str(STACKS / "trn1-multinode.yaml")
    types = ["--instance-types", "trn1.32xlarge,trn1n.32xlarge"]
    rc = main(["compare", spec, *types, "--deadline-hours", "10000", "--chips", "64"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "cheapest: 4 x trn1.32xlarge (on-demand)" in out
    assert "p5.48xlarge" not in out
    assert main(["compare", spec, *types, "--options", "on-demand,spot", "--chips", "64"]) == 0
    assert "cheapest: 4 x trn1.32xlarge (spot)" in capsys.readouterr().out
    assert main(["compare", spec, *types, "--options", "reserved"]) == 2
    assert "unknown purchase option 'reserved'" in capsys.readouterr().err
    assert main(["compare", spec, "--instance-types", "trn9.48xlarge"]) == 2
    for fmt in ("json", "markdown"):
        assert main(["compare", spec, *types, "--format", fmt]) == 0
    md = capsys.readouterr().out
    assert '"basis": "chips"' in md and "- sizing: same chip budget: 64 chips" in md


def test_copy_is_not_mutated() -> None:
    d = data_of("mixed-trn2-p5")
    before = copy.deepcopy(d)
    compare(stack_with("mixed-trn2-p5", d["budget"]))
    assert d == before


def test_deadline_needing_more_than_a_pool_allows_is_unavailable() -> None:
    """A 1-hour deadline for the 70B run is out of reach: more nodes stop paying long before
    the most a pool can have (29 node groups of 450, the EKS defaults in scale.yaml), so the
    candidate is unavailable, sized no higher than that ceiling."""
    stack = stack_with("llama3-70b-p5", {})
    cmp = compare(stack, ["p5.48xlarge"], deadline_hours=1)
    (c,) = cmp.candidates
    assert c.reason is not None and c.reason.startswith("not available: ")
    assert "finish in 1 h" in c.reason
    sizes = [int(n.replace(",", "")) for n in re.findall(r"([\d,]+) node", c.reason)]
    assert sizes and max(sizes) <= stack.catalog.scale.max_pool_nodes == 13050
    assert cmp.cheapest is None


def test_price_of_a_spot_spec_carries_the_same_overhead_as_compare(catalog: Catalog) -> None:
    from accelstack.cost.guard import render_report, verdict_dict

    d = data_of("llama3-70b-trn2")
    d["budget"] = {}
    d["pools"][0]["purchase"] = {"option": "spot"}
    v = check_budget(resolve(parse_spec(d, "t")))
    factor = catalog.defaults.spot_interruption.overhead_factor(16, 730)
    assert v.spot_factor == pytest.approx(factor) and factor > 1
    assert v.run.wall_hours == pytest.approx(v.estimate.wall_hours * factor)
    assert v.run.estimate
    text = render_report(v)
    assert f"spot: wall {v.run.wall_hours:,.1f} h with the interruption overhead" in text
    assert "the spot interruption overhead x" in text
    assert verdict_dict(v)["training"]["wall_hours"] == pytest.approx(v.run.wall_hours)
    cmp = compare(stack_with("llama3-70b-trn2", {}), ["trn2.48xlarge"], options=("spot",))
    (row,) = cmp.candidates[0].options
    assert row.run_usd == pytest.approx(v.run.run_usd)
    od = check_budget(resolve(parse_spec({**data_of("llama3-70b-trn2"), "budget": {}}, "t")))
    assert od.spot_factor == 1.0 and od.run.wall_hours == od.estimate.wall_hours


# ---- ranges, break-even, labels ------------------------------------------------------


def test_cheapest_pick_prints_ranges_break_even_and_too_close() -> None:
    cmp = compare(stack_with("llama3-70b-p5", data_of("llama3-70b-p5")["budget"]))
    p = cmp.cheapest
    assert p is not None and p.break_even is not None
    lo, hi = p.run_usd_range
    assert lo < p.run_usd < hi
    text = render(cmp)
    assert text.count("break-even: ") == 1
    assert f"break-even: {p.instance_type} stays cheapest while its MFU >= " in text
    # overlapping run-cost ranges: the estimate cannot separate them
    assert p.too_close and "too close to call: run `accelstack trial` on both" in text
    assert "CHEAPEST (too close to call)" in text
    # every row carries its ranges
    for c in cmp.candidates:
        for o in c.options:
            assert o.wall_hours_range[0] <= o.wall_hours <= o.wall_hours_range[1]
            assert o.run_usd_range[0] <= o.run_usd <= o.run_usd_range[1]


def test_break_even_arithmetic() -> None:
    import dataclasses

    from accelstack.cost.breakeven import Side, break_even

    pick = Side(
        "a",
        "on-demand",
        4,
        1000.0,
        (900.0, 1100.0),
        10.5,
        100.0,
        20.0,
        20.0,
        None,
        1.0,
        0.4,
        9.0,
        0.9,
        0.5,
    )
    runner = Side(
        "b",
        "on-demand",
        8,
        1500.0,
        (1400.0, 1600.0),
        5.0,
        300.0,
        20.0,
        35.0,
        None,
        1.0,
        0.5,
        4.0,
        0.9,
        0.5,
    )
    be = break_even(pick, runner)
    # at the threshold MFU the pick's run costs the runner-up's
    hours = 9.0 * 0.4 / be.mfu_at_least / 0.9 + 0.5  # type: ignore[operator]
    assert 100.0 * hours == pytest.approx(1500.0)
    # at the threshold price too (rest of the stack 20 $/h over the same wall hours)
    assert 20.0 * 10.5 + 4 * be.price_at_most * 10.5 == pytest.approx(1500.0)
    assert not be.too_close and "stays cheapest while its MFU >= 0.28 (now 0.40)" in be.line()
    close = break_even(pick, dataclasses.replace(runner, run_usd_range=(1050.0, 1600.0)))
    assert close.too_close


def test_fastest_is_the_fastest_of_all_rows_and_within_budget_is_labelled() -> None:
    budget = data_of("mixed-trn2-p5")["budget"]
    cmp = compare(stack_with("mixed-trn2-p5", budget))
    assert cmp.fastest is not None and cmp.fastest_within_budget is not None
    assert cmp.fastest.instance_type == "p5.48xlarge" and not cmp.fastest.within_budget
    assert cmp.fastest_within_budget.instance_type == "trn2.48xlarge"
    assert cmp.fastest.wall_hours < cmp.fastest_within_budget.wall_hours
    text = render(cmp)
    (fast_row,) = [x for x in text.splitlines() if x.startswith("  ") and "FASTEST" in x]
    assert fast_row.split()[0] == "p5.48xlarge" and "over budget" in fast_row
    (within_row,) = [x for x in text.splitlines() if "fastest within budget" in x and "CHEAP" in x]
    assert within_row.split()[0] == "trn2.48xlarge"
    assert "fastest (of all rows): 4 x p5.48xlarge" in text
    assert "fastest within budget: 2 x trn2.48xlarge" in text
    # the over-budget runner-up runs for less: the break-even says so instead of "stays"
    assert "runs for less" in text and "but is over budget" in text


def test_json_rows_carry_the_flags_and_the_pick_its_break_even(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    assert main(["compare", str(STACKS / "llama3-70b-p5.yaml"), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = [o for c in doc["candidates"] for o in c["options"]]
    assert sum(o["cheapest"] for o in rows) == 1 and sum(o["fastest"] for o in rows) == 1
    assert all(isinstance(o["within_budget"], bool) for o in rows)
    for o in rows:
        assert {"low", "high"} == set(o["run_usd_range"]) == set(o["wall_hours_range"])
    be = doc["cheapest"]["break_even"]
    assert be == doc["break_even"] and be["mfu_at_least"] < be["mfu_now"]
    assert be["line"].startswith("break-even: trn2.48xlarge stays cheapest")


def test_capacity_block_rows_bill_the_whole_window(catalog: Catalog) -> None:
    cmp = compare(stack_with("llama3-70b-trn2", {}), ["trn2.48xlarge"])
    od, cb = cmp.candidates[0].options
    assert cb.option == "capacity-block" and od.billed_pool_hours is None
    days = catalog.capacity_blocks.window_days(cb.wall_hours)
    assert cb.billed_pool_hours == days * 24 > cb.wall_hours
    assert days in catalog.capacity_blocks.durations_days()
    nat_data = 16 * 20 * 0.045  # image pulls through the NAT gateway, once per node
    assert cb.run_usd == pytest.approx(
        cb.other_hourly_usd * cb.wall_hours + cb.pool_hourly_usd * days * 24 + nat_data
    )
    assert f"billed {days}-day window" in render(cmp)


def test_deadline_sizing_stops_where_nodes_no_longer_pay() -> None:
    import dataclasses

    from accelstack.cost.compare import MIN_MARGINAL_EFFICIENCY, marginal_efficiency

    assert marginal_efficiency(8, 100.0, 16, 50.0) == pytest.approx(1.0)
    assert marginal_efficiency(8, 100.0, 16, 80.0) == pytest.approx(0.25)
    stack = stack_with("llama3-70b-p5", {})
    cat = stack.catalog
    # a steep loss per node doubling: beyond a few dozen nodes more nodes barely help
    steep = cat.throughput.scaling.model_copy(update={"loss_per_node_doubling": 0.12})
    tp = cat.throughput.model_copy(update={"scaling": steep})
    slow = dataclasses.replace(stack, catalog=cat.model_copy(update={"throughput": tp}))
    (c,) = compare(slow, ["p5.48xlarge"], deadline_hours=50).candidates
    assert c.reason is not None and "more nodes no longer pay" in c.reason
    assert MIN_MARGINAL_EFFICIENCY == 0.5
    # with the catalog's scaling the same deadline is met with the fewest nodes that do
    (ok,) = compare(stack, ["p5.48xlarge"], deadline_hours=200).candidates
    assert ok.available and ok.wall_hours <= 200
    (fewer,) = compare(stack, ["p5.48xlarge"], chips=(ok.nodes - 1) * 8).candidates
    assert fewer.wall_hours > 200
