"""One `--format` on every reporting command; every JSON document strictly valid."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from accelstack.cli import app, main
from accelstack.jsonout import dumps, finite

from .. import factories
from ..conftest import PRESETS, STACKS

REPORTING = ("validate", "plan", "check", "diff", "price", "compare", "render", "preflight")


def strict(text: str) -> Any:
    """Parse JSON the way strict parsers do: NaN/Infinity are errors."""

    def refuse(name: str) -> None:
        raise ValueError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def over_budget(tmp_path: Path) -> Path:
    data = factories.preset("trn1-multinode")
    data["budget"] = {"max_run_usd": 100.0}
    path = tmp_path / "stacks" / "trn1-multinode.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump(data))
    return path


def test_jsonout_turns_non_finite_numbers_into_null() -> None:
    value = {"a": float("nan"), "b": [float("inf"), 1.5, (float("-inf"),)], "c": "x"}
    assert finite(value) == {"a": None, "b": [None, 1.5, [None]], "c": "x"}
    assert strict(dumps(value)) == {"a": None, "b": [None, 1.5, [None]], "c": "x"}


@pytest.mark.parametrize("command", [*REPORTING, "prices refresh"])
def test_every_reporting_command_takes_one_format_option(command: str) -> None:
    from typer.main import get_command

    group: Any = get_command(app)
    group.load_all()  # the root group imports command modules lazily
    for part in command.split():
        group = group.commands[part]
    options = {o for p in group.params for o in getattr(p, "opts", [])}
    assert "--format" in options
    visible = {o for p in group.params if not getattr(p, "hidden", False) for o in p.opts}
    assert "--json" not in visible  # the old per-command flag survives only as a hidden alias


def test_validate_json_lists_each_spec_and_its_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "validate", *map(str, PRESETS), "--format", "json")
    doc = strict(out)
    assert code == 0 and doc["ok"] and len(doc["specs"]) == len(PRESETS)
    trn3 = next(s for s in doc["specs"] if s["stack"] == "trn3-preview")
    assert any("preview type" in w for w in trn3["warnings"])
    bad = tmp_path / "broken.yaml"
    bad.write_text("name: broken\n")
    code, out, err = run(capsys, "validate", str(bad), "--format", "json")
    doc = strict(out)
    assert code == 2 and not doc["ok"] and doc["specs"][0]["errors"] and err == ""


def test_plan_json_carries_the_cost_and_the_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", str(STACKS / "trn1-finetune.yaml"), "--format", "json")
    doc = strict(out)
    assert code == 0 and doc["stack"] == "trn1-finetune" and doc["resources"]
    cost = doc["cost"]
    assert cost["hourly_usd"] > 0 and cost["monthly_usd"] > cost["hourly_usd"]
    assert cost["training"]["run_usd"] > 0 and cost["items"]
    assert doc["verdict"] == {"ok": True, "line": "trn1-finetune: within budget", "reasons": []}


def test_plan_over_budget_still_shows_plan_and_cost_then_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = over_budget(tmp_path)
    code, out, err = run(capsys, "plan", str(spec))
    assert code == 1
    assert "aws:eks/nodeGroup:NodeGroup" in out  # the plan
    assert "cost report: trn1-multinode" in out and "OVER" in out  # the cost report
    assert out.rstrip().splitlines()[-1].startswith("verdict: trn1-multinode is over budget")
    assert err.startswith("error: trn1-multinode is over budget") and err.count("\n") == 1
    code, out, _ = run(capsys, "plan", str(spec), "--format", "json")
    doc = strict(out)
    assert code == 1 and doc["resources"] and not doc["verdict"]["ok"]
    assert "exceeds budget.max_run_usd $100.00" in doc["verdict"]["reasons"][0]


def test_check_prints_each_stacks_cost(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", str(STACKS / "trn1-finetune.yaml"))
    assert code == 0
    line = next(x for x in out.splitlines() if x.startswith("ok   "))
    assert "/h, run $" in line and "resources" in line


def test_check_json_and_files_and_pulumi_stack_files_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = over_budget(tmp_path)
    (spec.parent / "Pulumi.trn1-multinode.yaml").write_text("config: {}\n")
    (spec.parent / "trn1-finetune.yaml").write_text((STACKS / "trn1-finetune.yaml").read_text())
    code, out, err = run(capsys, "check", str(spec.parent), "--format", "json")
    doc = strict(out)
    assert code == 1 and doc["total"] == 2 and doc["passed"] == 1
    rows = {r["stack"]: r for r in doc["stacks"]}
    assert rows["trn1-multinode"]["run_usd"] > 100 and not rows["trn1-multinode"]["ok"]
    assert rows["trn1-finetune"]["hourly_usd"] > 0
    # the preset's only warnings: its placeholder CIDR and example account (flagged, not fatal)
    warnings = rows["trn1-finetune"]["warnings"]
    assert len(warnings) == 2 and all(w.startswith("placeholder cluster.") for w in warnings)
    code, out, err = run(capsys, "check", str(spec), str(STACKS / "trn1-finetune.yaml"))
    assert code == 1 and "1 of 2 specs passed" in out and "over budget" in err
    assert out.startswith("FAIL ") and "run $" in out.splitlines()[0]


@pytest.mark.parametrize("fmt", ["json", "markdown"])
def test_price_formats(fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "price", str(STACKS / "llama3-70b-p5.yaml"), "--format", fmt)
    assert code == 0
    if fmt == "json":
        assert strict(out)["ok"] is True
    else:
        assert out.startswith("### Cost: `llama3-70b-p5`")
        assert "| training run |" in out and "**Verdict:** within budget" in out


def test_price_deprecated_json_alias_still_works(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "price", str(STACKS / "llama3-70b-p5.yaml"), "--json")
    assert code == 0 and strict(out)["stack"] == "llama3-70b-p5"


@pytest.mark.parametrize("fmt", ["json", "markdown"])
def test_compare_formats(fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    spec = str(STACKS / "trn1-multinode.yaml")
    types = "trn1.32xlarge,trn1n.32xlarge,trn3.48xlarge"
    opts = ["--options", "on-demand,spot"]
    code, out, _ = run(capsys, "compare", spec, "--instance-types", types, *opts, "--format", fmt)
    assert code == 0
    if fmt == "json":
        doc = strict(out)
        assert doc["cheapest"]["instance_type"] == "trn1.32xlarge"
        assert doc["cheapest"]["option"] == "spot"
        assert doc["cheapest"]["depends_on_estimate"] is True  # the spot overhead
        assert doc["sizing"]["basis"] == "chips" and doc["options"] == ["on-demand", "spot"]
        by_type = {c["instance_type"]: c for c in doc["candidates"]}
        assert not by_type["trn3.48xlarge"]["available"]
        assert all("fits_budget" in o for o in by_type["trn1.32xlarge"]["options"])
    else:
        assert out.startswith("### Compare: `trn1-multinode`")
        assert "| trn1.32xlarge | 4 |" in out and "cheapest" in out
        assert (
            "**Cheapest:** 4 x trn1.32xlarge (spot)" in out and "**Fastest (of all rows):** " in out
        )


def test_render_json_lists_the_written_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "out"
    code, out, _ = run(
        capsys, "render", str(STACKS / "trn1-finetune.yaml"), "-o", str(out_dir), "--format", "json"
    )
    doc = strict(out)
    assert code == 0 and doc["directory"] == str(out_dir)
    paths = {f["path"] for f in doc["files"]}
    assert "README.md" in paths and all((out_dir / p).is_file() for p in paths)
    assert any(f["executable"] for f in doc["files"])


def test_prices_refresh_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from accelstack.catalog import CATALOG_DIR
    from accelstack.catalog import refresh as refresh_mod
    from accelstack.catalog.refresh import Quote

    class Source:
        def quote(self, region: str, instance_type: str, option: str) -> Quote | None:
            return Quote(0.1, "AWS Price List API test") if option == "on-demand" else None

    monkeypatch.setattr(refresh_mod.AwsPriceSource, "from_boto3", lambda day: Source())
    target = tmp_path / "prices.yaml"
    target.write_text((CATALOG_DIR / "prices.yaml").read_text())
    argv = ["prices", "refresh", "--file", str(target), "--region", "us-east-1"]
    code, out, err = run(capsys, *argv, "--types", "m6i.large", "--dry-run", "--format", "json")
    doc = strict(out)
    assert code == 0, err
    assert doc["dry_run"] is True and doc["written"] is False
    assert doc["refreshed"] == [
        {"region": "us-east-1", "instance_type": "m6i.large", "option": "on-demand", "usd": 0.1}
    ]


def test_check_prints_each_stacks_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", str(STACKS / "trn3-preview.yaml"), "--format", "json")
    (row,) = strict(out)["stacks"]
    assert code == 0 and any("preview type" in w for w in row["warnings"])
    code, out, _ = run(capsys, "check", str(STACKS / "trn3-preview.yaml"))
    assert "  warning: trn3: trn3.48xlarge is a preview type" in out
