"""Launch fixes: huge pages allocated by the EFA node user data and held to the pods' request by
a deploy rule; the job controller held in the plan; the fabric self-check counting what the
container was given and loading the NCCL network plugin; the pre-compile marker keyed to the
job and the model/arguments and kept where a restarted pod finds it."""

from __future__ import annotations

import base64
import dataclasses

from accelstack.plan.rules import evaluate

from ..plan.test_rules import LT, assert_line, only, preset, with_inputs


def _lt_user_data(plan, name: str) -> str:  # type: ignore[no-untyped-def]
    (lt,) = [r for r in plan.of_type(LT) if r.name == name]
    return base64.b64decode(lt.inputs["userData"]).decode()


def test_efa_nodes_allocate_the_huge_pages_their_pods_request() -> None:
    plan, stack = preset("llama3-70b-p5")
    pods = stack.catalog.launch.pods
    text = _lt_user_data(plan, "llama3-70b-p5-h100-lt")
    pages = pods.efa_node_hugepages_mib // 2
    assert f"vm.nr_hugepages = {pages}" in text and f"sysctl -w vm.nr_hugepages={pages}" in text
    assert pages * 2 >= pods.efa_hugepages_2mi_mib
    # the shell part comes before the end of the MIME document, after the NodeConfig
    assert text.index("application/node.eks.aws") < text.index("nr_hugepages")
    assert not [v for v in evaluate(plan, stack) if v.rule == "efa-hugepages-allocated"]


def test_no_huge_pages_without_efa() -> None:
    plan, _ = preset("trn1-finetune")
    assert "nr_hugepages" not in _lt_user_data(plan, "trn1-finetune-trn1-lt")


def test_hugepages_rule_fires_when_user_data_allocates_none() -> None:
    plan, stack = preset("llama3-70b-p5")
    (lt,) = [r for r in plan.of_type(LT) if r.name == "llama3-70b-p5-h100-lt"]
    stripped = _lt_user_data(plan, lt.name).replace("nr_hugepages", "nr_other")
    bad = with_inputs(plan, lt, userData=base64.b64encode(stripped.encode()).decode())
    v = only(evaluate(bad, stack), "efa-hugepages-allocated")
    assert_line(v, lt.name)
    assert "5120Mi" in v.message and "Pending" in v.message


def test_controller_rule_fires_without_the_release() -> None:
    plan, stack = preset("llama3-70b-trn2")
    assert not [v for v in evaluate(plan, stack) if v.rule == "job-controller-installed"]
    chart = stack.catalog.charts["trainer"]
    kept = [r for r in plan.resources if r.inputs.get("chart") != chart.chart]
    v = only(evaluate(dataclasses.replace(plan, resources=kept), stack), "job-controller-installed")
    assert "no matches for kind" in v.message and chart.version in v.message


def test_neuron_pods_name_the_collectives_socket_interface() -> None:
    from accelstack.render import render_node_script

    from ..helpers_render import preset_stack

    for name in ("llama3-70b-trn2", "trn1-multinode"):
        assert "export CCOM_SOCKET_IFNAME=eth0" in render_node_script(preset_stack(name))
    # not on hosts (standalone instances name their interfaces differently), not on CUDA
    assert "CCOM_SOCKET_IFNAME" not in render_node_script(preset_stack("trn1-standalone"))
    assert "CCOM_SOCKET_IFNAME" not in render_node_script(preset_stack("llama3-70b-p5"))
