"""Planning one stack, shared by `plan`, `check` and `diff`: the program the plan engine runs,
a stack resolved and planned as the program does, its verdicts and warnings, and the diff side
row of one stack. Command modules import these, never each other."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from accelstack.cli.boundary import as_failure

if TYPE_CHECKING:
    from collections.abc import Callable

    from accelstack.catalog import Catalog
    from accelstack.cost.ceiling import Ceiling
    from accelstack.cost.guard import Verdict
    from accelstack.plan import Plan, Program
    from accelstack.plan.rules import Violation
    from accelstack.resolve import Stack
    from accelstack.stackconfig import StackRef


def program() -> Program:
    """The Pulumi program the plan engine runs: the CLI wires the components in."""
    import warnings

    with warnings.catch_warnings():  # pulumi_aws deprecates its S3 *V2 classes on import
        warnings.simplefilter("ignore", DeprecationWarning)
        from accelstack.components.program import build
    program: Program = build
    return program


def plan_verdict(plan: Plan, stack: Stack, ceiling: Ceiling | None = None) -> Verdict:
    """The budget verdict (with the organisation ceiling), priced from what the program
    declared."""
    from accelstack.cost.guard import check_budget
    from accelstack.cost.pricing import price_plan

    return check_budget(stack, price_plan(stack, plan.resources), ceiling)


def ceiling_for(flag: Path | None, root: Path) -> Ceiling | None:
    """The organisation ceiling in force for a project (flag, variable, or its file)."""
    from accelstack.cost.ceiling import find_ceiling

    return find_ceiling(flag, root)


def stack_warnings(stack: Stack, plan: Plan) -> list[str]:
    """Warnings `check` prints per stack: those of `validate` (preview types, estimated
    offerings, extended-support Kubernetes). Deploy-rule violations are errors, not warnings:
    `_check_one` reports them with the budget verdict. Then the warnings on the resolved
    stack (accelstack/resolve/advice.py)."""
    from accelstack.cli.specfiles import spec_warnings
    from accelstack.resolve.advice import stack_warnings as resolved_warnings

    return spec_warnings(stack.spec, stack.catalog, stack) + resolved_warnings(stack)


def violations_of(plan: Plan, stack: Stack) -> list[Violation]:
    """The deploy rules' verdict on a plan (none: deployable)."""
    from accelstack.plan.rules import evaluate

    return evaluate(plan, stack)


def violation_doc(v: Violation) -> dict[str, str]:
    return {"rule": v.rule, "resource": v.resource, "message": v.message, "source": v.source}


def verdict_doc(v: Verdict) -> dict[str, Any]:
    return {"ok": v.ok, "line": v.one_line(), "reasons": v.reasons}


def plan_ref(ref: StackRef, catalog: Catalog | None = None) -> tuple[Stack, Plan]:
    """Resolve a stack exactly as the program does (its stack config) and plan it without the
    guard: the caller reports the verdict after the plan."""
    from accelstack.plan import run_plan
    from accelstack.stackconfig import resolve_ref

    stack = resolve_ref(ref, catalog)
    return stack, run_plan(stack, program(), guard=False)


def side_row(
    ref: StackRef, stack: Stack, result: Plan, verdict: Verdict, label: str
) -> dict[str, Any]:
    """One side of a diff for a planned stack: its plan document, priced verdict, inputs."""
    from accelstack.plan.diff_inputs import inputs_of, resource_costs

    cost = {
        "hourly_usd": round(verdict.cost.hourly_usd, 4),
        "monthly_usd": round(verdict.cost.monthly_usd, 2),
        "run_usd": round(verdict.run.run_usd, 2),
        "estimate": verdict.cost.estimate,
        "ok": verdict.ok,
        "verdict": verdict.one_line(),
        "violations": [v.line() for v in violations_of(result, stack)],
        "items": resource_costs(verdict),
    }
    return {"file": label, "plan": result.to_dict(), "cost": cost, "inputs": inputs_of(ref)}


def planned_row(
    ref: StackRef, catalog: Catalog, label: str, ceiling: Ceiling | None
) -> dict[str, Any]:
    """The diff side row of one stack (`side_row`), or its errors when it does not plan."""
    shown = f"{label}:{rel_to(ref.spec, ref.root)}"
    try:
        stack, result = plan_ref(ref, catalog)
        return side_row(ref, stack, result, plan_verdict(result, stack, ceiling), shown)
    except Exception as exc:  # one broken spec must not hide the rest
        failure = as_failure(exc, f"diff {shown}")
        lines = [x.replace(str(ref.spec), shown) for x in str(failure).splitlines()]
        from accelstack.spec.secrets import redact

        lines = [redact(x.replace(str(ref.root) + "/", "")) for x in lines]
        lines = lines or [type(failure).__name__]
        return {"file": shown, "errors": lines, "exit_code": failure.exit_code}


def rel_to(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def instance_vcpus() -> Callable[[str], int | None]:
    """vCPUs per instance type from the catalog (None: a type it does not know), for the
    quota an overlap of node groups needs (`diff`'s create-before-delete lines)."""
    from accelstack.catalog import load_catalog

    catalog = load_catalog()

    def vcpus(instance_type: str) -> int | None:
        try:
            return int(catalog.instance(instance_type).vcpus)
        except Exception:  # not in the catalog (a system node type): the line names no vCPUs
            return None

    return vcpus


def accelerated_types() -> Callable[[str], bool]:
    from accelstack.catalog import load_catalog

    catalog = load_catalog()

    def accelerated(instance_type: str) -> bool:
        try:
            return catalog.instance(instance_type).accelerated
        except Exception:  # a type the catalog does not know: call it accelerated, to be safe
            return True

    return accelerated
