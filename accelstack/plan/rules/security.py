"""Deploy rules: the security defaults (no open ingress, IMDSv2 required, S3 public access
blocked on every bucket). One implementation: `accelstack plan` / `check` evaluate them over the
offline plan, and the CrossGuard pack (policies/) calls the same checks at `pulumi preview`.

The per-resource checks are pure functions of (type, inputs) so the pack's resource policies
can call them on one resource at a time.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from accelstack.plan.document import Plan
from accelstack.plan.rules.registry import DeployRule, deploy_rule, ref
from accelstack.tokens import (
    BUCKET,
    BUCKET_V2,
    INGRESS_RULE,
    INSTANCE,
    LAUNCH_TEMPLATE,
    SECURITY_GROUP,
)
from accelstack.tokens import BUCKET_PUBLIC_ACCESS_BLOCK as PAB
from accelstack.tokens import LEGACY_SECURITY_GROUP_RULE as LEGACY_RULE

if TYPE_CHECKING:
    from accelstack.resolve import Stack

OPEN = frozenset({"0.0.0.0/0", "::/0"})
BUCKET_TYPES = (BUCKET, BUCKET_V2)
PAB_FIELDS = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")


def ingress_cidrs(resource_type: str, props: Mapping[str, Any]) -> list[str]:
    """The CIDRs a security group, ingress rule or legacy rule admits."""
    out: list[Any] = []
    if resource_type == SECURITY_GROUP:
        for rule in props.get("ingress") or []:
            out += list(rule.get("cidrBlocks") or []) + list(rule.get("ipv6CidrBlocks") or [])
    elif resource_type == INGRESS_RULE:
        out += [c for c in (props.get("cidrIpv4"), props.get("cidrIpv6")) if c]
    elif resource_type == LEGACY_RULE and props.get("type") == "ingress":
        out += list(props.get("cidrBlocks") or []) + list(props.get("ipv6CidrBlocks") or [])
    return [str(c) for c in out]


def open_ingress(resource_type: str, props: Mapping[str, Any]) -> list[str]:
    """One message per CIDR that opens the resource to the whole internet."""
    return [
        f"ingress from {cidr} opens it to the whole internet"
        for cidr in ingress_cidrs(resource_type, props)
        if cidr in OPEN
    ]


def imds_problem(resource_type: str, props: Mapping[str, Any]) -> str | None:
    """Why a launch template or instance does not require IMDSv2 (None: it does, or the
    instance takes its metadata options from a launch template checked on its own)."""
    if resource_type not in (LAUNCH_TEMPLATE, INSTANCE):
        return None
    if (
        resource_type == INSTANCE
        and props.get("launchTemplate")
        and not props.get("metadataOptions")
    ):
        return None
    tokens = (props.get("metadataOptions") or {}).get("httpTokens")
    if tokens == "required":
        return None
    return f"metadataOptions.httpTokens is {tokens!r}; IMDSv2 must be required"


def public_access_problem(resource_type: str, props: Mapping[str, Any]) -> str | None:
    if resource_type != PAB:
        return None
    off = [f for f in PAB_FIELDS if props.get(f) is not True]
    return f"public access block must set {', '.join(off)} to true" if off else None


def unblocked_buckets(types_and_names: list[tuple[str, str]]) -> str | None:
    """A message when the stack has fewer public access blocks than buckets."""
    buckets = sorted(n for t, n in types_and_names if t in BUCKET_TYPES)
    blocks = [n for t, n in types_and_names if t == PAB]
    if len(blocks) >= len(buckets):
        return None
    return (
        f"{len(buckets)} bucket(s) ({', '.join(buckets)}) but {len(blocks)} public access "
        "block(s): every bucket needs one"
    )


@deploy_rule(
    "no-open-ingress",
    "https://docs.aws.amazon.com/vpc/latest/userguide/security-group-rules.html",
    "no security group admits 0.0.0.0/0 or ::/0",
)
def _no_open_ingress(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    for r in plan.resources:
        for message in open_ingress(r.type, r.inputs):
            yield (ref(r), message)


@deploy_rule(
    "imdsv2-required",
    "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/configuring-IMDS-existing-instances.html",
    "launch templates and instances require IMDSv2 (httpTokens=required)",
)
def _imdsv2(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    for r in plan.resources:
        problem = imds_problem(r.type, r.inputs)
        if problem:
            yield (ref(r), problem)


@deploy_rule(
    "s3-public-access-blocked",
    "https://docs.aws.amazon.com/AmazonS3/latest/userguide/access-control-block-public-access.html",
    "every bucket has a public access block with all four settings on",
)
def _s3_blocked(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    for r in plan.resources:
        problem = public_access_problem(r.type, r.inputs)
        if problem:
            yield (ref(r), problem)
    missing = unblocked_buckets([(r.type, r.name) for r in plan.resources])
    if missing:
        yield (f"stack '{plan.stack}'", missing)


#: This module's rules, in report order (the kind's RuleSet lists this tuple).
MODULE_RULES: tuple[DeployRule, ...] = (
    _no_open_ingress,
    _imdsv2,
    _s3_blocked,
)
