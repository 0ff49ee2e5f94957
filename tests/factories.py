"""Spec builders shared by the tests: a preset as a dict with edits by YAML path, a minimal
valid EKS spec and a minimal standalone (EC2) spec for an instance type, and a writer.

    preset("llama3-405b-p5", {"workload.model.active_params_billion": 37})
    eks_spec("p5.48xlarge", nodes=4, edits={"budget": UNLIMITED})
    write_spec(tmp_path, data)  # -> tmp_path / f"{data['name']}.yaml"

Every builder returns a fresh dict: tests may mutate it. Paths are dotted keys with `[i]` for
list items (`pools[0].nodes`); a missing mapping on the way is created.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import yaml

STACKS = Path(__file__).resolve().parents[1] / "stacks"

#: The budget of a spec whose costs are not under test (`validate` refuses a spec without one).
UNLIMITED: dict[str, Any] = {"unlimited": True, "reason": "a test spec"}

_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _steps(path: str) -> list[str | int]:
    return [key if key else int(index) for key, index in _STEP.findall(path)]


def set_path(data: dict[str, Any], path: str, value: Any) -> None:
    """Set `path` (`workload.model.params_billion`, `pools[0].nodes`) in `data` to a copy of
    `value`."""
    steps = _steps(path)
    node: Any = data
    for step in steps[:-1]:
        node = node[step] if isinstance(step, int) else node.setdefault(step, {})
    node[steps[-1]] = copy.deepcopy(value)


def edited(data: Mapping[str, Any], edits: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A deep copy of `data` with each `path: value` of `edits` set, in order."""
    out = copy.deepcopy(dict(data))
    for path, value in (edits or {}).items():
        set_path(out, path, value)
    return out


@cache
def _preset_text(stem: str) -> str:
    return (STACKS / f"{stem}.yaml").read_text(encoding="utf-8")


def preset(stem: str, edits: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """stacks/<stem>.yaml as a dict, with `edits` applied."""
    data: dict[str, Any] = yaml.safe_load(_preset_text(stem))
    return edited(data, edits)


def eks_spec(
    instance_type: str = "trn2.48xlarge", nodes: int = 2, edits: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The smallest spec that validates on EKS: one pool, the deployer's CIDR and an admin (the
    documentation ranges), an 8B model. No budget: `edits={"budget": UNLIMITED}` for the CLI."""
    data = {
        "name": "demo",
        "region": "us-east-2",
        "cluster": {
            "public_access_cidrs": ["203.0.113.0/24"],
            "admin_principal_arns": ["arn:aws:iam::111122223333:role/deployer"],
        },
        "pools": [
            {"name": instance_type.split(".")[0], "instance_type": instance_type, "nodes": nodes}
        ],
        "workload": {
            "model": {"params_billion": 8},
            "tokens_billion": 10,
            "entrypoint": "train.py",
            # trn2 defaults to the native path, which has no public image (catalog)
            "image": "registry.example/torchneuron:2.14.3",
        },
    }
    return edited(data, edits)


def standalone_spec(
    instance_type: str = "trn1.32xlarge", nodes: int = 1, edits: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The smallest standalone (`orchestration: ec2`) spec: no cluster section, one pool."""
    data = {
        "name": "demo",
        "region": "us-west-2",
        "orchestration": "ec2",
        "pools": [
            {"name": instance_type.split(".")[0], "instance_type": instance_type, "nodes": nodes}
        ],
        "workload": {
            "model": {"params_billion": 8},
            "tokens_billion": 10,
            "entrypoint": "train.py",
        },
    }
    return edited(data, edits)


def write_spec(directory: Path, data: Mapping[str, Any], name: str | None = None) -> Path:
    """`data` as directory/<name>.yaml (default: the spec's own name); the path."""
    path = directory / f"{name or data['name']}.yaml"
    path.write_text(yaml.safe_dump(dict(data)), encoding="utf-8")
    return path


#: Pool settings of an EKS node (nodeadm's user data) that a standalone stack refuses
EKS_NODE_SETTINGS = ("container_storage", "labels_at_boot")


def to_standalone(data: dict[str, Any]) -> dict[str, Any]:
    """`data` (an EKS spec) moved to orchestration ec2 as a user would move it: its pools' EKS
    node settings dropped (validation refuses them on standalone nodes). Edits in place and
    returns it."""
    data["orchestration"] = "ec2"
    for pool in data["pools"]:
        for key in EKS_NODE_SETTINGS:
            pool.pop(key, None)
    return data
