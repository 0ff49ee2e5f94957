"""A run whose image comes from the region's private ECR through the stack's ECR endpoints
(layers from S3 through the gateway endpoint) pays no NAT data processing for the image pull;
one that pulls from ECR Public through the NAT gateway does (prices.yaml nat-gateway-data)."""

from __future__ import annotations

import pytest

from accelstack.cost.guard import check_budget
from accelstack.cost.pricing import price_stack
from accelstack.cost.rundata import run_data
from accelstack.resolve import Stack

from ..catalog.test_scale import sized, stack_of

PRIVATE = "123456789012.dkr.ecr.us-east-2.amazonaws.com/team/train:2.9.0"


def p5(image: str | None = None) -> Stack:
    data = sized("llama3-405b-p5", 64)
    if image:
        data["workload"]["image"] = image
    return stack_of(data)


def test_a_private_ecr_pull_through_the_endpoints_is_not_charged_nat_data() -> None:
    stack = p5(PRIVATE)
    assert stack.region == "us-east-2" and stack.profile.private_registry
    assert stack.private_image_pull
    data = run_data(stack, price_stack(stack))
    assert data.usd == 0
    (nat,) = [line for line in data.lines if line.startswith("NAT data")]
    assert "none for image pulls" in nat
    assert check_budget(stack).run.extra_usd == 0


def test_an_ecr_public_pull_through_nat_is_charged_per_gb() -> None:
    stack = p5()
    assert not stack.private_image_pull
    g = stack.catalog.throughput.goodput
    rate = stack.catalog.service_rate(stack.region, "nat-gateway-data").usd
    data = run_data(stack, price_stack(stack))
    nodes = sum(p.nodes for p in stack.pools)
    assert data.usd == pytest.approx(nodes * g.image_pull_gb_per_node * rate) and data.usd > 0
