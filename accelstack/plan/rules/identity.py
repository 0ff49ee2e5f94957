"""Deploy rules: what a pod can become: IMDS hop limit, the CNI's
permissions, Pod Identity trust, cluster-creator admin."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from accelstack.plan.document import Plan
from accelstack.plan.rules.nodegroups import launch_template_of
from accelstack.plan.rules.registry import DeployRule, deploy_rule, ref
from accelstack.tokens import ADDON, CLUSTER, NODE_GROUP, ROLE
from accelstack.tokens import POD_IDENTITY_ASSOCIATION as ASSOCIATION
from accelstack.tokens import ROLE_POLICY_ATTACHMENT as ATTACHMENT

if TYPE_CHECKING:
    from accelstack.resolve import Stack

POD_IDENTITY = "pods.eks.amazonaws.com"
CNI_POLICY = "AmazonEKS_CNI_Policy"


def trust(role_inputs: dict[str, Any]) -> dict[str, Any]:
    doc = role_inputs.get("assumeRolePolicy")
    if isinstance(doc, str):
        try:
            parsed = json.loads(doc)
        except ValueError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return doc if isinstance(doc, dict) else {}


def trusted_services(role_inputs: dict[str, Any]) -> set[str]:
    out: set[str] = set()
    for st in trust(role_inputs).get("Statement") or []:
        svc = (st.get("Principal") or {}).get("Service")
        out.update([svc] if isinstance(svc, str) else list(svc or []))
    return out


@deploy_rule(
    "imds-hop-limit-1",
    "https://docs.aws.amazon.com/eks/latest/best-practices/identity-and-access-management.html",
    "EKS node launch templates require IMDSv2 with hop limit 1, so pods cannot take the node role",
)
def _hop_limit(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    for ng in plan.of_type(NODE_GROUP):
        lt = launch_template_of(plan, ng)
        if lt is None:
            continue
        md = lt.inputs.get("metadataOptions") or {}
        if md.get("httpTokens") != "required" or md.get("httpPutResponseHopLimit") != 1:
            yield (
                ref(lt),
                f"metadataOptions httpTokens={md.get('httpTokens')!r} hop limit="
                f"{md.get('httpPutResponseHopLimit')!r}: any pod can read the node role's "
                "credentials; require IMDSv2 with hop limit 1",
            )


@deploy_rule(
    "cni-through-pod-identity",
    "https://docs.aws.amazon.com/eks/latest/userguide/add-ons-iam.html",
    "aws-node (vpc-cni) gets AmazonEKS_CNI_Policy through Pod Identity, never through the node role",
)
def _cni(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    roles = {r.name: r for r in plan.of_type(ROLE)}
    for a in plan.of_type(ATTACHMENT):
        if not str(a.inputs.get("policyArn", "")).endswith(f"/{CNI_POLICY}"):
            continue
        role_input = a.inputs.get("role")
        for name, role in roles.items():
            named = role_input in (name, role.inputs.get("name"))
            if not (name in a.depends_on or named):
                continue
            if "ec2.amazonaws.com" in trusted_services(role.inputs):
                yield (
                    ref(a),
                    f"gives the node role {name} {CNI_POLICY}; bind it to aws-node "
                    "through a Pod Identity association instead",
                )
    bound = any(
        r.inputs.get("namespace") == "kube-system" and r.inputs.get("serviceAccount") == "aws-node"
        for r in plan.of_type(ASSOCIATION)
    )
    for addon in plan.of_type(ADDON):
        if addon.inputs.get("addonName") != "vpc-cni" or bound:
            continue
        assocs = addon.inputs.get("podIdentityAssociations") or []
        if not any(x.get("serviceAccount") == "aws-node" for x in assocs):
            yield (
                ref(addon),
                "has no Pod Identity association for aws-node: the CNI has no "
                "permissions once the node role loses the CNI policy",
            )


@deploy_rule(
    "pod-identity-trust-conditions",
    "https://docs.aws.amazon.com/IAM/latest/UserGuide/confused-deputy.html",
    "Pod Identity roles trust pods.eks.amazonaws.com only with aws:SourceAccount and "
    "aws:SourceArn conditions (confused-deputy protection)",
)
def _trust_conditions(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    for role in plan.of_type(ROLE):
        for st in trust(role.inputs).get("Statement") or []:
            svc = (st.get("Principal") or {}).get("Service")
            if POD_IDENTITY not in ([svc] if isinstance(svc, str) else list(svc or [])):
                continue
            keys = {k for op in (st.get("Condition") or {}).values() for k in op}
            missing = sorted({"aws:SourceAccount", "aws:SourceArn"} - keys)
            if missing:
                yield (
                    ref(role),
                    f"trusts {POD_IDENTITY} without {', '.join(missing)} "
                    "conditions: any account's cluster could be the deputy",
                )


@deploy_rule(
    "cluster-creator-admin-explicit",
    "https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateAccessConfigRequest.html",
    "the cluster creator gets cluster-admin only when the spec asks (cluster.creator_admin); "
    "the API default is true",
)
def _creator_admin(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    wanted = stack.cluster.creator_admin
    for c in plan.of_type(CLUSTER):
        got = (c.inputs.get("accessConfig") or {}).get("bootstrapClusterCreatorAdminPermissions")
        if got is not wanted:
            yield (
                ref(c),
                f"bootstrapClusterCreatorAdminPermissions is {got!r} but "
                f"cluster.creator_admin is {wanted}: set it explicitly from the spec",
            )


#: This module's rules, in report order (the kind's RuleSet lists this tuple).
MODULE_RULES: tuple[DeployRule, ...] = (
    _hop_limit,
    _cni,
    _trust_conditions,
    _creator_admin,
)
