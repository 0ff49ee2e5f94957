"""The nodes a plan would register, as the scheduler would see them: from each planned managed
node group, its nodes with the labels they register with (the nodeadm `--node-labels` of the
launch template's user data, the node group's `labels` EKS adds, and the labels the kubelet,
EKS and the Neuron UltraServer driver set), its taints (the node group's and the user data's
`--register-with-taints`), and the allocatable the kubelet reports (catalog launch.yaml `pods`,
`resolve.node.node_allocatable`) less the requests of the DaemonSets the stack's add-ons and
charts put there (catalog launch.yaml `daemonsets`), plus what those DaemonSets advertise: the
device plugins' resources, EFA interfaces, the DRA driver's devices.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from accelstack.catalog import DaemonSetFacts, HelmChart
from accelstack.naming import POOL_LABEL
from accelstack.plan.document import Plan, PlannedResource
from accelstack.plan.placement import DeviceOffer, Node, Taint, tolerated
from accelstack.plan.rules.nodegroups import launch_template_of
from accelstack.plan.rules.plugins import releases as chart_releases
from accelstack.resolve.node import node_allocatable
from accelstack.tokens import ADDON, NODE_GROUP

if TYPE_CHECKING:
    from accelstack.resolve import ResolvedPool, Stack

#: EKS API taint effects (NodeGroup taints[].effect) as Kubernetes writes them (botocore
#: eks-2017-11-01 TaintEffect: NO_SCHEDULE | NO_EXECUTE | PREFER_NO_SCHEDULE).
EKS_TAINT_EFFECTS = {
    "NO_SCHEDULE": "NoSchedule",
    "NO_EXECUTE": "NoExecute",
    "PREFER_NO_SCHEDULE": "PreferNoSchedule",
}
#: The labels every node registers with (kubernetes.io docs, "Well-Known Labels, Annotations
#: and Taints"; EKS managed node groups add the node group name and capacity type).
HOSTNAME, INSTANCE_TYPE, OS = (
    "kubernetes.io/hostname",
    "node.kubernetes.io/instance-type",
    "kubernetes.io/os",
)
EKS_NODEGROUP, EKS_CAPACITY = "eks.amazonaws.com/nodegroup", "eks.amazonaws.com/capacityType"
_NR_HUGEPAGES = re.compile(r"vm\.nr_hugepages\s*=\s*(\d+)")


def _user_data(lt: PlannedResource | None) -> str:
    raw = lt.inputs.get("userData") if lt else None
    if not raw:
        return ""
    try:
        return base64.b64decode(str(raw)).decode(errors="replace")
    except ValueError:
        return str(raw)


def _kubelet_flags(text: str) -> list[str]:
    """The kubelet flags of the user data's nodeadm NodeConfig ([] when there is none)."""
    if "application/node.eks.aws" not in text:
        return []
    body = text.split("application/node.eks.aws", 1)[1].split("\n\n", 1)[-1]
    try:
        doc, _ = json.JSONDecoder().raw_decode(body.lstrip())
    except ValueError:
        return []
    return list(((doc.get("spec") or {}).get("kubelet") or {}).get("flags") or [])


def _flag(flags: list[str], name: str) -> list[str]:
    for f in flags:
        if f.startswith(f"--{name}="):
            return [x for x in f.split("=", 1)[1].split(",") if x]
    return []


def registration(text: str) -> tuple[dict[str, str], tuple[Taint, ...], int]:
    """(labels, taints, 2 MiB huge pages in MiB) a node registers with, read from user data."""
    flags = _kubelet_flags(text)
    labels = dict(kv.split("=", 1) for kv in _flag(flags, "node-labels") if "=" in kv)
    taints = []
    for t in _flag(flags, "register-with-taints"):
        kv, _, effect = t.partition(":")
        key, _, value = kv.partition("=")
        taints.append(Taint(key, value, effect))
    pages = max((int(n) for n in _NR_HUGEPAGES.findall(text)), default=0)
    return labels, tuple(taints), pages * 2


def _hugepages(group: GroupNodes, pool: ResolvedPool | None, stack: Stack) -> int:
    """The node's 2 MiB huge pages (MiB): what its user data allocates; where the user data is
    not known yet (a first `pulumi preview`, its inputs computed from the cluster), what the
    stack's nodes allocate (the resolved pool's `hugepages_2mi`), so the rule judges the pods."""
    if group.user_data_known or pool is None:
        return group.hugepages_mib
    return pool.hugepages_2mi * 2


@dataclass(frozen=True)
class GroupNodes:
    """One planned node group: its name, pool (None: the system group), node count, and the
    labels, taints and huge pages (MiB) its nodes register with (the type is the pool's)."""

    name: str
    pool: str | None
    nodes: int
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    hugepages_mib: int
    user_data_known: bool = True


def node_groups(plan: Plan) -> Iterator[GroupNodes]:
    """Every planned managed node group, as its nodes register."""
    for ng in plan.of_type(NODE_GROUP):
        lt = launch_template_of(plan, ng)
        labels, taints, pages = registration(_user_data(lt))
        labels = {**labels, **(ng.inputs.get("labels") or {})}
        eks = tuple(
            Taint(t["key"], t.get("value", ""), EKS_TAINT_EFFECTS.get(t["effect"], t["effect"]))
            for t in ng.inputs.get("taints") or []
        )
        size = (ng.inputs.get("scalingConfig") or {}).get("desiredSize", 0)
        yield GroupNodes(
            name=ng.name,
            pool=labels.get(POOL_LABEL),
            nodes=int(size),
            labels={
                **labels,
                EKS_NODEGROUP: ng.name,
                EKS_CAPACITY: str(ng.inputs.get("capacityType")),
            },
            taints=tuple(dict.fromkeys(taints + eks)),
            hugepages_mib=pages,
            user_data_known=bool(lt is None or lt.inputs.get("userData")),
        )


# ---- DaemonSets ---------------------------------------------------------------------------


def _lookup(values: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        values = values.get(part) if isinstance(values, dict) else None
    return values


@dataclass(frozen=True)
class Running:
    """A DaemonSet the plan creates: its catalog row and, for a chart's, the release values."""

    facts: DaemonSetFacts
    chart: HelmChart | None = None
    values: Mapping[str, Any] | None = None


def daemonsets(plan: Plan, stack: Stack) -> list[Running]:
    """The catalog's DaemonSets whose add-on or (enabled) chart release the plan creates."""
    addons = {str(a.inputs.get("addonName")) for a in plan.of_type(ADDON)}
    releases = {c.name: (c, r.inputs.get("values") or {}) for r, c in chart_releases(plan, stack)}
    out = []
    for ds in stack.launch.daemonsets:
        if ds.addon is not None and ds.addon in addons:
            out.append(Running(ds))
        elif ds.chart is not None and ds.chart in releases:
            chart, values = releases[ds.chart]
            on = _lookup(values, ds.enabled_key) if ds.enabled_key else True
            if on is None and ds.enabled_key:
                on = chart.value_defaults.get(ds.enabled_key, False)
            if on:
                out.append(Running(ds, chart, values))
    return out


def _selected(ds: Running, labels: Mapping[str, str], device_kind: str | None) -> bool:
    """Whether the DaemonSet has a pod on a node with these labels (taints aside)."""
    f = ds.facts
    if f.device_kind is not None and f.device_kind != device_kind:
        return False
    if ds.chart is None:
        return True
    selector = _lookup(ds.values, f.node_selector_key) if f.node_selector_key else None
    if any(labels.get(k) != v for k, v in (selector or {}).items()):
        return False
    # the chart's default node affinity needs its labels unless the values replace it
    affinity = ds.chart.node_labels if "affinity" not in (ds.values or {}) else {}
    if any(labels.get(k) != v for k, v in affinity.items()):
        return False
    listed = _lookup(ds.values, ds.chart.instance_list_key) if ds.chart.instance_list_key else None
    return not isinstance(listed, list) or labels.get(INSTANCE_TYPE) in listed


def _advertising(ds: Running, taints: tuple[Taint, ...]) -> bool:
    tols = _lookup(ds.values, ds.facts.tolerations_key) if ds.facts.tolerations_key else None
    return ds.facts.advertises is not None and tolerated(tols or [], taints)


# ---- nodes --------------------------------------------------------------------------------


def _advertised(pool: ResolvedPool | None, ds: Running) -> tuple[dict[str, int], list[DeviceOffer]]:
    """What one advertising DaemonSet adds to a node of the pool (system nodes: nothing)."""
    if pool is None:
        return {}, []
    what, us = ds.facts.advertises, pool.ultraserver
    if what == "device" and pool.device.device_resource:
        return {pool.device.device_resource: pool.accelerators_per_node}, []
    if what == "efa" and pool.instance.efa_interfaces:
        return {"vpc.amazonaws.com/efa": pool.instance.efa_interfaces}, []
    if what == "dra" and us is not None and us.dra is not None:
        return {}, [DeviceOffer(us.dra.device_class, us.dra.selector, 1)]
    return {}, []


def build_node(
    stack: Stack, group: GroupNodes, pool: ResolvedPool | None, index: int, running: list[Running]
) -> Node | None:
    """Node `index` of a node group of `pool` (None: the system group), or None when the
    catalog does not know the system nodes' type."""
    inst = pool.instance if pool else stack.system_instance
    if inst is None:
        return None
    kind = pool.device.name if pool else None
    name = f"{group.name}-{index}"
    labels = {**group.labels, HOSTNAME: name, INSTANCE_TYPE: inst.name, OS: "linux"}
    labels.update(_server_labels(pool, index))
    pages = _hugepages(group, pool, stack)
    cpu, mem = node_allocatable(stack.launch.pods, inst, pages)
    alloc = {"cpu": cpu, "memory": mem, "hugepages-2Mi": pages}
    offers: list[DeviceOffer] = []
    for ds in running:
        if not _selected(ds, labels, kind):
            continue
        alloc["cpu"] -= ds.facts.cpu_millicores
        alloc["memory"] -= ds.facts.memory_mib
        if _advertising(ds, group.taints):
            resources, devices = _advertised(pool, ds)
            alloc.update(resources)
            offers += devices
    return Node(name, labels, group.taints, alloc, tuple(offers))


def _server_labels(pool: ResolvedPool | None, position: int) -> dict[str, str]:
    """The UltraServer label of a node of an UltraServer pool, by its position in the pool
    (the pool's nodes are whole servers: scale.yaml ultraservers, the stack rules)."""
    us = pool.ultraserver if pool else None
    if pool is None or us is None or us.dra is None:
        return {}
    return {us.dra.server_label: f"{pool.name}-us{position // us.instances}"}


def nodes(plan: Plan, stack: Stack, spares: bool = True) -> list[Node]:
    """Every node the plan registers; without `spares`, each pool's first `nodes` only."""
    running = daemonsets(plan, stack)
    pools = {p.name: p for p in stack.pools}
    seen: dict[str | None, int] = {}
    out = []
    for group in node_groups(plan):
        pool = pools.get(group.pool) if group.pool else None
        for _ in range(group.nodes):
            position = seen.get(group.pool, 0)
            seen[group.pool] = position + 1
            if pool is not None and not spares and position >= pool.nodes:
                continue
            node = build_node(stack, group, pool, position, running)
            if node is not None:
                out.append(node)
    return out
