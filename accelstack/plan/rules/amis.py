"""Deploy rule: no node boots from a moving AMI alias.

`.../recommended/image_id` and a DLAMI's `latest` move whenever AWS publishes an image, so a
program that resolves them on every run rolls every accelerator node (EKS) or recreates every
instance (standalone) on an unrelated `pulumi up`. The AMI id is pinned in the stack config
(`accelstack:amis`) and changed only by `accelstack amis upgrade --yes`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from accelstack.plan.document import Plan
from accelstack.plan.rules._res import get_in, rid
from accelstack.plan.rules.registry import DeployRule, deploy_rule
from accelstack.tokens import (
    ADDON,
    ADDON_VERSION_LOOKUP,
    CLUSTER,
    FLEET,
    INSTANCE,
    LAUNCH_TEMPLATE,
    SSM_PARAMETER_LOOKUP,
)

if TYPE_CHECKING:
    from accelstack.resolve import Stack

#: EC2's own description of an SSM parameter as an image source, and of a pinned id.
SOURCE = (
    "https://docs.aws.amazon.com/autoscaling/ec2/userguide/using-systems-manager-parameters.html"
)
_IMAGE_TYPES = (LAUNCH_TEMPLATE, INSTANCE, FLEET)


def _is_alias(name: str, stack: Stack) -> bool:
    return name in stack.ami_parameters or name.startswith("/aws/service/")


@deploy_rule(
    "ami-pinned",
    SOURCE,
    "no launch template or instance takes its image from a moving AMI alias at deploy time; "
    "ids are pinned in the stack config (accelstack:amis)",
)
def _ami_pinned(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    for lookup in plan.lookups:
        name = str(get_in(lookup, "args", "name") or "")
        if lookup.get("token") == SSM_PARAMETER_LOOKUP and _is_alias(name, stack):
            yield (
                f"stack '{plan.stack}'",
                f"resolves the moving AMI alias {name} on every run (an unrelated `pulumi up` "
                "rolls the nodes); pin it: `accelstack amis pin SPEC`",
            )
    pinned = {p.image_id for p in stack.pools if p.image_id}
    for r in plan.resources:
        if r.type not in _IMAGE_TYPES or "imageId" not in r.inputs:
            continue
        image = r.inputs.get("imageId")
        if not isinstance(image, str) or not image.startswith("ami-"):
            yield (rid(r), f"imageId is {image!r}, not a literal AMI id pinned in the stack config")
        elif pinned and image not in pinned:
            yield (
                rid(r),
                f"imageId {image} is not one of the AMIs pinned in {stack.amis_source} "
                f"({', '.join(sorted(pinned))})",
            )


@deploy_rule(
    "eks-upgrade-policy",
    "https://docs.aws.amazon.com/eks/latest/APIReference/API_UpgradePolicyRequest.html",
    "an EKS cluster states its upgrade policy (the API default, EXTENDED, drifts into paid "
    "extended support); STANDARD unless the spec asks for EXTENDED",
)
def _upgrade_policy(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    for r in plan.of_type(CLUSTER):
        got = get_in(r.inputs, "upgradePolicy", "supportType")
        want = stack.cluster.support_type
        if got != want:
            yield (
                rid(r),
                f"upgradePolicy.supportType is {got!r}, the spec asks for {want!r} "
                "(unset means EXTENDED: paid extended support after standard support ends)",
            )


@deploy_rule(
    "eks-deletion-protection",
    "https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateCluster.html",
    "an EKS cluster has deletion protection as the spec asks (cluster.deletion_protection, on "
    "by default): the cluster holds every Kubernetes object of the stack",
)
def _deletion_protection(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    for r in plan.of_type(CLUSTER):
        got = r.inputs.get("deletionProtection")
        want = stack.access.deletion_protection
        if bool(got) != want:
            yield (
                rid(r),
                f"deletionProtection is {got!r}, the spec asks for {want} (unset means false: "
                "a `pulumi destroy` or a replacement deletes the cluster and every Kubernetes "
                "object on it)",
            )


@deploy_rule(
    "eks-addon-pinned",
    "https://docs.aws.amazon.com/eks/latest/userguide/managing-add-ons.html",
    "every EKS add-on carries the version the catalog pins for the cluster's Kubernetes version; "
    "none floats (no version, or EKS's newest asked at deploy time)",
)
def _addon_pinned(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    pins = stack.addon_versions
    for lookup in plan.lookups:
        if lookup.get("token") == ADDON_VERSION_LOOKUP:
            addon = get_in(lookup, "args", "addonName")
            yield (
                f"stack '{plan.stack}'",
                f"asks EKS for the newest version of add-on {addon} at deploy time (an "
                "unrelated `pulumi up` updates it and rolls its DaemonSet); pin it in the "
                "catalog (instances.yaml eks_addon_versions, `accelstack addons refresh`)",
            )
    for r in plan.of_type(ADDON):
        name = str(r.inputs.get("addonName"))
        got = r.inputs.get("addonVersion")
        if got != pins.get(name):
            want = pins.get(name) or "nothing (no pin: stack rule addon-versions-pinned)"
            yield (
                rid(r),
                f"{name} version is {got!r}; the catalog pins {want} for Kubernetes "
                f"{stack.kubernetes_version}",
            )


#: This module's rules, in report order (the kind's RuleSet lists this tuple).
MODULE_RULES: tuple[DeployRule, ...] = (
    _ami_pinned,
    _upgrade_policy,
    _deletion_protection,
    _addon_pinned,
)
