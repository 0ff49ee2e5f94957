"""Cluster: the EKS control plane (API auth mode, access entries, all control-plane logs,
KMS secrets encryption, private endpoint plus a public one limited to the deployer's CIDRs),
its IAM role, and the node-independent add-ons (eks-pod-identity-agent first, then vpc-cni with
its permissions through Pod Identity, kube-proxy; coredns waits for the system nodes)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from accelstack.components.addons import addon_version
from accelstack.components.common import (
    assume_role_policy,
    check_children,
    managed_policy_output,
    pod_identity_trust_output,
    short_hash,
    stable_tags,
)
from accelstack.inventory import ControlPlane, control_plane
from accelstack.resolve import Stack

LOG_TYPES = ("api", "audit", "authenticator", "controllerManager", "scheduler")
#: Add-ons that run before any node exists (coredns is in SystemNodeGroup: it needs nodes).
EARLY_ADDONS = ("vpc-cni", "kube-proxy", "eks-pod-identity-agent")
#: The Pod Identity agent, which must run before an add-on uses a Pod Identity association
#: (EKS user guide, add-ons-iam.html).
POD_IDENTITY_AGENT = "eks-pod-identity-agent"
#: vpc-cni's service account and the policy it gets through Pod Identity instead of the node
#: role (aws-node supports Pod Identity from v1.15.5; EKS user guide, add-ons-iam.html).
CNI_ADDON, CNI_SERVICE_ACCOUNT, CNI_POLICY = "vpc-cni", "aws-node", "AmazonEKS_CNI_Policy"
CLUSTER_ROLE_POLICIES = ("AmazonEKSClusterPolicy",)
ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"


def kubeconfig(cluster_name: str, endpoint: str, ca_data: str, region: str) -> str:
    """A kubeconfig that authenticates with `aws eks get-token` (no static credentials)."""
    import json

    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": cluster_name,
                "cluster": {"server": endpoint, "certificate-authority-data": ca_data},
            }
        ],
        "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": "aws"}}],
        "current-context": cluster_name,
        "users": [
            {
                "name": "aws",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "aws",
                        "args": [
                            "eks",
                            "get-token",
                            "--cluster-name",
                            cluster_name,
                            "--region",
                            region,
                            "--output",
                            "json",
                        ],
                        "interactiveMode": "Never",
                    }
                },
            }
        ],
    }
    return json.dumps(doc, indent=2, sort_keys=True)


@dataclass(frozen=True)
class ClusterArgs:
    cluster_name: str
    region: str
    #: The control plane and its secrets key as the inventory declares them (names, the
    #: Kubernetes version the cost guard prices standard or extended support by)
    declared: ControlPlane
    subnet_ids: list[pulumi.Input[str]]
    endpoint_public_access: bool = True
    public_access_cidrs: tuple[str, ...] = ()
    admin_principal_arns: tuple[str, ...] = ()
    creator_admin: bool = False
    partition: pulumi.Input[str] = "aws"
    account_id: pulumi.Input[str] = ""
    tags: dict[str, str] = field(default_factory=dict)
    support_type: str = "STANDARD"  # EKS upgrade policy
    deletion_protection: bool = True  # EKS refuses DeleteCluster while it is on
    addon_versions: dict[str, str] = field(default_factory=dict)  # catalog pins
    #: vpc-cni add-on `env` (resolve's address plan: WARM_IP_TARGET/MINIMUM_IP_TARGET for
    #: large pools); empty: the add-on's defaults
    cni_env: dict[str, str] = field(default_factory=dict)
    #: vpc-cni configuration values that turn its network policy agent on (catalog defaults
    #: vpc_cni_network_policy): the jobs' NetworkPolicies are enforced only with it
    cni_network_policy: dict[str, str] = field(default_factory=dict)
    #: the EKS node monitoring agent add-on, which feeds node auto repair (None: not installed)
    monitoring_addon: str | None = None

    @classmethod
    def from_stack(
        cls,
        stack: Stack,
        subnet_ids: list[pulumi.Input[str]],
        partition: pulumi.Input[str],
        account_id: pulumi.Input[str] = "",
    ) -> ClusterArgs:
        c = stack.access
        return cls(
            creator_admin=c.creator_admin,
            account_id=account_id,
            cluster_name=stack.name,
            region=stack.region,
            declared=control_plane(stack),
            subnet_ids=subnet_ids,
            endpoint_public_access=c.endpoint_public_access,
            public_access_cidrs=c.public_access_cidrs,
            admin_principal_arns=c.admin_principal_arns,
            partition=partition,
            tags=stable_tags(stack.tags),
            support_type=c.support_type,
            deletion_protection=c.deletion_protection,
            addon_versions=stack.addon_versions,
            cni_env=dict(stack.address_plan.cni_env),
            cni_network_policy=stack.cni_network_policy,
            monitoring_addon=stack.monitoring_addon,
        )


class Cluster(pulumi.ComponentResource):
    cluster: aws.eks.Cluster
    cluster_name: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    certificate_authority: pulumi.Output[str]
    cluster_security_group_id: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    early_addons: list[aws.eks.Addon]
    access: list[aws.eks.AccessPolicyAssociation]

    def __init__(
        self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("accelstack:cluster:Cluster", name, None, opts)
        check_children(name, *args.declared)
        child = pulumi.ResourceOptions(parent=self)
        role, attachments = _cluster_role(name, args, child)
        key = _secrets_key(name, args, self)
        cluster = _eks_cluster(name, args, role, attachments, key, self)
        #: what Kubernetes resources wait for: the admins' access (the deployer is one of them)
        self.access = [
            _admin_access(name, args, cluster, arn, self) for arn in args.admin_principal_arns
        ]
        self.early_addons = _early_addons(name, args, cluster, child)
        _monitoring_addon(name, args, cluster, child)
        self.cluster = cluster
        self.cluster_name = cluster.name
        self.endpoint = cluster.endpoint
        self.certificate_authority = cluster.certificate_authority.apply(lambda ca: ca.data or "")
        self.cluster_security_group_id = cluster.vpc_config.apply(
            lambda v: v.cluster_security_group_id or ""
        )
        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(cluster.name, cluster.endpoint, self.certificate_authority).apply(
                lambda a: kubeconfig(a[0], a[1], a[2], args.region)
            )
        )
        self.register_outputs(
            {
                "clusterName": self.cluster_name,
                "endpoint": self.endpoint,
                "kubeconfig": self.kubeconfig,
            }
        )


def _cluster_role(
    name: str, args: ClusterArgs, child: pulumi.ResourceOptions
) -> tuple[aws.iam.Role, list[aws.iam.RolePolicyAttachment]]:
    """The control plane's IAM role and its managed-policy attachments."""
    role = aws.iam.Role(
        f"{name}-role",
        assume_role_policy=assume_role_policy(
            "eks.amazonaws.com", ("sts:AssumeRole", "sts:TagSession")
        ),
        tags=args.tags,
        opts=child,
    )
    attachments = [
        aws.iam.RolePolicyAttachment(
            f"{name}-role-{p}",
            role=role.name,
            policy_arn=managed_policy_output(args.partition, p),
            opts=child,
        )
        for p in CLUSTER_ROLE_POLICIES
    ]
    return role, attachments


def _secrets_key(name: str, args: ClusterArgs, parent: pulumi.Resource) -> aws.kms.Key:
    """The protected, rotated KMS key that encrypts Kubernetes secrets."""
    declared = args.declared.secrets_key
    return aws.kms.Key(
        declared.name,
        description=f"EKS secrets encryption for {args.cluster_name}",
        enable_key_rotation=True,
        deletion_window_in_days=30,
        tags=args.tags,
        opts=pulumi.ResourceOptions(parent=parent, protect=True),
        **declared.args,
    )


def _eks_cluster(
    name: str,
    args: ClusterArgs,
    role: aws.iam.Role,
    attachments: list[aws.iam.RolePolicyAttachment],
    key: aws.kms.Key,
    parent: pulumi.Resource,
) -> aws.eks.Cluster:
    """The EKS control plane: API auth mode, all logs, secrets encryption, endpoint access."""
    declared = args.declared.cluster
    return aws.eks.Cluster(
        declared.name,
        name=args.cluster_name,
        role_arn=role.arn,
        vpc_config={
            "subnet_ids": args.subnet_ids,
            "endpoint_private_access": True,
            "endpoint_public_access": args.endpoint_public_access,
            "public_access_cidrs": list(args.public_access_cidrs)
            if args.endpoint_public_access
            else None,
        },
        access_config={
            "authentication_mode": "API",
            # only when the spec asks (cluster.creator_admin); otherwise the deploying identity
            # is one of cluster.admin_principal_arns (validation requires one or the other)
            "bootstrap_cluster_creator_admin_permissions": args.creator_admin,
        },
        bootstrap_self_managed_addons=False,
        # STANDARD: EKS upgrades the cluster when standard support ends instead of moving it
        # into paid extended support (the API default is EXTENDED); cluster.support_type
        upgrade_policy={"support_type": args.support_type},
        # the cluster holds every Kubernetes object of the stack: EKS refuses to delete it
        # while this is on (botocore eks CreateClusterRequest.deletionProtection); an in-place
        # update either way (terraform-provider-aws@v6.58.0 internal/service/eks
        # resourceClusterUpdate: updateClusterDeletionProtection; not replace-forcing in
        # catalog/provider_replacements.json)
        deletion_protection=args.deletion_protection,
        enabled_cluster_log_types=list(LOG_TYPES),
        encryption_config={"resources": ["secrets"], "provider": {"key_arn": key.arn}},
        tags=args.tags,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=attachments),
        **declared.args,
    )


def _monitoring_addon(
    name: str, args: ClusterArgs, cluster: aws.eks.Cluster, child: pulumi.ResourceOptions
) -> aws.eks.Addon | None:
    """The EKS node monitoring agent: a DaemonSet on every node (its chart tolerates every
    taint) that reports accelerator, kernel, network and storage faults as node conditions,
    which node auto repair acts on (EKS user guide, node-health)."""
    if args.monitoring_addon is None:
        return None
    return aws.eks.Addon(
        f"{name}-addon-{args.monitoring_addon}",
        cluster_name=cluster.name,
        addon_name=args.monitoring_addon,
        addon_version=addon_version(args.monitoring_addon, _k8s(args), args.addon_versions),
        resolve_conflicts_on_create="OVERWRITE",
        resolve_conflicts_on_update="OVERWRITE",
        tags=args.tags,
        opts=child,
    )


def _admin_access(
    name: str, args: ClusterArgs, cluster: aws.eks.Cluster, arn: str, parent: pulumi.Resource
) -> aws.eks.AccessPolicyAssociation:
    """An access entry for one admin principal and its cluster-admin policy association."""
    suffix = short_hash(arn)
    entry = aws.eks.AccessEntry(
        f"{name}-admin-{suffix}",
        cluster_name=cluster.name,
        principal_arn=arn,
        type="STANDARD",
        tags=args.tags,
        opts=pulumi.ResourceOptions(parent=parent),
    )
    return aws.eks.AccessPolicyAssociation(
        f"{name}-admin-{suffix}-policy",
        cluster_name=cluster.name,
        principal_arn=arn,
        policy_arn=pulumi.Output.from_input(args.partition).apply(
            lambda part: f"arn:{part}:eks::aws:cluster-access-policy/{ADMIN_POLICY}"
        ),
        access_scope={"type": "cluster"},
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[entry]),
    )


def _cni_role(
    name: str, args: ClusterArgs, cluster: aws.eks.Cluster, child: pulumi.ResourceOptions
) -> tuple[aws.iam.Role, aws.iam.RolePolicyAttachment]:
    """aws-node's role, assumed through Pod Identity (so the node role needs no CNI policy)."""
    role = aws.iam.Role(
        f"{name}-cni-role",
        assume_role_policy=pod_identity_trust_output(
            args.account_id, cluster.arn, "kube-system", CNI_SERVICE_ACCOUNT
        ),
        tags=args.tags,
        opts=child,
    )
    attachment = aws.iam.RolePolicyAttachment(
        f"{name}-cni-role-{CNI_POLICY}",
        role=role.name,
        policy_arn=managed_policy_output(args.partition, CNI_POLICY),
        opts=child,
    )
    return role, attachment


def _k8s(args: ClusterArgs) -> str:
    """The cluster's Kubernetes version (what the add-on versions follow)."""
    return str(args.declared.cluster.args.get("version") or "")


def cni_configuration(args: ClusterArgs) -> str | None:
    """vpc-cni's configuration values: the network policy agent on, and `env` (the address
    plan's WARM_IP_TARGET/MINIMUM_IP_TARGET) when it sets any; None: the add-on's defaults."""
    doc: dict[str, Any] = dict(args.cni_network_policy)
    if args.cni_env:
        doc["env"] = args.cni_env
    return json.dumps(doc, sort_keys=True) if doc else None


def _early_addons(
    name: str, args: ClusterArgs, cluster: aws.eks.Cluster, child: pulumi.ResourceOptions
) -> list[aws.eks.Addon]:
    """The add-ons that run before any node exists: the Pod Identity agent first, then
    vpc-cni bound to its role through a Pod Identity association, and kube-proxy."""
    out: dict[str, aws.eks.Addon] = {}
    for addon in sorted(EARLY_ADDONS, key=lambda a: a != POD_IDENTITY_AGENT):
        extra: dict[str, Any] = {}
        opts = child
        if addon == CNI_ADDON:
            role, attachment = _cni_role(name, args, cluster, child)
            extra["pod_identity_associations"] = [
                {"role_arn": role.arn, "service_account": CNI_SERVICE_ACCOUNT}
            ]
            config = cni_configuration(args)
            if config:
                extra["configuration_values"] = config
            opts = pulumi.ResourceOptions.merge(
                child,
                pulumi.ResourceOptions(depends_on=[out[POD_IDENTITY_AGENT], attachment]),
            )
        out[addon] = aws.eks.Addon(
            f"{name}-addon-{addon}",
            cluster_name=cluster.name,
            addon_name=addon,
            addon_version=addon_version(addon, _k8s(args), args.addon_versions),
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            tags=args.tags,
            opts=opts,
            **extra,
        )
    return [out[a] for a in EARLY_ADDONS]
