"""Running the command line in-process, as the CLI tests do."""

from __future__ import annotations

import pytest

from accelstack.cli import main


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`accelstack ARGV...`: its exit code, stdout and stderr."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err
