"""Data a training run moves that is billed per GB: image pulls through the NAT gateway, and
inter-AZ transfer (none while the workload pool, its fabric and its storage share one zone).

These are one-off charges of the run, added to its run cost beside the hourly lines (the
hourly NAT line covers only the gateway-hour). Facts: throughput.yaml `goodput`
(image_pull_gb_per_node, sourced) and prices.yaml (`nat-gateway-data`).
"""

from __future__ import annotations

from dataclasses import dataclass

from accelstack.cost.pricing import StackCost
from accelstack.resolve import Stack

NAT_TYPE = "aws:ec2/natGateway:NatGateway"
#: scale.yaml image_delivery.private_registry.endpoint_source
PRIVATE_PULL_LINE = (
    "NAT data: none for image pulls (the image is in the region's private ECR, pulled through "
    "the stack's ECR endpoints, its layers from S3 through the gateway endpoint)"
)


@dataclass(frozen=True)
class RunData:
    usd: float
    estimate: bool
    lines: tuple[str, ...]


def run_data(stack: Stack, cost: StackCost) -> RunData:
    """The run's per-GB lines: NAT data for image pulls, and the inter-AZ note. No NAT data
    when the image comes from the region's private ECR through the stack's ECR endpoints
    (`Stack.private_image_pull`): the layers come from S3 through the gateway endpoint."""
    lines: list[str] = []
    usd = 0.0
    if stack.private_image_pull:
        lines.append(PRIVATE_PULL_LINE)
    elif any(i.type == NAT_TYPE for i in cost.items):
        g = stack.catalog.throughput.goodput
        rate = stack.catalog.service_rate(stack.region, "nat-gateway-data")
        nodes = sum(p.nodes for p in stack.pools)
        gb = nodes * g.image_pull_gb_per_node
        usd = gb * rate.usd
        lines.append(
            f"NAT data: image pulls {nodes} node(s) x {g.image_pull_gb_per_node:g} GB x "
            f"${rate.usd:g}/GB = ${usd:,.2f} ({g.image_pull_source})"
        )
    lines.append(inter_az_note(stack))
    return RunData(usd, usd > 0, tuple(lines))


def inter_az_note(stack: Stack) -> str:
    """Inter-AZ transfer: zero when the workload pool sits in one zone, else not estimated."""
    zone = stack.workload_zone
    if zone:
        return (
            f"inter-AZ data: none estimated (the workload pool, its EFA fabric and its "
            f"storage are in {zone})"
        )
    return (
        "inter-AZ data: not estimated (no availability_zone: the pool may span zones; "
        "$0.01/GB each way between zones is not included)"
    )
