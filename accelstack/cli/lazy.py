"""The command group that imports a command's module only when that command runs.

`accelstack --help` lists every command with its one-paragraph summary from `COMMANDS`, a
static table, so it imports no command module (they pull in the spec model, YAML, the
catalog). Running a command, asking for its own `--help` or completing its options resolves it
through `LazyGroup.resolve_command`, which imports its module, lets it `register` onto a fresh
Typer app exactly as before, and swaps the summaries for the real commands. Help is click's
plain text (`MARKUP`): typer's rich renderer cost `--help` about 40 ms of imports and layout,
most of the 0.1 s budget (bench/startup.py).
`tests/cli/test_lazy.py` holds the table equal to the real commands (names, order, summaries)
and every `--help` equal to the eagerly built group's.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from accelstack.cli.catalog_names import COMPARE_FAMILIES

#: (command, module whose `register(app)` adds it, the first paragraph of its help), in the
#: order `--help` lists them: the modules' order, each module's commands before its groups.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    (
        "validate",
        "accelstack.cli.spec_cmds",
        "Validate spec files: shape, catalog facts, cross-field rules and the rules on the\n"
        "resolved stack.",
    ),
    ("schema", "accelstack.cli.spec_cmds", "Print the spec's JSON Schema (for editor validation)."),
    (
        "new",
        "accelstack.cli.spec_cmds",
        "Clone a preset into stacks/NAME.yaml (comments kept) and write Pulumi.NAME.yaml.",
    ),
    (
        "plan",
        "accelstack.cli.plan_cmds",
        "Plan a spec offline: every resource, the cost report and the verdicts.",
    ),
    (
        "check",
        "accelstack.cli.plan_cmds",
        "Validate, plan and price every stack: the GitOps gate.",
    ),
    (
        "render",
        "accelstack.cli.render_cmds",
        "Render launch artifacts: node scripts, TrainJob (or the spec's job kind) and Job\n"
        "manifests, the fabric acceptance job, README index.",
    ),
    (
        "price",
        "accelstack.cli.cost_cmds",
        "Price the stack, estimate the training run, check the budget and the ceiling.",
    ),
    (
        "compare",
        "accelstack.cli.cost_cmds",
        f"Price the same work on {COMPARE_FAMILIES}; mark cheapest and fastest.",
    ),
    (
        "preflight",
        "accelstack.cli.preflight_cmds",
        "Check offerings, vCPU quotas, AMIs, reservations, the cache bucket and the\n"
        "Kubernetes version in the account. Exit 1 when any check fails.",
    ),
    (
        "diff",
        "accelstack.cli.diff_cmds",
        "What a change does to every stack: rolls, replacements, resources, cost.",
    ),
    (
        "stacks",
        "accelstack.cli.stacks_cmds",
        "List the stacks a project deploys, as the program resolves them.",
    ),
    (
        "accept",
        "accelstack.cli.accept_cmds",
        "Accept the project's program inputs as they are now: write accelstack-accept.yaml.",
    ),
    (
        "instances",
        "accelstack.cli.instances_cmds",
        "List the instance types: chips, memory, EFA, regions, price per purchase option.",
    ),
    ("init", "accelstack.cli.init_cmds", "Start a deployable Pulumi project from a preset."),
    (
        "wheel",
        "accelstack.cli.init_cmds",
        "Write (or refresh) the accelstack wheel an `init` project installs.",
    ),
    (
        "trial",
        "accelstack.cli.trial_cmds",
        "Render a STEPS-step benchmark job on NODES nodes of each accelerated pool of SPEC (and\n"
        "its Kubernetes manifest on EKS stacks).",
    ),
    (
        "calibrate",
        "accelstack.cli.trial_cmds",
        "Measurements from trial records, keyed by instance type, model shape, precision,\n"
        "sequence per rank, tokens per chip and stack, stored in SPEC's calibration.",
    ),
    ("prices", "accelstack.cli.cost_cmds", "Maintain the price catalog."),
    (
        "amis",
        "accelstack.cli.ami_cmds",
        "Pin AMI ids in the Pulumi stack config; upgrade them explicitly.",
    ),
    (
        "addons",
        "accelstack.cli.addon_cmds",
        "Pin EKS add-on versions per Kubernetes version; refresh them explicitly.",
    ),
)

#: typer's markup mode for every help text: None is click's plain formatter (no rich import)
MARKUP = None

#: Command modules, each with `register(app)`, in registration order.
COMMAND_MODULES: tuple[str, ...] = tuple(dict.fromkeys(module for _, module, _ in COMMANDS))
_MODULE_OF = {name: module for name, module, _ in COMMANDS}


class Summary(TyperCommand):
    """A command as `--help` lists it, before its module is imported."""


@functools.cache
def module_commands(module: str) -> Mapping[str, Any]:
    """The click commands `module` registers, built as the eager app built them (each
    command wrapped by `boundary.track` so that a failure names it). Built once per process:
    a command is a definition (its callback reads the module's names when it runs, so a
    patched helper still takes effect), and building one evaluates every annotation of its
    function again, about 3 ms a `main()` call where a process calls it more than once (the
    test suite, a script driving the CLI in-process)."""
    from accelstack.cli.boundary import track

    sub = typer.Typer(rich_markup_mode=MARKUP)
    importlib.import_module(module).register(sub)
    track(sub)
    return MappingProxyType(dict(typer.main.get_group(sub).commands))


class LazyGroup(TyperGroup):
    """The root group: summaries first, real commands once resolved."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        for name, _, summary in COMMANDS:
            self.commands.setdefault(name, Summary(name=name, help=summary))

    def load(self, name: str) -> None:
        """Replace the summaries of `name`'s module by its real commands."""
        if isinstance(self.commands.get(name), Summary):
            self.commands.update(module_commands(_MODULE_OF[name]))

    def load_all(self) -> TyperGroup:
        for module in COMMAND_MODULES:
            self.commands.update(module_commands(module))
        return self

    def resolve_command(self, ctx: Any, args: list[str]) -> tuple[str | None, Any, list[str]]:
        if args and args[0] in _MODULE_OF:
            self.load(args[0])
        return super().resolve_command(ctx, args)
