"""Deploy rules: how the deployer reaches the Kubernetes API."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from accelstack.plan.document import Plan
from accelstack.plan.rules.registry import DeployRule, deploy_rule, ref
from accelstack.tokens import ACCESS_POLICY_ASSOCIATION as ASSOCIATION
from accelstack.tokens import CLUSTER

if TYPE_CHECKING:
    from accelstack.resolve import Stack

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


def upstream(plan: Plan, name: str) -> set[str]:
    """Every logical name `name` waits for, directly or through others."""
    deps = {r.name: r.depends_on for r in plan.resources}
    seen: set[str] = set()
    todo = list(deps.get(name, ()))
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo.extend(deps.get(n, ()))
    return seen


@deploy_rule(
    "kubernetes-after-cluster-access",
    "https://docs.aws.amazon.com/eks/latest/userguide/access-entries.html",
    "without the creator's implicit admin, every Kubernetes object waits for the admins' access "
    "policy associations (the deployer is one of them)",
)
def _after_access(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    creator = any(
        (c.inputs.get("accessConfig") or {}).get("bootstrapClusterCreatorAdminPermissions")
        for c in plan.of_type(CLUSTER)
    )
    access = {r.name for r in plan.of_type(ASSOCIATION)}
    if creator or not access:
        return
    for r in plan.resources:
        if r.type.startswith("kubernetes:") and not access <= upstream(plan, r.name):
            missing = sorted(access - upstream(plan, r.name))
            yield (
                ref(r),
                f"may reach the API before the deployer's access exists (does not wait for "
                f"{', '.join(missing)}): Unauthorized on the first `pulumi up`",
            )


#: This module's rules, in report order (the kind's RuleSet lists this tuple).
MODULE_RULES: tuple[DeployRule, ...] = (
    _endpoint,
    _after_access,
)
