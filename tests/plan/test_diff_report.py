"""Day 2 in `diff`: every node disruption (node groups removed, renamed, replaced, moved to another
spec) counted and shown first in the text, the PR comment and the quiet decision; a removed
stack file flagged as not destroyed; a side that does not validate compared as nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from accelstack.cli import main
from accelstack.plan.diff import below_threshold, diff_sides
from accelstack.plan.diff_report import render_markdown, render_text
from accelstack.plan.diffside import SideRow
from tests.conftest import STACKS

NG = "aws:eks/nodeGroup:NodeGroup"
LT = "aws:ec2/launchTemplate:LaunchTemplate"
BUCKET = "aws:s3/bucket:Bucket"


def accelerated(instance_type: str) -> bool:
    return instance_type.startswith("p5")


def pool(stack: str, pool_name: str, nodes: int = 16) -> list[dict[str, Any]]:
    lt = f"{stack}-{pool_name}-lt"
    return [
        {"type": LT, "name": lt, "inputs": {"imageId": "ami-1"}},
        {
            "type": NG,
            "name": f"{stack}-{pool_name}-ng",
            "inputs": {
                "instanceTypes": ["p5.48xlarge"],
                "scalingConfig": {"minSize": nodes, "desiredSize": nodes, "maxSize": nodes},
            },
            "dependsOn": [lt],
        },
    ]


def row(file: str, resources: list[dict[str, Any]], monthly: float = 1000.0) -> SideRow:
    cost = {"hourly_usd": monthly / 730, "monthly_usd": monthly, "run_usd": 1.0, "ok": True}
    return SideRow.from_dict({"file": file, "plan": {"resources": resources}, "cost": cost})


def doc(base: dict[str, SideRow], head: dict[str, SideRow]) -> dict[str, Any]:
    return diff_sides(base, head, ("main", "pr"), accelerated=accelerated)


def test_a_renamed_pool_is_a_disruption_shown_first_and_never_quiet() -> None:
    """Fails on the old rolls.py, which compared only node groups present on both sides."""
    d = doc(
        {"s": row("stacks/s.yaml", pool("s", "h100"))},
        {"s": row("stacks/s.yaml", pool("s", "gpu"))},
    )
    (r,) = d["rolls"]
    assert (r["name"], r["action"], r["count"], r["accelerated"]) == (
        "s-h100-ng",
        "removes",
        16,
        True,
    )
    assert r["causes"][0] == {"key": "(renamed)", "before": "s-h100-ng", "after": "s-gpu-ng"}
    text = render_text(d)
    assert text.index("removes 16 x p5.48xlarge (s-h100-ng)") < text.index("\nstack s ")
    assert "renamed to s-gpu-ng" in text
    assert "removes 16 x p5.48xlarge (s-h100-ng)" in render_markdown(d, comment=True)
    assert not below_threshold(d, 1e9, 1e9)  # same cost, yet 16 accelerated nodes go


def test_a_removed_pool_and_a_stack_moved_to_another_spec_are_counted() -> None:
    base = {"s": row("stacks/a.yaml", pool("s", "h100") + pool("s", "extra", 2))}
    head = {"s": row("stacks/b.yaml", pool("s", "h100"))}
    (r,) = doc(base, head)["rolls"]
    assert (r["name"], r["count"], r["causes"][0]["key"]) == ("s-extra-ng", 2, "(removed)")


def test_a_removed_stack_file_is_not_destroyed_and_keeps_billing() -> None:
    """Fails on the old diff: a -100% saving and every resource REMOVED, nothing said."""
    base = {
        "gone": row(
            "Pulumi.gone.yaml", [*pool("gone", "h100"), {"type": BUCKET, "name": "b", "inputs": {}}]
        )
    }
    d = doc(base, {})
    (s,) = d["stacks"]
    assert s["status"] == "removed"
    assert s["cost"]["delta"]["monthly_usd"] == 0 and d["totals"]["delta_monthly_usd"] == 0
    assert not any(s["resources"].values()) and d["stateful"] == [] and d["rolls"] == []
    (o,) = d["orphaned"]
    assert o["destroy"] == ["pulumi destroy -s gone", "pulumi stack rm gone"]
    for out in (render_text(d), render_markdown(d, comment=True)):
        assert "NOT destroyed and keeps billing ($1,000.00/month)" in out
        assert "`pulumi destroy -s gone`, then `pulumi stack rm gone`" in out
    assert not below_threshold(d, 1e9, 1e9)


def test_a_head_that_does_not_validate_removes_nothing() -> None:
    base = {
        "s": row("stacks/s.yaml", [*pool("s", "h100"), {"type": BUCKET, "name": "b", "inputs": {}}])
    }
    head = {
        "s": SideRow("pr:stacks/s.yaml", errors=("pr:stacks/s.yaml: region: bad",), exit_code=2)
    }
    d = doc(base, head)
    (s,) = d["stacks"]
    assert s["status"] == "error" and not d["ok"]
    assert not any(s["resources"].values()) and d["stateful"] == [] and d["rolls"] == []
    assert "REMOVED" not in render_text(d) and "removed" not in render_text(d)


@pytest.mark.plan
@pytest.mark.parametrize("broken", ["head", "base"])
def test_diff_cli_with_a_side_that_does_not_validate_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], broken: str
) -> None:
    sides = {"base": tmp_path / "base", "head": tmp_path / "head"}
    for folder in sides.values():
        folder.mkdir()
        shutil.copy(STACKS / "trn1-finetune.yaml", folder / "trn1-finetune.yaml")
    bad = sides[broken] / "trn1-finetune.yaml"
    bad.write_text(bad.read_text().replace("region: us-east-1", "region: mars-1"))
    code = main(["diff", str(sides["base"]), str(sides["head"]), "--format", "json", "--dirs"])
    out = capsys.readouterr().out
    assert code == 2
    (s,) = json.loads(out)["stacks"]
    assert not any(s["resources"].values())
    errors = s["errors"] or s["base_errors"]
    assert len(errors) == 1 and "trn1-finetune.yaml" in errors[0] and "mars-1" in errors[0]
