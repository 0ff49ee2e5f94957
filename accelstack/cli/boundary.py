"""The CLI's error boundary: what the user sees when a command fails.

* `AccelstackError` (bad input exit 2, a verdict exit 1): its own lines, `error: ` first.
* Anything else is a bug in accelstack: ONE line naming the command and its input, e.g.
  `error: render stacks/x.yaml: internal error: KeyError: 'foo' (run with --debug for the
  traceback)`, exit 1. `accelstack --debug COMMAND ...` (or ACCELSTACK_DEBUG=1) prints the
  traceback too.
* Every line is made printable: control characters, newlines and lone surrogates in a value
  are shown escaped (as Python's repr writes them), so a value cannot forge an extra line.

Which command and input: `track(app)` wraps each command's function so that, when it is
called, it records its name and its input argument (the spec, the directory, the output file).
"""

from __future__ import annotations

import functools
import os
import sys
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import typer

from accelstack.errors import EXIT_VERDICT, AccelstackError, one_line

#: Exit code for an interrupted command (128 + SIGINT), as shells report it.
EXIT_INTERRUPTED = 130
#: The parameters that name a command's input, in order of preference.
INPUT_PARAMS = ("spec", "specs", "preset", "directory", "output", "prices_file")


class Interrupted(AccelstackError):
    """Ctrl-C (or SIGINT) during a command."""

    exit_code = EXIT_INTERRUPTED


@dataclass
class Invocation:
    """The command being run: set by the root callback and the tracked command functions."""

    command: str = ""
    input: str = ""
    debug: bool = False

    def reset(self) -> None:
        self.command, self.input = "", ""
        self.debug = os.environ.get("ACCELSTACK_DEBUG", "") not in ("", "0")

    @property
    def label(self) -> str:
        return " ".join(x for x in (self.command, self.input) if x) or "accelstack"


CURRENT = Invocation()


def printable(text: str) -> str:
    """`text` with every non-printable character escaped (newline -> \\n, ESC -> \\x1b)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def input_of(params: Mapping[str, Any]) -> str:
    """The command's input as the user gave it (first of INPUT_PARAMS that is set)."""
    for key in INPUT_PARAMS:
        value = params.get(key)
        if value is None or value == []:
            continue
        if isinstance(value, list | tuple):
            return " ".join(str(v) for v in value)
        return str(value)
    return ""


def _recorded(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(func)
    def run(*args: Any, **kwargs: Any) -> Any:
        CURRENT.command = name
        CURRENT.input = input_of(kwargs)
        try:
            return func(*args, **kwargs)
        except KeyboardInterrupt:  # typer would turn it into a silent exit 130
            raise Interrupted(f"{CURRENT.label}: interrupted") from None

    return run


def track(app: typer.Typer, prefix: str = "") -> None:
    """Wrap every registered command (and sub-group command) so failures can name it."""
    for info in app.registered_commands:
        callback = info.callback
        if callback is None:
            continue
        name = info.name or callback.__name__.replace("_", "-")
        info.callback = _recorded(f"{prefix}{name}", callback)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            track(group.typer_instance, f"{prefix}{group.name} ")


def internal_line(exc: BaseException, label: str | None = None) -> str:
    """The one line for an unexpected exception."""
    first = next(iter(str(exc).strip().splitlines()), "")
    what = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    where = label or CURRENT.label
    return printable(f"{where}: internal error: {what} (run with --debug for the traceback)")


class InternalError(AccelstackError):
    """An unexpected exception, reported as one line where a command keeps going (`check`)."""

    exit_code = EXIT_VERDICT


#: botocore's "no usable credentials / region" errors: bad input (exit 2), never an internal
#: error. Matched by class name so the boundary never imports botocore itself.
AWS_SETUP_ERRORS = {
    "NoCredentialsError": "no AWS credentials found",
    "PartialCredentialsError": "the AWS credentials are incomplete",
    "CredentialRetrievalError": "the AWS credentials cannot be retrieved",
    "NoRegionError": "no AWS region set",
    "ProfileNotFound": "the AWS profile does not exist",
    "TokenRetrievalError": "the AWS SSO token cannot be refreshed",
    "UnauthorizedSSOTokenError": "the AWS SSO session has expired",
}


class AwsSetupError(AccelstackError):
    """A command that needs AWS found no usable credentials, region or profile."""


def aws_setup_error(exc: BaseException, label: str) -> AwsSetupError | None:
    """One line for a missing-credentials style botocore error, else None."""
    names = [c.__name__ for c in type(exc).__mro__ if c.__module__.startswith("botocore")]
    what = next((AWS_SETUP_ERRORS[n] for n in names if n in AWS_SETUP_ERRORS), None)
    if what is None:
        return None
    return AwsSetupError(
        f"{label}: {what} ({one_line(str(exc))}); this command calls AWS: set AWS_PROFILE or "
        "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (or `aws sso login`) and AWS_REGION"
    )


def as_failure(exc: Exception, label: str) -> AccelstackError:
    """`exc` itself when it is an AccelstackError, else its one internal-error line."""
    if isinstance(exc, AccelstackError):
        return exc
    setup = aws_setup_error(exc, label)
    if setup is not None:
        return setup
    if CURRENT.debug:
        traceback.print_exception(exc, file=sys.stderr)
    failure = InternalError(internal_line(exc, label))
    failure.__cause__ = exc
    return failure


def echo_error(lines: Iterable[str]) -> None:
    from accelstack.redaction import redact_line

    for line in lines:
        typer.echo(f"error: {printable(redact_line(line))}", err=True)


def report(exc: BaseException) -> int:
    """Print `exc` as the boundary does and return the exit code."""
    if CURRENT.debug and (not isinstance(exc, AccelstackError) or exc.__cause__ is not None):
        traceback.print_exception(exc, file=sys.stderr)
    if isinstance(exc, AccelstackError):
        echo_error(str(exc).splitlines() or [type(exc).__name__])
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        echo_error([f"{CURRENT.label}: interrupted"])
        return EXIT_INTERRUPTED
    setup = aws_setup_error(exc, CURRENT.label)
    if setup is not None:
        echo_error([str(setup)])
        return setup.exit_code
    typer.echo(f"error: {internal_line(exc)}", err=True)
    return EXIT_VERDICT


def broken_pipe() -> int:
    """stdout was closed by the reader (`accelstack plan x | head`): stop quietly."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    return EXIT_VERDICT
