"""plan, check: the offline plan of a spec, and a whole directory of specs for GitOps."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from accelstack.cli.boundary import as_failure
from accelstack.errors import AccelstackError, Problem, SpecError

if TYPE_CHECKING:
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


def register(app: typer.Typer) -> None:
    @app.command()
    def plan(
        spec: Annotated[Path, typer.Argument(help="spec file (stacks/NAME.yaml)")],
        fmt: Annotated[
            str, typer.Option("--format", help="text (resource tree) or json (stable document)")
        ] = "text",
    ) -> None:
        """Plan a spec offline: run the Pulumi program under mocks and show every resource."""
        from accelstack.catalog import load_catalog
        from accelstack.plan import run_plan
        from accelstack.resolve import resolve
        from accelstack.spec import load_spec

        if fmt not in ("text", "json"):
            raise SpecError(
                [Problem("--format", "", f"'{fmt}' is not allowed (allowed: text, json)")]
            )
        catalog = load_catalog()
        stack = resolve(load_spec(spec, catalog), catalog)
        result = run_plan(stack, program())
        if fmt == "json":
            typer.echo(result.to_json(), nl=False)
            return
        typer.echo(result.to_text(), nl=False)
        typer.echo("")
        typer.echo(price_note(result, stack))

    @app.command()
    def check(
        directory: Annotated[Path, typer.Argument(help="directory of specs (e.g. stacks/)")],
    ) -> None:
        """Validate and plan every *.yaml spec in DIR in one process; non-zero on any failure."""
        from accelstack.catalog import load_catalog
        from accelstack.plan import run_plan
        from accelstack.resolve import resolve
        from accelstack.spec import load_spec

        if not directory.is_dir():
            raise SpecError([Problem(str(directory), "", "is not a directory")])
        files = sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")])
        if not files:
            raise SpecError([Problem(str(directory), "", "has no *.yaml specs")])
        catalog = load_catalog()
        failures: list[AccelstackError] = []
        for path in files:
            try:
                stack = resolve(load_spec(path, catalog), catalog)
                result = run_plan(stack, program())
            except Exception as exc:  # one broken spec must not hide the rest
                failures.append(failure := as_failure(exc, f"check {path}"))
                typer.echo(f"FAIL {path}")
                for line in str(failure).splitlines():
                    typer.echo(f"  {line}", err=True)
                continue
            typer.echo(f"ok   {path}: {len(result.resources)} resources")
        typer.echo(f"{len(files) - len(failures)} of {len(files)} specs passed")
        if failures:
            raise typer.Exit(max(e.exit_code for e in failures))
