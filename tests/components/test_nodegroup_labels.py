"""Nodes register with their scheduling labels only when the pool asks (`pools[].labels_at_boot`):
the labels are in the launch template's user data, so turning them on rolls the pool once, and
upgrading accelstack rolls no node of a spec written before the setting (the released fixtures
of tests/components/test_nodegroup_storage.py plan byte for byte, and so do the bundled
presets). New stacks (`new`, `init`) write true: their device plugin starts the moment a node
joins instead of once EKS has applied the node group's labels (asynchronously with a custom
AMI)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from accelstack.cli import main
from accelstack.errors import SpecError
from accelstack.plan.rolls import node_rolls
from accelstack.resolve import resolve
from accelstack.spec import parse_spec, read_yaml

from .. import factories
from ..conftest import STACKS
from .test_nodegroup_storage import accelerated, node_config, planned, templates, without_field

LT = "llama3-70b-p5-h100-lt"


def _p5(labels_at_boot: bool | None) -> dict[str, Any]:
    data = without_field("llama3-70b-p5")
    if labels_at_boot is not None:
        data["pools"][0]["labels_at_boot"] = labels_at_boot
    return data


def test_the_scheduling_labels_register_with_the_node_only_when_asked() -> None:
    unset, on = planned(_p5(None)), planned(_p5(True))
    assert "nvidia.com/gpu.present=true" not in node_config(
        templates(unset)[LT]["inputs"]["userData"]
    )
    assert "nvidia.com/gpu.present=true" in node_config(templates(on)[LT]["inputs"]["userData"])
    # false is unset: the user data a spec without the setting boots with
    off = planned(_p5(False))
    assert templates(off)[LT]["inputs"]["userData"] == templates(unset)[LT]["inputs"]["userData"]
    # the node group carries them either way: EKS applies them to the nodes in place
    groups = [r for r in on["resources"] if r["type"] == "aws:eks/nodeGroup:NodeGroup"]
    assert all(
        g["inputs"]["labels"].get("nvidia.com/gpu.present") == "true"
        for g in groups
        if "h100" in g["name"]
    )


def test_turning_it_on_rolls_the_pool_once_and_diff_says_so() -> None:
    rolls = node_rolls(planned(_p5(None)), planned(_p5(True)), accelerated=accelerated)
    assert len(rolls) == 1 and rolls[0]["count"] == 16 and rolls[0]["accelerated"], rolls


def test_new_and_init_write_the_setting_and_the_presets_plan_as_released(tmp_path: Path) -> None:
    """A new stack has no node to roll: `new` (and `init`, through the same retarget) write
    `labels_at_boot: true`; the presets leave it unset, so a stack deployed from one as it was
    released plans the same user data (the released fixtures hold it byte for byte)."""
    for f in sorted(STACKS.glob("*.yaml")):
        assert all("labels_at_boot" not in p for p in read_yaml(f)["pools"]), f.name
    for source in ("llama3-70b-p5", "llama3-70b-trn2"):
        assert main(["new", f"fresh-{source}", "--from", source, "--dir", str(tmp_path)]) == 0
        cloned = read_yaml(tmp_path / "stacks" / f"fresh-{source}.yaml")
        assert all(p["labels_at_boot"] is True for p in cloned["pools"]), source
    project = tmp_path / "project"
    assert main(["init", str(project), "--from", "llama3-70b-p5"]) == 0
    (spec,) = (project / "stacks").glob("*.yaml")
    assert read_yaml(spec)["pools"][0]["labels_at_boot"] is True


def test_a_standalone_pool_refuses_it_in_one_line() -> None:
    data = copy.deepcopy(factories.standalone_spec("trn1.32xlarge", 2))
    data["pools"][0]["labels_at_boot"] = True
    with pytest.raises(SpecError) as err:
        resolve(parse_spec(data, "stacks/demo.yaml"))
    (line,) = [str(p) for p in err.value.problems]
    assert "pools[0].labels_at_boot: is an EKS node setting" in line
