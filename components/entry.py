"""The Pulumi program's entry: config -> spec -> names and region -> cost guard -> components.

It wires the program like the CLI does (`accelstack.cli.planning.program`): the one module of
components/ that imports render, to hand its node launch scripts to `build` (the components
themselves read only the resolved `Stack`: tests/repo/test_architecture_resolve.py).

The repository's `__main__.py` and the `__main__.py` that `accelstack init` writes both call
`main()`, so a project made by `init` runs the same program as this repository.

* Spec: config `accelstack:spec` (a path), else `stacks/<pulumi stack>.yaml`.
* Names: `accelstack.resolve.deployment_name` — the spec's own stack keeps the spec's name;
  any other stack (dev, staging, prod of one spec) prefixes resources `<spec>-<stack>`.
* Region: config `aws:region` is honoured when it equals the spec's region and refused (one
  line naming both) when it conflicts, before any resource is registered.
* AMIs: the ids pinned in this stack's config (`accelstack:amis`, written by `accelstack amis
  pin`), never a moving alias resolved on every run (docs/amis.md).
"""

from __future__ import annotations

from pathlib import Path

import pulumi

from accelstack.components.program import build
from accelstack.cost.ceiling import find_ceiling
from accelstack.cost.guard import enforce
from accelstack.errors import AccelstackError, SpecError
from accelstack.resolve import Stack
from accelstack.resolve.placeholders import refuse_placeholders
from accelstack.stackconfig import (
    ALLOW_KEY,
    AMIS_KEY,
    REGION_KEY,
    SPEC_KEY,
    resolve_deployment,
    spec_pointer,
    unknown_keys,
)


def stack_config() -> dict[str, object]:
    """The stack config keys the program reads, as `accelstack.stackconfig` names them (the
    gate reads the same keys from Pulumi.<stack>.yaml)."""
    config, aws = pulumi.Config("accelstack"), pulumi.Config("aws")
    return {
        SPEC_KEY: config.get("spec"),
        AMIS_KEY: config.get_object("amis"),
        ALLOW_KEY: config.get_bool("allowUnpinnedAmis"),
        REGION_KEY: aws.get("region"),
    }


def spec_path(pulumi_stack: str) -> str:
    """The spec this Pulumi stack deploys: config `accelstack:spec`, else stacks/<stack>.yaml."""
    return spec_pointer(stack_config(), pulumi_stack, f"Pulumi.{pulumi_stack}.yaml", Path.cwd())


def refuse_unknown_keys(pulumi_stack: str) -> None:
    """An `accelstack:` key the program does not read is a typo, never silently ignored (the
    gate refuses the same keys in Pulumi.<stack>.yaml)."""
    from pulumi.runtime.config import CONFIG, get_config_env

    problems = unknown_keys({**get_config_env(), **CONFIG.get()}, f"Pulumi.{pulumi_stack}.yaml")
    if problems:
        raise SpecError(problems)


def stack_from_config() -> Stack:
    """The resolved stack of the current Pulumi stack; raises before anything is registered
    when the spec is invalid, the name prefix is not, or `aws:region` conflicts."""
    pulumi_stack = pulumi.get_stack()
    refuse_unknown_keys(pulumi_stack)
    config = stack_config()
    spec = spec_pointer(config, pulumi_stack, f"Pulumi.{pulumi_stack}.yaml", Path.cwd())
    return resolve_deployment(spec, pulumi_stack, config)


def refuse_unpinned(stack: Stack, pulumi_stack: str) -> None:
    """Every pool boots from a pinned AMI (or the stack allows the moving alias): checked
    before any resource is registered, never half-way through the build."""
    missing = [
        p.name
        for p in stack.pools
        if p.ami_parameter and not p.image_id and not p.allow_unpinned_ami
    ]
    if missing:
        raise AccelstackError(
            f"Pulumi.{pulumi_stack}.yaml: no AMI pinned for pool(s) {', '.join(missing)} "
            f"(accelstack:amis); run `accelstack amis pin SPEC --stack {pulumi_stack}` first, or "
            "set accelstack:allowUnpinnedAmis to true to follow the moving alias"
        )


def main() -> None:
    """The whole program: resolve, refuse when over budget, build, export the outputs."""
    stack = stack_from_config()
    # raises before any resource is registered: over budget, over the organisation's ceiling
    # (accelstack-ceiling.yaml or ACCELSTACK_CEILING), or no limit at all
    enforce(stack, ceiling=find_ceiling())
    # documentation CIDRs, example accounts and ARNs: refused here, never after the cluster
    refuse_placeholders(stack, spec_path(pulumi.get_stack()))
    refuse_unpinned(stack, pulumi.get_stack())
    from accelstack.render import node_script

    for key, value in build(stack, node_script=node_script).items():
        pulumi.export(key, value)
