"""Gang admission with Kueue: the release's manager Configuration carries `waitForPodsReady`
(field names: kubernetes-sigs/kueue@8eab6877 apis/config/v1beta2/configuration_types.go:302-329;
the chart takes the Configuration as YAML text under managerConfig.controllerManagerConfigYaml,
charts/kueue/values.yaml:115-184) with a timeout sized from the run model's bring-up estimate
and sequential admission, and keeps the chart's default entries (integrations included)."""

from __future__ import annotations

from typing import Any

import yaml

from accelstack.catalog import load_catalog
from accelstack.resolve.queue import kueue_configuration, pods_ready_timeout_minutes

from ..helpers_plan import plan_stack
from ..render.test_trainjob import _jobs


def _config(plan: Any, chart: Any) -> dict[str, Any]:
    (rel,) = [
        r
        for r in plan.of_type("kubernetes:helm.sh/v3:Release")
        if r.inputs.get("chart") == chart.chart
    ]
    text = rel.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"]
    return dict(yaml.safe_load(text))


def test_the_kueue_release_waits_for_every_pod_of_a_job() -> None:
    stack = _jobs("llama3-70b-p5", kueue=True)
    chart = load_catalog().charts["kueue"]
    config = _config(plan_stack(stack), chart)
    assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    assert config["kind"] == "Configuration"
    bring_up = stack.catalog.throughput.goodput.bring_up_hours
    assert config["waitForPodsReady"] == {
        "timeout": f"{round(bring_up * 60)}m",
        "recoveryTimeout": f"{round(bring_up * 60)}m",
        "blockAdmission": True,
    }
    # the chart's default integrations are kept: TrainJob and batch/v1 Job stay queued
    frameworks = config["integrations"]["frameworks"]
    assert set(chart.integrations) <= set(frameworks)
    assert "jobset.x-k8s.io/jobset" in frameworks


def test_the_timeout_follows_the_bring_up_estimate() -> None:
    stack = _jobs("llama3-70b-p5", kueue=True)
    cat = stack.catalog
    goodput = cat.throughput.goodput.model_copy(update={"bring_up_hours": 1.26})
    slow = cat.model_copy(
        update={"throughput": cat.throughput.model_copy(update={"goodput": goodput})}
    )
    from dataclasses import replace

    later = replace(stack, catalog=slow)
    assert pods_ready_timeout_minutes(later) == 76  # 75.6 minutes, rounded up
    wait = kueue_configuration(later, slow.charts["kueue"])["waitForPodsReady"]
    assert wait["timeout"] == wait["recoveryTimeout"] == "76m"
