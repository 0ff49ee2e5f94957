"""plan, check: the offline plan of a spec, and a whole directory of specs for GitOps."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from accelstack.cli.boundary import as_failure
from accelstack.cli.output import FormatOpt, TextOrJson, echo_json
from accelstack.errors import EXIT_VERDICT, Problem, SpecError, VerdictError

if TYPE_CHECKING:
    from accelstack.catalog import Catalog
    from accelstack.cost.guard import Verdict
    from accelstack.plan import Plan, Program
    from accelstack.plan.rules import Violation
    from accelstack.resolve import Stack


def program() -> Program:
    """The Pulumi program the plan engine runs: the CLI wires the components in."""
    import warnings

    with warnings.catch_warnings():  # pulumi_aws deprecates its S3 *V2 classes on import
        warnings.simplefilter("ignore", DeprecationWarning)
        from accelstack.components.program import build
    program: Program = build
    return program


def plan_verdict(plan: Plan, stack: Stack) -> Verdict:
    """The budget verdict, priced from what the program declared."""
    from accelstack.cost.guard import check_budget
    from accelstack.cost.pricing import price_plan

    return check_budget(stack, price_plan(stack, plan.resources))


def stack_warnings(stack: Stack, plan: Plan) -> list[str]:
    """Warnings `check` prints per stack: those of `validate` (preview types, estimated
    offerings, extended-support Kubernetes). Deploy-rule violations are errors, not warnings:
    `_check_one` reports them with the budget verdict."""
    from accelstack.cli.spec_cmds import spec_warnings

    return spec_warnings(stack.spec, stack.catalog)


def violations_of(plan: Plan, stack: Stack) -> list[Violation]:
    """The deploy rules' verdict on a plan (none: deployable)."""
    from accelstack.plan.rules import evaluate

    return evaluate(plan, stack)


def violation_doc(v: Violation) -> dict[str, str]:
    return {"rule": v.rule, "resource": v.resource, "message": v.message, "source": v.source}


def verdict_doc(v: Verdict) -> dict[str, Any]:
    return {"ok": v.ok, "line": v.one_line(), "reasons": v.reasons}


def _plan_stack(spec: Path, catalog: Catalog | None = None) -> tuple[Stack, Plan]:
    """Resolve and plan without the guard: the caller reports the verdict after the plan."""
    from accelstack.catalog import load_catalog
    from accelstack.plan import run_plan
    from accelstack.resolve import resolve
    from accelstack.spec import load_spec

    catalog = catalog or load_catalog()
    stack = resolve(load_spec(spec, catalog), catalog)
    return stack, run_plan(stack, program(), guard=False)


def plan(
    spec: Annotated[Path, typer.Argument(help="spec file (stacks/NAME.yaml)")],
    fmt: Annotated[
        TextOrJson,
        typer.Option("--format", help="text (resource tree + cost report) or json (document)"),
    ] = "text",
) -> None:
    """Plan a spec offline: run the Pulumi program under mocks, show every resource and the
    cost report, then the deploy rules and the budget verdict (exit 1 on a violation or when
    over budget)."""
    from accelstack.cost.guard import render_report, verdict_dict

    stack, result = _plan_stack(spec)
    verdict = plan_verdict(result, stack)
    found = violations_of(result, stack)
    if fmt == "json":
        doc = {**result.to_dict(), "cost": verdict_dict(verdict), "verdict": verdict_doc(verdict)}
        doc["violations"] = [violation_doc(v) for v in found]
        echo_json(doc)
    else:
        typer.echo(result.to_text(), nl=False)
        typer.echo("")
        typer.echo(render_report(verdict).rstrip("\n"))
        for v in found:
            typer.echo(f"violation: {v.line()}", err=True)
    if not verdict.ok:
        raise VerdictError(verdict.one_line())
    if found:
        raise typer.Exit(EXIT_VERDICT)


def _spec_files(paths: list[Path]) -> list[Path]:
    """Spec files from files and directories (*.yaml, *.yml); Pulumi stack files skipped."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted([*path.glob("*.yaml"), *path.glob("*.yml")])
        elif path.is_file():
            files.append(path)
        else:
            raise SpecError([Problem(str(path), "", "is neither a spec file nor a directory")])
    files = [f for f in files if not f.name.startswith("Pulumi.")]
    if not files:
        raise SpecError([Problem(", ".join(map(str, paths)), "", "has no *.yaml specs")])
    return files


def _check_one(path: Path, catalog: Catalog) -> dict[str, Any]:
    """One spec's plan and verdict, or its error: the row `check` prints."""
    try:
        stack, result = _plan_stack(path, catalog)
        verdict = plan_verdict(result, stack)
        found = [v.line() for v in violations_of(result, stack)]
    except Exception as exc:  # one broken spec must not hide the rest
        failure = as_failure(exc, f"check {path}")
        lines = str(failure).splitlines() or [type(failure).__name__]
        return {"file": str(path), "ok": False, "exit_code": failure.exit_code, "errors": lines}
    return {
        "file": str(path),
        "stack": stack.name,
        "ok": verdict.ok and not found,
        "exit_code": 0 if verdict.ok and not found else VerdictError.exit_code,
        "errors": ([] if verdict.ok else [verdict.one_line()]) + found,
        "violations": found,
        "resources": len(result.resources),
        "hourly_usd": round(verdict.cost.hourly_usd, 4),
        "monthly_usd": round(verdict.cost.monthly_usd, 2),
        "run_usd": round(verdict.run.run_usd, 2),
        "estimate": verdict.cost.estimate,
        "warnings": stack_warnings(stack, result),
        "verdict": verdict_doc(verdict),
    }


def _echo_checked(row: dict[str, Any]) -> None:
    if "resources" in row:
        est = " (estimate)" if row["estimate"] else ""
        typer.echo(
            f"{'ok  ' if row['ok'] else 'FAIL'} {row['file']}: {row['resources']} resources, "
            f"${row['hourly_usd']:,.2f}/h, run ${row['run_usd']:,.0f}{est}"
        )
    else:
        typer.echo(f"FAIL {row['file']}")
    for note in row.get("warnings", []):
        typer.echo(f"  warning: {note}")
    for line in row["errors"]:
        typer.echo(f"  {line}", err=True)


def check(
    paths: Annotated[
        list[Path], typer.Argument(help="spec files or directories of specs (e.g. stacks/)")
    ],
    fmt: FormatOpt = "text",
) -> None:
    """Validate, plan and price every spec in one process: each stack's hourly and run cost
    and warnings; non-zero on any failure (1 over budget, 2 bad spec)."""
    from accelstack.catalog import load_catalog

    files = _spec_files(paths)
    catalog = load_catalog()  # a broken catalog is one line, not one per spec
    rows = [_check_one(path, catalog) for path in files]
    passed = sum(1 for r in rows if r["ok"])
    if fmt == "json":
        echo_json({"ok": passed == len(rows), "passed": passed, "total": len(rows), "stacks": rows})
    else:
        for row in rows:
            _echo_checked(row)
        typer.echo(f"{passed} of {len(rows)} specs passed")
    if passed < len(rows):
        raise typer.Exit(max(r["exit_code"] for r in rows))


def register(app: typer.Typer) -> None:
    app.command()(plan)
    app.command()(check)
