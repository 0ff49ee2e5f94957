"""The usage file (accelstack/cost/usage.py): monthly amounts of the items billed per use (NAT
GB, S3 requests, inter-AZ GB), priced from the catalog's rates, shown by `price` in text,
markdown and JSON; a stack's own values over the default; an item the stack lacks named as
not priced; a bad file one line naming the file and key, exit 2."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
import yaml

from accelstack.catalog import load_catalog
from accelstack.cli import main
from accelstack.cost.guard import check_budget
from accelstack.cost.usage import UsageFile, usage_cost
from accelstack.resolve import resolve
from accelstack.spec import load_spec
from accelstack.tokens import NAT_GATEWAY

from ..conftest import STACKS

USAGE = {
    "version": 0.1,
    "default": {
        "nat_gateway": {"monthly_data_processed_gb": 500},
        "s3_buckets": {"monthly_tier_1_requests": 2_000_000, "monthly_tier_2_requests": 20_000_000},
        "data_transfer": {"monthly_intra_region_gb": 100},
    },
    "stacks": {"llama3-70b-trn2": {"nat_gateway": {"monthly_data_processed_gb": 2000}}},
}


def _project(tmp_path: Path, usage: object = USAGE) -> Path:
    shutil.copy(STACKS / "llama3-70b-trn2.yaml", tmp_path / "llama3-70b-trn2.yaml")
    (tmp_path / "accelstack-usage.yaml").write_text(yaml.safe_dump(usage), encoding="utf-8")
    return tmp_path / "llama3-70b-trn2.yaml"


def _expected_usd(region: str) -> float:
    cat = load_catalog()
    rate = lambda item: cat.service_rate(region, item).usd  # noqa: E731
    return (
        2000 * rate("nat-gateway-data")  # the stack's own value over the default's 500
        + 2_000_000 / 1000 * rate("s3-requests-tier1")
        + 20_000_000 / 1000 * rate("s3-requests-tier2")
        + 100 * 2 * rate("inter-az-data")  # billed on both sides
    )


def test_price_shows_the_usage_priced_items_of_the_project_usage_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["price", str(spec), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    usage = doc["usage"]
    assert usage["monthly_usd"] == pytest.approx(_expected_usd(doc["region"]))
    nat = next(line for line in usage["lines"] if line["item"] == "nat-gateway-data")
    assert nat["amount"] == 2000 and nat["unit"] == "gb"
    assert doc["monthly_usd"] == pytest.approx(
        check_budget(resolve(load_spec(spec))).cost.monthly_usd
    )
    assert main(["price", str(spec)]) == 0
    text = capsys.readouterr().out
    block = text.split("usage-priced items (monthly, from ", 1)[1]
    assert "NAT gateway data processed (GB): 2,000 at $0.045 per gb = $90.00/month" in block
    assert "inter-AZ data (GB, both sides billed): 100 x 2 at $0.01 per gb = $2.00*/month" in block
    assert main(["price", str(spec), "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert (
        "**Usage-priced items**" in md
        and "| S3 PUT, COPY, POST, LIST requests | 2,000,000 | $10.00 * |" in md
    )


def test_without_a_usage_file_price_is_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = _project(tmp_path)
    (tmp_path / "accelstack-usage.yaml").unlink()
    monkeypatch.chdir(tmp_path)
    assert main(["price", str(spec), "--format", "json"]) == 0
    assert "usage" not in json.loads(capsys.readouterr().out)
    # a named file is used from anywhere; a missing one is refused, never skipped
    named = tmp_path / "org-usage.yaml"
    named.write_text(yaml.safe_dump(USAGE), encoding="utf-8")
    monkeypatch.setenv("ACCELSTACK_USAGE", str(named))
    assert main(["price", str(spec), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["usage"]["source"] == str(named)
    assert main(["price", str(spec), "--usage", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml: the usage file does not exist (--usage or ACCELSTACK_USAGE)" in (
        capsys.readouterr().err
    )


def test_an_item_the_stack_does_not_have_is_not_priced() -> None:
    stack = resolve(load_spec(STACKS / "llama3-70b-trn2.yaml"))
    cost = check_budget(stack).cost
    no_nat = dataclasses.replace(cost, items=tuple(i for i in cost.items if i.type != NAT_GATEWAY))
    usage = UsageFile("u.yaml", {"nat_gateway": {"monthly_data_processed_gb": 500.0}}, {})
    (line,) = usage_cost(stack, no_nat, usage, load_catalog()).lines
    assert line.monthly_usd is None
    assert usage_cost(stack, no_nat, usage, load_catalog()).monthly_usd == 0
    (priced,) = usage_cost(stack, cost, usage, load_catalog()).lines
    assert priced.monthly_usd == pytest.approx(500 * priced.rate_usd)


@pytest.mark.parametrize(
    ("usage", "message"),
    [
        (
            {"defaults": {}},
            "accelstack-usage.yaml: defaults: is not a usage file key; did you mean 'default'?",
        ),
        (
            {"default": {"nat_gateways": {}}},
            "default.nat_gateways: is not a usage group; did you mean 'nat_gateway'?",
        ),
        (
            {"default": {"s3_buckets": {"monthly_tier1_requests": 5}}},
            "default.s3_buckets.monthly_tier1_requests: is not a usage key; did you mean 'monthly_tier_1_requests'?",
        ),
        (
            {"stacks": {"x": {"data_transfer": {"monthly_intra_region_gb": -1}}}},
            "stacks.x.data_transfer.monthly_intra_region_gb: is '-1'; allowed: a number of 0 or more",
        ),
        (
            {"default": {"nat_gateway": "lots"}},
            "default.nat_gateway: must be a mapping of usage keys, found 'lots'",
        ),
        (["a list"], "accelstack-usage.yaml: must be a mapping of version, default and stacks"),
    ],
)
def test_a_bad_usage_file_is_one_line_exit_2(
    usage: object,
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = _project(tmp_path, usage)
    monkeypatch.chdir(tmp_path)
    assert main(["price", str(spec)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and message in captured.err and len(captured.err.splitlines()) == 1
