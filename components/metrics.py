"""Metrics: the Amazon CloudWatch Observability EKS add-on (Container Insights with enhanced
observability: NVIDIA GPU, Neuron and EFA metrics, per node and per pod), its agent bound through
EKS Pod Identity to a role with CloudWatchAgentServerPolicy. On by default; `jobs.metrics: false`
leaves it out. Facts (add-on name, namespace, service account, policy) are the catalog's
`metrics_addon` row with sources; its price is a line item of the cost report."""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from accelstack import naming
from accelstack.catalog import MetricsAddon
from accelstack.components.addons import addon_version
from accelstack.components.common import (
    check_children,
    managed_policy_output,
    pod_identity_trust_output,
)
from accelstack.inventory import Billable, metrics_addon
from accelstack.resolve import Stack


@dataclass(frozen=True)
class MetricsArgs:
    addon: MetricsAddon
    #: The add-on as the inventory declares it (name; billed per node by the cost guard)
    declared: Billable
    cluster_name: pulumi.Input[str]
    cluster_arn: pulumi.Input[str]
    account_id: pulumi.Input[str]
    partition: pulumi.Input[str]
    depends_on: list[pulumi.Resource] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)
    kubernetes_version: str = ""  # what the add-on's version follows (addons.py)
    addon_versions: dict[str, str] = field(default_factory=dict)  # catalog pins

    @classmethod
    def from_stack(
        cls,
        stack: Stack,
        cluster_name: pulumi.Input[str],
        cluster_arn: pulumi.Input[str],
        account_id: pulumi.Input[str],
        partition: pulumi.Input[str],
        depends_on: list[pulumi.Resource],
    ) -> MetricsArgs | None:
        addon, declared = stack.metrics_addon, metrics_addon(stack)
        if addon is None or declared is None:
            return None
        return cls(
            addon=addon,
            declared=declared,
            cluster_name=cluster_name,
            cluster_arn=cluster_arn,
            account_id=account_id,
            partition=partition,
            depends_on=depends_on,
            tags=naming.stable_tags(stack.tags),
            kubernetes_version=stack.kubernetes_version,
            addon_versions=stack.addon_versions,
        )


class Metrics(pulumi.ComponentResource):
    def __init__(
        self, name: str, args: MetricsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("accelstack:metrics:Metrics", name, None, opts)
        check_children(name, args.declared)
        child = pulumi.ResourceOptions(parent=self)
        a = args.addon
        role = aws.iam.Role(
            f"{name}-role",  # short: with a 40-character stack name and Pulumi's suffix, 61
            assume_role_policy=pod_identity_trust_output(
                args.account_id, args.cluster_arn, a.namespace, a.service_account
            ),
            tags=args.tags,
            opts=child,
        )
        attachment = aws.iam.RolePolicyAttachment(
            f"{name}-role-{a.policy}",
            role=role.name,
            policy_arn=managed_policy_output(args.partition, a.policy),
            opts=child,
        )
        self.addon = aws.eks.Addon(
            args.declared.name,
            cluster_name=args.cluster_name,
            pod_identity_associations=[
                {"role_arn": role.arn, "service_account": a.service_account}
            ],
            addon_version=addon_version(a.addon_name, args.kubernetes_version, args.addon_versions),
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[attachment, *args.depends_on]),
            **args.declared.args,
        )
        self.register_outputs({"addon": a.addon_name})
