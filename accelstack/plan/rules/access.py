"""Deploy rules: how the deployer reaches the Kubernetes API (defect 1 of issue 10)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from accelstack.plan.document import Plan
from accelstack.plan.rules import deploy_rule, ref

if TYPE_CHECKING:
    from accelstack.resolve import Stack

CLUSTER = "aws:eks/cluster:Cluster"
OPEN = {"0.0.0.0/0", "::/0"}


def creates_kubernetes_objects(plan: Plan) -> bool:
    """The same `pulumi up` talks to the cluster's API (Helm releases, namespace, PV/PVC)."""
    return any(r.type.startswith("kubernetes:") for r in plan.resources)


@deploy_rule(
    "eks-endpoint-reachable",
    "https://docs.aws.amazon.com/eks/latest/userguide/cluster-endpoint.html",
    "a stack that creates Kubernetes objects keeps the private endpoint and a public endpoint "
    "limited to the deployer's CIDRs (never 0.0.0.0/0)",
)
def _endpoint(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    if not creates_kubernetes_objects(plan):
        return
    for r in plan.of_type(CLUSTER):
        vpc = r.inputs.get("vpcConfig") or {}
        cidrs = set(vpc.get("publicAccessCidrs") or [])
        if not vpc.get("endpointPublicAccess"):
            yield (
                ref(r),
                "the API endpoint is private-only but this `pulumi up` creates Kubernetes "
                "objects from outside the VPC (they time out); enable the public endpoint "
                "limited to the deployer's CIDRs (cluster.public_access_cidrs)",
            )
        elif not cidrs or cidrs & OPEN:
            yield (
                ref(r),
                f"the public endpoint is open to everyone ({sorted(cidrs) or 'no CIDRs'}); "
                "limit publicAccessCidrs to the deployer's egress CIDRs",
            )
        if not vpc.get("endpointPrivateAccess"):
            yield (
                ref(r),
                "endpointPrivateAccess is off: nodes reach the API through the NAT and the "
                "public CIDR list must include its addresses; keep the private endpoint on",
            )
