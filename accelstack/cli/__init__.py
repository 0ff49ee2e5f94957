"""The `accelstack` command line.

Commands live in small modules under `accelstack/cli/`; each exposes `register(app)`. The
root group (`accelstack.cli.lazy`) imports a command's module only when that command runs, and
heavy imports (pulumi, boto3) happen inside the command functions, so `--help` stays fast.
Errors (`accelstack.cli.boundary`): every `AccelstackError` prints one line per problem on
stderr and exits with its code (2 bad input, 1 verdict); nothing is created. Any other
exception is a bug: one line naming the command and its input, exit 1; `accelstack --debug`
(or ACCELSTACK_DEBUG=1) adds the traceback.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Annotated

from accelstack.cli.gcheld import collector_held

with collector_held():  # typer and the CLI's own modules live as long as the process
    import typer

    from accelstack.cli.boundary import CURRENT, broken_pipe, echo_error, report
    from accelstack.cli.catalog_names import ACCELERATORS
    from accelstack.cli.lazy import MARKUP, LazyGroup
    from accelstack.errors import AccelstackError


def _click_errors() -> tuple[type[Exception], ...]:
    """Usage-error classes of whichever click typer runs on: its vendored copy (typer >= 0.24
    no longer depends on click) and, when installed, click itself. Looked up when an exception
    reaches `_run`: importing click costs `--help` a twentieth of a second."""
    found: list[type[Exception]] = []
    for module in ("typer._click.exceptions", "click.exceptions"):
        try:
            found.append(importlib.import_module(module).ClickException)
        except ImportError:
            continue
    return tuple(found)


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
    help=f"One workload spec to a priced, budget-checked AWS training cluster ({ACCELERATORS}).",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish, pwsh)
    pretty_exceptions_enable=False,
    rich_markup_mode=MARKUP,  # plain help: see accelstack.cli.lazy
    cls=LazyGroup,  # each command's module is imported when that command runs
)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="print the version"),
    ] = False,
    debug: Annotated[
        bool,
        typer.Option(
            "--debug", help="on an internal error, print the traceback (also ACCELSTACK_DEBUG=1)"
        ),
    ] = False,
    catalog: Annotated[
        Path | None,
        typer.Option(
            "--catalog",
            metavar="DIR",
            help="catalog overlay read on top of the bundled catalog (also "
            "ACCELSTACK_CATALOG_DIR); `prices refresh` writes there",
        ),
    ] = None,
) -> None:
    """One workload spec to a priced, budget-checked AWS training cluster."""
    if debug:
        CURRENT.debug = True
    if catalog is not None:
        from accelstack.catalog.overlay import check_dir, set_overlay

        set_overlay(check_dir(catalog))


def fail(exc: AccelstackError) -> typer.Exit:
    echo_error(str(exc).splitlines() or [type(exc).__name__])
    return typer.Exit(exc.exit_code)


def _usage_error(exc: Exception) -> int:
    """Usage errors: one line, exit 2, no traceback."""
    fmt = getattr(exc, "format_message", None)
    message = fmt() if callable(fmt) else str(exc)
    echo_error([f"{message} (see 'accelstack --help')"])
    return int(getattr(exc, "exit_code", 2))


def _run(argv: list[str] | None) -> int:
    try:
        rv = app(args=argv, standalone_mode=False)
    except (typer.Exit, typer.Abort) as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):  # typer/click wrap Ctrl-C
            return report(exc.__cause__)
        if isinstance(exc, typer.Abort):
            typer.echo("aborted", err=True)
            return 1
        return int(exc.exit_code or 0)
    except SystemExit as exc:
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2
    except Exception as exc:
        if isinstance(exc, _click_errors()):
            return _usage_error(exc)
        raise
    return rv if isinstance(rv, int) else 0


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code (also used by tests in-process). The error boundary:
    nothing escapes as a traceback (see `accelstack.cli.boundary`)."""
    CURRENT.reset()
    try:
        return _run(argv)
    except BrokenPipeError:
        return broken_pipe()
    except (Exception, KeyboardInterrupt) as exc:  # the one boundary
        return report(exc)
    finally:
        _clear_overlay()  # `--catalog` holds for this command only


def _clear_overlay() -> None:
    """Forget `--catalog`; a command that never read the catalog has nothing to forget (the
    catalog is imported by the commands that use it, not for `--help`)."""
    overlay = sys.modules.get("accelstack.catalog.overlay")
    if overlay is not None:
        overlay.set_overlay(None)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
