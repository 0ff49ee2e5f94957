"""The policies of the accelstack CrossGuard pack, importable without starting a pack.

`__main__.py` wraps these in a `PolicyPack` (whose constructor starts the analyzer server and
blocks); tests import this module and call each policy's `validate` directly.

* `accelstack-budget` (stack policy, mandatory): prices every resource of the preview with the
  rules of `accelstack.cost.pricing` (keyed on the Pulumi type, reading `resource.props`) and refuses
  the update when the hourly, monthly or per-run figure exceeds the limits in policy config.
  Unpriceable resources (no rule, not free, no catalog price) are violations: fail closed.
* `no-open-ingress`: no security-group ingress from 0.0.0.0/0 or ::/0.
* `imdsv2-required`: launch templates and instances set metadataOptions.httpTokens=required.
* `s3-public-access-block`: every public access block has all four settings true, and every
  bucket of the stack has one.
* `accelstack-deploy-rules` (stack policy, mandatory; `deploy_rules.py`): the deploy rules of
  `accelstack.plan.rules`, the same `evaluate` that `accelstack plan` and `check` run offline.

Budget: by default the pack reads the stack's spec at preview time (`spec_source`: config
`accelstack:spec`, else stacks/<stack>.yaml) and checks the spec's own `budget` exactly as
`accelstack plan` and the program's guard do (purchase options and the run estimate from the
spec), so no per-stack policy config is kept by hand. Policy config is optional; when it sets
limits (`pulumi preview --policy-pack policies --policy-pack-config cfg.json`) those are used:
    {"accelstack-budget": {"region": "us-east-2", "max_hourly_usd": 700,
                           "max_monthly_usd": 500000, "max_run_usd": 300000,
                           "run_hours": 435.5, "pool_options": {"trn2": "savings-plan-1y"}}}
`run_hours` is the wall-hour estimate `accelstack price --format json` prints (training.wall_hours);
`pool_options` names purchase options the plan cannot show (savings plans bill ON_DEMAND
capacity at a discount); without it ON_DEMAND node groups are priced on demand.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ResourceValidationPolicy,
    StackValidationPolicy,
)

from accelstack.catalog import PURCHASE_OPTIONS, load_catalog
from accelstack.cost.pricing import ResourceLike, price_resources
from accelstack.errors import AccelstackError
from accelstack.plan.rules import security

ReportViolation = Callable[..., None]

BUDGET_SCHEMA = PolicyConfigSchema(
    properties={
        "spec": {"type": "string", "description": "the spec file; default: the stack's"},
        "ceiling": {
            "type": "string",
            "description": "organisation cost ceiling file; default accelstack-ceiling.yaml",
        },
        "region": {"type": "string", "description": "AWS region the stack deploys to"},
        "max_hourly_usd": {"type": "number", "exclusiveMinimum": 0},
        "max_monthly_usd": {"type": "number", "exclusiveMinimum": 0},
        "max_run_usd": {"type": "number", "exclusiveMinimum": 0},
        "run_hours": {
            "type": "number",
            "exclusiveMinimum": 0,
            "description": "estimated wall hours of the training run",
        },
        "pool_options": {
            "type": "object",
            "additionalProperties": {"type": "string", "enum": list(PURCHASE_OPTIONS)},
            "description": "pool name -> purchase option (savings plans are not in the plan)",
        },
    },
    required=[],
)
#: Policy config keys that select the hand-kept budget (else the spec's own budget is read).
HAND_KEPT = ("region", "max_hourly_usd", "max_monthly_usd", "max_run_usd", "run_hours")


def validate_spec_budget(
    cfg: Mapping[str, Any], resources: Sequence[ResourceLike], report_violation: ReportViolation
) -> None:
    """The spec's budget over the preview's resources: the same verdict as `accelstack plan`."""
    from accelstack.cost.guard import check_budget
    from accelstack.cost.pricing import price_plan

    from .spec_source import ceiling_for_preview, stack_for_preview

    try:
        stack = stack_for_preview(cfg)
        ceiling = ceiling_for_preview(cfg)
        verdict = check_budget(stack, price_plan(stack, resources), ceiling)
    except AccelstackError as exc:
        report_violation(f"cannot check this stack's budget, so it is refused: {exc}")
        return
    if not verdict.ok:
        report_violation(verdict.one_line())


def validate_budget(args: Any, report_violation: ReportViolation) -> None:
    """Stack policy: price the preview's resources and check the spec's (or configured) limits."""
    cfg: Mapping[str, Any] = args.get_config() or {}
    region = str(cfg.get("region") or "")
    resources = [planned(r) for r in args.resources]
    if not any(cfg.get(k) is not None for k in HAND_KEPT):
        validate_spec_budget(cfg, resources, report_violation)
        return
    try:
        cost = price_resources(
            resources, load_catalog(), region, dict(cfg.get("pool_options") or {})
        )
    except AccelstackError as exc:
        report_violation(f"cannot price this stack, so it is refused: {exc}")
        return
    _check_figures(cfg, cost, report_violation)


def _check_figures(cfg: Mapping[str, Any], cost: Any, report_violation: ReportViolation) -> None:
    """The hand-kept limits, then the organisation ceiling; no limit at all is refused."""
    from .spec_source import ceiling_for_preview

    mark = " (prices include estimates)" if cost.estimate else ""
    figures = [
        ("hourly", cost.hourly_usd, "max_hourly_usd"),
        ("monthly", cost.monthly_usd, "max_monthly_usd"),
    ]
    if cfg.get("run_hours") is not None:
        figures.append(("training run", cost.hourly_usd * float(cfg["run_hours"]), "max_run_usd"))
    elif cfg.get("max_run_usd") is not None:
        report_violation("max_run_usd is set but run_hours is not: cannot check the run cost")
    if not any(
        cfg.get(k) is not None for k in ("max_hourly_usd", "max_monthly_usd", "max_run_usd")
    ):
        report_violation("policy config sets no max_*_usd limit: refused (fails closed)")
    try:
        ceiling = ceiling_for_preview(cfg)
    except AccelstackError as exc:
        report_violation(f"cannot read the organisation ceiling, so the stack is refused: {exc}")
        return
    for label, actual, key in figures:
        limits = [(key, cfg.get(key))]
        if ceiling is not None:
            limits.append((f"ceiling {key} ({ceiling.source})", ceiling.limit(key)))
        for name, limit in limits:
            if limit is not None and actual > float(limit) + 1e-9:
                report_violation(
                    f"{label} ${actual:,.2f} exceeds {name} ${float(limit):,.2f}{mark}"
                )


# The security checks are the deploy rules' (accelstack/plan/rules/security.py): one
# implementation, run offline by `accelstack plan` / `check` and here per resource at preview.


def validate_no_open_ingress(args: Any, report_violation: ReportViolation) -> None:
    for message in security.open_ingress(args.resource_type, args.props or {}):
        report_violation(f"{args.name}: {message}")


def validate_imdsv2(args: Any, report_violation: ReportViolation) -> None:
    problem = security.imds_problem(args.resource_type, args.props or {})
    if problem:
        report_violation(f"{args.name}: {problem}")


def validate_public_access_block(args: Any, report_violation: ReportViolation) -> None:
    problem = security.public_access_problem(args.resource_type, args.props or {})
    if problem:
        report_violation(f"{args.name}: {problem}")


def validate_buckets_have_blocks(args: Any, report_violation: ReportViolation) -> None:
    missing = security.unblocked_buckets([(r.resource_type, r.name) for r in args.resources])
    if missing:
        report_violation(missing)


budget = StackValidationPolicy(
    name="accelstack-budget",
    description="Price every resource of the preview and refuse it when over budget.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=validate_budget,
    config_schema=BUDGET_SCHEMA,
)
no_open_ingress = ResourceValidationPolicy(
    name="no-open-ingress",
    description="Security groups allow no ingress from 0.0.0.0/0 or ::/0.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=validate_no_open_ingress,
)
imdsv2_required = ResourceValidationPolicy(
    name="imdsv2-required",
    description="Launch templates and instances require IMDSv2 (httpTokens=required).",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=validate_imdsv2,
)
s3_public_access_block = ResourceValidationPolicy(
    name="s3-public-access-block",
    description="S3 public access blocks set all four settings to true.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=validate_public_access_block,
)
s3_buckets_blocked = StackValidationPolicy(
    name="s3-buckets-have-public-access-block",
    description="Every S3 bucket of the stack has a public access block.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=validate_buckets_have_blocks,
)

from .deploy_rules import deploy_rules, planned  # noqa: E402  (one implementation: plan.rules)

POLICIES = [
    budget,
    no_open_ingress,
    imdsv2_required,
    s3_public_access_block,
    s3_buckets_blocked,
    deploy_rules,
]
