"""Resolve a validated spec against the catalog: every default filled, every fact attached
(`stack`), then the rules that need those derived facts (`rules`).

`resolve` is the one way to a `Stack`: it builds the stack and runs the stack rules, so every
stack the CLI, the policy pack and the Pulumi program hold has passed them. `from
accelstack.resolve import X` keeps working for every public name.
"""

from __future__ import annotations

from accelstack.catalog import Catalog
from accelstack.errors import SpecError
from accelstack.resolve.rules import STACK_RULES, StackRule, check_stack
from accelstack.resolve.stack import (
    MIN_CLUSTER_ZONES,
    CheckpointPlan,
    ResolvedPool,
    Stack,
    ami_parameter,
    check_region,
    checkpoint_plan,
    deployment_name,
    resolve_unchecked,
    with_node_groups,
)
from accelstack.spec import Spec

__all__ = [
    "MIN_CLUSTER_ZONES",
    "STACK_RULES",
    "CheckpointPlan",
    "ResolvedPool",
    "Stack",
    "StackRule",
    "ami_parameter",
    "check_region",
    "check_stack",
    "checkpoint_plan",
    "deployment_name",
    "resolve",
    "resolve_unchecked",
    "with_node_groups",
]


def resolve(spec: Spec, catalog: Catalog | None = None, *, name: str | None = None) -> Stack:
    """The resolved stack of a spec that passed the spec rules (`load_spec`/`parse_spec`):
    defaults filled from the catalog, then the stack rules (`STACK_RULES`) run on it. `name`:
    the resource-name prefix when the deployment differs from the spec (`deployment_name`).

    Raises `SpecError` with one `Problem` per finding (the spec's file, the YAML path, the
    message) when any stack rule fails."""
    stack = resolve_unchecked(spec, catalog, name=name)
    problems = check_stack(stack)
    if problems:
        raise SpecError(problems)
    return stack
