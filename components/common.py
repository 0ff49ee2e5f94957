"""Small shared helpers for the components (pure: no resources created here)."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

# Stateful resources carry only the stack's identity tags (naming.stable_tags) so that changing
# `spec.tags` never touches their inputs (user tags reach AWS through the provider's
# default_tags instead, see components/provider.py).
from accelstack.naming import stable_tags as stable_tags

if TYPE_CHECKING:
    from accelstack.inventory import Billable


def check_children(component: str, *declared: Billable | None) -> None:
    """The records the inventory declares for a component are its children, named
    `<component>-<role>`: the component and the cost guard then name one resource, and a
    program that gives the component another name fails here, before anything is created."""
    for b in declared:
        if b is not None and not b.name.startswith(f"{component}-"):
            raise ValueError(f"{b.type} '{b.name}' is not a child of component '{component}'")


def short_hash(text: str, n: int = 8) -> str:
    """A stable short id for names derived from user values (e.g. principal ARNs)."""
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def policy_json(doc: dict[str, Any]) -> str:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"))


def assume_role_policy(service: str, actions: tuple[str, ...] = ("sts:AssumeRole",)) -> str:
    act: str | list[str] = actions[0] if len(actions) == 1 else list(actions)
    return policy_json(
        {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": act}],
        }
    )


def managed_policy_arn(partition: str, name: str) -> str:
    return f"arn:{partition}:iam::aws:policy/{name}"


def managed_policy_output(partition: Any, name: str) -> Any:
    """`managed_policy_arn` for a partition that is a Pulumi input (lazy import of pulumi)."""
    import pulumi

    def arn(part: str) -> str:
        return managed_policy_arn(part, name)

    return pulumi.Output.from_input(partition).apply(arn)


#: EKS Pod Identity's service principal (EKS user guide, pod-id-role.html).
POD_IDENTITY_PRINCIPAL = "pods.eks.amazonaws.com"


def pod_identity_trust_policy(
    account_id: str, cluster_arn: str, namespace: str, service_account: str
) -> dict[str, Any]:
    """Trust for one service account of one cluster through EKS Pod Identity.

    `aws:RequestTag/*`: the session tags Pod Identity sets (documented in the EKS user guide,
    pod-id-role.html, pod-id-abac.html): this cluster, namespace and service account only.
    `aws:SourceAccount` / `aws:SourceArn`: confused-deputy protection (IAM user guide,
    confused-deputy.html). The EKS guide does not document that Pod Identity sends these keys,
    so they are `...IfExists`: enforced when present, never locking the role out."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": POD_IDENTITY_PRINCIPAL},
                "Action": ["sts:AssumeRole", "sts:TagSession"],
                "Condition": {
                    "StringEquals": {
                        "aws:RequestTag/eks-cluster-arn": cluster_arn,
                        "aws:RequestTag/kubernetes-namespace": namespace,
                        "aws:RequestTag/kubernetes-service-account": service_account,
                    },
                    "StringEqualsIfExists": {"aws:SourceAccount": account_id},
                    "ArnEqualsIfExists": {"aws:SourceArn": cluster_arn},
                },
            }
        ],
    }


def pod_identity_trust_output(
    account_id: Any, cluster_arn: Any, namespace: str, service_account: str
) -> Any:
    """`pod_identity_trust_policy` as JSON, for Pulumi inputs (lazy import of pulumi)."""
    import pulumi

    return pulumi.Output.all(account_id, cluster_arn).apply(
        lambda a: policy_json(pod_identity_trust_policy(a[0], a[1], namespace, service_account))
    )
