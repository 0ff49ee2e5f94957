"""What a Kubernetes upgrade or an add-on update does to a change (accelstack/plan/upgrades.py):
a version jump refused in one line naming cluster.kubernetes_version with the way to do it, and
each DaemonSet an add-on update rolls, with the nodes it rolls across."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import pytest

from accelstack.plan.diff import diff_document
from accelstack.plan.diff_report import render_text
from accelstack.plan.diffside import SideRow
from accelstack.plan.upgrades import daemonset_rolls, version_steps
from accelstack.resolve import resolve
from accelstack.spec import parse_spec, read_yaml
from accelstack.tokens import ADDON
from tests.conftest import STACKS
from tests.helpers_plan import plan_stack

pytestmark = pytest.mark.plan


@cache
def planned(stem: str, version: str) -> dict[str, Any]:
    data: dict[str, Any] = copy.deepcopy(read_yaml(STACKS / f"{stem}.yaml"))
    data["cluster"]["kubernetes_version"] = version
    data["budget"] = {"max_hourly_usd": 1e9, "max_monthly_usd": 1e12, "max_run_usd": 1e12}
    return plan_stack(resolve(parse_spec(data, f"{stem}.yaml")), guard=False).to_dict()


def test_a_jump_of_two_minor_versions_is_refused_with_the_steps() -> None:
    (found,) = version_steps(planned("llama3-70b-p5", "1.33"), planned("llama3-70b-p5", "1.35"))
    assert found.kind == "refused" and found.field == "version"
    assert found.line.startswith("cluster.kubernetes_version 1.33 -> 1.35: ")
    assert "Unsupported Kubernetes minor version update from 1.33 to 1.35" in found.line
    assert "set cluster.kubernetes_version to 1.34, `pulumi up`" in found.line


def test_a_downgrade_is_refused_and_one_step_up_is_not() -> None:
    (down,) = version_steps(planned("llama3-70b-p5", "1.35"), planned("llama3-70b-p5", "1.34"))
    assert "cannot downgrade" in down.line
    assert version_steps(planned("llama3-70b-p5", "1.34"), planned("llama3-70b-p5", "1.35")) == []


def test_a_kubernetes_bump_rolls_the_daemonsets_of_the_addons_it_updates() -> None:
    """vpc-cni and kube-proxy move with the version: aws-node and kube-proxy roll on every node
    (16 p5 and 2 system nodes); the add-ons whose pin is the same on both versions roll nothing."""
    base, head = planned("llama3-70b-p5", "1.34"), planned("llama3-70b-p5", "1.35")
    found = {
        f.line.split("rolls DaemonSet ")[1].split(" ")[0]: f for f in daemonset_rolls(base, head)
    }
    assert set(found) == {"aws-node", "kube-proxy"}
    assert found["aws-node"].instances == 18
    assert "18 nodes (2 x m6i.xlarge, 16 x p5.48xlarge)" in found["aws-node"].line
    assert "v1.21.2-eksbuild.2 -> v1.22.3-eksbuild.1" in found["aws-node"].line
    text = render_text(diff_document({"s": _side(base)}, {"s": _side(head)}, ("a", "b")))
    assert "ADD-ON UPDATES ROLL DAEMONSETS" in text and "rolls DaemonSet aws-node" in text


def _side(plan: dict[str, Any]) -> SideRow:
    return SideRow("s.yaml", plan=plan)


def test_a_device_kind_daemonset_rolls_only_on_that_kind() -> None:
    """The metrics add-on's dcgm-exporter runs on NVIDIA nodes only, its neuron-monitor on
    Neuron nodes only (catalog launch.yaml daemonsets device_kind)."""
    base = planned("mixed-trn2-p5", "1.35")
    head = copy.deepcopy(base)
    for r in head["resources"]:
        if r["type"] == ADDON and r["inputs"]["addonName"] == "amazon-cloudwatch-observability":
            r["inputs"]["addonVersion"] = "v9.9.9-eksbuild.1"
    found = {
        f.line.split("rolls DaemonSet ")[1].split(" ")[0]: f for f in daemonset_rolls(base, head)
    }
    assert set(found) == {"cloudwatch-agent", "dcgm-exporter", "neuron-monitor"}
    assert "x p5.48xlarge)" in found["dcgm-exporter"].line
    assert "trn2" not in found["dcgm-exporter"].line and "m6i" not in found["dcgm-exporter"].line
    assert "x trn2.48xlarge)" in found["neuron-monitor"].line
    assert (
        found["cloudwatch-agent"].instances
        == sum(f.instances for n, f in found.items() if n != "cloudwatch-agent") + 2
    )  # and the 2 system nodes


def test_one_node_is_said_as_one_node() -> None:
    base = planned("trn1-finetune", "1.35")
    head = copy.deepcopy(base)
    for r in head["resources"]:
        if r["type"] == ADDON and r["inputs"]["addonName"] == "amazon-cloudwatch-observability":
            r["inputs"]["addonVersion"] = "v9.9.9-eksbuild.1"
    (monitor,) = [f for f in daemonset_rolls(base, head) if "neuron-monitor" in f.line]
    assert "on every node it runs on: 1 node (1 x trn1.2xlarge)" in monitor.line
