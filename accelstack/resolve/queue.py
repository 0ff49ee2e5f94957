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


def kueue_configuration(stack: Stack, chart: HelmChart) -> dict[str, Any]:
    """The manager Configuration: the chart's defaults kept, waitForPodsReady added."""
    timeout = f"{pods_ready_timeout_minutes(stack)}m"
    return {
        **chart.manager_config,
        "waitForPodsReady": {
            "timeout": timeout,
            "recoveryTimeout": timeout,
            "blockAdmission": True,
        },
    }


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
