"""The lazy root group (accelstack/cli/lazy.py): `--help` lists the commands from a static
table without importing their modules, and says exactly what the eagerly built CLI says;
running a command imports its module only."""

from __future__ import annotations

import copy
import functools
import importlib
import json
import os
import subprocess
import sys
from typing import Any

import pytest
import typer
from typer.core import TyperGroup

from accelstack import cli
from accelstack.cli.boundary import track
from accelstack.cli.lazy import COMMAND_MODULES, COMMANDS, LazyGroup, Summary
from accelstack.errors import AccelstackError

from ..conftest import ROOT


def _eager_app() -> typer.Typer:
    """The CLI as it was built before the lazy group: every module registered at import."""
    eager = copy.copy(cli.app)
    eager.info = copy.copy(cli.app.info)
    eager.info.cls = TyperGroup
    eager.registered_commands, eager.registered_groups = [], []
    for module in COMMAND_MODULES:
        importlib.import_module(module).register(eager)
    track(eager)
    return eager


@functools.cache
def _eager_group() -> Any:
    """The eager CLI's click group, built once for the module (building it costs every
    command's parameters; printing help does not change it)."""
    return typer.main.get_command(_eager_app())


def _help(group: Any, argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    rv = group.main(args=[*argv, "--help"], prog_name="accelstack", standalone_mode=False)
    assert rv == 0
    return capsys.readouterr().out


def test_every_command_module_is_in_the_table() -> None:
    """A new `cli/*_cmds.py` module is reachable only through `COMMANDS`."""
    found = {f"accelstack.cli.{p.stem}" for p in (ROOT / "accelstack" / "cli").glob("*_cmds.py")}
    assert found == set(COMMAND_MODULES)


def test_the_table_lists_the_real_commands_in_order() -> None:
    eager: Any = typer.main.get_command(_eager_app())
    assert [name for name, _, _ in COMMANDS] == list(eager.commands)
    for name, _, summary in COMMANDS:
        first_paragraph = (eager.commands[name].help or "").split("\n\n")[0]
        assert summary == first_paragraph, name


@pytest.mark.parametrize("columns", ["80", pytest.param("132", marks=pytest.mark.slow)])
@pytest.mark.parametrize("name", ["", *(name for name, _, _ in COMMANDS)])
def test_help_is_the_eager_clis_help(
    name: str, columns: str, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    """The root's help, each command's, and each sub-command's of a group (`prices refresh`)."""
    monkeypatch.setenv("COLUMNS", columns)
    argv = [name] if name else []
    eager = _eager_group()
    subs = list(getattr(eager.commands.get(name), "commands", {})) if name else []
    for path in [argv, *([name, sub] for sub in subs)]:
        expected = _help(eager, path, capsys)
        assert "Usage: accelstack" in expected
        assert _help(typer.main.get_command(cli.app), path, capsys) == expected, path


def test_a_command_resolves_to_its_real_command_only() -> None:
    group: Any = typer.main.get_command(cli.app)
    assert isinstance(group, LazyGroup)
    assert all(isinstance(c, Summary) for c in group.commands.values())
    ctx = group.make_context("accelstack", ["plan", "x.yaml"], resilient_parsing=True)
    name, command, rest = group.resolve_command(ctx, ["plan", "x.yaml"])
    assert (name, rest) == ("plan", ["x.yaml"]) and not isinstance(command, Summary)
    loaded = {n for n, c in group.commands.items() if not isinstance(c, Summary)}
    assert loaded == {"plan", "check"}  # plan_cmds' two commands, nothing else


def test_a_typo_still_gets_a_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["valdate", "x.yaml"]) == 2
    assert "Did you mean 'validate', 'calibrate'?" in capsys.readouterr().err


def _in_fresh_process(code: str) -> Any:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.splitlines()[-1])


def test_help_imports_no_command_module_click_or_rich() -> None:
    """`--help` renders with click's plain formatter: no command module, no click, no rich (a
    rich import alone is about a third of the 0.1 s budget in bench/startup.py)."""
    modules = _in_fresh_process(
        "import sys, json, contextlib, io\n"
        "from accelstack.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    rc = main(['--help'])\n"
        "print(json.dumps([rc, sorted(sys.modules)]))\n"
    )
    rc, loaded = modules
    assert rc == 0
    unwanted = {*COMMAND_MODULES, "click", "typer.rich_utils"}
    assert sorted(unwanted & set(loaded)) == []
    assert not [m for m in loaded if m == "rich" or m.startswith("rich.")]


def test_a_second_call_in_a_process_reuses_the_commands_and_sees_patched_helpers(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`main()` called again in one process (the suite, a script driving the CLI) does not
    register the command module again; the cached command still reads the module's names when
    it runs, so a patched helper takes effect."""
    from accelstack.cli import spec_cmds

    preset = str(ROOT / "stacks" / "trn1-finetune.yaml")
    assert cli.main(["validate", preset]) == 0
    registered: list[typer.Typer] = []
    monkeypatch.setattr(spec_cmds, "register", registered.append)
    assert cli.main(["validate", preset]) == 0
    assert registered == []

    def refuse(*_: Any, **__: Any) -> Any:
        raise AccelstackError("patched helper ran")

    monkeypatch.setattr(spec_cmds, "load_spec", refuse)
    capsys.readouterr()
    assert cli.main(["validate", preset]) != 0
    assert "patched helper ran" in capsys.readouterr().err
