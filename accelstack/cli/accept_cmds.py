"""accept: a reviewer accepts the program inputs the gate cannot plan (accelstack-accept.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def accept(
    path: Annotated[Path, typer.Argument(help="the project folder (default: .)")] = Path("."),
    base: Annotated[
        str | None,
        typer.Option("--base", help="git ref: list the changes accepted since it in the file"),
    ] = None,
    specs: Annotated[str, typer.Option("--specs", help="the specs' folder in the project")] = (
        "stacks"
    ),
) -> None:
    """Accept the project's program inputs as they are now: write accelstack-accept.yaml.

    The gate plans specs and stack config, not the program, its modules, requirements, lock
    files or policy pack; a change to those fails `check --strict` until this file names
    their fingerprint. Run it after reviewing the change (with --base, the file lists what it
    accepts), commit the file, and guard it with CODEOWNERS (docs/gitops.md).

    Examples:

      accelstack accept . --base origin/main
    """
    from accelstack.cli.gittree import checkout_tree
    from accelstack.cli.programside import changes_between, gate_data, program_side, spec_data
    from accelstack.cli.stackrefs import base_side
    from accelstack.cli.trust import head_files
    from accelstack.files import write_text_atomic
    from accelstack.programinputs import ACCEPT_FILE, acceptance_text
    from accelstack.stackconfig import project_root, project_stacks

    root = project_root(path)
    if base is not None:
        with base_side(base, specs, root) as old:
            here = old.head_program
            changes = changes_between(old.program, here)
    else:
        data = gate_data(head_files(None, root), root)
        data += spec_data(project_stacks(root, specs), root)
        here = program_side(checkout_tree(root), root, specs, data)
        changes = []
    write_text_atomic(root / ACCEPT_FILE, acceptance_text(here.program, changes, base))
    since = f" ({len(changes)} changed since {base})" if base is not None else ""
    typer.echo(f"{root / ACCEPT_FILE}: accepts {here.digest}{since}; commit it")


def register(app: typer.Typer) -> None:
    app.command()(accept)
