"""The deploy rules (accelstack.plan.rules) as a CrossGuard stack policy: the same `evaluate`
that `accelstack plan` / `check` run offline, over `pulumi preview`'s resources.

The rules read spec facts (`cluster.creator_admin`, the pools): the spec is found at preview
time as the budget policy finds it (`policies.spec_source`: config `accelstack:spec`, else
stacks/<stack>.yaml); policy config may still name it:

    {"accelstack-deploy-rules": {"spec": "stacks/llama3-70b-trn2.yaml"}}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, StackValidationPolicy

from accelstack.errors import AccelstackError
from accelstack.plan.document import Plan, PlannedResource, normalise
from accelstack.plan.rules import evaluate

ReportViolation = Callable[..., None]

SCHEMA = PolicyConfigSchema(
    properties={"spec": {"type": "string", "description": "the spec file this stack deploys"}},
    required=[],
)


def depends_on(r: Any) -> tuple[str, ...]:
    """The names of what a preview's resource depends on, property dependencies included."""
    names = {d.name for d in getattr(r, "dependencies", None) or []}
    for deps in (getattr(r, "property_dependencies", None) or {}).values():
        names.update(d.name for d in deps)
    return tuple(sorted(n for n in names if isinstance(n, str)))


def _options(r: Any) -> dict[str, Any]:
    opts = getattr(r, "opts", None)
    out: dict[str, Any] = {}
    if opts is None:
        return out
    if getattr(opts, "protect", False):
        out["protect"] = True
    if getattr(opts, "delete_before_replace", False):
        out["deleteBeforeReplace"] = True
    if getattr(opts, "ignore_changes", None):
        out["ignoreChanges"] = sorted(opts.ignore_changes)
    return out


def planned(r: Any) -> PlannedResource:
    """A pulumi_policy resource as the plan document records it: the same camelCase provider
    inputs, its parent and dependencies by logical name (what the deploy rules and the price
    rules read)."""
    parent = getattr(r, "parent", None)
    return PlannedResource(
        r.resource_type,
        r.name,
        getattr(parent, "name", None),
        normalise(dict(r.props or {})),
        depends_on(r),
    )


def plan_of(resources: list[Any], stack_name: str, region: str) -> Plan:
    """pulumi_policy resources as the plan document the rules read."""
    rows: list[PlannedResource] = []
    options: dict[tuple[str, str], dict[str, Any]] = {}
    for r in resources:
        if r.resource_type.startswith("pulumi:"):
            continue
        rows.append(planned(r))
        if opts := _options(r):
            options[(r.resource_type, r.name)] = opts
    rows.sort(key=lambda p: (p.type, p.name))
    return Plan(stack=stack_name, region=region, resources=rows, options=options)


def validate_deploy_rules(args: Any, report_violation: ReportViolation) -> None:
    """Stack policy: every deploy rule over the preview; one report per violation."""
    from .spec_source import stack_for_preview

    cfg: Mapping[str, Any] = args.get_config() or {}
    try:
        stack = stack_for_preview(cfg)
    except AccelstackError as exc:
        report_violation(f"cannot read the spec of this stack, so it is refused: {exc}")
        return
    for v in evaluate(plan_of(list(args.resources), stack.name, stack.region), stack):
        report_violation(v.line())


deploy_rules = StackValidationPolicy(
    name="accelstack-deploy-rules",
    description="The deploy rules of accelstack.plan.rules (the same ones `accelstack plan` runs).",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=validate_deploy_rules,
    config_schema=SCHEMA,
)
