"""`check --strict` fails on what `pulumi up` refuses; `validate` agrees with `check` on budgets;
subnets that cannot serve the pools are refused at `validate`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from .. import factories
from ..helpers_cli import run_cli


def _copy(tmp_path: Path, name: str, edit: object = None) -> Path:
    data = factories.preset(name)
    if callable(edit):
        edit(data)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_check_strict_fails_on_placeholders_and_unpinned_amis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _copy(tmp_path, "trn1-finetune")
    code, out, _ = run_cli(capsys, "check", str(spec), "--format", "json")
    assert code == 0  # offline, placeholders and missing pins are warnings
    code, out, _ = run_cli(capsys, "check", str(spec), "--strict", "--format", "json")
    row = json.loads(out)["stacks"][0]
    assert code == 1 and not row["ok"]
    assert any(e.startswith("placeholder cluster.public_access_cidrs[0]") for e in row["errors"])
    assert any("no AMI pinned in accelstack:amis for pool(s) trn1" in e for e in row["errors"])


def test_validate_refuses_a_spec_without_a_budget_as_check_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _copy(tmp_path, "trn1-finetune", lambda d: d.pop("budget"))
    code, _, err = run_cli(capsys, "validate", str(spec))
    assert code == 2 and "budget sets no max_hourly_usd" in err
    assert len(err.strip().splitlines()) == 1
    code, _, err = run_cli(capsys, "check", str(spec))
    assert code == 2 and "budget sets no max_hourly_usd" in err


def test_duplicate_private_subnets_are_refused_at_validate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def existing(data: dict[str, object]) -> None:
        data["network"] = {
            "mode": "existing",
            "vpc_id": "vpc-0123456789abcdef0",
            "private_subnet_ids": ["subnet-0aaaaaaaaaaaaaaa1", "subnet-0aaaaaaaaaaaaaaa1"],
        }

    spec = _copy(tmp_path, "mixed-trn2-p5", existing)
    code, _, err = run_cli(capsys, "validate", str(spec))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "network.private_subnet_ids[1]: repeats 'subnet-0aaaaaaaaaaaaaaa1'" in err
