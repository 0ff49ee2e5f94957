"""A small model of the Kubernetes scheduler: place a job's pods, one at a time and in order,
on a set of nodes, as kube-scheduler's filters would let them, and say why a pod that fits
nowhere does not. Pure data in, data out: the deploy rule `pods-schedulable`
(plan/rules/scheduling.py) builds the nodes from the plan and the pods from the rendered
manifests.

What is modelled, each as the scheduler's plugin of the same purpose does it (kubernetes.io
docs, "Scheduling Framework", default plugins): NodeResourcesFit (requests, extended resources
and huge pages against allocatable, less what earlier pods took), NodeAffinity (nodeSelector
and required node affinity), TaintToleration (NoSchedule and NoExecute taints), InterPodAffinity
(required pod affinity and anti-affinity in both directions, by topology key; the first pod of
a self-affine group may start a domain), DynamicResources (a claim of N devices of a device class
and selector, one per pod, from the devices the node publishes), and the preferred pod affinity
as the score that picks among the nodes that fit (the highest weight sum, then node order).
Not modelled: preemption, topology spread, volumes (the FSx claim binds anywhere in its zone).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: The taint effects the scheduler filters on (PreferNoSchedule only scores).
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True)
class DeviceOffer:
    """Devices a node publishes through a DRA driver: `count` of the class, each matching
    `selector` (the CEL expression a claim names, compared as written)."""

    device_class: str
    selector: str
    count: int


@dataclass
class Node:
    name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    #: cpu (millicores), memory (MiB), hugepages-2Mi (MiB) and extended resources (counts),
    #: what is left after the DaemonSets
    allocatable: dict[str, int]
    devices: tuple[DeviceOffer, ...] = ()


@dataclass(frozen=True)
class Claim:
    """One device request of a pod's ResourceClaimTemplate."""

    device_class: str
    selector: str
    count: int


@dataclass(frozen=True)
class Pod:
    """One pod to place: what the scheduler reads of its spec."""

    name: str
    template: str  # the pod template it comes from: pods of one template filter alike
    labels: Mapping[str, str]
    requests: Mapping[str, int]
    node_selector: Mapping[str, str] = field(default_factory=dict)
    node_affinity: tuple[Any, ...] = ()  # required nodeSelectorTerms (ORed)
    tolerations: tuple[Mapping[str, str], ...] = ()
    affinity: tuple[Any, ...] = ()  # required pod affinity terms
    anti_affinity: tuple[Any, ...] = ()  # required pod anti-affinity terms
    preferred: tuple[tuple[int, Any], ...] = ()  # (weight, pod affinity term)
    claims: tuple[Claim, ...] = ()


@dataclass
class Placement:
    """Where each placed pod went and the pods that fit nowhere, each with the reasons the
    nodes gave (reason -> how many nodes)."""

    placed: list[tuple[Pod, Node]] = field(default_factory=list)
    unplaced: list[tuple[Pod, dict[str, int]]] = field(default_factory=list)


# ---- label selectors ----------------------------------------------------------------------


def _expression(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, op, values = expr["key"], expr["operator"], list(expr.get("values") or [])
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt") and key in labels and values:
        try:
            a, b = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return a > b if op == "Gt" else a < b
    return False


def selects(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector (matchLabels and matchExpressions, ANDed) against labels; an
    empty selector selects everything, none selects nothing."""
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    return all(_expression(e, labels) for e in selector.get("matchExpressions") or [])


def _node_term(term: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    return all(_expression(e, labels) for e in term.get("matchExpressions") or [])


# ---- the filters --------------------------------------------------------------------------


def _tolerates(tolerations: Iterable[Mapping[str, str]], t: Taint) -> bool:
    for tol in tolerations:
        if tol.get("effect") and tol["effect"] != t.effect:
            continue
        if tol.get("operator", "Equal") == "Exists":
            if not tol.get("key") or tol["key"] == t.key:
                return True
        elif tol.get("key") == t.key and tol.get("value", "") == t.value:
            return True
    return False


def tolerated(tolerations: Iterable[Mapping[str, str]], taints: Iterable[Taint]) -> bool:
    """Whether the tolerations let a pod onto a node with these taints."""
    tols = list(tolerations)
    return all(t.effect not in BLOCKING_EFFECTS or _tolerates(tols, t) for t in taints)


def _static(pod: Pod, node: Node) -> str | None:
    """The first filter a pod fails on a node regardless of other pods, or None."""
    for k, v in pod.node_selector.items():
        if node.labels.get(k) != v:
            return f"lack the node label {k}={v}"
    if pod.node_affinity and not any(_node_term(t, node.labels) for t in pod.node_affinity):
        return "fail its required node affinity"
    if not tolerated(pod.tolerations, node.taints):
        taint = next(t for t in node.taints if not tolerated(pod.tolerations, [t]))
        return f"have the taint {taint.key}={taint.value}:{taint.effect} it does not tolerate"
    for claim in pod.claims:
        offered = sum(
            d.count
            for d in node.devices
            if d.device_class == claim.device_class and d.selector == claim.selector
        )
        if offered < claim.count:
            return f"publish no DRA device of class {claim.device_class} its claim selects"
    return None


def _fits(pod: Pod, node: Node, used: Mapping[str, int]) -> str | None:
    """The first resource the node has too little of for the pod (after earlier pods)."""
    for res, want in pod.requests.items():
        if want <= 0:
            continue
        left = node.allocatable.get(res, 0) - used.get(res, 0)
        if left < want:
            have = node.allocatable.get(res, 0)
            return f"have too little {res} (allocatable {have}, {want} requested)"
    for claim in pod.claims:
        key = f"dra:{claim.device_class}:{claim.selector}"
        offered = sum(
            d.count
            for d in node.devices
            if d.device_class == claim.device_class and d.selector == claim.selector
        )
        if offered - used.get(key, 0) < claim.count:
            return f"have every DRA device of class {claim.device_class} claimed already"
    return None


def _domain(node: Node, key: str) -> str | None:
    return node.labels.get(key)


def _term_pods(term: Mapping[str, Any], node: Node, placed: list[tuple[Pod, Node]]) -> bool:
    """Whether a pod matching the term runs in the node's domain of its topology key."""
    domain = _domain(node, term["topologyKey"])
    return domain is not None and any(
        selects(term.get("labelSelector"), p.labels) and _domain(n, term["topologyKey"]) == domain
        for p, n in placed
    )


def _pod_affinity(pod: Pod, node: Node, placed: list[tuple[Pod, Node]]) -> str | None:
    """Required pod affinity and anti-affinity, the incoming pod's and the placed pods'."""
    for term in pod.affinity:
        if _domain(node, term["topologyKey"]) is None:
            return f"lack the topology label {term['topologyKey']}"
        if _term_pods(term, node, placed):
            continue
        anywhere = any(selects(term.get("labelSelector"), p.labels) for p, _ in placed)
        if anywhere or not selects(term.get("labelSelector"), pod.labels):
            return f"are outside the {term['topologyKey']} domain its pod affinity requires"
    for term in pod.anti_affinity:
        if _term_pods(term, node, placed):
            return f"share a {term['topologyKey']} domain with a pod its anti-affinity excludes"
    for other, where in placed:
        for term in other.anti_affinity:
            key = term["topologyKey"]
            same = _domain(node, key) is not None and _domain(node, key) == _domain(where, key)
            if same and selects(term.get("labelSelector"), pod.labels):
                return f"share a {key} domain with {other.name}, whose anti-affinity excludes it"
    return None


def _score(pod: Pod, node: Node, placed: list[tuple[Pod, Node]]) -> int:
    return sum(w for w, term in pod.preferred if _term_pods(term, node, placed))


# ---- placing a job --------------------------------------------------------------------------


def _use(used: dict[str, dict[str, int]], pod: Pod, node: Node) -> None:
    u = used.setdefault(node.name, {})
    for res, want in pod.requests.items():
        u[res] = u.get(res, 0) + want
    for c in pod.claims:
        key = f"dra:{c.device_class}:{c.selector}"
        u[key] = u.get(key, 0) + c.count


def reasons(
    pod: Pod, nodes: Iterable[Node], placed: list[tuple[Pod, Node]], used: dict[str, dict[str, int]]
) -> dict[str, int]:
    """Why the pod fits none of the nodes: each node's first failing filter, counted."""
    out: dict[str, int] = {}
    for node in nodes:
        why = _static(pod, node) or _fits(pod, node, used.get(node.name, {}))
        why = why or _pod_affinity(pod, node, placed) or "fit, yet were not chosen"
        out[why] = out.get(why, 0) + 1
    return out


@dataclass
class _State:
    """What placing one job keeps: placements, resources taken per node, each template's
    statically feasible nodes and how far pods without affinity have used them."""

    placed: list[tuple[Pod, Node]] = field(default_factory=list)
    used: dict[str, dict[str, int]] = field(default_factory=dict)
    feasible: dict[str, list[Node]] = field(default_factory=dict)
    cursor: dict[str, int] = field(default_factory=dict)
    anti: bool = False  # a placed pod has anti-affinity terms (every later pod must respect them)


def _first_fit(pod: Pod, st: _State) -> Node | None:
    """A pod without pod (anti-)affinity: the first feasible node with room (resources only
    shrink while a job is placed, so a node passed over stays full)."""
    nodes, i = st.feasible[pod.template], st.cursor.get(pod.template, 0)
    while i < len(nodes) and _fits(pod, nodes[i], st.used.get(nodes[i].name, {})) is not None:
        i += 1
    st.cursor[pod.template] = i
    return nodes[i] if i < len(nodes) else None


def _best_fit(pod: Pod, st: _State) -> Node | None:
    """A pod with pod (anti-)affinity or preferences: the fitting node with the highest
    preferred-affinity score, then the first in order."""
    best: tuple[int, Node] | None = None
    for node in st.feasible[pod.template]:
        if _fits(pod, node, st.used.get(node.name, {})) is not None:
            continue
        if _pod_affinity(pod, node, st.placed) is not None:
            continue
        score = _score(pod, node, st.placed)
        if best is None or score > best[0]:
            best = (score, node)
    return best[1] if best else None


def place(pods: Iterable[Pod], nodes: Iterable[Node]) -> Placement:
    """Place `pods` in order on `nodes`; a pod that fits nowhere is recorded with the reasons
    the nodes gave, and the next pod is tried."""
    nodes = list(nodes)
    out, st = Placement(), _State()
    for pod in pods:
        if pod.template not in st.feasible:
            st.feasible[pod.template] = [n for n in nodes if _static(pod, n) is None]
        affine = st.anti or bool(pod.affinity or pod.anti_affinity or pod.preferred)
        node = _best_fit(pod, st) if affine else _first_fit(pod, st)
        if node is None:
            out.unplaced.append((pod, reasons(pod, nodes, st.placed, st.used)))
            continue
        st.placed.append((pod, node))
        _use(st.used, pod, node)
        st.anti = st.anti or bool(pod.anti_affinity)
    out.placed = st.placed
    return out
