"""stacks: the Pulumi stacks of a project as the program resolves them (which spec each
deploys, from which stack config), optionally only those changed since a git ref: what the
CI examples preview and deploy."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from accelstack.cli.output import echo_json


def stacks(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="project folder, spec folder or spec files (default: .)"),
    ] = None,
    base: Annotated[
        str | None,
        typer.Option(
            "--base",
            help="git ref: only stacks whose deploy inputs changed (spec, stack config, "
            "project file, ceiling, overlay, program inputs)",
        ),
    ] = None,
    specs: Annotated[str, typer.Option("--specs", help="the specs' folder in the project")] = (
        "stacks"
    ),
    fmt: Annotated[
        Literal["text", "json", "names", "specs"],
        typer.Option("--format", help="text, json, names (one stack a line), specs (spec paths)"),
    ] = "text",
) -> None:
    """List the stacks a project deploys, as the program resolves them.

    Each Pulumi.<stack>.yaml and the spec it points at, and each spec's own stack.

    Examples:

      accelstack stacks

      accelstack stacks . --base origin/main --format names
    """
    from accelstack.cli.stackrefs import changed_since, ref_label, stack_refs

    refs = stack_refs(paths or [Path(".")], specs=specs)
    if base is not None:
        refs = changed_since(refs, base, specs)
    if fmt == "json":
        echo_json(
            [
                {
                    "stack": r.stack,
                    "spec": ref_label(r).split(" [")[0],
                    "config_file": str(r.config_file) if r.config_file else None,
                }
                for r in refs
            ]
        )
        return
    for r in refs:
        if fmt == "names":
            typer.echo(r.stack)
        elif fmt == "specs":
            typer.echo(ref_label(r).split(" [")[0])
        else:
            typer.echo(f"{r.stack}: {r.label}")


def register(app: typer.Typer) -> None:
    app.command()(stacks)
