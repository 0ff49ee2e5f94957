"""Deploy rules: the job layer. EFA pods request 2 MiB huge pages that only the node's own
allocation provides, and an EKS stack whose manifests need a controller must install it."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from accelstack.naming import POOL_LABEL
from accelstack.plan.document import Plan
from accelstack.plan.rules.nodegroups import launch_template_of
from accelstack.plan.rules.registry import DeployRule, deploy_rule, ref
from accelstack.tokens import ADDON, NODE_GROUP
from accelstack.tokens import HELM_RELEASE as RELEASE

if TYPE_CHECKING:
    from accelstack.resolve import Stack

_NR_HUGEPAGES = re.compile(r"vm\.nr_hugepages\s*=\s*(\d+)")


def _user_data(text: object) -> str:
    try:
        return base64.b64decode(str(text)).decode(errors="replace")
    except ValueError:
        return str(text)


@deploy_rule(
    "efa-hugepages-allocated",
    "https://kubernetes.io/docs/tasks/manage-hugepages/scheduling-hugepages/",
    "an EFA pool's node user data allocates at least the 2 MiB huge pages its training pods "
    "request (the kubelet reports only pre-allocated huge pages)",
)
def _hugepages(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    want_mib = stack.launch.pods.efa_hugepages_2mi_mib
    efa = {p.name for p in stack.pools if p.efa}
    for ng in plan.of_type(NODE_GROUP):
        if (ng.inputs.get("labels") or {}).get(POOL_LABEL) not in efa:
            continue
        lt = launch_template_of(plan, ng)
        found = _NR_HUGEPAGES.findall(_user_data(lt.inputs.get("userData"))) if lt else []
        have_mib = max((int(n) * 2 for n in found), default=0)
        if have_mib < want_mib:
            yield (
                ref(lt or ng),
                f"user data allocates {have_mib} MiB of 2 MiB huge pages, the pool's pods request "
                f"hugepages-2Mi {want_mib}Mi: they would stay Pending",
            )


@deploy_rule(
    "job-controller-installed",
    "accelstack/catalog/instances.yaml charts (role job-controller, sources per chart)",
    "an EKS stack installs the job controller its spec names, at the catalog's pinned version",
)
def _controller(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    chart = stack.job_controller_chart
    if stack.orchestration != "eks" or chart is None:
        return
    if chart.kind == "kustomize":
        found = [
            r
            for r in plan.of_type("kubernetes:kustomize/v2:Directory")
            if r.inputs.get("directory") == chart.chart
        ]
    else:
        found = [
            r
            for r in plan.of_type(RELEASE)
            if r.inputs.get("chart") == chart.chart and r.inputs.get("version") == chart.version
        ]
    if not found:
        yield (
            stack.name,
            f"no {chart.chart} {chart.version} in the plan: applying a {chart.manifest_kind} fails "
            f"with 'no matches for kind' ({chart.source.split(' ')[0]})",
        )


def _addon_config(plan: Plan, name: str) -> dict[str, object] | None:
    """An EKS add-on's configuration values as planned ({}: none set; None: not planned)."""
    for addon in plan.of_type(ADDON):
        if addon.inputs.get("addonName") == name:
            raw = addon.inputs.get("configurationValues")
            return dict(json.loads(str(raw))) if raw else {}
    return None


@deploy_rule(
    "network-policy-enforced",
    "https://docs.aws.amazon.com/eks/latest/userguide/cni-network-policy-configure.html",
    "an EKS stack's vpc-cni add-on runs its network policy agent, so the jobs' NetworkPolicies "
    "are enforced (catalog defaults vpc_cni_network_policy)",
)
def _network_policy(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    want = stack.defaults.vpc_cni_network_policy
    config = _addon_config(plan, "vpc-cni")
    if stack.orchestration != "eks" or config is None or not want:
        return
    missing = {k: v for k, v in want.items() if config.get(k) != v}
    if missing:
        yield (
            stack.name,
            f"the vpc-cni add-on's configuration values lack {json.dumps(missing)}: the network "
            "policy agent is off and the jobs' NetworkPolicies admit everything",
        )


#: This module's rules, in report order (the kind's RuleSet lists this tuple).
MODULE_RULES: tuple[DeployRule, ...] = (
    _hugepages,
    _controller,
    _network_policy,
)
