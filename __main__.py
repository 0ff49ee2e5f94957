"""The Pulumi program: stacks/<stack>.yaml -> resolve -> cost guard -> components.

Thin on purpose: all logic lives in `accelstack.components.program.build`, which `accelstack plan` also
runs offline under Pulumi's mocks (with the same cost-guard hook).
"""

from __future__ import annotations

import pulumi

from accelstack.components.program import build
from accelstack.cost.guard import enforce
from accelstack.resolve import resolve
from accelstack.spec import load_spec

config = pulumi.Config("accelstack")
stack = resolve(load_spec(config.get("spec") or f"stacks/{pulumi.get_stack()}.yaml"))
# AMIs come from the ids pinned in this stack's config (`accelstack amis pin`), never from a
# moving alias resolved on every run; see docs/amis.md.
stack = stack.with_ami_pins(
    config.get_object("amis") or {},
    allow_unpinned=config.get_bool("allowUnpinnedAmis") or False,
    source=f"Pulumi.{pulumi.get_stack()}.yaml",
)
enforce(stack)  # raises before any resource is registered when over budget
for key, value in build(stack).items():
    pulumi.export(key, value)
