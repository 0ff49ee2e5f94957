"""The deploy rule `pods-schedulable` (accelstack/plan/rules/scheduling.py): from the plan's
nodes (labels as nodeadm and EKS register them, taints, allocatable after the stack's
DaemonSets, what each device plugin and DRA driver advertises) and the rendered jobs' pods,
every pod of every preset and of multi-UltraServer variants, spares included, is placed; a pod
that cannot run is a violation naming it and what the nodes lack."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from accelstack.catalog import load_catalog
from accelstack.plan.placement import place
from accelstack.plan.rules import evaluate
from accelstack.plan.rules._nodes import nodes
from accelstack.plan.rules._pods import jobs
from accelstack.plan.rules.scheduling import _split, rendered
from accelstack.resolve import Stack, resolve
from accelstack.spec import parse_spec
from accelstack.tokens import HELM_RELEASE, NODE_GROUP

from ..helpers_plan import plan_stack
from ..render.test_neuron_allocation import TRN2U_PRICE, mixed
from ..render.test_upstream_admission import EKS
from .test_rules import LT, assert_line, only, preset, replace, with_inputs

RULE = "pods-schedulable"
SERVER = "neuron.amazonaws.com/ultraserver-server-id-4"
CB = {"option": "capacity-block", "reservation_id": "cr-0a1b2c3d4e5f67890"}


def violations(plan: Any, stack: Stack) -> list[Any]:
    return [v for v in evaluate(plan, stack) if v.rule == RULE]


@pytest.mark.slow
@pytest.mark.parametrize("name", EKS)
def test_every_pod_of_every_preset_is_placed(name: str) -> None:
    plan, stack = preset(name)
    assert violations(plan, stack) == []
    # and the check looked at every job: the training job in each kind, the fabric test, trials
    files, _ = rendered(stack)
    assert any(f.startswith("trial-") for f in files) and "job.yaml" in files


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Any:
    d = tmp_path_factory.mktemp("overlay")
    (d / "prices.yaml").write_text(yaml.safe_dump({"instances": [TRN2U_PRICE]}))
    return load_catalog(overlay=d)


def trn2u(catalog: Any, nodes_: int, spares: int = 0, **jobs_: Any) -> Stack:
    data = mixed(False)
    data["pools"][0].update(
        nodes=nodes_, spare_nodes=spares, purchase={**CB, "instances": nodes_ + spares}
    )
    if jobs_:
        data["jobs"] = jobs_
    return resolve(parse_spec(data, "llama3-70b-trn2.yaml"), catalog)


@pytest.mark.parametrize(
    ("nodes_", "spares", "jobs_"),
    [(8, 0, {}), (8, 4, {}), (4, 4, {}), (12, 4, {"controller": "none"}), (8, 4, {"kueue": True})],
)
def test_multi_ultraserver_jobs_are_placed_on_whole_servers_with_spares(
    catalog: Any, nodes_: int, spares: int, jobs_: dict[str, Any]
) -> None:
    stack = trn2u(catalog, nodes_, spares, **jobs_)
    plan = plan_stack(stack, guard=False)
    assert violations(plan, stack) == []
    files, claims = rendered(stack)
    cluster = nodes(plan, stack)
    assert sum(1 for n in cluster if SERVER in n.labels) == nodes_ + spares
    for job in jobs(files, claims):
        result = place(job.pods, cluster)
        assert not result.unplaced, job.file
        per: dict[str, int] = {}
        for _, n in result.placed:
            per[n.labels[SERVER]] = per.get(n.labels[SERVER], 0) + 1
        if len(job.pods) % 4 == 0:
            assert set(per.values()) == {4}, (job.file, per)
        else:
            assert len(job.pods) == 1, job.file


def test_a_job_that_would_split_a_server_is_refused(catalog: Any) -> None:
    """One node of the first UltraServer gone (replaced, or held by another job): 8 pods land
    3/4/1 and the rule says the job would split UltraServers."""
    stack = trn2u(catalog, 8, 4)
    plan = plan_stack(stack, guard=False)
    files, claims = rendered(stack)
    (job,) = [j for j in jobs(files, claims) if j.file == "trainjob.yaml"]
    everything = nodes(plan, stack)
    gone = next(n for n in everything if n.labels.get(SERVER) == "trn2-us0")
    cluster = [n for n in everything if n is not gone]
    result = place(job.pods, cluster)
    assert not result.unplaced
    ((resource, message),) = _split(stack, job, result, "")
    assert resource == "job 'trainjob.yaml'"
    assert "would split UltraServers (trn2-us0: 3" in message
    assert "takes all 4 nodes of each server it uses" in message


def test_pods_stay_pending_without_the_device_plugin() -> None:
    plan, stack = preset("llama3-70b-p5")
    kept = [
        r for r in plan.resources if not (r.type == HELM_RELEASE and r.name.endswith("-nvidia"))
    ]
    v = only(evaluate(dataclasses.replace(plan, resources=kept), stack), RULE)
    assert_line(v, "trainjob.yaml node-0")
    assert "16 of the 16 pods of llama3-70b-p5 fit no node" in v.message
    assert "16 node(s) have too little nvidia.com/gpu (allocatable 0, 8 requested)" in v.message


def test_a_device_plugin_that_does_not_tolerate_the_taint_advertises_nothing() -> None:
    plan, stack = preset("llama3-70b-p5")
    (rel,) = [r for r in plan.of_type(HELM_RELEASE) if r.name.endswith("-nvidia")]
    bad = with_inputs(plan, rel, values={**rel.inputs["values"], "tolerations": []})
    v = only(evaluate(bad, stack), RULE)
    assert "too little nvidia.com/gpu" in v.message


def test_pods_that_do_not_tolerate_the_nodes_taint_are_refused() -> None:
    plan, stack = preset("llama3-70b-p5")
    (ng,) = [r for r in plan.of_type(NODE_GROUP) if r.name.endswith("-h100-ng")]
    taints = [{"key": "example.com/other", "value": "x", "effect": "NO_SCHEDULE"}]
    v = only(evaluate(with_inputs(plan, ng, taints=taints), stack), RULE)
    assert "have the taint example.com/other=x:NoSchedule it does not tolerate" in v.message


def test_daemonsets_heavier_than_the_reserve_leave_no_room(tmp_path: Path) -> None:
    """The pods' requests leave the catalog's DaemonSet reserve; DaemonSets whose requests
    exceed it (an overlay row here) make the training pod too big for the node."""
    (tmp_path / "launch.yaml").write_text(
        yaml.safe_dump(
            {
                "daemonsets": [
                    *[d.model_dump() for d in load_catalog().launch.daemonsets],
                    {
                        "name": "heavy-agent",
                        "addon": "vpc-cni",
                        "cpu_millicores": 4000,
                        "memory_mib": 0,
                        "source": "a test row",
                    },
                ]
            }
        )
    )
    catalog = load_catalog(overlay=tmp_path)
    plan, stack = preset("llama3-70b-p5")
    stack = dataclasses.replace(stack, catalog=catalog)
    v = only(evaluate(plan, stack), RULE)
    assert "have too little cpu" in v.message


def test_ultraserver_pods_need_the_dra_driver(catalog: Any) -> None:
    stack = trn2u(catalog, 8)
    plan = plan_stack(stack, guard=False)
    (rel,) = [r for r in plan.of_type(HELM_RELEASE) if r.name.endswith("-neuron")]
    values = {**rel.inputs["values"], "draDriver": {"enabled": False}}
    v = only(evaluate(with_inputs(plan, rel, values=values), stack), RULE)
    assert "publish no DRA device of class neuron.aws.com its claim selects" in v.message


def test_a_preview_without_user_data_yet_still_places_the_pods() -> None:
    """At a first `pulumi preview` a launch template's user data is computed from the cluster
    and not known: the node groups' labels and the stack's huge-page allocation stand in."""
    plan, stack = preset("llama3-70b-p5")
    (lt,) = [r for r in plan.of_type(LT) if r.name.endswith("-h100-lt")]
    inputs = {k: v for k, v in lt.inputs.items() if k != "userData"}
    preview = replace(plan, LT, lt.name, inputs=inputs)
    assert violations(preview, stack) == []
