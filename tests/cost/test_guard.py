"""The budget guard: limits, the one-line verdict, `accelstack price`, the program refusal."""

from __future__ import annotations

import asyncio
import copy
import json
import runpy
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from accelstack.cli import main
from accelstack.cost.ceiling import load_ceiling
from accelstack.cost.guard import check_budget, enforce, render_report, report_for_plan
from accelstack.errors import BudgetMissing, SpecError, VerdictError
from accelstack.inventory import billables
from accelstack.resolve import Stack, resolve
from accelstack.spec import load_spec, parse_spec

from .. import factories
from ..conftest import PRESETS, ROOT, STACKS, TESTS_DIR, compare_golden, preset_ids

GOLDEN = TESTS_DIR / "golden" / "cost"


def preset_data(name: str) -> dict[str, Any]:
    return factories.preset(name)


def over(budget: dict[str, float], name: str = "trn1-multinode") -> Stack:
    data = preset_data(name)
    data["budget"] = budget
    return resolve(parse_spec(data, "test"))


@pytest.mark.parametrize(
    ("budget", "field"),
    [
        ({"max_hourly_usd": 50}, "budget.max_hourly_usd"),
        ({"max_monthly_usd": 10_000}, "budget.max_monthly_usd"),
        ({"max_run_usd": 1_000}, "budget.max_run_usd"),
    ],
)
def test_each_limit_refuses_with_one_line(budget: dict[str, float], field: str) -> None:
    stack = over(budget)
    with pytest.raises(VerdictError) as exc:
        enforce(stack)
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.startswith("trn1-multinode is over budget: ") and field in msg
    assert exc.value.exit_code == 1


def test_limits_use_monthly_hours_and_run_cost() -> None:
    v = check_budget(over({"max_hourly_usd": 1e6, "max_monthly_usd": 1e9, "max_run_usd": 1e9}))
    hourly, monthly, run = v.checks
    assert monthly.actual == pytest.approx(hourly.actual * 730)
    assert run.actual == pytest.approx(hourly.actual * v.estimate.wall_hours + v.run.extra_usd)
    assert v.ok and v.one_line() == "trn1-multinode: within budget"
    exact = check_budget(over({"max_hourly_usd": hourly.actual}))
    assert exact.ok  # at the limit is within it


@pytest.mark.parametrize(
    "budget",
    [{}, {"max_hourly_usd": None, "max_monthly_usd": None, "max_run_usd": None}],
    ids=["no-budget-block", "every-limit-null"],
)
def test_no_limit_fails_closed(budget: dict[str, Any]) -> None:
    v = check_budget(over(budget))
    assert not v.ok and v.unbounded and v.reasons == []
    assert v.one_line().startswith("trn1-multinode has no budget: budget sets no max_hourly_usd")
    assert "budget: {unlimited: true, reason: ...}" in v.one_line()
    assert "REFUSED: budget sets no" in render_report(v)
    with pytest.raises(BudgetMissing, match="has no budget") as info:
        enforce(over(budget))  # the program's guard
    assert info.value.exit_code == 2 and v.exit_code == 2  # bad input, as `validate` says


def test_unlimited_on_purpose_needs_a_reason() -> None:
    v = check_budget(over({"unlimited": True, "reason": "research account, approved by FinOps"}))
    assert v.ok and not v.unbounded
    assert "unlimited on purpose (budget.unlimited)" in render_report(v)
    for bad, says in (
        ({"unlimited": True}, "unlimited: true needs a reason"),
        ({"unlimited": True, "reason": "x", "max_hourly_usd": 5}, "keep one or the other"),
        ({"reason": "x", "max_hourly_usd": 5}, "reason is only read with unlimited: true"),
    ):
        with pytest.raises(SpecError, match=says) as info:
            over(bad)
        assert "test: budget" in str(info.value)


def test_unbounded_64_p5_stack_is_refused_by_check_and_plan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = preset_data("llama3-70b-p5")
    data["pools"][0]["nodes"] = 64
    del data["budget"]
    spec = tmp_path / "llama3-70b-p5.yaml"
    spec.write_text(yaml.safe_dump(data))
    assert main(["check", str(spec)]) == 2  # bad input, never a verdict
    out, err = capsys.readouterr()
    assert "FAIL" in out and "0 of 1 specs passed" in out
    assert "llama3-70b-p5 has no budget" in err
    assert main(["price", str(spec)]) == 2
    capsys.readouterr()
    assert main(["plan", str(spec)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: llama3-70b-p5 has no budget")


# ---- the organisation ceiling -------------------------------------------------------------


def test_ceiling_applies_to_every_stack(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ceiling = tmp_path / "org.yaml"
    ceiling.write_text("max_hourly_usd: 100\n")
    spec = str(STACKS / "llama3-70b-trn2.yaml")  # within its own $700/h budget
    assert main(["check", spec, "--ceiling", str(ceiling)]) == 1
    err = capsys.readouterr().err
    assert f"exceeds ceiling max_hourly_usd ({ceiling}) $100.00" in err
    monkeypatch.setenv("ACCELSTACK_CEILING", str(ceiling))
    assert main(["plan", spec]) == 1
    assert "ceiling max_hourly_usd" in capsys.readouterr().err
    monkeypatch.delenv("ACCELSTACK_CEILING")
    assert main(["check", spec]) == 0  # no ceiling in force
    capsys.readouterr()
    # an unlimited stack is still held to the ceiling
    data = preset_data("llama3-70b-trn2")
    data["budget"] = {"unlimited": True, "reason": "approved"}
    v = check_budget(resolve(parse_spec(data, "t")), ceiling=load_ceiling(ceiling))
    assert not v.ok and v.reasons[0].startswith("hourly $")


def test_project_ceiling_file_and_bad_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "proj"
    (project / "stacks").mkdir(parents=True)
    (project / "Pulumi.yaml").write_text("name: p\nruntime: python\n")
    spec = project / "stacks" / "trn1-finetune.yaml"
    spec.write_text((STACKS / "trn1-finetune.yaml").read_text())
    (project / "accelstack-ceiling.yaml").write_text("max_monthly_usd: 10\n")
    assert main(["check", str(project)]) == 1
    assert "ceiling max_monthly_usd" in capsys.readouterr().err
    for text, says in (
        ("max_hourly: 5\n", "max_hourly: is not a ceiling key; did you mean 'max_hourly_usd'?"),
        ("max_hourly_usd: -1\n", "max_hourly_usd: is '-1'; allowed: a number above 0"),
        ("[1, 2]\n", "must map some of max_hourly_usd"),
    ):
        (project / "accelstack-ceiling.yaml").write_text(text)
        assert main(["check", str(project)]) == 2
        err = capsys.readouterr().err
        assert says in err and err.count("\n") == 1
    assert main(["check", str(spec), "--ceiling", str(tmp_path / "nope.yaml")]) == 2
    assert "the cost ceiling file does not exist" in capsys.readouterr().err


@pytest.mark.parametrize("preset", PRESETS, ids=preset_ids())
def test_presets_are_within_their_budgets(preset: Path) -> None:
    enforce(resolve(load_spec(preset)))


def test_enforce_prices_the_plan_when_given() -> None:
    stack = resolve(load_spec(STACKS / "trn1-multinode.yaml"))
    resources = billables(stack)
    enforce(stack, resources)
    doubled = [*resources, *[r for r in resources if r.type.endswith("NodeGroup")]]
    # the same node groups twice cost more than $100/h
    with pytest.raises(VerdictError, match="hourly"):
        enforce(stack, doubled)


def test_report_for_plan_ends_with_the_verdict() -> None:
    stack = resolve(load_spec(STACKS / "trn1-finetune.yaml"))
    text = report_for_plan(stack, SimpleNamespace(resources=billables(stack)))
    assert text.rstrip().endswith("verdict: trn1-finetune: within budget")
    # 1.1B lies below the trn1 records' sizes (6.74-70.6B): extrapolated, never "fitted"
    assert "MFU basis: extrapolated (trainium bf16 step model" in text
    assert "(6.74-70.6B," in text and "beyond the records' sizes to 1.1B" in text


@pytest.mark.parametrize("preset", PRESETS, ids=preset_ids())
def test_golden_cost_report(preset: Path) -> None:
    text = render_report(check_budget(resolve(load_spec(preset))))
    compare_golden(text, GOLDEN / f"{preset.stem}.txt")


def test_report_marks_estimates_and_says_which_mfu() -> None:
    text = render_report(check_budget(resolve(load_spec(STACKS / "trn3-preview.yaml"))))
    assert "* = uses an estimated price" in text
    assert "47.5/instance-hour" in text
    line = next(x for x in text.splitlines() if "8 x trn3.48xlarge (on-demand)" in x)
    assert "*" in line  # the trn3 price is an estimate
    assert "MFU basis: extrapolated (extrapolated from trainium bf16" in text
    assert "no MXFP8 speed-up credited" in text
    assert "capacity-block   not priced: no capacity-block price for trn3.48xlarge" in text


# ---- CLI ------------------------------------------------------------------------------


def test_cli_price_ok(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["price", str(STACKS / "llama3-70b-p5.yaml")]) == 0
    out = capsys.readouterr().out
    assert "verdict: llama3-70b-p5: within budget" in out
    assert "16 x p5.48xlarge (on-demand)" in out


def test_cli_price_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["price", str(STACKS / "p5e-capacity-block.yaml"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is True and doc["workload_pool"] == "h200"
    ng = [i for i in doc["items"] if i["pool"] == "h200" and i["unit"] == "instance-hour"]
    assert ng[0]["option"] == "capacity-block" and ng[0]["unit_usd"] == 39.80
    t = doc["training"]
    assert t["mfu_basis"] == "extrapolated"  # H200 FP8 records are 8B only; this is 70.6B
    assert 0.2 < t["mfu"] < 0.5
    # the JSON contract (docs/cost.md): each figure with its {low, high} beside it
    for key in ("steady_state_tokens_per_second_per_chip", "mfu", "goodput", "scaling_efficiency"):
        rng = t[f"{key}_range"]
        assert rng["low"] <= t[key] <= rng["high"], key
    for key in ("wall_hours", "run_usd"):
        rng = t[f"{key}_range"]
        assert rng["low"] <= t[key] <= rng["high"], key
    # a Capacity Block pool pays its whole window: 8 x 39.80 x 24 h x whole days
    days = t["billed_pool_hours"] / 24
    assert days == int(days) and t["billed_pool_hours"] >= t["wall_hours"]
    assert t["capacity_blocks"] == [8]


def test_cli_price_over_budget_exits_1_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = preset_data("trn1-finetune")
    data["budget"] = {"max_hourly_usd": 1.0}
    spec = tmp_path / "trn1-finetune.yaml"
    spec.write_text(yaml.safe_dump(data))
    assert main(["price", str(spec)]) == 1
    cap = capsys.readouterr()
    err = cap.err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("error: trn1-finetune is over budget: hourly $")
    assert "exceeds budget.max_hourly_usd $1.00" in err[0]
    assert "OVER" in cap.out  # the report still shows where the money goes


def test_cli_price_bad_spec_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "x.yaml"
    spec.write_text("name: x\n")
    assert main(["price", str(spec)]) == 2


# ---- the Pulumi program refuses before registering anything ----------------------------


def _over_budget_spec(tmp_path: Path) -> Path:
    data = copy.deepcopy(preset_data("trn1-multinode"))
    data["budget"] = {"max_run_usd": 100.0}
    path = tmp_path / "stacks" / "trn1-multinode.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(data))
    return path


def test_program_registers_zero_resources_when_over_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run the real `__main__.py` under Pulumi mocks: it raises the verdict, creates nothing."""
    import pulumi

    created: list[str] = []

    class Mocks(pulumi.runtime.Mocks):
        def new_resource(self, args: Any) -> tuple[str, dict[str, Any]]:
            created.append(args.typ)
            return f"{args.name}_id", dict(args.inputs)

        def call(self, args: Any) -> tuple[dict[str, Any], None]:
            created.append(f"call {args.token}")
            return {}, None

    _over_budget_spec(tmp_path)
    monkeypatch.chdir(tmp_path)  # the program runs in the project; the pointer is relative
    # set_mocks needs a current event loop; an earlier in-process plan leaves none set
    asyncio.set_event_loop(asyncio.new_event_loop())
    pulumi.runtime.set_mocks(Mocks(), project="accelstack", stack="trn1-multinode", preview=False)
    pulumi.runtime.set_all_config({"accelstack:spec": "stacks/trn1-multinode.yaml"})
    try:
        with pytest.raises(VerdictError, match=r"^trn1-multinode is over budget: training run"):
            runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__")
    finally:
        pulumi.runtime.set_all_config({})
    assert created == []


def test_plan_engine_never_calls_build_when_over_budget(tmp_path: Path) -> None:
    from accelstack.plan import run_plan

    called: list[str] = []

    def build(stack: Stack) -> dict[str, Any]:
        called.append(stack.name)
        return {}

    stack = resolve(load_spec(_over_budget_spec(tmp_path)))
    with pytest.raises(VerdictError, match="budget.max_run_usd"):
        run_plan(stack, build=build)
    assert called == []
    # control: the same stack within budget does reach build
    ok = resolve(load_spec(STACKS / "trn1-multinode.yaml"))
    run_plan(ok, build=build)
    assert called == ["trn1-multinode"]


def test_cli_plan_over_budget_exits_1_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _over_budget_spec(tmp_path)
    assert main(["plan", str(spec)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("error: trn1-multinode is over budget: training run $")
    assert "exceeds budget.max_run_usd $100.00" in err[0]


def test_cli_plan_prints_the_price(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(STACKS / "trn1-finetune.yaml")]) == 0
    out = capsys.readouterr().out
    assert "cost report: trn1-finetune (us-east-1)" in out
    assert "verdict: trn1-finetune: within budget" in out


def test_report_warns_that_savings_plans_are_commitments(capsys) -> None:
    from accelstack.cli import main

    stack_file = ROOT / "stacks" / "llama3-70b-trn2.yaml"
    assert main(["price", str(stack_file)]) == 0
    out = capsys.readouterr().out
    assert "savings plans commit to this hourly spend for 1 or 3 years" in out


def test_the_json_contract_in_docs_matches_the_output(capsys: pytest.CaptureFixture[str]) -> None:
    """Every `training.*` field docs/cost.md documents is in `price --format json`, and
    every compare row field it lists is in `compare --format json`."""
    import re

    doc = (ROOT / "docs" / "cost.md").read_text()
    section = doc[doc.index("## JSON contract") :]
    fields = set(re.findall(r"`training\.([a-z_]+)`", section))
    ranged = set(re.findall(r"`training\.([a-z_]+)` \(\+ `_range`\)", section))
    assert {"mfu", "mfu_basis", "goodput", "wall_hours", "run_usd"} <= fields
    assert main(["price", str(STACKS / "llama3-70b-p5.yaml"), "--format", "json"]) == 0
    training = json.loads(capsys.readouterr().out)["training"]
    for name in fields:
        assert name in training, name
    for name in ranged | {"mfu", "wall_hours", "run_usd"}:
        rng = training[f"{name}_range"]
        assert set(rng) == {"low", "high"} and rng["low"] <= training[name] <= rng["high"]
    assert main(["compare", str(STACKS / "llama3-70b-p5.yaml"), "--format", "json"]) == 0
    cmp = json.loads(capsys.readouterr().out)
    row = cmp["candidates"][0]["options"][0]
    for name in ("fastest", "cheapest", "within_budget", "fastest_within_budget"):
        assert isinstance(row[name], bool), name
    assert cmp["cheapest"]["break_even"]["line"].startswith("break-even: ")


def test_diff_reports_the_ceiling_in_each_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    for side, nodes in ((old, 1), (new, 2)):
        data = preset_data("trn1-finetune")
        data["pools"][0]["nodes"] = nodes
        (side / "stacks").mkdir(parents=True)
        (side / "stacks" / "trn1-finetune.yaml").write_text(yaml.safe_dump(data))
    ceiling = tmp_path / "org.yaml"
    ceiling.write_text("max_hourly_usd: 3\n")
    assert (
        main(["diff", str(old), str(new), "--dirs", "--format", "json", "--ceiling", str(ceiling)])
        == 0
    )
    (stack,) = json.loads(capsys.readouterr().out)["stacks"]
    assert stack["cost"]["base"]["ok"] and not stack["cost"]["head"]["ok"]
    assert "exceeds ceiling max_hourly_usd" in stack["cost"]["head"]["verdict"]


def test_a_stacks_estimate_reads_the_pools_memory_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The resolved pool carries the memory fit: the stack's estimate reads it, never works
    it out again (only a record, which has no pool, does)."""
    from accelstack.cost import estimate
    from accelstack.cost.guard import estimate_for

    stack = resolve(load_spec(STACKS / "trn1-multinode.yaml"))
    fit = stack.workload_pool.memory_fit
    assert fit is not None

    def refuse(*_: object) -> None:
        raise AssertionError("the memory fit was worked out again")

    monkeypatch.setattr(estimate, "workload_fit", refuse)
    assert estimate_for(stack).min_nodes == fit.min_nodes
