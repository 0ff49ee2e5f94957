"""The usage file in `diff` (accelstack/cli/usagefile.py): each side's usage-priced items (NAT GB,
S3 requests, inter-AZ GB) from that side's own `accelstack-usage.yaml`, read from the git ref as
data; a change to it named with the gate inputs (never quiet), not as a program input; a bad
file one line naming it, exit 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from accelstack.cli import main
from accelstack.cli.programside import gate_data
from accelstack.cli.trust import head_files
from accelstack.cli.usagefile import usage_changes, usage_data, usage_path
from accelstack.plan.diff_report import render_markdown

from ..conftest import STACKS
from ..helpers_git import commit_all, git

USAGE = {
    "version": 0.1,
    "default": {
        "nat_gateway": {"monthly_data_processed_gb": 500},
        "data_transfer": {"monthly_intra_region_gb": 100},
    },
}


def _usage(repo: Path, data: object) -> None:
    text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False)
    (repo / "accelstack-usage.yaml").write_text(text, encoding="utf-8")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """main: project `proj`, stack `prod` deploys trn1-finetune, with USAGE; then branch pr."""
    root = tmp_path / "repo"
    (root / "stacks").mkdir(parents=True)
    shutil.copy(STACKS / "trn1-finetune.yaml", root / "stacks" / "trn1-finetune.yaml")
    (root / "Pulumi.yaml").write_text("name: proj\nruntime: python\n", encoding="utf-8")
    prod = {"config": {"aws:region": "us-east-1", "accelstack:spec": "stacks/trn1-finetune.yaml"}}
    (root / "Pulumi.prod.yaml").write_text(yaml.safe_dump(prod), encoding="utf-8")
    _usage(root, USAGE)
    git(root, "init", "-q", "-b", "main")
    commit_all(root, "base")
    git(root, "checkout", "-qb", "pr")
    monkeypatch.chdir(root)
    for name in ("ACCELSTACK_CEILING", "ACCELSTACK_CATALOG_DIR", "ACCELSTACK_USAGE"):
        monkeypatch.delenv(name, raising=False)
    return root


def _diff(capsys: pytest.CaptureFixture[str], *more: str) -> tuple[int, dict[str, Any]]:
    code = main(["diff", "main", "pr", "--stack", "prod", "--format", "json", *more])
    out, err = capsys.readouterr()
    assert out, err
    doc: dict[str, Any] = json.loads(out)
    return code, doc


def test_each_side_prices_its_own_usage_file_and_a_change_is_a_gate_input(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # keyed by the stack's name as `price` keys it (the spec's name and the Pulumi stack)
    more = {"trn1-finetune-prod": {"nat_gateway": {"monthly_data_processed_gb": 2000}}}
    _usage(repo, {**USAGE, "stacks": more})
    commit_all(repo, "more NAT data for prod")
    code, doc = _diff(capsys, "--threshold-usd", "1000000")
    assert code == 0
    assert doc["program_changes"] == []  # the program never reads it: not a program input
    (line,) = doc["gate_changes"]
    assert line.startswith("the usage file accelstack-usage.yaml is changed by this change")
    assert doc["comment"] is True  # a gate input change always posts
    (stack,) = doc["stacks"]  # planned although its spec and stack file are the same
    assert doc["unchanged"] == []
    usage = stack["usage"]
    amounts = [{i["key"]: i["amount"] for i in usage[side]["items"]} for side in ("base", "head")]
    assert amounts == [
        {"monthly_data_processed_gb": 500, "monthly_intra_region_gb": 100},
        {"monthly_data_processed_gb": 2000, "monthly_intra_region_gb": 100},
    ]
    nat = next(i for i in usage["head"]["items"] if i["group"] == "nat_gateway")
    assert usage["delta_monthly_usd"] == pytest.approx(1500 * nat["rate_usd"], abs=0.01)
    assert usage["base"]["source"] == usage["head"]["source"] == "accelstack-usage.yaml"
    assert doc["totals"]["delta_monthly_usd"] == 0  # estimates: outside the totals
    md = render_markdown(doc, comment=True)
    assert "**Gate inputs changed**" in md and "**Usage-priced items**" in md
    assert "| `prod` | NAT gateway data processed (GB) | 500 → 2,000 |" in md


def test_without_a_usage_change_the_stack_is_not_planned(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / "notes.md").write_text("inert\n", encoding="utf-8")
    commit_all(repo, "notes")
    code, doc = _diff(capsys)
    assert code == 0 and doc["gate_changes"] == [] and doc["unchanged"] == ["prod"]


def test_a_bad_usage_file_on_the_head_is_one_line_exit_2(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _usage(repo, "version: 0.1\ndefault:\n  nat:\n    monthly_data_processed_gb: 5\n")
    commit_all(repo, "typo")
    code, doc = _diff(capsys)
    assert code == 2
    (stack,) = doc["stacks"]
    assert stack["status"] == "error"
    assert stack["headline"] == (
        "cannot plan: accelstack-usage.yaml:3: default.nat: is not a usage group; "
        "did you mean 'nat_gateway'?"
    )


def test_which_file_each_side_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base, head = tmp_path / "base", tmp_path / "head"
    for side in (base, head):
        side.mkdir()
    monkeypatch.chdir(head)
    monkeypatch.delenv("ACCELSTACK_USAGE", raising=False)
    assert usage_path(base) == base / "accelstack-usage.yaml"
    assert usage_data(head) == ["accelstack-usage.yaml"]
    assert "accelstack-usage.yaml" in gate_data(head_files(None, head), head)
    # a path inside the project is that path at each side; one outside is the same file
    monkeypatch.setenv("ACCELSTACK_USAGE", "ops/usage.yaml")
    assert usage_path(base) == base / "ops" / "usage.yaml"
    assert usage_data(head) == ["accelstack-usage.yaml", "ops/usage.yaml"]
    outside = tmp_path / "org-usage.yaml"
    monkeypatch.setenv("ACCELSTACK_USAGE", str(outside))
    assert usage_path(base) == usage_path(head) == outside
    monkeypatch.setenv("ACCELSTACK_USAGE", "ops/usage.yaml")
    (head / "ops").mkdir()
    (head / "ops" / "usage.yaml").write_text("version: 0.1\n", encoding="utf-8")
    (line,) = usage_changes(base, head)
    assert line.startswith("the usage file ops/usage.yaml is added by this change")
