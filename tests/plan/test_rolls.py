"""Which changes roll nodes (accelstack/plan/rolls.py): an input the provider computed when the
program left it out (a node group's `version`, the cluster's) rolls nothing when the program
starts setting it to the value the provider stored."""

from __future__ import annotations

from typing import Any

from accelstack.plan.rolls import node_rolls
from accelstack.tokens import CLUSTER, NODE_GROUP


def _plan(cluster_version: str, group: dict[str, Any]) -> dict[str, Any]:
    return {
        "resources": [
            {"type": CLUSTER, "name": "c", "inputs": {"version": cluster_version}},
            {
                "type": NODE_GROUP,
                "name": "system-ng",
                "inputs": {
                    "instanceTypes": ["m6i.xlarge"],
                    "scalingConfig": {"desiredSize": 2, "maxSize": 2, "minSize": 2},
                    **group,
                },
            },
        ]
    }


def test_setting_the_computed_version_to_the_stored_one_rolls_nothing() -> None:
    """Fails without the `computed` row: the system node group that gains `version: 1.35` on a
    1.35 cluster was shown rolling, though EKS already runs it at the cluster's version."""
    base, head = _plan("1.35", {}), _plan("1.35", {"version": "1.35"})
    assert node_rolls(base, head) == []


def test_a_version_the_group_does_not_run_rolls_it() -> None:
    rolls = node_rolls(_plan("1.34", {}), _plan("1.35", {"version": "1.35"}))
    assert [(r["name"], r["count"]) for r in rolls] == [("system-ng", 2)]
    assert rolls[0]["causes"] == [{"key": "version", "before": None, "after": "1.35"}]
    moved = node_rolls(_plan("1.34", {"version": "1.34"}), _plan("1.35", {"version": "1.35"}))
    assert [r["name"] for r in moved] == ["system-ng"]
