"""`accelstack prices refresh`: Stubber for Pricing/Savings Plans/Capacity Blocks, moto for spot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from botocore.stub import ANY, Stubber

from accelstack.catalog import CATALOG_DIR, load_catalog
from accelstack.catalog.refresh import (
    AwsPriceSource,
    Quote,
    format_row,
    refresh_file,
    refresh_text,
)
from accelstack.cli import main
from accelstack.errors import AccelstackError

TODAY = "2026-11-22"


@pytest.fixture(autouse=True)
def fake_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(k, v)


def price_item(itype: str, region: str, usd: str) -> str:
    """One PriceList entry as the Price List API returns it: a JSON *string*."""
    sku = "8X6N4CQPTVT4VZ8Z"
    return json.dumps(
        {
            "product": {
                "productFamily": "Compute Instance",
                "sku": sku,
                "attributes": {
                    "instanceType": itype,
                    "regionCode": region,
                    "operatingSystem": "Linux",
                    "tenancy": "Shared",
                    "preInstalledSw": "NA",
                    "capacitystatus": "Used",
                    "marketoption": "OnDemand",
                    "usagetype": f"USE1-BoxUsage:{itype}",
                },
            },
            "serviceCode": "AmazonEC2",
            "terms": {
                "OnDemand": {
                    f"{sku}.JRTCKXETXF": {
                        "offerTermCode": "JRTCKXETXF",
                        "sku": sku,
                        "effectiveDate": "2025-11-01T00:00:00Z",
                        "priceDimensions": {
                            f"{sku}.JRTCKXETXF.6YS6EN2CT7": {
                                "unit": "Hrs",
                                "endRange": "Inf",
                                "beginRange": "0",
                                "description": f"${usd} per On Demand Linux {itype} Instance Hour",
                                "rateCode": f"{sku}.JRTCKXETXF.6YS6EN2CT7",
                                "pricePerUnit": {"USD": usd},
                                "appliesTo": [],
                            }
                        },
                        "termAttributes": {},
                    }
                }
            },
            "version": "20251101000000",
            "publicationDate": "2025-11-01T00:00:00Z",
        }
    )


def od_params(itype: str, region: str) -> dict[str, Any]:
    pairs = [
        ("instanceType", itype),
        ("regionCode", region),
        ("operatingSystem", "Linux"),
        ("tenancy", "Shared"),
        ("preInstalledSw", "NA"),
        ("capacitystatus", "Used"),
        ("marketoption", "OnDemand"),
    ]
    return {
        "ServiceCode": "AmazonEC2",
        "FormatVersion": "aws_v1",
        "MaxResults": 100,
        "Filters": [{"Type": "TERM_MATCH", "Field": f, "Value": v} for f, v in pairs],
    }


def sp_result(itype: str, rate: str, seconds: int, usage: str = "BoxUsage") -> dict[str, Any]:
    return {
        "savingsPlanOffering": {
            "offeringId": "off-1",
            "paymentOption": "No Upfront",
            "planType": "Compute",
            "durationSeconds": seconds,
            "currency": "USD",
            "planDescription": "Compute SP",
        },
        "rate": rate,
        "unit": "Hrs",
        "productType": "EC2",
        "serviceCode": "AmazonEC2",
        "usageType": f"USW2-{usage}:{itype}",
        "operation": "RunInstances",
        "properties": [
            {"name": "instanceType", "value": itype},
            {"name": "region", "value": "us-west-2"},
        ],
    }


def test_on_demand_parses_price_list_strings_and_paginates() -> None:
    pricing = boto3.client("pricing", region_name="us-east-1")
    with Stubber(pricing) as stub:
        stub.add_response(
            "get_products",
            {"PriceList": [], "NextToken": "t1", "FormatVersion": "aws_v1"},
            od_params("trn1.32xlarge", "us-west-2"),
        )
        stub.add_response(
            "get_products",
            {
                "PriceList": [price_item("trn1.32xlarge", "us-west-2", "21.5000000000")],
                "FormatVersion": "aws_v1",
            },
            {**od_params("trn1.32xlarge", "us-west-2"), "NextToken": "t1"},
        )
        src = AwsPriceSource(pricing, None, lambda r: None, TODAY)
        q = src.on_demand("us-west-2", "trn1.32xlarge")
        stub.assert_no_pending_responses()
    assert q is not None and q.usd == 21.5 and not q.estimate
    assert q.source.startswith("AWS Price List API") and TODAY in q.source


def test_on_demand_none_when_not_sold_and_error_when_ambiguous() -> None:
    pricing = boto3.client("pricing", region_name="us-east-1")
    with Stubber(pricing) as stub:
        stub.add_response("get_products", {"PriceList": []}, od_params("x.large", "us-west-2"))
        stub.add_response(
            "get_products",
            {
                "PriceList": [
                    price_item("y.large", "us-west-2", "1.0"),
                    price_item("y.large", "us-west-2", "2.0"),
                ]
            },
            od_params("y.large", "us-west-2"),
        )
        src = AwsPriceSource(pricing, None, lambda r: None, TODAY)
        assert src.on_demand("us-west-2", "x.large") is None
        with pytest.raises(AccelstackError, match="2 different on-demand prices"):
            src.on_demand("us-west-2", "y.large")


@pytest.mark.slow
def test_spot_with_moto_takes_the_cheapest_zone() -> None:
    from moto import mock_aws

    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-west-2")
        src = AwsPriceSource(None, None, lambda r: ec2, TODAY)
        q = src.spot("us-west-2", "trn1.32xlarge")
        none = src.spot("us-west-2", "trn2.48xlarge")  # not offered in us-west-2
    assert q is not None and q.estimate and q.usd == pytest.approx(0.00001)  # moto's price
    assert "describe_spot_price_history" in q.source and "zone(s)" in q.source
    assert none is None


def test_spot_latest_per_zone_with_stubber() -> None:
    ec2 = boto3.client("ec2", region_name="us-east-1")
    hist = [
        {
            "AvailabilityZone": "us-east-1a",
            "InstanceType": "p5.48xlarge",
            "ProductDescription": "Linux/UNIX",
            "SpotPrice": "30.0",
            "Timestamp": "2026-11-21T10:00:00Z",
        },
        {
            "AvailabilityZone": "us-east-1a",
            "InstanceType": "p5.48xlarge",
            "ProductDescription": "Linux/UNIX",
            "SpotPrice": "12.5",
            "Timestamp": "2026-11-20T10:00:00Z",
        },  # older: ignored
        {
            "AvailabilityZone": "us-east-1b",
            "InstanceType": "p5.48xlarge",
            "ProductDescription": "Linux/UNIX",
            "SpotPrice": "20.25",
            "Timestamp": "2026-11-21T09:00:00Z",
        },
    ]
    with Stubber(ec2) as stub:
        stub.add_response(
            "describe_spot_price_history",
            {"SpotPriceHistory": hist},
            {
                "InstanceTypes": ["p5.48xlarge"],
                "ProductDescriptions": ["Linux/UNIX"],
                "StartTime": ANY,
            },
        )
        q = AwsPriceSource(None, None, lambda r: ec2, TODAY).spot("us-east-1", "p5.48xlarge")
    assert q is not None and q.usd == 20.25 and q.note == "spot moves; zones ranged 20.25-30"


def test_savings_plans_rates_by_term() -> None:
    sp = boto3.client("savingsplans", region_name="us-east-1")
    results = [
        sp_result("trn1.32xlarge", "13.9", 31_536_000),
        sp_result("trn1.32xlarge", "9.2", 94_608_000),
        sp_result("trn1.32xlarge", "15.0", 31_536_000, usage="DedicatedUsage"),
    ]
    with Stubber(sp) as stub:
        for _ in range(2):
            stub.add_response(
                "describe_savings_plans_offering_rates", {"searchResults": results}, ANY_SP
            )
        src = AwsPriceSource(None, sp, lambda r: None, TODAY)
        one = src.savings_plan("us-west-2", "trn1.32xlarge", "savings-plan-1y")
        three = src.savings_plan("us-west-2", "trn1.32xlarge", "savings-plan-3y")
    assert one is not None and one.usd == 13.9 and "1 yr" in one.source
    assert three is not None and three.usd == 9.2 and "3 yr" in three.source


ANY_SP = {
    "savingsPlanTypes": ["Compute"],
    "savingsPlanPaymentOptions": ["No Upfront"],
    "products": ["EC2"],
    "serviceCodes": ["AmazonEC2"],
    "operations": ["RunInstances"],
    "filters": ANY,
}


def test_capacity_block_hourly_from_upfront_fee() -> None:
    ec2 = boto3.client("ec2", region_name="us-east-2")
    offer = {
        "CapacityBlockOfferingId": "cbr-0123456789abcdef0",
        "InstanceType": "p5.48xlarge",
        "AvailabilityZone": "us-east-2b",
        "InstanceCount": 1,
        "StartDate": "2026-11-23T11:30:00Z",
        "EndDate": "2026-11-24T11:30:00Z",
        "CapacityBlockDurationHours": 24,
        "UpfrontFee": "943.92",
        "CurrencyCode": "USD",
        "Tenancy": "default",
    }
    with Stubber(ec2) as stub:
        stub.add_response(
            "describe_capacity_block_offerings",
            {"CapacityBlockOfferings": [offer, {**offer, "UpfrontFee": "1200.00"}]},
            {"InstanceType": "p5.48xlarge", "InstanceCount": 1, "CapacityDurationHours": 24},
        )
        q = AwsPriceSource(None, None, lambda r: ec2, TODAY).capacity_block(
            "us-east-2", "p5.48xlarge"
        )
    assert q is not None and q.usd == pytest.approx(943.92 / 24)


class FakeSource:
    def __init__(self, quotes: dict[tuple[str, str, str], Quote | Exception | None]) -> None:
        self.quotes = quotes
        self.calls: list[tuple[str, str, str]] = []

    def quote(self, region: str, instance_type: str, option: str) -> Quote | None:
        key = (region, instance_type, option)
        self.calls.append(key)
        q = self.quotes.get(key)
        if isinstance(q, Exception):
            raise q
        return q


def test_refresh_text_rewrites_marks_and_adds() -> None:
    from botocore.exceptions import ClientError

    text = (CATALOG_DIR / "prices.yaml").read_text()
    denied = ClientError(
        {"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "GetProducts"
    )
    src = FakeSource(
        {
            ("us-west-2", "trn1.32xlarge", "on-demand"): Quote(21.0, "AWS Price List API x"),
            ("us-west-2", "trn1.32xlarge", "spot"): denied,
            ("us-west-2", "trn1.32xlarge", "capacity-block"): Quote(15.49, "EC2 cb", note="n"),
        }
    )
    res = refresh_text(text, src, TODAY, regions=["us-west-2"], types=["trn1.32xlarge"])
    assert {k[0] for k in src.calls} == {"us-west-2"}
    assert {k[1] for k in src.calls} == {"trn1.32xlarge"}
    assert set(res.updated) == {("us-west-2", "trn1.32xlarge", "on-demand")}
    assert set(res.added) == {("us-west-2", "trn1.32xlarge", "capacity-block")}
    assert res.failed[("us-west-2", "trn1.32xlarge", "spot")] == "AccessDeniedException: no"
    assert (
        "AWS returned no savings-plan-1y price"
        in res.failed[("us-west-2", "trn1.32xlarge", "savings-plan-1y")]
    )
    rows = {
        (r["region"], r.get("type"), r.get("option")): r
        for r in yaml.safe_load(res.text)["instances"]
    }
    od = rows[("us-west-2", "trn1.32xlarge", "on-demand")]
    assert od == {
        "region": "us-west-2",
        "type": "trn1.32xlarge",
        "option": "on-demand",
        "usd": 21.0,
        "as_of": TODAY,
        "estimate": False,
        "source": "AWS Price List API x",
    }
    spot = rows[("us-west-2", "trn1.32xlarge", "spot")]
    assert spot["usd"] == 3.72 and spot["as_of"] == "2026-08"  # untouched figures
    assert spot["note"] == f"not refreshed {TODAY}: AccessDeniedException: no"
    assert rows[("us-west-2", "trn1.32xlarge", "capacity-block")]["usd"] == 15.49
    # every other row is byte-for-byte the same; comments survive
    old_lines = text.splitlines()
    new_lines = res.text.splitlines()
    assert "  # us-east-1" in new_lines and new_lines[:10] == old_lines[:10]
    changed = [x for x in new_lines if x not in old_lines]
    assert len(changed) == 6  # 1 refreshed, 3 marked (spot, sp1y, sp3y), 1 comment, 1 added


@pytest.mark.slow
def test_refresh_file_dry_run_writes_nothing_and_validates(tmp_path: Path) -> None:
    target = tmp_path / "prices.yaml"
    target.write_text((CATALOG_DIR / "prices.yaml").read_text())
    before = target.read_text()
    src = FakeSource({("us-east-1", "m6i.large", "on-demand"): Quote(0.1, "AWS Price List API y")})
    summary = refresh_file(
        target, ["us-east-1"], ["m6i.large"], dry_run=True, source=src, today=TODAY
    )
    assert target.read_text() == before
    assert "refreshed us-east-1 m6i.large on-demand: 0.1" in summary
    assert summary.strip().endswith("1 refreshed, 0 added, 0 kept as they were")
    refresh_file(target, ["us-east-1"], ["m6i.large"], source=src, today=TODAY)
    assert target.read_text() != before
    # the written file loads as a catalog
    base = tmp_path / "cat"
    base.mkdir()
    for f in CATALOG_DIR.glob("*.yaml"):
        (base / f.name).write_text(f.read_text())
    (base / "prices.yaml").write_text(target.read_text())
    assert load_catalog(base).instance_rate("us-east-1", "m6i.large", "on-demand").usd == 0.1


@pytest.mark.slow
def test_refresh_writes_the_overlay_and_leaves_the_package_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --file the refreshed prices go to the overlay (started from the bundled file);
    the bundled prices.yaml is never touched, and the overlay is read on top of it."""
    bundled = (CATALOG_DIR / "prices.yaml").read_text()
    monkeypatch.setenv("ACCELSTACK_CATALOG_DIR", str(tmp_path))
    src = FakeSource({("us-east-1", "m6i.large", "on-demand"): Quote(0.1, "AWS Price List API y")})
    refresh_file(None, ["us-east-1"], ["m6i.large"], source=src, today=TODAY)
    assert (CATALOG_DIR / "prices.yaml").read_text() == bundled
    assert (tmp_path / "prices.yaml").exists()
    cat = load_catalog(overlay=tmp_path)
    assert cat.instance_rate("us-east-1", "m6i.large", "on-demand").usd == 0.1
    assert load_catalog().instance_rate("us-east-1", "m6i.large", "on-demand").usd == 0.1
    monkeypatch.delenv("ACCELSTACK_CATALOG_DIR")
    assert load_catalog().instance_rate("us-east-1", "m6i.large", "on-demand").usd != 0.1


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_refresh_fails_when_nothing_could_be_refreshed(tmp_path: Path) -> None:
    target = tmp_path / "prices.yaml"
    target.write_text((CATALOG_DIR / "prices.yaml").read_text())
    src = FakeSource({("us-east-1", "m6i.large", "on-demand"): RuntimeError("no creds")})
    with pytest.raises(AccelstackError, match="no price could be refreshed"):
        refresh_file(target, ["us-east-1"], ["m6i.large"], source=src, today=TODAY)


def test_format_row_round_trips() -> None:
    row = {
        "region": "*",
        "type": "p5.48xlarge",
        "option": "spot",
        "usd": 14.25,
        "as_of": "2026-11-22",
        "estimate": True,
        "source": 'a "quoted": source',
        "note": None,
    }
    back = yaml.safe_load(format_row(row))
    assert back == {k: v for k, v in row.items() if v is not None}
    assert format_row({"usd": 0.00001}) == "{usd: 0.00001}"


def test_cli_prices_refresh_help() -> None:
    assert main(["prices", "refresh", "--help"]) == 0
