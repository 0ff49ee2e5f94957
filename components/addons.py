"""Which version each EKS add-on runs: the one the catalog pins for the cluster's Kubernetes
version (instances.yaml `eks_addon_versions`, sourced; `accelstack addons refresh` rewrites a
version's row from EKS DescribeAddonVersions into the catalog overlay). Never EKS's newest
resolved at deploy time (`aws.eks.get_addon_version(most_recent=True)`, what terraform-aws-eks
does): an unrelated `pulumi up` would then update an add-on, and roll its DaemonSet across every
node, whenever EKS publishes a build. The version follows the Kubernetes version, so a
Kubernetes upgrade updates every add-on in place (`addonVersion` is not replace-forcing), after
the control plane (each add-on takes the cluster's name, an output of the cluster update) and
before the nodes (the node groups depend on the early add-ons): kube-proxy may be up to three
minor versions newer than the kubelets it runs beside and never newer than the API server
(kubernetes.io/releases/version-skew-policy, kube-proxy)."""

from __future__ import annotations

from collections.abc import Mapping


def addon_version(addon: str, kubernetes_version: str, pins: Mapping[str, str]) -> str:
    """The catalog's pin of `addon` for `kubernetes_version`. resolve refuses a stack whose
    add-on has none (stack rule addon-versions-pinned), so a missing pin is a program error."""
    pinned = pins.get(addon)
    if not pinned:
        raise ValueError(
            f"add-on {addon}: no pinned version for Kubernetes {kubernetes_version or '?'} "
            "(the stack rule addon-versions-pinned should have refused this stack)"
        )
    return pinned
