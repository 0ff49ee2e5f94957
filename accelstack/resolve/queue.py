"""The Kueue manager configuration a stack installs: the chart's default Configuration entries
(catalog charts.kueue manager_config, with the source) plus gang admission, `waitForPodsReady`
with a timeout sized from the run model's bring-up estimate (throughput.yaml goodput
bring_up_hours): an admitted job whose pods are not all ready by then is evicted and requeued,
so it never holds part of the cluster while the rest never starts; `blockAdmission` admits
jobs one at a time until their pods are ready, so two half-started jobs cannot deadlock."""

from __future__ import annotations

import math
from typing import Any

import yaml

from accelstack.catalog import HelmChart
from accelstack.resolve.stack import Stack


def pods_ready_timeout_minutes(stack: Stack) -> int:
    """The bring-up estimate in whole minutes (at least one)."""
    return max(1, math.ceil(stack.catalog.throughput.goodput.bring_up_hours * 60))


def device_class_mappings(stack: Stack) -> list[dict[str, Any]]:
    """Kueue's quota names for the DRA devices the stack's UltraServer pools' pods claim
    (resources.deviceClassMappings, one per DeviceClass; catalog scale.yaml
    ultraservers.<type>.dra.kueue_resource, with the source): without one, Kueue cannot count
    a ResourceClaimTemplate's devices against a ClusterQueue (kubernetes-sigs/kueue@8eab6877
    site/content/en/docs/tasks/manage/setup_dra.md, "Configure deviceClassMappings")."""
    names: dict[str, set[str]] = {}
    for p in stack.ultraserver_pools:
        dra = p.ultraserver.dra if p.ultraserver else None
        if dra is not None:
            names.setdefault(dra.kueue_resource, set()).add(dra.device_class)
    return [{"name": n, "deviceClassNames": sorted(c)} for n, c in sorted(names.items())]


def kueue_configuration(stack: Stack, chart: HelmChart) -> dict[str, Any]:
    """The manager Configuration: the chart's defaults kept, waitForPodsReady added, and the
    DRA device mappings of UltraServer pools."""
    timeout = f"{pods_ready_timeout_minutes(stack)}m"
    out: dict[str, Any] = {
        **chart.manager_config,
        "waitForPodsReady": {
            "timeout": timeout,
            "recoveryTimeout": timeout,
            "blockAdmission": True,
        },
    }
    mappings = device_class_mappings(stack)
    if mappings:
        resources = dict(out.get("resources") or {})
        resources["deviceClassMappings"] = mappings
        out["resources"] = resources
    return out


def kueue_values(stack: Stack, chart: HelmChart) -> dict[str, Any]:
    """The Kueue release's values: the Configuration as YAML text under the chart's key."""
    if not chart.manager_config_key:
        return {}
    text = yaml.safe_dump(kueue_configuration(stack, chart), sort_keys=True)
    out: dict[str, Any] = {}
    node = out
    *parents, leaf = chart.manager_config_key.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = text
    return out
