"""One name budget for the job layer: every name JobSet, the Job controller and the API server
derive from the stack's names (pod and Job names, Services, hostnames, label values) fits its
limit at the most nodes each job runs on, or `validate` refuses the stack naming the longest
stack name that fits. Rendered manifests are checked with the webhook rules restated in
tests/helpers_admission.py (from the rendered documents, not accelstack's naming helpers)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from accelstack.catalog import load_catalog
from accelstack.errors import SpecError
from accelstack.render import render
from accelstack.render.trial import render_trial
from accelstack.resolve import Stack, check_stack, resolve, resolve_unchecked
from accelstack.resolve.k8snames import kubernetes_names
from accelstack.spec import Spec, load_spec

from ..conftest import STACKS
from ..helpers_admission import admission_problems

PRESETS = sorted(p.stem for p in STACKS.glob("*.yaml"))


def _spec(preset: str, name: str, **pool: Any) -> Spec:
    data = load_spec(STACKS / f"{preset}.yaml").model_dump()
    data["name"] = name
    data["pools"][0].update(pool)
    return Spec.model_validate(data)


def _manifests(stack: Stack, trial_nodes: int) -> dict[str, str]:
    out = {a.path: a.content for a in render(stack) if a.path.endswith(".yaml")}
    trial = render_trial(stack, 5, nodes=trial_nodes)
    out.update({f"trial/{a.path}": a.content for a in trial if a.path.endswith(".yaml")})
    return out


def test_the_fabric_test_of_the_longest_stack_name_is_refused_with_the_fix() -> None:
    """A 39-character stack name (validate accepted it): the fabric test's launcher pod
    `<stack>-fabric-launcher-0-0-abcde` is 65 characters, which JobSet's webhook refuses (the
    TrainJob is accepted, its JobSet never created)."""
    with pytest.raises(SpecError) as err:
        resolve(_spec("llama3-70b-p5", "a" * 39), load_catalog())
    (problem,) = err.value.problems
    assert problem.path == "name"
    assert "the fabric test's longest pod name" in problem.message
    assert f"'{'a' * 39}-fabric-launcher-0-0-abcde' would be 65 characters" in problem.message
    assert "jobset_webhook.go" in problem.message
    assert "shorten the stack name to at most 37 characters (now 39)" in problem.message


@pytest.mark.slow
def test_the_longest_allowed_name_renders_manifests_the_webhooks_admit() -> None:
    """At the length the message names, every rendered manifest (training, fabric test, a
    4-node trial and a trial on every node) passes the restated webhook rules; one more
    character is refused."""
    stack = resolve(_spec("llama3-70b-p5", "a" * 37), load_catalog())
    for nodes in (4, stack.workload_pool.nodes):
        for path, text in _manifests(stack, nodes).items():
            assert admission_problems(text) == [], path
    assert check_stack(resolve_unchecked(_spec("llama3-70b-p5", "a" * 38), load_catalog()))


@pytest.mark.slow  # renders 20 stacks of up to 1,000 nodes and admits every manifest
def test_the_rule_is_exact_over_name_lengths_and_node_counts() -> None:
    """For stack names of every length and pools of 2 to 1,000 nodes: the rule refuses the
    stack exactly when some rendered manifest breaks a restated admission rule."""
    cat = load_catalog()
    for length in (30, 36, 37, 38, 39):
        for nodes in (2, 10, 100, 1000):
            stack = resolve_unchecked(_spec("llama3-70b-p5", "b" * length, nodes=nodes), cat)
            refused = any(n.excess > 0 for n in kubernetes_names(stack))
            broken = [
                (path, pr)
                for path, text in _manifests(stack, nodes).items()
                for pr in admission_problems(text)
            ]
            assert refused == bool(broken), (length, nodes, broken)


def test_a_long_deployment_prefix_is_named_in_the_fix() -> None:
    spec = _spec("llama3-70b-p5", "a" * 30)
    with pytest.raises(SpecError) as err:
        resolve(spec, load_catalog(), name="a" * 30 + "-staging")
    (problem,) = err.value.problems
    assert "the resource-name prefix" in problem.message
    assert "to at most 37 characters (now 38)" in problem.message


@pytest.mark.slow
@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_renders_names_the_webhooks_admit(preset: str) -> None:
    stack = resolve(load_spec(STACKS / f"{preset}.yaml"), load_catalog())
    if stack.spec.orchestration != "eks":
        assert kubernetes_names(stack) == []
        return
    for path, text in _manifests(stack, 4).items():
        assert admission_problems(text) == [], path


def _pytorchjob_stack(prefix: str) -> Stack:
    data = load_spec(STACKS / "trn1-multinode.yaml").model_dump()
    data["jobs"] = {**data["jobs"], "controller": "pytorchjob"}
    return resolve_unchecked(Spec.model_validate(data), load_catalog(), name=prefix)


def _pytorchjob_names(text: str) -> list[str]:
    """The pod (and Service) names the Training Operator derives from a rendered PyTorchJob:
    `<job>-<replica type, lower case>-<index>` (kubeflow/trainer@4445c12a pkg/core/utils.go:30-33,
    pkg/controller.v1/common/pod.go:414, service.go:243), from the document itself."""
    out = []
    for doc in yaml.safe_load_all(text):
        if doc and doc["kind"] == "PyTorchJob":
            job = doc["metadata"]["name"]
            for role, rs in doc["spec"]["pytorchReplicaSpecs"].items():
                out += [f"{job}-{role.lower()}-{i}" for i in range(rs["replicas"])]
    return out


@pytest.mark.slow
def test_the_pytorchjob_pod_and_service_names_are_in_the_budget() -> None:
    """Each PyTorchJob replica's Service is named after its pod, and a Service name is a
    DNS-1035 label. For resource-name prefixes around the limit, every pod name the rendered
    PyTorchJobs (training job and trial) derive at its longest is in the budget, and the budget
    finds one over its limit exactly when a rendered one is."""
    for length in (40, 47, 48, 53, 54, 55):
        stack = _pytorchjob_stack("p" * (length - 3) + "pyt")
        derived = [
            n
            for text in _manifests(stack, stack.workload_pool.nodes).values()
            for n in _pytorchjob_names(text)
        ]
        assert len(derived) == 2 * stack.workload_pool.nodes, length
        budget = {n.name: n for n in kubernetes_names(stack) if "pod and Service" in n.what}
        assert {max(derived[: len(derived) // 2], key=len), max(derived, key=len)} <= set(budget)
        assert all("service.go:243" in n.rule and n.limit == 63 for n in budget.values())
        over = {n for n in derived if len(n) > 63}
        assert any(g.excess > 0 for g in budget.values()) == bool(over), length
    (problem,) = [p for p in check_stack(stack) if "pod and Service" in p.message]
    assert problem.path == "name" and "at most 47 characters (now 55)" in problem.message


def test_the_kueue_object_names_are_in_the_budget() -> None:
    """The ClusterQueue, each pool's ResourceFlavor and the Topology are cluster-scoped Kueue
    objects whose names are DNS-1123 subdomains of at most 253 characters (kubernetes-sigs/
    kueue@8eab6877 apis/kueue/v1beta2/clusterqueue_types.go:51-55, 345-348): the budget holds
    every name the job layer plans."""
    from components.job_controller import cluster_queue_spec

    data = load_spec(STACKS / "llama3-70b-p5.yaml").model_dump()
    data["jobs"] = {**data["jobs"], "kueue": True, "topology_aware": True}
    stack = resolve(Spec.model_validate(data), load_catalog())
    budget = {n.name: n for n in kubernetes_names(stack) if n.limit == 253}
    (group,) = cluster_queue_spec(stack, "training")["resourceGroups"]
    planned = {f["name"] for f in group["flavors"]} | {stack.name, f"{stack.name}-topology"}
    assert planned <= set(budget)
    assert all("clusterqueue_types.go" in budget[n].rule for n in planned)


def test_the_rules_summary_names_every_limit_it_checks() -> None:
    """docs/spec.md shows the rule's summary: it names each kind of name and each limit the
    budget holds (DNS-1035 labels and label values of 63, Kueue's DNS-1123 subdomains of 253)."""
    from accelstack.resolve.rules import STACK_RULES

    data = load_spec(STACKS / "trn1-multinode.yaml").model_dump()
    data["jobs"] = {**data["jobs"], "controller": "pytorchjob", "kueue": True}
    # unchecked: Kueue does not admit a PyTorchJob (`jobs-kueue`), but the names it would get
    # are the longest of every kind the budget holds
    stack = resolve_unchecked(Spec.model_validate(data), load_catalog())
    (summary,) = [r.summary for r in STACK_RULES if r.name == "kubernetes-names"]
    names = kubernetes_names(stack)
    assert {n.limit for n in names} == {63, 253}
    for limit in {n.limit for n in names}:
        assert f"{limit} characters" in summary, limit
    for words in ("DNS-1035", "DNS-1123 subdomain", "PyTorchJob", "ClusterQueue", "Topology"):
        assert words in summary, words
