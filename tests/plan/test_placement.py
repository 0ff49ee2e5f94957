"""The scheduler model the deploy rule `pods-schedulable` places pods with
(accelstack/plan/placement.py): each filter refuses what kube-scheduler's would, pods consume
what they request, required pod (anti-)affinity holds both ways, and the preferred affinity of
a job of several UltraServers fills one server before the next."""

from __future__ import annotations

from typing import Any

from accelstack.plan.placement import Claim, DeviceOffer, Node, Pod, Taint, place, selects

SERVER = "neuron.amazonaws.com/ultraserver-server-id-4"
JOB = "accelstack.io/ultraserver-job"
TAINT = Taint("aws.amazon.com/neuron", "true", "NoSchedule")
TOLERATE = {
    "key": "aws.amazon.com/neuron",
    "operator": "Equal",
    "value": "true",
    "effect": "NoSchedule",
}


def node(name: str, server: str | None = None, **alloc: int) -> Node:
    labels = {"pool": "p", "kubernetes.io/hostname": name}
    if server:
        labels[SERVER] = server
    return Node(
        name,
        labels,
        (TAINT,),
        {"cpu": 1000, "memory": 1000, **alloc},
        (DeviceOffer("neuron.aws.com", "sel", 1),),
    )


def pod(name: str, job: str = "a", **spec: Any) -> Pod:
    fields: dict[str, Any] = {
        "labels": {JOB: job},
        "requests": {"cpu": 900},
        "node_selector": {"pool": "p"},
        "tolerations": (TOLERATE,),
        "claims": (Claim("neuron.aws.com", "sel", 1),),
    }
    fields.update(spec)
    return Pod(
        name=name,
        template=f"{job}:{fields.get('template_key', '')}",
        **{k: v for k, v in fields.items() if k != "template_key"},
    )


def servers(n: int, size: int = 4) -> list[Node]:
    return [node(f"n{s}-{i}", f"us{s}") for s in range(n) for i in range(size)]


def on(result: Any) -> list[str]:
    return [n.labels.get(SERVER, n.name) for _, n in result.placed]


def test_requests_are_consumed_one_pod_per_node() -> None:
    result = place([pod(f"p{i}") for i in range(3)], [node("a"), node("b")])
    assert [n.name for _, n in result.placed] == ["a", "b"]
    ((p, why),) = result.unplaced
    assert p.name == "p2" and why == {"have too little cpu (allocatable 1000, 900 requested)": 2}


def test_selectors_taints_and_claims_filter_nodes() -> None:
    nodes = [node("a")]
    ((_, why),) = place([pod("x", node_selector={"pool": "q"})], nodes).unplaced
    assert why == {"lack the node label pool=q": 1}
    ((_, why),) = place([pod("x", tolerations=())], nodes).unplaced
    assert "taint aws.amazon.com/neuron=true:NoSchedule" in next(iter(why))
    ((_, why),) = place([pod("x", claims=(Claim("other.class", "sel", 1),))], nodes).unplaced
    assert "no DRA device of class other.class" in next(iter(why))
    # a node's one neuron_node device is claimed once
    cheap = dict(requests={"cpu": 1})
    result = place([pod("x", **cheap), pod("y", **cheap)], nodes)
    ((_, why),) = result.unplaced
    assert "claimed already" in next(iter(why))


def _anti(job: str) -> dict[str, Any]:
    return {
        "labelSelector": {
            "matchExpressions": [
                {"key": JOB, "operator": "Exists"},
                {"key": JOB, "operator": "NotIn", "values": [job]},
            ]
        },
        "topologyKey": SERVER,
    }


def _self(job: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {JOB: job}}, "topologyKey": SERVER}


def test_required_affinity_keeps_one_servers_job_together() -> None:
    pods = [pod(f"a{i}", affinity=(_self("a"),), anti_affinity=(_anti("a"),)) for i in range(4)]
    result = place(pods, servers(2))
    assert on(result) == ["us0"] * 4
    # a fifth pod cannot join: its server is full and affinity forbids another
    result = place([*pods, pods[0]], servers(2))
    assert len(result.unplaced) == 1


def test_anti_affinity_keeps_other_jobs_off_a_server_in_use_both_ways() -> None:
    one = pod("b0", job="b", requests={"cpu": 100})  # another job's pod, no terms of its own
    pods = [pod(f"a{i}", anti_affinity=(_anti("a"),)) for i in range(4)]
    result = place([one, *pods], servers(2))
    assert on(result)[0] == "us0" and set(on(result)[1:]) == {"us1"}
    # the other way: a job with anti-affinity placed first keeps a later labelled pod off
    result = place([*pods, one], servers(2))
    assert on(result)[-1] == "us1"


def test_preferred_affinity_fills_a_server_before_the_next() -> None:
    """8 pods, 3 servers of 4 (one spare server): 4 and 4, never 3/3/2."""
    pref = ((100, _self("a")),)
    pods = [pod(f"a{i}", anti_affinity=(_anti("a"),), preferred=pref) for i in range(8)]
    # interleave the servers' nodes, so node order alone would spread the job
    nodes = [n for i in range(4) for n in servers(3)[i::4]]
    result = place(pods, nodes)
    assert not result.unplaced
    counts = {s: on(result).count(s) for s in set(on(result))}
    assert sorted(counts.values()) == [4, 4]


def test_label_selector_operators() -> None:
    sel = {
        "matchLabels": {"a": "1"},
        "matchExpressions": [{"key": "b", "operator": "DoesNotExist"}],
    }
    assert selects(sel, {"a": "1"}) and not selects(sel, {"a": "1", "b": "x"})
    assert selects({}, {"any": "thing"}) and not selects(None, {"any": "thing"})
