"""The Kueue objects a stack plans (ResourceFlavor, ClusterQueue, LocalQueue, Topology), the
manager Configuration its Kueue release carries (waitForPodsReady, DRA deviceClassMappings)
and the Kueue labels and annotations on the rendered jobs, checked against Kueue's own API at
the pinned version: every field against the restated schemas of tests/helpers_kueue.py, and
the CRDs' `x-kubernetes-validations` the objects rely on restated below with their source
lines and evaluated with cel-python (the transition rules against a re-plan after a resize,
as `pulumi up` would send it)."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

import celpy
import pytest
import yaml

from accelstack.catalog import Catalog, load_catalog
from accelstack.render import render
from accelstack.resolve import Stack, resolve
from accelstack.spec import Spec

from ..helpers_kueue import CQ, LQ, QUALIFIED, RF, TOPO, kueue_problems
from ..helpers_plan import plan_stack
from .test_neuron_allocation import TRN2U_PRICE
from .test_trainjob import _jobs
from .test_ultraserver_dra import trn2u_stack

#: the label Kueue reads a job's LocalQueue from, and the topology request annotation
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"  # pkg/controller/constants/constants.go:23
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"  # apis/kueue/v1beta2/topology_types.go:39
LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"


@dataclass(frozen=True)
class CelRule:
    """One x-kubernetes-validations rule: the kind, the path of `self` (`*`: each item), the
    rule as the CRD states it, and where."""

    kind: str
    path: tuple[str, ...]
    rule: str
    source: str
    transition: bool = False


RULES = (
    CelRule(
        "ResourceFlavor",
        ("spec",),
        "!has(self.topologyName) || self.nodeLabels.size() >= 1",
        f"{RF}:372",
    ),
    CelRule(
        "ResourceFlavor",
        ("spec",),
        "!has(oldSelf.topologyName) || (has(self.nodeLabels) == has(oldSelf.nodeLabels) && "
        "(!has(self.nodeLabels) || self.nodeLabels == oldSelf.nodeLabels))",
        f"{RF}:374-375",
        True,
    ),
    CelRule(
        "ResourceFlavor",
        ("spec",),
        "!has(oldSelf.topologyName) || (has(self.topologyName) && "
        "self.topologyName == oldSelf.topologyName)",
        f"{RF}:380-381",
        True,
    ),
    CelRule(
        "ClusterQueue",
        ("spec", "resourceGroups", "*"),
        "self.flavors.all(x, size(x.resources) == size(self.coveredResources))",
        f"{CQ}:1334",
    ),
    CelRule(
        "ClusterQueue",
        ("spec",),
        "!has(self.cohortName) && has(self.resourceGroups) ? self.resourceGroups.all(rg, "
        "rg.flavors.all(f, f.resources.all(r, !has(r.borrowingLimit)))) : true",
        f"{CQ}:1357-1359",
    ),
    CelRule("LocalQueue", ("spec", "clusterQueue"), "self == oldSelf", f"{LQ}:475", True),
    CelRule("Topology", ("spec", "levels"), "self == oldSelf", f"{TOPO}:137", True),
    CelRule(
        "Topology",
        ("spec", "levels"),
        "size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0",
        f"{TOPO}:139-140",
    ),
    CelRule(
        "Topology",
        ("spec", "levels"),
        "size(self.filter(i, i.nodeLabel == 'kubernetes.io/hostname')) == 0 || "
        "self[size(self) - 1].nodeLabel == 'kubernetes.io/hostname'",
        f"{TOPO}:143-144",
    ),
)

ENV = celpy.Environment()
KINDS = ("ResourceFlavor", "ClusterQueue", "LocalQueue", "Topology")


def _selves(doc: Any, path: tuple[str, ...]) -> list[Any]:
    if not path:
        return [doc]
    head, rest = path[0], path[1:]
    if head == "*":
        return [s for item in doc for s in _selves(item, rest)]
    return _selves(doc[head], rest)


def cel(rule: CelRule, new: dict[str, Any], old: dict[str, Any] | None = None) -> bool:
    program = ENV.program(ENV.compile(rule.rule))
    olds = _selves(old or new, rule.path)
    for i, value in enumerate(_selves(new, rule.path)):
        activation = {"self": celpy.json_to_cel(value)}
        if rule.transition:
            activation["oldSelf"] = celpy.json_to_cel(olds[i])
        if not bool(program.evaluate(activation)):
            return False
    return True


def kueue_objects(stack: Stack) -> dict[str, list[dict[str, Any]]]:
    """The planned Kueue objects by kind, and the release's manager Configuration."""
    plan = plan_stack(stack, guard=False)
    out = {k: [r.inputs for r in plan.of_type(f"kubernetes:{stack_api(stack)}:{k}")] for k in KINDS}
    (rel,) = [
        r
        for r in plan.of_type("kubernetes:helm.sh/v3:Release")
        if r.inputs.get("chart") == stack.catalog.charts["kueue"].chart
    ]
    values = rel.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"]
    out["Configuration"] = [yaml.safe_load(values)]
    return out


def stack_api(stack: Stack) -> str:
    return stack.catalog.charts["kueue"].api_version or ""


@pytest.fixture(scope="module")
def overlay(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    """The catalog with a user-supplied trn2u Capacity Block rate (tests/render/test_ultraserver_dra.py)."""
    d = tmp_path_factory.mktemp("overlay")
    trn2 = {**TRN2U_PRICE, "type": "trn2.48xlarge", "option": "on-demand"}
    (d / "prices.yaml").write_text(yaml.safe_dump({"instances": [TRN2U_PRICE, trn2]}))
    return load_catalog(overlay=d)


@pytest.fixture(scope="module")
def stacks(overlay: Catalog) -> dict[str, Stack]:
    return {
        "p5-topology": _jobs("llama3-70b-p5", kueue=True, topology_aware=True),
        "trn2u-dra": trn2u_stack(overlay, kueue=True),
    }


@pytest.fixture(scope="module")
def planned(stacks: dict[str, Stack]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    return {name: kueue_objects(s) for name, s in stacks.items()}


def test_every_planned_kueue_object_passes_the_pinned_crds_and_cel_rules(
    planned: dict[str, dict[str, list[dict[str, Any]]]],
) -> None:
    for name, objects in planned.items():
        for kind in KINDS:
            for obj in objects[kind]:
                assert obj["apiVersion"] == "kueue.x-k8s.io/v1beta2", (name, kind)
                assert kueue_problems(obj) == [], (name, kind)
                for rule in RULES:
                    if rule.kind == kind and not rule.transition:
                        assert cel(rule, obj), (name, rule.source)
    assert planned["p5-topology"]["Topology"] and planned["trn2u-dra"]["ResourceFlavor"]


def test_the_manager_configuration_passes_the_pinned_go_type(
    planned: dict[str, dict[str, list[dict[str, Any]]]],
) -> None:
    """Kueue decodes its Configuration strictly (pkg/config/config.go:61): an unknown key stops
    the manager; waitForPodsReady's durations parse; the DRA mapping names are qualified."""
    for name, objects in planned.items():
        (config,) = objects["Configuration"]
        assert kueue_problems(config) == [], name
        assert config["waitForPodsReady"]["blockAdmission"] is True
    (dra,) = planned["trn2u-dra"]["Configuration"]
    assert dra["resources"]["deviceClassMappings"]


def test_a_re_plan_after_a_resize_keeps_every_immutable_field(
    stacks: dict[str, Stack], planned: dict[str, dict[str, list[dict[str, Any]]]]
) -> None:
    """The transition rules against the same stack with one more node: what `pulumi up`
    sends for the flavors, the LocalQueue and the Topology is admitted."""
    stack = stacks["p5-topology"]
    old = planned["p5-topology"]
    data = stack.spec.model_dump()
    data["pools"][0]["nodes"] += 1
    new = kueue_objects(resolve(Spec.model_validate(data), load_catalog()))
    assert new["ClusterQueue"] != old["ClusterQueue"]  # the quota moved
    for rule in RULES:
        if rule.transition:
            for n, o in zip(new[rule.kind], old[rule.kind], strict=True):
                assert cel(rule, n, o), rule.source


def test_the_walk_and_the_rules_refuse_what_kueue_would(
    planned: dict[str, dict[str, list[dict[str, Any]]]],
) -> None:
    objs = planned["p5-topology"]
    (cq,) = objs["ClusterQueue"]
    bad = copy.deepcopy(cq)
    bad["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuta"] = "1"
    assert any("nominalQuta: unknown field" in p for p in kueue_problems(bad))
    bad = copy.deepcopy(cq)
    bad["spec"]["resourceGroups"][0]["flavors"][0]["name"] = "Pool_A"
    assert any("does not match" in p and "1240" in p for p in kueue_problems(bad))
    bad["spec"]["resourceGroups"][0]["coveredResources"].append("extra")
    rule = next(r for r in RULES if r.source.endswith(":1334"))
    assert not cel(rule, bad)
    (topo,) = objs["Topology"]
    bad = copy.deepcopy(topo)
    bad["spec"]["levels"].reverse()
    assert not cel(next(r for r in RULES if r.source.endswith(":143-144")), bad)
    bad["spec"]["levels"].append(bad["spec"]["levels"][0])
    assert not cel(next(r for r in RULES if r.source.endswith(":139-140")), bad)
    (config,) = objs["Configuration"]
    bad = copy.deepcopy(config)
    bad["waitForPodsReady"]["timeout"] = "30 minutes"
    bad["waitForPodsReady"]["requeueingStrategy"] = {}
    assert len(kueue_problems(bad)) == 2
    (flavor,) = objs["ResourceFlavor"]
    moved = copy.deepcopy(flavor)
    moved["spec"]["nodeLabels"] = {"accelstack.io/pool": "other"}
    assert not cel(next(r for r in RULES if r.source.endswith(":374-375")), moved, flavor)


def _rendered(stack: Stack) -> list[dict[str, Any]]:
    return [
        d
        for a in render(stack)
        if a.path.endswith(".yaml")
        for d in yaml.safe_load_all(a.content)
        if d
    ]


def _annotations(node: Any, key: str) -> list[Any]:
    """The value of annotation `key` wherever an `annotations` mapping holds it."""
    if isinstance(node, list):
        return [v for item in node for v in _annotations(item, key)]
    if not isinstance(node, dict):
        return []
    found = [node["annotations"][key]] if key in (node.get("annotations") or {}) else []
    return found + [
        v for k, item in node.items() if k != "annotations" for v in _annotations(item, key)
    ]


def test_the_rendered_jobs_name_the_planned_queue_and_topology_levels(
    stacks: dict[str, Stack], planned: dict[str, dict[str, list[dict[str, Any]]]]
) -> None:
    """Every rendered job Kueue admits carries the queue label Kueue reads, naming the planned
    LocalQueue (a label value), and a topology request names a level of the planned Topology."""
    for name, stack in stacks.items():
        objects = planned[name]
        (lq,) = objects["LocalQueue"]
        levels = {lv["nodeLabel"] for t in objects["Topology"] for lv in t["spec"]["levels"]}
        jobs = [d for d in _rendered(stack) if d["kind"] in ("TrainJob", "Job")]
        assert jobs, name
        for job in jobs:
            value = job["metadata"]["labels"][QUEUE_LABEL]
            assert value == lq["metadata"]["name"] and re.match(LABEL_VALUE, value)
            assert len(value) <= 63
        annotations = [v for d in _rendered(stack) for v in _annotations(d, PREFERRED)]
        assert all(re.match(QUALIFIED, v) and v in levels for v in annotations)
        assert bool(annotations) == bool(levels), name
