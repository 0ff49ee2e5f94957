"""The one output option every reporting command takes: `--format text|json` (plus
`markdown` where a table helps a pull-request comment). JSON goes through
`accelstack.jsonout.dumps`, so it is always valid (no NaN/Infinity)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from accelstack.jsonout import dumps

TextOrJson = Literal["text", "json"]
TextJsonMarkdown = Literal["text", "json", "markdown"]

FormatOpt = Annotated[
    TextOrJson, typer.Option("--format", help="text (for people) or json (for tools)")
]
FormatMdOpt = Annotated[
    TextJsonMarkdown,
    typer.Option("--format", help="text (for people), json (for tools) or markdown (PR comments)"),
]
#: The per-command `--json` flag of earlier versions: hidden, means `--format json`.
JsonAliasOpt = Annotated[
    bool, typer.Option("--json", hidden=True, help="deprecated: use --format json")
]


def chosen(fmt: str, as_json: bool) -> str:
    """The format, honouring the deprecated `--json` alias."""
    return "json" if as_json else fmt


def echo_json(value: Any) -> None:
    typer.echo(dumps(value), nl=False)


StackOpt = Annotated[
    str | None,
    typer.Option(
        "--stack",
        help="Pulumi stack (default: the spec's own); its Pulumi.<stack>.yaml is read as the "
        "program reads it (resource-name prefix, region, AMI pins)",
    ),
]
CeilingOpt = Annotated[
    Path | None,
    typer.Option(
        "--ceiling",
        help="organisation cost ceiling file (default: $ACCELSTACK_CEILING, else "
        "accelstack-ceiling.yaml in the project)",
    ),
]


def echo_overlay(path: Path | None, label: str | None = None) -> None:
    """On stderr (stdout stays the report or the JSON): `overlay in effect: N rows from DIR`
    when a catalog overlay is in effect, so no run uses one unknowingly."""
    from accelstack.catalog.overlay import overlay_note

    note = overlay_note(path, label)
    if note is not None:
        typer.echo(note, err=True)
