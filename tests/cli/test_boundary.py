"""Day-to-day commands: missing AWS credentials are one line and exit 2; every spec parser
reads a scalar the same way; `--stack` on price; existing-VPC subnets checked at validate."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from accelstack.spec.yamlsafe import load_yaml_text

from .. import factories
from ..conftest import ROOT, STACKS
from ..helpers_cli import run_cli


@pytest.fixture
def no_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No credentials anywhere botocore looks (files, environment, instance metadata)."""
    for var in ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for var in ("AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"):
        monkeypatch.delenv(var, raising=False)
    # boto3's default session caches the credentials it first found: another test of this
    # worker (moto's fake keys) may have created it, so the command starts from none
    import boto3

    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [
        ("amis", "pin", str(STACKS / "trn1-finetune.yaml")),
        ("amis", "upgrade", str(STACKS / "trn1-finetune.yaml")),
        ("preflight", str(STACKS / "trn1-finetune.yaml")),
        (
            "prices",
            "refresh",
            "--region",
            "us-east-1",
            "--types",
            "trn1.2xlarge",
            "--dry-run",
            "--file",
            str(ROOT / "accelstack" / "catalog" / "prices.yaml"),  # read only: a dry run
        ),
    ],
    ids=["amis-pin", "amis-upgrade", "preflight", "prices-refresh"],
)
def test_missing_credentials_are_one_line_exit_2(
    argv: tuple[str, ...], no_aws: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(capsys, *argv)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "credentials" in lines[0].lower(), err
    assert "internal error" not in err and "Traceback" not in err


def test_the_boundary_maps_botocore_setup_errors() -> None:
    from botocore.exceptions import NoCredentialsError, NoRegionError, ProfileNotFound

    from accelstack.cli.boundary import as_failure

    for exc, says in (
        (NoCredentialsError(), "no AWS credentials found"),
        (NoRegionError(), "no AWS region set"),
        (ProfileNotFound(profile="ml"), "the AWS profile does not exist"),
    ):
        failure = as_failure(exc, "amis pin x")
        assert failure.exit_code == 2 and str(failure).startswith(f"amis pin x: {says}")
    assert as_failure(KeyError("k"), "x").exit_code == 1  # other errors stay internal


# ---- one scalar reading for every parser --------------------------------------------------


def _write(tmp_path: Path, edit: Any) -> Path:
    data = factories.preset("trn1-finetune")
    text = yaml.safe_dump(data, sort_keys=False)
    path = tmp_path / "stacks" / "trn1-finetune.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(edit(text))
    return path


def test_exponent_numbers_read_the_same_in_validate_and_new(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = _write(tmp_path, lambda t: t.replace("max_hourly_usd: 5", "max_hourly_usd: 1e3"))
    code, out, err = run_cli(capsys, "price", str(spec), "--format", "json")
    assert code == 0, err
    limits = {b["field"]: b["limit"] for b in json.loads(out)["budget"]}
    assert limits["budget.max_hourly_usd"] == 1000.0  # a number, not the text '1e3'
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "new", "copy", "--from", str(spec))
    assert code == 0, err  # the round-trip editor agrees with validate
    copied = load_yaml_text((tmp_path / "stacks" / "copy.yaml").read_text())
    assert copied["budget"]["max_hourly_usd"] == 1000.0
    # an exponent where text is expected: both refuse it, with the same path
    bad = _write(tmp_path / "b", lambda t: t.replace("entrypoint: ", "entrypoint: 1e3 #"))
    code, _, err = run_cli(capsys, "validate", str(bad))
    assert code == 2 and "workload.entrypoint" in err
    code, _, err2 = run_cli(capsys, "new", "copy2", "--from", str(bad))
    assert code == 2 and "workload.entrypoint" in err2


# ---- --stack on price ---------------------------------------------------------------------


def test_price_with_stack_uses_the_stacks_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "stacks").mkdir()
    shutil.copy(STACKS / "trn1-finetune.yaml", tmp_path / "stacks")
    (tmp_path / "Pulumi.yaml").write_text("name: p\nruntime: python\n")
    spec = tmp_path / "stacks" / "trn1-finetune.yaml"
    code, out, _ = run_cli(capsys, "price", str(spec), "--stack", "prod", "--format", "json")
    assert code == 0 and json.loads(out)["stack"] == "trn1-finetune-prod"
    name = "a-very-long-stack-name-for-the-prefix"
    code, _, err = run_cli(capsys, "price", str(spec), "--stack", name)
    assert code == 2 and "is not valid" in err and "at most 40 characters" in err
    code, _, err = run_cli(capsys, "check", str(spec), "--stack", name)
    assert code == 2 and "at most 40 characters" in err


# ---- existing VPC subnets against the pools' zones ------------------------------------------


def test_existing_subnets_must_cover_the_pool_zones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = factories.preset("mixed-trn2-p5")
    data["network"] = {
        "mode": "existing",
        "vpc_id": "vpc-0123456789abcdef0",
        "private_subnet_ids": ["subnet-0aaaaaaaaaaaaaaa1"],
    }
    spec = tmp_path / "mixed-trn2-p5.yaml"
    spec.write_text(yaml.safe_dump(data))
    code, _, err = run_cli(capsys, "validate", str(spec))
    assert code == 2 and err.count("\n") == 1
    assert (
        "network.private_subnet_ids: lists 1 subnet(s) for pools in 2 zone(s) (use2-az1, use2-az2)"
    ) in err
    data["network"]["private_subnet_ids"].append("subnet-0bbbbbbbbbbbbbbb2")
    spec.write_text(yaml.safe_dump(data))
    assert run_cli(capsys, "validate", str(spec))[0] == 0
    code, _, err = run_cli(capsys, "plan", str(spec), "--format", "json")
    assert code == 0, err  # what validates, plans
