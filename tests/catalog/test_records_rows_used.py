"""Every service price row in prices.yaml is one the cost code reads: a row nothing prices
(vpc-endpoint-interface-data was one: the ECR endpoints carry API calls and manifests, image
layers come through the S3 gateway endpoint) reads as counted when it is not."""

from __future__ import annotations

import re

import pytest

from accelstack.spec import read_yaml

from ..conftest import ROOT

CATALOG = ROOT / "accelstack" / "catalog"


def _sources() -> str:
    """The code and catalog tables that name price items (prices.yaml itself excluded)."""
    files = [*(ROOT / "accelstack").rglob("*.py"), *(ROOT / "components").glob("*.py")]
    files += [p for p in CATALOG.glob("*.yaml") if p.name != "prices.yaml"]
    return "\n".join(p.read_text(encoding="utf-8") for p in files)


def _referenced(item: str, text: str, prefixes: set[str]) -> bool:
    literal = re.search(rf"[\"' ]{re.escape(item)}[\"'\n]", text)
    return bool(literal) or any(item.startswith(p) for p in prefixes)


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_every_service_price_row_is_read_by_the_cost_code() -> None:
    text = _sources()
    # f-string families (f"fsx-lustre-{...}", f"eks-control-plane-{...}")
    prefixes = {p for p in re.findall(r'f"([a-z0-9]+(?:-[a-z0-9]+)+-)\{', text)}
    rows = read_yaml(CATALOG / "prices.yaml")["services"]
    unused = sorted({r["item"] for r in rows if not _referenced(r["item"], text, prefixes)})
    assert unused == []
    assert "fsx-lustre-" in prefixes and "eks-control-plane-" in prefixes
