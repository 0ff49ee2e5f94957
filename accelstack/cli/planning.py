"""Planning one stack, shared by `plan`, `check` and `diff`: the program the plan engine runs,
a stack resolved and planned as the program does, its verdicts and warnings, and the diff side
row of one stack. Command modules import these, never each other."""

from __future__ import annotations

import contextlib
import sys
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from accelstack.cli.boundary import as_failure
from accelstack.cli.gcheld import collector_held

if TYPE_CHECKING:
    from collections.abc import Callable

    from accelstack.catalog import Catalog
    from accelstack.cost.ceiling import Ceiling
    from accelstack.cost.guard import Verdict
    from accelstack.cost.usage import UsageFile
    from accelstack.plan import Plan, Program
    from accelstack.plan.diffprice import SideUsage
    from accelstack.plan.diffside import SideRow
    from accelstack.plan.rules import Violation
    from accelstack.resolve import Stack
    from accelstack.stackconfig import StackRef


#: The module of the Pulumi program (it imports the Pulumi SDK: pulumi, pulumi_aws, ...)
PROGRAM_MODULE = "accelstack.components.program"


@cache
def program() -> Program:
    """The Pulumi program the plan engine runs: the CLI wires the components in, with render's
    node launch scripts for standalone pools (the components import nothing of render). The
    first call in a process imports the Pulumi SDK with the collector held (`gcheld`); every
    call returns that one program (one object per process, which callers can compare)."""
    import warnings

    from accelstack.render import node_script

    first = PROGRAM_MODULE not in sys.modules
    with collector_held() if first else contextlib.nullcontext(), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # pulumi_aws's S3 *V2 classes
        from accelstack.components.program import build
    program: Program = partial(build, node_script=node_script)
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
    """Warnings `check` prints per stack: those of `validate` (accelstack/resolve/advice.py:
    preview types, estimated offerings, extended-support Kubernetes, the global batch,
    placeholders, then the warning rules). Deploy-rule violations are errors, not warnings:
    `_check_one` reports them with the budget verdict."""
    from accelstack.resolve.advice import stack_warnings as resolved_warnings

    return resolved_warnings(stack)


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
    ref: StackRef,
    planned: tuple[Stack, Plan, Verdict],
    label: str,
    usage: SideUsage | None = None,
) -> SideRow:
    """One side of a diff for a planned stack: its plan document, priced verdict, priced line
    items, inputs, and the usage-priced items of its side's usage file (`usage_of`)."""
    from accelstack.plan.diff_inputs import inputs_of, priced_lines, resource_costs
    from accelstack.plan.diffmodel import SideCost
    from accelstack.plan.diffside import SideRow

    stack, result, verdict = planned
    cost = SideCost(
        hourly_usd=round(verdict.cost.hourly_usd, 4),
        monthly_usd=round(verdict.cost.monthly_usd, 2),
        run_usd=round(verdict.run.run_usd, 2),
        estimate=verdict.cost.estimate,
        ok=verdict.ok,
        verdict=verdict.one_line(),
        violations=tuple(v.line() for v in violations_of(result, stack)),
        items=resource_costs(verdict),
    )
    return SideRow(
        file=label,
        stack_file=rel_to(ref.config_file, ref.root) if ref.config_file else None,
        inputs=inputs_of(ref),
        plan=result.to_dict(),
        cost=cost,
        lines=priced_lines(verdict),
        usage=usage,
    )


def usage_of(verdict: Verdict, usage: tuple[UsageFile, str], catalog: Catalog) -> SideUsage:
    """The usage-priced items of a planned stack from its side's usage file (and its name as
    shown), at `catalog`'s rates for the stack's region."""
    from accelstack.plan.diff_inputs import side_usage

    types = (item.type for item in verdict.cost.items)
    stack = (verdict.stack, verdict.cost.region)
    return side_usage(stack, types, usage[0], (catalog, usage[1]))


def planned_row(
    ref: StackRef,
    catalog: Catalog,
    label: str,
    ceiling: Ceiling | None,
    with_usage: bool = False,
) -> SideRow:
    """The diff side row of one stack (`side_row`), or its errors when it does not plan (or,
    `with_usage`, when its side's usage file cannot be read: cli/usagefile.py)."""
    from accelstack.cli.usagefile import usage_at

    shown = f"{label}:{rel_to(ref.spec, ref.root)}"
    try:
        stack, result = plan_ref(ref, catalog)
        verdict = plan_verdict(result, stack, ceiling)
        if verdict.unbounded:  # bad input (exit 2): the stack cannot be judged, never priced
            raise verdict.failure()
        usage = usage_at(ref.root) if with_usage else None
        priced = usage_of(verdict, usage, catalog) if usage else None
        return side_row(ref, (stack, result, verdict), shown, priced)
    except Exception as exc:  # one broken spec must not hide the rest
        return error_row(ref, exc, shown)


def error_row(ref: StackRef, exc: Exception, shown: str) -> SideRow:
    """The side row of a stack that does not plan: its error lines (paths relative to the
    project, credentials redacted), the `cannot plan` headline and the exit code."""
    from accelstack.plan.diff_inputs import inputs_of
    from accelstack.plan.diffside import SideRow
    from accelstack.spec.secrets import redact

    failure = as_failure(exc, f"diff {shown}")
    lines = [x.replace(str(ref.spec), shown) for x in str(failure).splitlines()]
    lines = [redact(x.replace(str(ref.root) + "/", "")) for x in lines]
    return SideRow(
        file=shown,
        stack_file=rel_to(ref.config_file, ref.root) if ref.config_file else None,
        inputs=inputs_of(ref),
        errors=tuple(lines or [type(failure).__name__]),
        headline=redact(cannot_plan(failure, ref)),
        exit_code=failure.exit_code,
    )


def cannot_plan(failure: Exception, ref: StackRef) -> str:
    """The headline of a stack that does not plan: `cannot plan: FILE[:LINE]: reason`, the
    file relative to the project and the line of the YAML path (or of the syntax error)."""
    from accelstack.errors import SpecError

    root = f"{ref.root}/"
    if isinstance(failure, SpecError) and failure.problems:
        p = failure.problems[0]
        file = p.file.replace(root, "")
        line = _line_of(Path(p.file), p.path) or _syntax_line(p.message)
        where = f"{file}:{line}" if line else file
        return f"cannot plan: {where}: {f'{p.path}: ' if p.path else ''}{p.message}"
    first = (str(failure).splitlines() or [type(failure).__name__])[0]
    return f"cannot plan: {first.replace(root, '')}"


def _syntax_line(message: str) -> int | None:
    import re

    found = re.search(r"\bline (\d+)", message)
    return int(found.group(1)) if found else None


def _line_of(file: Path, path: str) -> int | None:
    """The line of a YAML path (`pools[0].nodes`) in `file` (None: not found, or unreadable)."""
    import re

    import yaml

    if not path:
        return None
    try:
        node: yaml.Node | None = yaml.compose(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return None
    line = None
    for key, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path):
        if isinstance(node, yaml.MappingNode) and key:
            hit = next((n for n in node.value if n[0].value == key), None)
            node, line = (hit[1], hit[0].start_mark.line + 1) if hit else (None, line)
        elif isinstance(node, yaml.SequenceNode) and index and int(index) < len(node.value):
            node = node.value[int(index)]
            line = node.start_mark.line + 1
        else:
            break
    return line


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
