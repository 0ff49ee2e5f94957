"""Kueue topology-aware scheduling, an option (`jobs.topology_aware`, with `jobs.kueue`): a
Kueue Topology from the network-topology node labels EKS sets (catalog scale.yaml
topology_labels), every ResourceFlavor naming it, and the job's pod templates asking Kueue to
pack them under the lowest network layer. Field names and rules restated with their sources:
kubernetes-sigs/kueue@8eab6877 apis/kueue/v1beta2/topology_types.go:28,39 (annotations),
:114-134 (levels, at most 16, nodeLabel), resourceflavor_types.go:48 (a flavor with a
topologyName needs a nodeLabel); a TrainJob's PodSets are its JobSet's replicated Jobs, whose
pod-template annotations carry the topology request (pkg/controller/jobs/trainjob/
trainjob_controller.go:223, pkg/controller/jobs/jobset/jobset_controller.go:115-133)."""

from __future__ import annotations

from typing import Any

import celpy
import yaml

from accelstack.catalog import load_catalog
from accelstack.render.artifacts import render_manifest
from accelstack.resolve import check_spec, resolve_unchecked
from accelstack.spec import Spec

from ..helpers_plan import plan_stack
from ..helpers_upstream import model_problems
from .test_trainjob import _jobs

PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"  # topology_types.go:39
LAYERS = [f"topology.k8s.aws/network-node-layer-{i}" for i in (1, 2, 3)]
FLAVOR_RULE = "!has(self.topologyName) || self.nodeLabels.size() >= 1"  # resourceflavor_types.go:48


def _cel(rule: str, obj: dict[str, Any]) -> bool:
    env = celpy.Environment()
    prog = env.program(env.compile(rule))
    return bool(prog.evaluate({"self": celpy.json_to_cel(obj)}))


def test_topology_aware_scheduling_plans_a_topology_and_renders_the_preference() -> None:
    stack = _jobs("llama3-70b-p5", kueue=True, topology_aware=True)
    plan = plan_stack(stack)
    (topo,) = plan.of_type("kubernetes:kueue.x-k8s.io/v1beta2:Topology")
    levels = [lv["nodeLabel"] for lv in topo.inputs["spec"]["levels"]]
    assert levels == [*LAYERS, "kubernetes.io/hostname"] and len(levels) <= 16
    flavors = plan.of_type("kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor")
    assert flavors
    for f in flavors:
        assert f.inputs["spec"]["topologyName"] == topo.inputs["metadata"]["name"]
        assert _cel(FLAVOR_RULE, f.inputs["spec"])
    docs = [d for d in yaml.safe_load_all(render_manifest(stack, "trainjob")) if d]
    (rt,) = [d for d in docs if d["kind"] == "TrainingRuntime"]
    assert model_problems(rt) == []
    for rj in rt["spec"]["template"]["spec"]["replicatedJobs"]:
        meta = rj["template"]["spec"]["template"]["metadata"]
        assert meta["annotations"] == {PREFERRED: LAYERS[-1]}


def test_without_the_option_nothing_changes() -> None:
    stack = _jobs("llama3-70b-p5", kueue=True)
    assert stack.topology_levels == ()
    assert plan_stack(stack).of_type("kubernetes:kueue.x-k8s.io/v1beta2:Topology") == []
    assert PREFERRED not in render_manifest(stack, "trainjob")


def test_the_option_is_refused_without_kueue_or_on_types_without_topology() -> None:
    cat = load_catalog()
    data = _jobs("llama3-70b-p5").spec.model_dump()
    data["jobs"] = {**data["jobs"], "kueue": False, "topology_aware": True}
    problems = check_spec(resolve_unchecked(Spec.model_validate(data).read_from("s.yaml"), cat))
    assert any("jobs.topology_aware" in str(p) and "jobs.kueue" in str(p) for p in problems)
    data["jobs"]["kueue"] = True
    data["pools"][0]["instance_type"] = "p5.4xlarge"
    problems = check_spec(resolve_unchecked(Spec.model_validate(data).read_from("s.yaml"), cat))
    assert any("p5.4xlarge carries no network-topology labels" in str(p) for p in problems)
