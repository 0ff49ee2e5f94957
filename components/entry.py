"""The Pulumi program's entry: config -> spec -> names and region -> cost guard -> components.

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

import pulumi

from accelstack.components.program import build
from accelstack.cost.guard import enforce
from accelstack.resolve import Stack, check_region, deployment_name, resolve
from accelstack.spec import load_spec


def spec_path(pulumi_stack: str) -> str:
    """The spec this Pulumi stack deploys: config `accelstack:spec`, else stacks/<stack>.yaml."""
    return pulumi.Config("accelstack").get("spec") or f"stacks/{pulumi_stack}.yaml"


def stack_from_config() -> Stack:
    """The resolved stack of the current Pulumi stack; raises before anything is registered
    when the spec is invalid, the name prefix is not, or `aws:region` conflicts."""
    pulumi_stack = pulumi.get_stack()
    spec = load_spec(spec_path(pulumi_stack))
    check_region(spec, pulumi.Config("aws").get("region"))
    stack = resolve(spec, name=deployment_name(spec.name, pulumi_stack))
    config = pulumi.Config("accelstack")
    return stack.with_ami_pins(
        config.get_object("amis") or {},
        allow_unpinned=config.get_bool("allowUnpinnedAmis") or False,
        source=f"Pulumi.{pulumi_stack}.yaml",
    )


def main() -> None:
    """The whole program: resolve, refuse when over budget, build, export the outputs."""
    stack = stack_from_config()
    enforce(stack)  # raises before any resource is registered when over budget
    for key, value in build(stack).items():
        pulumi.export(key, value)
