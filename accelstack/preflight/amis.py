"""AMI pins: resolve the pools' public SSM parameters once, record the ids in the Pulumi
stack config (`Pulumi.<stack>.yaml`, key `accelstack:amis`), and upgrade them only on request.

`pin` fills the parameters that have no pin yet (existing pins are kept); `upgrade` resolves
every parameter again and reports which pools would roll (old -> new id). Writing the file is
atomic (a temporary file in the same folder, then a rename). Read-only AWS calls:
ssm:GetParameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from accelstack.errors import AccelstackError, VerdictError
from accelstack.stackconfig import write_stack_config

if TYPE_CHECKING:
    from accelstack.resolve import Stack

CONFIG_KEY = "accelstack:amis"
#: SSM GetParameters takes at most 10 names per call (botocore ssm ParameterNameList max 10).
SSM_BATCH = 10


@dataclass(frozen=True)
class AmiChange:
    parameter: str
    pools: tuple[str, ...]
    old: str | None
    new: str

    @property
    def rolls(self) -> bool:
        return self.old is not None and self.old != self.new

    def line(self, orchestration: str) -> str:
        what = "node groups" if orchestration == "eks" else "instances"
        pools = ", ".join(self.pools)
        if self.old is None:
            return f"pin   {self.parameter} = {self.new} (pools {pools})"
        if self.old == self.new:
            return f"keep  {self.parameter} = {self.new} (pools {pools})"
        return f"roll  {what} of pools {pools}: {self.old} -> {self.new} ({self.parameter})"


def config_path(spec_path: Path, stack_name: str) -> Path:
    """`Pulumi.<stack>.yaml` beside the project (the spec's folder's parent for stacks/X.yaml)."""
    project = spec_path.resolve().parent
    if not (project / "Pulumi.yaml").exists() and (project.parent / "Pulumi.yaml").exists():
        project = project.parent
    return project / f"Pulumi.{stack_name}.yaml"


def read_pins(path: Path) -> dict[str, str]:
    """The pins recorded in a stack config file ({} when the file or the key is absent)."""
    if not path.exists():
        return {}
    doc = yaml.safe_load(path.read_text()) or {}
    pins = (doc.get("config") or {}).get(CONFIG_KEY) or {}
    if not isinstance(pins, dict):
        raise AccelstackError(
            f"{path}: config.{CONFIG_KEY} must be a map of SSM parameter -> AMI id"
        )
    return {str(k): str(v) for k, v in pins.items()}


def write_pins(path: Path, pins: dict[str, str]) -> None:
    """Set `config.accelstack:amis` in the stack config, keeping every other key, comment,
    secure value and the file's mode; atomic (stackconfig.write_stack_config)."""
    write_stack_config(path, {CONFIG_KEY: dict(sorted(pins.items()))})


def resolve_parameters(ssm: Any, names: list[str]) -> dict[str, str]:
    """SSM parameter -> its current value (an AMI id); one line naming any that do not exist."""
    found: dict[str, str] = {}
    invalid: list[str] = []
    for i in range(0, len(names), SSM_BATCH):
        resp = ssm.get_parameters(Names=names[i : i + SSM_BATCH])
        found.update({p["Name"]: p["Value"] for p in resp.get("Parameters", [])})
        invalid += resp.get("InvalidParameters", [])
    if invalid:
        raise VerdictError(
            f"these AMI parameters do not exist in the region: {', '.join(sorted(invalid))}"
        )
    return found


def plan_changes(stack: Stack, pins: dict[str, str], latest: dict[str, str]) -> list[AmiChange]:
    """One change per AMI parameter of the stack, old pin (or None) -> latest value."""
    return [
        AmiChange(param, tuple(pools), pins.get(param), latest[param])
        for param, pools in sorted(stack.ami_parameters.items())
    ]


def scale_to_zero_steps(stack: Stack, changes: list[AmiChange]) -> list[str]:
    """How to roll the pools of `changes` that run on a capacity block or reservation: the
    group has no room for surge nodes, and EKS wants a Capacity Block group at desired size 0
    while it upgrades (EKS user guide, capacity-blocks-mng), so the upgrade scales it to zero
    and back. Pulumi sends scalingConfig only when the spec's size changes, so `pulumi up`
    (without --refresh) keeps the manual size; the job restarts from its last checkpoint."""
    pools = sorted({p for c in changes if c.rolls for p in c.pools})
    out: list[str] = []
    for pool in (stack.pool(name) for name in pools):
        if not pool.reserved_capacity:
            continue
        ng = f"$(pulumi stack output nodeGroups --json | jq -r '.\"{pool.name}\"')"
        scale = (
            "aws eks update-nodegroup-config --cluster-name {c} --nodegroup-name {ng} "
            "--scaling-config minSize=0,maxSize={m},desiredSize={d}"
        )
        out += [
            f"pool {pool.name} runs on a {pool.purchase_option} ({pool.running_nodes} nodes): "
            "no room for surge nodes; upgrade it at zero:",
            "  1. let the job write a checkpoint, then stop it",
            "  2. " + scale.format(c=stack.name, ng=ng, m=pool.running_nodes, d=0),
            "  3. pulumi up   (the new launch template version; the empty group has nothing "
            "to drain)",
            "  4. " + scale.format(c=stack.name, ng=ng, m=pool.running_nodes, d=pool.running_nodes),
            "  5. submit the job again: it resumes from its last checkpoint",
        ]
    return out
