"""The jobs' NetworkPolicy is enforced and narrow: the vpc-cni add-on runs its network policy
agent (off by default), and the policy admits exactly the flows the job needs, evaluated the
way Kubernetes evaluates NetworkPolicy ingress (networking.k8s.io/v1: a pod selected by a policy
accepts a connection only when some ingress rule's peers and ports both match; a named port
matches the destination container's port of that name)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from accelstack.plan.rules import evaluate
from accelstack.render import render

from ..helpers_admission import docs
from ..helpers_plan import plan_stack
from ..helpers_render import preset_stack


@dataclass(frozen=True)
class Flow:
    """A TCP/UDP connection to a pod of the job: who opens it and where it goes."""

    what: str
    src_namespace: str
    src_labels: tuple[tuple[str, str], ...]
    port: int
    protocol: str = "TCP"


def _matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items())


def _peer_ok(peer: dict[str, Any], flow: Flow, policy_ns: str) -> bool:
    labels = dict(flow.src_labels)
    ns_labels = {"kubernetes.io/metadata.name": flow.src_namespace}
    if "namespaceSelector" in peer:
        ok = _matches(peer["namespaceSelector"], ns_labels)
        return ok and _matches(peer.get("podSelector") or {}, labels)
    return flow.src_namespace == policy_ns and _matches(peer.get("podSelector") or {}, labels)


def _port_ok(rule_ports: list[dict[str, Any]] | None, flow: Flow, named: dict[str, int]) -> bool:
    if not rule_ports:
        return True
    for p in rule_ports:
        if p.get("protocol", "TCP") != flow.protocol:
            continue
        port = p.get("port")
        if port is None or port == flow.port or named.get(str(port)) == flow.port:
            return True
    return False


def admitted(
    policy: dict[str, Any], pod_labels: dict[str, str], named: dict[str, int], flow: Flow
) -> bool:
    """Whether `policy` lets `flow` reach a pod with `pod_labels` and named container ports."""
    if not _matches(policy["spec"]["podSelector"], pod_labels):
        return True  # not selected: the policy does not restrict it
    ns = policy["metadata"]["namespace"]
    for rule in policy["spec"].get("ingress") or []:
        peers = rule.get("from") or [{}]
        if any(_peer_ok(p, flow, ns) for p in peers) and _port_ok(rule.get("ports"), flow, named):
            return True
    return False


def _job_pod(manifest: str) -> tuple[dict[str, Any], dict[str, str], dict[str, int], str]:
    """The NetworkPolicy, the labels and named ports of the job's pods, and the namespace."""
    all_docs = docs(manifest)
    (policy,) = [d for d in all_docs if d["kind"] == "NetworkPolicy"]
    pods = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "containers" in node:
                pods.append(node)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(all_docs)
    named = {
        port["name"]: port["containerPort"]
        for pod in pods
        for c in pod["containers"]
        for port in c.get("ports", [])
    }
    labels = dict(policy["spec"]["podSelector"]["matchLabels"])
    return policy, labels, named, policy["metadata"]["namespace"]


def flows(job_labels: dict[str, str], ns: str, rdzv: int) -> dict[Flow, bool]:
    """Flow -> whether the job needs it admitted."""
    own = tuple(job_labels.items())
    other = (("app.kubernetes.io/name", "someone-else"),)
    agent = (("app.kubernetes.io/name", "cloudwatch-agent"),)
    return {
        Flow("rendezvous from a peer", ns, own, rdzv): True,
        Flow("NCCL/gloo bootstrap (ephemeral port) from a peer", ns, own, 45123): True,
        Flow("sshd of the fabric test from its launcher", ns, own, 2222): True,
        Flow("UDP from a peer", ns, own, rdzv, "UDP"): False,
        Flow("rendezvous from another pod of the namespace", ns, other, rdzv): False,
        Flow("rendezvous from another namespace", "default", own, rdzv): False,
        Flow("rendezvous from the metrics scraper", "amazon-cloudwatch", agent, rdzv): False,
        Flow("bootstrap port from the metrics scraper", "amazon-cloudwatch", agent, 45123): False,
    }


@pytest.mark.parametrize("preset", ["llama3-70b-p5", "llama3-70b-trn2"])
def test_the_policy_admits_exactly_the_flows_the_job_needs(preset: str) -> None:
    stack = preset_stack(preset)
    for art in render(stack):
        if not art.path.endswith(".yaml"):
            continue
        policy, labels, named, ns = _job_pod(art.content)
        expected = flows(labels, ns, stack.spec.workload.rdzv_port)
        got = {f: admitted(policy, labels, named, f) for f in expected}
        assert got == expected, (art.path, [f.what for f in got if got[f] != expected[f]])


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
@pytest.mark.parametrize("preset", ["llama3-70b-p5", "llama3-70b-trn2"])
def test_the_policy_and_the_pods_agree_on_every_port_and_peer(preset: str) -> None:
    """A named port in a NetworkPolicy matches only a container port of that name on the
    selected pod (networking.k8s.io/v1 NetworkPolicyPort.port), so a name no pod declares
    admits nothing: every port the policy names is one the job's pods declare, and every peer
    is the job's own pods. Nothing in the pods serves metrics (the metrics add-on reads
    node-level sources: cAdvisor, node exporter, NVIDIA DCGM, kube-state-metrics, Neuron
    Monitor; CloudWatch user guide, container-insights-otel-metrics), so its namespace is not
    admitted at all."""
    stack = preset_stack(preset)
    assert stack.metrics
    for art in render(stack):
        if not art.path.endswith(".yaml"):
            continue
        policy, labels, named, _ = _job_pod(art.content)
        for rule in policy["spec"]["ingress"]:
            assert rule["from"] == [{"podSelector": {"matchLabels": labels}}], art.path
            for port in rule.get("ports") or []:
                if isinstance(port.get("port"), str):
                    assert port["port"] in named, (art.path, port)


def test_the_vpc_cni_addon_runs_the_network_policy_agent() -> None:
    """Planned with `enableNetworkPolicy: "true"` in its configuration values (off by
    default, so the policy was inert); the deploy rule refuses a plan without it."""
    stack = preset_stack("llama3-70b-p5")
    plan = plan_stack(stack, guard=False)
    (cni,) = [
        r for r in plan.of_type("aws:eks/addon:Addon") if r.inputs.get("addonName") == "vpc-cni"
    ]
    assert json.loads(cni.inputs["configurationValues"])["enableNetworkPolicy"] == "true"
    assert not [v for v in evaluate(plan, stack) if v.rule == "network-policy-enforced"]
    cni.inputs["configurationValues"] = json.dumps({"env": {"WARM_IP_TARGET": "5"}})
    (v,) = [v for v in evaluate(plan, stack) if v.rule == "network-policy-enforced"]
    assert '"enableNetworkPolicy": "true"' in v.message
