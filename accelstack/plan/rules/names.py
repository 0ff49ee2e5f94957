"""Name and tag deploy rules: what validation must have refused, checked on
the names the program actually generates. Limits come from botocore's service models where
they exist (accelstack/catalog/limits.py cites the shapes)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from accelstack.catalog.limits import (
    AUTONAME_SUFFIX,
    NODEGROUP_NAME_MAX,
    NODEGROUP_NAME_RE,
    bucket_name_problem,
    iam_role_name,
    max_tags,
)
from accelstack.plan.document import Plan, PlannedResource
from accelstack.plan.rules._res import rid
from accelstack.plan.rules.registry import DeployRule, deploy_rule
from accelstack.tokens import BUCKET, NODE_GROUP, ROLE

if TYPE_CHECKING:
    from accelstack.resolve import Stack

PROVIDER = "pulumi:providers:aws"


def _physical(r: PlannedResource, key: str) -> tuple[str, bool]:
    """(the name AWS will see, whether Pulumi autonames it: logical name + '-' + 7 hex)."""
    given = r.inputs.get(key)
    if isinstance(given, str) and given:
        return given, False
    return r.name + "-" + "x" * (AUTONAME_SUFFIX - 1), True


def _too_long(name: str, auto: bool, limit: int, what: str) -> str | None:
    if len(name) <= limit:
        return None
    how = f" (logical name + Pulumi's {AUTONAME_SUFFIX}-character suffix)" if auto else ""
    return f"{what} '{name}' is {len(name)} characters{how}; AWS allows {limit}"


@deploy_rule(
    "iam-role-name",
    "https://docs.aws.amazon.com/IAM/latest/APIReference/API_CreateRole.html",
    "IAM role names, with Pulumi's autoname suffix, fit botocore iam roleNameType",
)
def _role_names(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    limit, pattern = iam_role_name()
    for r in plan.of_type(ROLE):
        name, auto = _physical(r, "name")
        problem = _too_long(name, auto, limit, "role name")
        if problem is None and not re.fullmatch(pattern, name):
            problem = f"role name '{name}' does not match {pattern}"
        if problem:
            yield (rid(r), problem + " (botocore iam roleNameType); shorten the stack or pool name")


@deploy_rule(
    "eks-nodegroup-name",
    "https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateNodegroup.html",
    "EKS node group names, with Pulumi's autoname suffix, are at most 63 characters",
)
def _nodegroup_names(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    for r in plan.of_type(NODE_GROUP):
        name, auto = _physical(r, "nodeGroupName")
        problem = _too_long(name, auto, NODEGROUP_NAME_MAX, "node group name")
        if problem is None and not re.fullmatch(NODEGROUP_NAME_RE, name):
            problem = f"node group name '{name}' does not match {NODEGROUP_NAME_RE}"
        if problem:
            yield (rid(r), problem + "; shorten the stack or pool name")


@deploy_rule(
    "s3-bucket-name",
    "https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html",
    "bucket names are 3-63 valid characters with no reserved prefix or suffix",
)
def _bucket_names(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    for r in plan.of_type(BUCKET):
        name = r.inputs.get("bucket")
        if isinstance(name, str):
            problem = bucket_name_problem(name)
            if problem:
                yield (rid(r), f"bucket name '{name}' {problem}")


def _default_tag_keys(plan: Plan) -> set[str]:
    keys: set[str] = set()
    for p in plan.of_type(PROVIDER):
        default: Any = p.inputs.get("defaultTags") or {}
        if isinstance(default, str):  # providers receive nested inputs as JSON strings
            default = json.loads(default) if default.startswith("{") else {}
        keys |= set(default.get("tags") or {})
    return keys


@deploy_rule(
    "tag-count",
    "https://docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html",
    "no resource carries more than 50 tags once the provider's default tags are merged "
    "(botocore iam tagListType, eks TagMap)",
)
def _tag_count(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    limit = max_tags()
    defaults = _default_tag_keys(plan)
    for r in plan.resources:
        tags = r.inputs.get("tags")
        if not isinstance(tags, dict):
            continue
        merged = defaults | set(tags)
        if len(merged) > limit:
            yield (
                rid(r),
                f"{len(merged)} tags after merging the provider's default tags; AWS allows "
                f"{limit}: drop {len(merged) - limit} from the spec's tags",
            )


#: This module's rules, in report order (the kind's RuleSet lists this tuple).
MODULE_RULES: tuple[DeployRule, ...] = (
    _role_names,
    _nodegroup_names,
    _bucket_names,
    _tag_count,
)
