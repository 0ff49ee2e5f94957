"""The `accelstack` command line.

Commands live in small modules under `accelstack/cli/`; each exposes `register(app)`.
Heavy imports (pulumi, boto3) happen inside the command functions so `--help` stays fast.
Errors: every `AccelstackError` prints one line per problem on stderr and exits with its code
(2 bad input, 1 verdict); nothing is created.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer

from accelstack.errors import AccelstackError


def _click_errors() -> tuple[type[Exception], ...]:
    """Usage-error classes of whichever click typer runs on: its vendored copy (typer >= 0.24
    no longer depends on click) and, when installed, click itself."""
    found: list[type[Exception]] = []
    for module in ("typer._click.exceptions", "click.exceptions"):
        try:
            found.append(importlib.import_module(module).ClickException)
        except ImportError:
            continue
    return tuple(found)


_CLICK_ERRORS = _click_errors()


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"accelstack {version('accelstack')}")
        except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
            typer.echo("accelstack (not installed)")
        raise typer.Exit(0)


app = typer.Typer(
    name="accelstack",
    help="One workload spec to a priced, budget-checked AWS training cluster "
    "(Trainium trn1/trn2/trn3 or NVIDIA p5).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

#: Command modules, each with `register(app)`. One line per module.
COMMAND_MODULES: tuple[str, ...] = (
    "accelstack.cli.spec_cmds",
    "accelstack.cli.plan_cmds",
    "accelstack.cli.render_cmds",
    "accelstack.cli.cost_cmds",
    "accelstack.cli.preflight_cmds",
    "accelstack.cli.ami_cmds",
)

F = TypeVar("F", bound=Callable[..., Any])


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="print the version"),
    ] = False,
) -> None:
    """One workload spec to a priced, budget-checked AWS training cluster."""


def fail(exc: AccelstackError) -> typer.Exit:
    for line in str(exc).splitlines() or [type(exc).__name__]:
        typer.echo(f"error: {line}", err=True)
    return typer.Exit(exc.exit_code)


def _register_all() -> None:
    for mod in COMMAND_MODULES:
        importlib.import_module(mod).register(app)


_register_all()


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code (also used by tests in-process)."""
    try:
        rv = app(args=argv, standalone_mode=False)
        if isinstance(rv, int):
            return rv
    except AccelstackError as exc:
        for line in str(exc).splitlines():
            typer.echo(f"error: {line}", err=True)
        return exc.exit_code
    except typer.Exit as exc:
        return int(exc.exit_code or 0)
    except typer.Abort:
        typer.echo("aborted", err=True)
        return 1
    except SystemExit as exc:
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2
    except _CLICK_ERRORS as exc:  # usage errors: one line, exit 2, no traceback
        hint = " (see 'accelstack --help')"
        fmt = getattr(exc, "format_message", None)
        message = fmt() if callable(fmt) else str(exc)
        typer.echo(f"error: {message}{hint}", err=True)
        return int(getattr(exc, "exit_code", 2))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
