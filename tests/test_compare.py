"""`accelstack compare`: figures per type and option; the pick equals a brute-force search."""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from accelstack.catalog import Catalog, load_catalog
from accelstack.catalog.sizing import memory_fit
from accelstack.cli import main
from accelstack.cost.compare import (
    COMPARE_OPTIONS,
    DEFAULT_TYPES,
    cheapest_target,
    compare,
    render,
)
from accelstack.cost.guard import check_budget
from accelstack.errors import AccelstackError, SpecError, VerdictError
from accelstack.resolve import resolve
from accelstack.spec import parse_spec
from accelstack.spec.retarget import retarget

from .conftest import STACKS

CR = "cr-0123456789abcdef0"

TN_IMAGE = "registry.example/torchneuron:2.14.3-neuronx-sdk2.33.0"


def data_of(preset: str) -> dict[str, Any]:
    return yaml.safe_load((STACKS / f"{preset}.yaml").read_text())  # type: ignore[no-any-return]


@lru_cache(maxsize=8)
def brute_force_table(preset: str) -> tuple[tuple[str, str, int, float, float, float, float], ...]:
    """Every (type, option) the catalog prices in the preset's region, priced through the
    `accelstack new` path: retarget the preset's YAML, re-validate, resolve, check_budget.
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
    for rate in cat.instance_rates:
        if rate.region != region or rate.type not in DEFAULT_TYPES:
            continue
        assert rate.type is not None and rate.option is not None
        fit = memory_fit(
            cat,
            rate.type,
            base["workload"]["model"]["params_billion"],
            base["workload"].get("precision", "bf16"),
        )
        nodes = max(fit.min_nodes, wl_pool["nodes"])
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
        except SpecError:
            continue  # not offered there, wrong zone, preview: compare lists it unavailable
        v = check_budget(resolve(spec, cat))
        rows.append(
            (
                rate.type,
                rate.option,
                nodes,
                v.estimate.wall_hours,
                v.cost.hourly_usd,
                v.cost.monthly_usd,
                v.run.run_usd,
            )
        )
    return tuple(rows)


def brute_pick(
    preset: str, budget: dict[str, float], deadline: float | None, fastest: bool = False
) -> tuple[str, str] | None:
    ok = []
    for t, o, _n, wall, hourly, monthly, run in brute_force_table(preset):
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


def test_table_matches_brute_force_figures() -> None:
    cmp = compare(stack_with("llama3-70b-p5", {}))
    ours = {
        (c.instance_type, o.option): (c.nodes, c.wall_hours, o.hourly_usd, o.run_usd)
        for c in cmp.candidates
        for o in c.options
    }
    brute = {(t, o): (n, w, h, r) for t, o, n, w, h, _m, r in brute_force_table("llama3-70b-p5")}
    assert set(ours) == set(brute)
    for key, (n, w, h, r) in brute.items():
        assert ours[key][0] == n
        assert ours[key][1:] == pytest.approx((w, h, r), rel=1e-9)


def test_unavailable_types_say_why_never_zero() -> None:
    cmp = compare(stack_with("llama3-70b-p5", {}))
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


def test_nodes_needed_follow_memory_fit(catalog: Catalog) -> None:
    d = data_of("trn1-finetune")  # 1 node of trn1.2xlarge, 1.1B params
    d["workload"]["model"]["params_billion"] = 70.6
    d["pools"][0]["nodes"] = 42  # 42 x 32 GiB x 0.8 holds 1,052 GiB of state
    d["budget"] = {}
    cmp = compare(resolve(parse_spec(d, "t")), ["trn1.32xlarge", "p5.48xlarge"])
    by = {c.instance_type: c for c in cmp.candidates}
    # memory fit alone needs 3 (1,052 GiB / 409.6 or 512 usable); the spec asks for 42
    assert by["p5.48xlarge"].min_nodes == 3 and by["trn1.32xlarge"].min_nodes == 3
    assert by["p5.48xlarge"].nodes == 42 and by["trn1.32xlarge"].chips == 42 * 16
    small = data_of("trn1-finetune")
    small["budget"] = {}
    small["workload"]["model"]["params_billion"] = 70.6
    small["pools"][0]["instance_type"] = "p5.48xlarge"
    small["pools"][0]["nodes"] = 3
    small["pools"][0].pop("efa")
    small["workload"].pop("precompile_steps")
    got = compare(resolve(parse_spec(small, "t")), ["p5.48xlarge", "trn1.32xlarge"])
    assert [c.nodes for c in got.candidates] == [3, 3]


@settings(max_examples=40, deadline=None)
@given(
    preset=st.sampled_from(["llama3-70b-p5", "trn1-multinode", "mixed-trn2-p5"]),
    hourly=st.one_of(st.none(), st.floats(50, 2_000)),
    run=st.one_of(st.none(), st.floats(1_000, 1_000_000)),
    deadline=st.one_of(st.none(), st.floats(10, 3_000)),
)
def test_pick_equals_brute_force(
    preset: str, hourly: float | None, run: float | None, deadline: float | None
) -> None:
    budget = {k: v for k, v in (("max_hourly_usd", hourly), ("max_run_usd", run)) if v}
    cmp = compare(stack_with(preset, budget), deadline_hours=deadline)
    want = brute_pick(preset, budget, deadline)
    got = (cmp.cheapest.instance_type, cmp.cheapest.option) if cmp.cheapest else None
    assert got == want
    want_fast = brute_pick(preset, budget, deadline, fastest=True)
    got_fast = (cmp.fastest.instance_type, cmp.fastest.option) if cmp.fastest else None
    assert got_fast == want_fast


def test_cheapest_target_and_refusal() -> None:
    d = data_of("llama3-70b-p5")
    spec = parse_spec(d, "t")
    itype, nodes, option = cheapest_target(spec, options=("on-demand",))
    assert (itype, nodes, option) == ("trn2.48xlarge", 16, "on-demand")
    # observed spot rates (prices.yaml): trn1 spot is cheapest when no deadline applies
    assert brute_pick("llama3-70b-p5", d["budget"], None) == ("trn1.32xlarge", "spot")
    with pytest.raises(VerdictError, match="no candidate instance type fits"):
        cheapest_target(spec, deadline_hours=1)
    with pytest.raises(AccelstackError, match="unknown purchase option"):
        cheapest_target(spec, options=("reserved",))


def test_render_marks_cheapest_and_fastest() -> None:
    text = render(
        compare(stack_with("llama3-70b-p5", data_of("llama3-70b-p5")["budget"]), deadline_hours=600)
    )
    assert "cheapest: 16 x trn2.48xlarge (savings-plan-3y)" in text
    lines = [x for x in text.splitlines() if "CHEAPEST" in x]
    assert len(lines) == 1 and "trn2.48xlarge" in lines[0]
    assert "misses deadline" in text
    assert "trn3.48xlarge   not available: preview type" in text


def test_cli_compare(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(
        [
            "compare",
            str(STACKS / "trn1-multinode.yaml"),
            "--instance-types",
            "trn1.32xlarge,trn1n.32xlarge",
            "--deadline-hours",
            "10000",
        ]
    )
    assert rc == 0
    out = capsys.readouterr().out
    assert "cheapest: 4 x trn1.32xlarge (spot)" in out
    assert "p5.48xlarge" not in out
    assert (
        main(["compare", str(STACKS / "trn1-multinode.yaml"), "--instance-types", "trn9.48xlarge"])
        == 2
    )


def test_copy_is_not_mutated() -> None:
    d = data_of("mixed-trn2-p5")
    before = copy.deepcopy(d)
    compare(stack_with("mixed-trn2-p5", d["budget"]))
    assert d == before
