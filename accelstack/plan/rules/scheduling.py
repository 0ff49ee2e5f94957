"""Deploy rule: every pod the stack's rendered jobs run can be placed on the planned nodes.

The offline plan says what nodes will register (labels as nodeadm and EKS set them, taints,
allocatable after the DaemonSets the stack's add-ons and charts create, what each device
plugin or DRA driver advertises: `_nodes.py`, facts from the catalog with their sources) and
`accelstack render` and `accelstack trial` say what pods each job makes (requests, claims,
selectors, affinities, tolerations: `_pods.py`). Each job is placed alone on the cluster
(`accelstack/plan/placement.py`, a model of the scheduler's filters), with the pools' spare
nodes and without them: the training job in every kind render writes, the fabric test, and a
trial of each accelerated pool on one node, one UltraServer and every node. A pod that fits no
node is a violation naming the job, the pod and what the nodes lack; so is a job of whole
UltraServers whose pods would share a server with fewer than its mode's nodes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import yaml

from accelstack.catalog.yamlread import SafeLoader
from accelstack.errors import AccelstackError
from accelstack.plan.document import Plan
from accelstack.plan.placement import Node, Placement, place
from accelstack.plan.rules._nodes import nodes
from accelstack.plan.rules._pods import Job, jobs
from accelstack.plan.rules.registry import DeployRule, deploy_rule

if TYPE_CHECKING:
    from accelstack.resolve import ResolvedPool, Stack

SOURCE = (
    "https://kubernetes.io/docs/concepts/scheduling-eviction/ (NodeResourcesFit, NodeAffinity, "
    "TaintToleration, InterPodAffinity, DynamicResources); catalog launch.yaml daemonsets"
)
#: How many distinct reasons a violation names (the most common first).
REASONS_SHOWN = 3


def _trial_counts(pool: ResolvedPool) -> list[int]:
    """The node counts a trial of the pool is checked at: one node, one UltraServer, all."""
    us = pool.ultraserver
    return sorted({1, pool.nodes, *([us.instances] if us and us.instances <= pool.nodes else [])})


def rendered(stack: Stack) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """The rendered job files (name -> YAML) and the shared ResourceClaimTemplates by name."""
    from accelstack.render import render
    from accelstack.render.shared import SHARED_FILE
    from accelstack.render.trial import DEFAULT_RECORDS, trial_manifest, trial_nodes, trial_pools

    files: dict[str, str] = {}
    claims: dict[str, dict[str, Any]] = {}
    for a in render(stack):
        if a.path == SHARED_FILE:
            docs = yaml.load_all(a.content, Loader=SafeLoader)
            claims = {d["metadata"]["name"]: d for d in docs if d}
        elif a.path.endswith(".yaml"):
            files[a.path] = a.content
    for name in trial_pools(stack):
        pool = stack.pool(name)
        for n in _trial_counts(pool):
            nodes_ = trial_nodes(stack, name, n)
            files[f"trial-{name}.yaml ({nodes_} nodes)"] = trial_manifest(
                stack, name, 1, DEFAULT_RECORDS, nodes_
            )
    return files, claims


def _why(reasons: dict[str, int]) -> str:
    top = sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))[:REASONS_SHOWN]
    return "; ".join(f"{n} node(s) {why}" for why, n in top) or "no node at all"


def _unplaced(job: Job, result: Placement, label: str) -> Iterator[tuple[str, str]]:
    if not result.unplaced:
        return
    pod, reasons = result.unplaced[0]
    yield (
        f"pod '{job.file} {pod.name}'",
        f"{len(result.unplaced)} of the {len(job.pods)} pods of {job.name} fit no node"
        f"{label}: {_why(reasons)}",
    )


def _split(stack: Stack, job: Job, result: Placement, label: str) -> Iterator[tuple[str, str]]:
    """A job of whole UltraServers (its pods a multiple of the server's size) whose pods would
    share a server with fewer than the server's nodes: its UltraServerConfig mode fails."""
    pool = next((p for p in stack.pools if p.name == job.pool), None)
    us = pool.ultraserver if pool else None
    if us is None or us.dra is None or len(job.pods) < 2 or len(job.pods) % us.instances:
        return
    per: dict[str, int] = {}
    for _, node in result.placed:
        server = node.labels.get(us.dra.server_label, "")
        per[server] = per.get(server, 0) + 1
    short = {s: n for s, n in sorted(per.items()) if n != us.instances}
    if short:
        held = ", ".join(f"{s}: {n}" for s, n in short.items())
        yield (
            f"job '{job.file}'",
            f"the pods of {job.name} would split UltraServers{label} ({held} of its pods); "
            f"a job of whole UltraServers takes all {us.instances} nodes of each server it uses",
        )


@deploy_rule(
    "pods-schedulable",
    SOURCE,
    "every pod of the rendered jobs (training job, fabric test, trials) fits a planned node, "
    "with and without the pools' spares: labels, taints, allocatable after the stack's "
    "DaemonSets, device-plugin and DRA devices, pod (anti-)affinity; jobs of whole "
    "UltraServers fill each server they use",
)
def _schedulable(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    if stack.orchestration != "eks":
        return
    try:
        files, claims = rendered(stack)
    except AccelstackError as e:
        yield (stack.name, f"the jobs cannot be rendered, so none can be placed: {e}")
        return
    all_jobs = jobs(files, claims)
    variants: list[tuple[str, list[Node]]] = [("", nodes(plan, stack, spares=True))]
    if any(p.spare_nodes for p in stack.pools):
        variants.append((" without the pools' spare nodes", nodes(plan, stack, spares=False)))
    for label, cluster in variants:
        for job in all_jobs:
            result = place(job.pods, cluster)
            yield from _unplaced(job, result, label)
            yield from _split(stack, job, result, label)


#: This module's rules, in report order (the kind's RuleSet lists this tuple).
MODULE_RULES: tuple[DeployRule, ...] = (_schedulable,)
