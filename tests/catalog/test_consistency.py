"""The catalog is consistent: every region where it offers an accelerated type has every other
price a stack there needs (system nodes, NAT, EKS, ...), so a stack there is priced once its
accelerator's rate is known; the regions that cannot be are listed with the reason
(scale.yaml `price_gaps`) and really lack it."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from accelstack.catalog import Catalog, load_catalog
from accelstack.cost.guard import check_budget
from accelstack.errors import SpecError
from accelstack.resolve import resolve
from accelstack.spec import parse_spec, read_yaml

from ..conftest import STACKS

#: The service items an EKS stack of a created network is priced with (accelstack/cost/pricing.py
#: rules: control plane in standard and extended support, NAT gateway and its address, the
#: secrets key, root volumes, buckets, interface endpoints).
STACK_SERVICES = (
    "eks-cluster",
    "eks-cluster-extended",
    "nat-gateway",
    "public-ipv4",
    "kms-key",
    "ebs-gp3",
    "s3-standard",
    "vpc-endpoint-interface",
)


def accelerated_regions(cat: Catalog) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name, region in cat.regions.items():
        types = [t for t in region.types if t in cat.instances and cat.instances[t].accelerated]
        if types:
            out[name] = types
    return out


def missing(cat: Catalog, region: str) -> list[str]:
    """What a stack in `region` lacks beyond its accelerator's rate."""
    sys_type = cat.defaults.system_instance_type
    out = []
    if sys_type not in cat.regions[region].types:
        out.append(f"system type {sys_type} not offered")
    elif not cat.has_rate(region, sys_type, "on-demand"):
        out.append(f"no on-demand price for the system type {sys_type}")
    for item in STACK_SERVICES:
        try:
            cat.service_rate(region, item)
        except Exception:
            out.append(f"no price for {item}")
    return out


def test_every_region_offering_an_accelerator_has_the_prices_a_stack_needs() -> None:
    cat = load_catalog()
    gaps = cat.scale.price_gaps
    holes = {
        region: missing(cat, region)
        for region in accelerated_regions(cat)
        if region not in gaps and missing(cat, region)
    }
    assert holes == {}, f"catalog holes (add sourced rows or list in price_gaps): {holes}"


def test_the_listed_price_gaps_are_real() -> None:
    cat = load_catalog()
    offered = accelerated_regions(cat)
    for region, why in cat.scale.price_gaps.items():
        assert region in offered, f"{region} offers no accelerated type: drop it from price_gaps"
        assert missing(cat, region), f"{region} is priced now: drop it from price_gaps"
        assert "overlay" in why


def trn2u_spec(tmp_path: Path) -> Path:
    data = copy.deepcopy(read_yaml(STACKS / "llama3-70b-trn2.yaml"))
    data["pools"][0].update(nodes=4, instance_type="trn2u.48xlarge")
    data["region"], data["availability_zone"] = "ap-south-2", None
    data["budget"] = {"max_hourly_usd": 1e9, "max_monthly_usd": 1e12, "max_run_usd": 1e12}
    path = tmp_path / "u.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_trn2u_stack_prices_once_the_user_supplies_the_ultraserver_rate(
    tmp_path: Path,
) -> None:
    """The catalog offers trn2u only in ap-south-2: with the user's rate in an overlay, every
    other price the stack needs is there (the system nodes were not)."""
    overlay = tmp_path / "catalog"
    overlay.mkdir()
    row = {
        "region": "ap-south-2",
        "type": "trn2u.48xlarge",
        "option": "on-demand",
        "usd": 40.0,
        "as_of": "2026-11",
        "estimate": False,  # a negotiated rate is known (an estimate needs a price_ranges row)
        "source": "user's negotiated rate",
    }
    (overlay / "prices.yaml").write_text(yaml.safe_dump({"instances": [row]}))
    cat = load_catalog(overlay=overlay)
    data = read_yaml(trn2u_spec(tmp_path))
    stack = resolve(parse_spec(data, "u.yaml"), cat)
    verdict = check_budget(stack)
    assert verdict.cost.pool_hourly_usd(stack.pools[0].name) >= 4 * 40.0


def test_a_missing_price_points_to_the_users_catalog_overlay(tmp_path: Path) -> None:
    data = read_yaml(trn2u_spec(tmp_path))
    with pytest.raises(SpecError) as err:
        resolve(parse_spec(data, "u.yaml"))
    text = str(err.value)
    assert "catalog overlay" in text and "ACCELSTACK_CATALOG_DIR" in text
    assert "accelstack/catalog/prices.yaml" not in text
