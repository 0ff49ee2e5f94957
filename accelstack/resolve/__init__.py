"""Resolve a spec that passed the schema against the catalog: every default filled, every fact
attached (`stack`), then every rule on the result: the spec rules (`ruleset.SPEC_RULES`: what
the shape cannot say, against the catalog's facts) and the stack rules (`rules.STACK_RULES`:
what needs a valid spec's derived facts: names, addresses, memory fit).

`resolve` is the one way to a checked `Stack`: it builds the stack and runs the rules, so every
stack the CLI, the policy pack and the Pulumi program hold has passed them. `from
accelstack.resolve import X` keeps working for every public name.
"""

from __future__ import annotations

from accelstack.catalog import Catalog
from accelstack.errors import Problem, SpecError
from accelstack.resolve.rules import STACK_RULES, StackRule, check_stack
from accelstack.resolve.ruleset import SPEC_RULES, check_spec
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
from accelstack.spec.loader import file_name_problems

__all__ = [
    "MIN_CLUSTER_ZONES",
    "SPEC_RULES",
    "STACK_RULES",
    "CheckpointPlan",
    "ResolvedPool",
    "Stack",
    "StackRule",
    "ami_parameter",
    "check_region",
    "check_rules",
    "check_spec",
    "check_stack",
    "check_written",
    "checkpoint_plan",
    "deployment_name",
    "named",
    "resolve",
    "resolve_unchecked",
    "resolve_written",
    "with_node_groups",
]


def check_written(stack: Stack) -> list[Problem]:
    """The problems of the spec as written: the spec rules, then (only when they pass) a stack
    file's name against its file name."""
    return check_spec(stack) or file_name_problems(stack.spec)


def check_rules(stack: Stack) -> list[Problem]:
    """The problems of the first stage that has any, in the order they report: the spec as
    written (`check_written`), then the stack rules (a later stage reads what an earlier one
    vouches for, so it runs only on a spec that passed it)."""
    return check_written(stack) or check_stack(stack)


def resolve_written(spec: Spec, catalog: Catalog | None = None) -> Stack:
    """The spec resolved under its own name and checked as written (`check_written`), before
    anything about where it deploys is judged: `named` then checks it under the deployment's
    name (the program and the gate: the region in the stack config, the name prefix, between
    the two)."""
    stack = resolve_unchecked(spec, catalog)
    problems = check_written(stack)
    if problems:
        raise SpecError(problems)
    return stack


def named(stack: Stack, name: str | None = None) -> Stack:
    """A stack that passed `resolve_written`, under the deployment's resource-name prefix
    `name` (`deployment_name`), checked by the stack rules."""
    if name and name != stack.spec.name:
        stack = resolve_unchecked(stack.spec, stack.catalog, name=name)
    problems = check_stack(stack)
    if problems:
        raise SpecError(problems)
    return stack


def resolve(spec: Spec, catalog: Catalog | None = None, *, name: str | None = None) -> Stack:
    """The resolved stack of a spec that passed the schema (`load_spec`/`parse_spec`): defaults
    filled and facts attached from the catalog, then every rule run on it (`check_rules`).
    `name`: the resource-name prefix when the deployment differs from the spec
    (`deployment_name`).

    Raises `SpecError` with one `Problem` per finding (the spec's file, the YAML path, the
    message) when any rule fails."""
    stack = resolve_unchecked(spec, catalog, name=name)
    problems = check_rules(stack)
    if problems:
        raise SpecError(problems)
    return stack
