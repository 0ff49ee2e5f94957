"""The plan document: every resource the program registers, with its inputs, options and
dependencies, plus the lookups it made and its outputs (see docs/plan.md). Pure data and
presentation; no Pulumi import.

`Plan.resources`: sorted `PlannedResource(type, name, parent, inputs, depends_on)`; inputs are
camelCase as the provider receives them, whole numbers as ints; `depends_on` the logical names of
the resources it waits for. `Plan.options`: protect, retainOnDelete, deleteBeforeReplace,
ignoreChanges per resource. `Plan.outputs`: the program's exports.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from accelstack import tokens
from accelstack.errors import EXIT_BAD_INPUT, AccelstackError, VerdictError

SECRET_MARK = "[secret]"
#: The Pulumi secret sentinel key in deserialized values.
_SECRET_SIG = "4dabf18193072939515e22adb298388d"


class PlanError(AccelstackError):
    """The program could not be planned because of a bug in it (a lookup the offline answers
    do not model, two different resources under one name, an exception): exit 1."""

    exit_code = VerdictError.exit_code


class PlanInputError(PlanError):
    """The spec made the plan impossible (a lookup refused for a value the spec wrote, a value
    repeated into one resource name): bad input, exit 2."""

    exit_code = EXIT_BAD_INPUT


@dataclass(frozen=True)
class PlannedResource:
    type: str
    name: str
    parent: str | None  # the parent's logical name; None for top-level resources
    inputs: dict[str, Any]
    #: logical names of explicit `depends_on` and property dependencies (sorted, unique)
    depends_on: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "name": self.name,
            "parent": self.parent,
            "inputs": self.inputs,
        }
        if self.depends_on:
            out["dependsOn"] = list(self.depends_on)
        return out


@dataclass(frozen=True)
class Plan:
    stack: str
    region: str
    resources: list[PlannedResource]
    outputs: dict[str, Any] = field(default_factory=dict)
    #: resource options that matter for review, keyed by (type, name): protect, retainOnDelete,
    #: deleteBeforeReplace (only when true), ignoreChanges (sorted, only when any)
    options: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    #: every provider lookup the program made: {"token": ..., "args": {...}}, sorted, unique
    lookups: list[dict[str, Any]] = field(default_factory=list)

    def option(self, type_: str, name: str, key: str) -> Any:
        return self.options.get((type_, name), {}).get(key)

    def of_type(self, type_: str) -> list[PlannedResource]:
        return [r for r in self.resources if r.type == type_]

    def get(self, type_: str, name: str) -> PlannedResource:
        for r in self.resources:
            if r.type == type_ and r.name == name:
                return r
        raise KeyError((type_, name))

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.resources:
            out[r.type] = out.get(r.type, 0) + 1
        return dict(sorted(out.items()))

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": 1,
            "stack": self.stack,
            "region": self.region,
            "summary": {"resources": len(self.resources), "byType": self.counts()},
            "resources": [
                {
                    **r.to_dict(),
                    **(
                        {"options": self.options[(r.type, r.name)]}
                        if (r.type, r.name) in self.options
                        else {}
                    ),
                }
                for r in self.resources
            ],
            "lookups": self.lookups,
            "outputs": self.outputs,
        }

    def to_json(self) -> str:
        """Stable document: sorted keys, resources sorted by (type, name), 2-space indent."""
        from accelstack.jsonout import dumps

        return dumps(self.to_dict())

    def to_text(self) -> str:
        return render_tree(self)


# ---------------------------------------------------------------------------------------
# Normalisation and presentation (pure)
# ---------------------------------------------------------------------------------------


def normalise(value: Any) -> Any:
    """Whole floats back to ints, secrets marked, unknowns named, keys sorted."""
    if isinstance(value, bool) or value is None or isinstance(value, str | int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, dict):
        if value.get(_SECRET_SIG) == "1b47061264138c4ac30d75fd1eb44270":
            return SECRET_MARK
        return {str(k): normalise(v) for k, v in sorted(value.items())}
    if isinstance(value, list | tuple):
        return [normalise(v) for v in value]
    return str(value)


#: The inputs the text tree shows per type (everything is in --format json).
KEY_INPUTS: dict[str, tuple[str, ...]] = {
    "aws:ec2/vpc:Vpc": ("cidrBlock",),
    "aws:ec2/subnet:Subnet": ("availabilityZoneId", "cidrBlock"),
    "aws:eks/cluster:Cluster": ("name", "version", "enabledClusterLogTypes"),
    "aws:eks/nodeGroup:NodeGroup": (
        "instanceTypes",
        "capacityType",
        "scalingConfig",
        "updateConfig",
        "nodeRepairConfig",
        "taints",
    ),
    "aws:autoscaling/tag:Tag": ("tag",),
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": (
        "fileSystemPath",
        "dataRepositoryPath",
    ),
    "aws:ec2/launchTemplate:LaunchTemplate": (
        "instanceType",
        "imageId",
        "placement",
        "capacityReservationSpecification",
        "instanceMarketOptions",
    ),
    "aws:ec2/placementGroup:PlacementGroup": ("strategy",),
    "aws:eks/addon:Addon": ("addonName",),
    "aws:s3/bucket:Bucket": ("bucket",),
    "aws:fsx/lustreFileSystem:LustreFileSystem": (
        "storageCapacity",
        "deploymentType",
        "perUnitStorageThroughput",
    ),
    "kubernetes:helm.sh/v3:Release": ("chart", "version"),
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": ("namespace", "serviceAccount"),
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": ("policyArn",),
}


def compact_json(value: Any, limit: int = 90) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _summary(r: PlannedResource) -> str:
    keys = KEY_INPUTS.get(r.type, ())
    parts = [f"{k}={compact_json(r.inputs[k])}" for k in keys if r.inputs.get(k) is not None]
    if r.type == tokens.LAUNCH_TEMPLATE:
        nics = r.inputs.get("networkInterfaces") or []
        if nics:
            parts.append(f"efaInterfaces={len(nics)}")
        bdm = r.inputs.get("blockDeviceMappings") or []
        if bdm:
            parts.append(f"rootGiB={bdm[0].get('ebs', {}).get('volumeSize')}")
        parts.append(f"httpTokens={(r.inputs.get('metadataOptions') or {}).get('httpTokens')}")
    return "  ".join(parts)


def render_tree(plan: Plan) -> str:
    """Indented tree: type, logical name, key inputs; children under their parent."""
    children: dict[str | None, list[PlannedResource]] = {}
    names = {r.name for r in plan.resources}
    for r in plan.resources:
        parent = r.parent if r.parent in names else None
        children.setdefault(parent, []).append(r)
    lines = [f"plan for stack {plan.stack} ({plan.region}): {len(plan.resources)} resources"]

    def walk(parent: str | None, depth: int) -> None:
        for r in sorted(children.get(parent, []), key=lambda x: (x.name, x.type)):
            summary = _summary(r)
            pad = "  " * depth
            lines.append(f"{pad}{r.type}  {r.name}" + (f"  [{summary}]" if summary else ""))
            walk(r.name, depth + 1)

    walk(None, 1)
    if plan.outputs:
        lines.append("outputs:")
        for k, v in sorted(plan.outputs.items()):
            lines.append(f"  {k}: {compact_json(v, 120)}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------
# Realistic answers
