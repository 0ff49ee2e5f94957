"""Which version each EKS add-on runs: the one the catalog pins for the cluster's Kubernetes
version (instances.yaml `eks_addon_versions`, sourced), else the newest version EKS offers for
that Kubernetes version, resolved at deploy time with the provider's `aws.eks.get_addon_version`
(`most_recent`; terraform-aws-eks resolves its add-ons the same way, with the
`aws_eks_addon_version` data source). Either way the version follows the Kubernetes version, so a
Kubernetes upgrade updates every add-on in place (`addonVersion` is not replace-forcing), after
the control plane (each add-on takes the cluster's name, an output of the cluster update) and
before the nodes (the node groups depend on the early add-ons): kube-proxy may be up to three
minor versions newer than the kubelets it runs beside and never newer than the API server
(kubernetes.io/releases/version-skew-policy, kube-proxy)."""

from __future__ import annotations

from collections.abc import Mapping

import pulumi
import pulumi_aws as aws


def addon_version(
    addon: str, kubernetes_version: str, pins: Mapping[str, str]
) -> pulumi.Input[str] | None:
    """The add-on's version for `kubernetes_version`: the catalog's pin, else EKS's newest
    (None only without a Kubernetes version: EKS's default then)."""
    pinned = pins.get(addon)
    if pinned:
        return pinned
    if not kubernetes_version:
        return None
    found = aws.eks.get_addon_version_output(
        addon_name=addon, kubernetes_version=kubernetes_version, most_recent=True
    )
    return found.version
