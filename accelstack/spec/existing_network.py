"""An existing VPC's subnet list must cover the pools' zones, checked at validate (the plan
and `pulumi up` would fail otherwise, after validation said yes).

A spec names subnets by id only, so offline the check is on count: one private subnet per
zone the pools use (the plan places subnet i in the i-th pool zone), and for EKS subnets in at
least two zones, which the EKS control plane requires
(https://docs.aws.amazon.com/eks/latest/userguide/network-reqs.html: "at least two subnets
that are in different Availability Zones"). `accelstack preflight` checks their real zones.
"""

from __future__ import annotations

from collections.abc import Iterator

from accelstack.spec.rules import Context, Finding, _pool_zone, rule

#: EKS control-plane subnets span at least this many zones (the network-reqs page above; the
#: same figure as accelstack.resolve.MIN_CLUSTER_ZONES, which this layer cannot import).
MIN_CLUSTER_ZONES = 2


@rule(
    "existing-subnets-cover-zones",
    "an existing VPC lists a private subnet for each pool zone (two or more for EKS)",
)
def _existing_subnets(ctx: Context) -> Iterator[Finding]:
    net = ctx.spec.network
    if net.mode != "existing" or not net.private_subnet_ids or not ctx.region_ok:
        return
    zones = list(dict.fromkeys(_pool_zone(ctx, f) for f in ctx.known_pools))
    need = max(len(zones), MIN_CLUSTER_ZONES if ctx.spec.orchestration == "eks" else 1)
    have = len(net.private_subnet_ids)
    if have < need:
        eks = (
            f"; EKS needs subnets in at least {MIN_CLUSTER_ZONES} zones"
            if ctx.spec.orchestration == "eks"
            else ""
        )
        yield (
            "network.private_subnet_ids",
            f"lists {have} subnet(s) for pools in {len(zones)} zone(s) ({', '.join(zones)}){eks}; "
            f"list at least {need}: one private subnet in each pool's zone, in pool order "
            "(`accelstack preflight` checks their real zones)",
        )
