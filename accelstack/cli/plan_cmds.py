"""plan, check: the offline plan of a spec, and a whole directory of specs for GitOps."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from accelstack.errors import EXIT_VERDICT, AccelstackError, Problem, SpecError

if TYPE_CHECKING:
    from accelstack.catalog import Catalog
    from accelstack.plan import Plan, Program
    from accelstack.resolve import Stack

Format = Literal["text", "json"]


def program() -> Program:
    """The Pulumi program the plan engine runs: the CLI wires the components in."""
    import warnings

    with warnings.catch_warnings():  # pulumi_aws deprecates its S3 *V2 classes on import
        warnings.simplefilter("ignore", DeprecationWarning)
        from accelstack.components.program import build
    program: Program = build
    return program


def price_note(plan: Plan, stack: Stack) -> str:
    """The cost report for the planned resources, verdict line last."""
    from accelstack.cost.guard import report_for_plan

    return report_for_plan(stack, plan).rstrip("\n")


def violations_of(plan: Plan, stack: Stack) -> list[str]:
    """The deploy rules' verdict on a plan: one line per violation (none: deployable)."""
    from accelstack.plan.rules import evaluate

    return [v.line() for v in evaluate(plan, stack)]


def _plan_json(plan: Plan, stack: Stack) -> tuple[str, list[str]]:
    import json

    from accelstack.plan.rules import evaluate

    found = evaluate(plan, stack)
    doc = plan.to_dict()
    doc["violations"] = [
        {"rule": v.rule, "resource": v.resource, "message": v.message, "source": v.source}
        for v in found
    ]
    return json.dumps(doc, indent=2, sort_keys=True) + "\n", [v.line() for v in found]


def plan(
    spec: Annotated[Path, typer.Argument(help="spec file (stacks/NAME.yaml)")],
    fmt: Annotated[
        str, typer.Option("--format", help="text (resource tree) or json (stable document)")
    ] = "text",
) -> None:
    """Plan a spec offline: run the Pulumi program under mocks, show every resource, and
    evaluate the deploy rules (one line per violation, exit 1)."""
    from accelstack.catalog import load_catalog
    from accelstack.plan import run_plan
    from accelstack.resolve import resolve
    from accelstack.spec import load_spec

    if fmt not in ("text", "json"):
        raise SpecError([Problem("--format", "", f"'{fmt}' is not allowed (allowed: text, json)")])
    catalog = load_catalog()
    stack = resolve(load_spec(spec, catalog), catalog)
    result = run_plan(stack, program())
    if fmt == "json":
        text, lines = _plan_json(result, stack)
        typer.echo(text, nl=False)
    else:
        typer.echo(result.to_text(), nl=False)
        typer.echo("")
        typer.echo(price_note(result, stack))
        lines = violations_of(result, stack)
        for line in lines:
            typer.echo(f"violation: {line}", err=True)
    if lines:
        raise typer.Exit(EXIT_VERDICT)


def check(
    directory: Annotated[Path, typer.Argument(help="directory of specs (e.g. stacks/)")],
) -> None:
    """Validate, plan and evaluate the deploy rules for every *.yaml spec in DIR in one
    process; non-zero on any failure or violation."""
    from accelstack.catalog import load_catalog

    if not directory.is_dir():
        raise SpecError([Problem(str(directory), "", "is not a directory")])
    files = sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")])
    if not files:
        raise SpecError([Problem(str(directory), "", "has no *.yaml specs")])
    catalog = load_catalog()
    codes = [c for c in (_check_one(path, catalog) for path in files) if c]
    typer.echo(f"{len(files) - len(codes)} of {len(files)} specs passed")
    if codes:
        raise typer.Exit(max(codes))


def _check_one(path: Path, catalog: Catalog) -> int:
    """Plan one spec for `check`: 0 when it plans with no violation, else its exit code."""
    from accelstack.plan import run_plan
    from accelstack.resolve import resolve
    from accelstack.spec import load_spec

    try:
        stack = resolve(load_spec(path, catalog), catalog)
        result = run_plan(stack, program())
        lines = violations_of(result, stack)
    except AccelstackError as exc:
        typer.echo(f"FAIL {path}")
        for line in str(exc).splitlines():
            typer.echo(f"  {line}", err=True)
        return exc.exit_code
    if lines:
        typer.echo(f"FAIL {path}: {len(lines)} deploy-rule violation(s)")
        for line in lines:
            typer.echo(f"  {line}", err=True)
        return EXIT_VERDICT
    typer.echo(f"ok   {path}: {len(result.resources)} resources")
    return 0


def register(app: typer.Typer) -> None:
    app.command()(plan)
    app.command()(check)
