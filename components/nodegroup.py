"""AcceleratorNodeGroup (one per pool) and SystemNodeGroup (CPU nodes for cluster add-ons).

The names and priced inputs of the launch templates and node groups (instance types, capacity
type, size, labels, root volume) are the inventory's records (`accelstack.inventory`, what the
cost guard prices); every other fact comes from `ResolvedPool`: EFA interface count and style,
placement group, zone, device kind (AMI variant, taint). Nothing here tests an instance-type
string.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from accelstack import naming
from accelstack.catalog.resilience import NodeGroupUpdateFacts
from accelstack.catalog.scale import NodeGroupPart
from accelstack.components.addons import addon_version
from accelstack.components.amis import image_id
from accelstack.components.common import (
    assume_role_policy,
    check_children,
    managed_policy_output,
    policy_json,
    short_hash,
    stable_tags,
)
from accelstack.inventory import Billable, NodeGroups, node_labels, pool_node_groups
from accelstack.inventory import system_node_group as system_billables
from accelstack.resolve import ResolvedPool, Stack

#: The node role: no AmazonEKS_CNI_Policy (aws-node gets it through Pod Identity, see
#: cluster.py), so a pod that reaches IMDS anyway cannot manage ENIs with the node's role.
NODE_ROLE_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEC2ContainerRegistryReadOnly",
    "AmazonSSMManagedInstanceCore",
)
#: EKS node-group taint effects (API enum) by Kubernetes effect.
TAINT_EFFECTS = {
    "NoSchedule": "NO_SCHEDULE",
    "NoExecute": "NO_EXECUTE",
    "PreferNoSchedule": "PREFER_NO_SCHEDULE",
}
IMDS: Any = {
    "http_endpoint": "enabled",
    "http_tokens": "required",
    "http_put_response_hop_limit": 2,
}
#: EKS nodes: IMDSv2 with hop limit 1, so pods (not on the host network) cannot reach the node
#: role (EKS best practices, "Restrict access to the instance profile assigned to the worker
#: node"). The device plugins need no IMDS: NVIDIA and Neuron use no AWS credentials, EFA runs
#: on the host network (docs/plan.md).
EKS_NODE_IMDS: Any = {**IMDS, "http_put_response_hop_limit": 1}
#: Nothing ignored: the spec owns every node group's size (no autoscaler runs), so a resize is
#: one UpdateNodegroupConfig with the new min, desired and max together. Ignoring
#: `scalingConfig.desiredSize` (as terraform-aws-eks does for autoscaled groups) would send the
#: stored desired size with the new min and max, which EKS refuses on a fixed-size group
#: ("Minimum capacity N can't be greater than desired size M": terraform-aws-eks issues #748,
#: #2508, #3306) and never reaches a grown size (accelstack/plan/updates.py; docs/day2.md).
NODE_GROUP_IGNORE: list[str] = []


# ---------------------------------------------------------------------------------------
# Pure helpers
# ---------------------------------------------------------------------------------------


def efa_network_interfaces(pool: ResolvedPool) -> list[Any]:
    """One interface per network card: card 0 is device index 0 type 'efa'; the others are
    device index 1 with the pool's interface style ('efa' or 'efa-only'). Empty without EFA.
    No subnet here: EKS managed node groups take the subnet from the node group."""
    return [
        {
            "network_card_index": card,
            "device_index": 0 if card == 0 else 1,
            "interface_type": "efa" if card == 0 else pool.efa_interface_style,
            "delete_on_termination": "true",
        }
        for card in range(pool.efa_interfaces)
    ]


def registration_labels(pool: ResolvedPool) -> dict[str, str]:
    """The labels a node registers with (nodeadm user data): the pool's own (pool, device
    kind, EFA) and, with `labels_at_boot` (spec pools[].labels_at_boot), its scheduling labels
    (resolve's `scheduling_labels`: the device-plugin chart's affinity label such as
    nvidia.com/gpu.present, the Neuron allocation mode), which the device plugins' and DRA
    driver's node selectors need: with a custom AMI, EKS applies the node group's `labels`
    asynchronously (EKS launch-templates guide), so without them a node's plugin starts once
    EKS has labelled it. Opt-in because the user data is the launch template's: turning it on
    rolls the pool once, so upgrading accelstack rolls no node of a spec written before it.
    Every other label (anything added later) is only in the node group's `labels`, which EKS
    applies in place (EKS API UpdateNodegroupConfig), so such an edit never creates a
    launch-template version and never rolls a node."""
    return node_labels(pool, pool.scheduling_labels if pool.labels_at_boot else {})


def update_config(pool: ResolvedPool, facts: NodeGroupUpdateFacts, nodes: int | None = None) -> Any:
    """Nodes replaced in parallel during a version update, sized to the node group (`nodes`,
    default the pool's running nodes); MINIMAL (old nodes go before new ones launch) where the
    capacity is held for the pool, which has no room for DEFAULT's surge nodes (EKS API
    NodegroupUpdateConfig)."""
    running = pool.running_nodes if nodes is None else nodes
    out: dict[str, Any] = {"max_unavailable": facts.max_unavailable(running)}
    if pool.reserved_capacity:
        out["update_strategy"] = facts.reserved_capacity_strategy
    return out


def node_group_timeouts(
    pool: ResolvedPool,
    facts: NodeGroupUpdateFacts,
    nodes: int | None = None,
    step_minutes: int = 0,
) -> pulumi.CustomTimeouts:
    """Create long enough for the group's creation step (`step_minutes`, the stack profile's:
    launch-bucket wait plus boot and join), never below the provider default; delete at the
    default; update long enough for every batch of the node group (`nodes`, default the pool's
    running nodes)."""
    running = pool.running_nodes if nodes is None else nodes
    default = f"{facts.provider_default_minutes}m"
    create = f"{max(facts.provider_default_minutes, step_minutes)}m"
    return pulumi.CustomTimeouts(
        create=create, update=f"{facts.update_minutes(running)}m", delete=default
    )


def node_taints(pool: ResolvedPool) -> list[Any]:
    t = pool.device.taint
    if t is None:
        return []
    return [{"key": t.key, "value": t.value, "effect": TAINT_EFFECTS[t.effect]}]


def capacity_reservation(pool: ResolvedPool, reservation_id: str | None = None) -> Any:
    """The launch template's reservation target: `reservation_id` (one of the pool's
    reservations, per node group) or the pool's first."""
    rid = reservation_id or pool.reservation_id
    if rid is None:
        return None
    return {"capacity_reservation_target": {"capacity_reservation_id": rid}}


def market_options(pool: ResolvedPool) -> Any:
    market = pool.purchase.launch_market
    return {"market_type": market} if market else None


def nodeadm_user_data(
    cluster_name: str,
    endpoint: str,
    ca_data: str,
    service_cidr: str,
    labels: dict[str, str],
    taints: list[dict[str, str]],
    node_setup: str | None = None,
    local_storage: str | None = None,
) -> str:
    """MIME user data with an AL2023 nodeadm NodeConfig (needed with a custom AMI), plus an
    optional shell part for node-level settings (e.g. a non-default Neuron LNC).
    `local_storage`: nodeadm's instance-store strategy (RAID0: containerd and kubelet on one
    array of the NVMe disks); None leaves them on the root volume."""
    inv = {v: k for k, v in TAINT_EFFECTS.items()}
    flags = ["--node-labels=" + ",".join(f"{k}={v}" for k, v in sorted(labels.items()))]
    if taints:
        flags.append(
            "--register-with-taints="
            + ",".join(f"{t['key']}={t['value']}:{inv[t['effect']]}" for t in taints)
        )
    node_config: dict[str, Any] = {
        "apiVersion": "node.eks.aws/v1alpha1",
        "kind": "NodeConfig",
        "spec": {
            "cluster": {
                "name": cluster_name,
                "apiServerEndpoint": endpoint,
                "certificateAuthority": ca_data,
                "cidr": service_cidr,
            },
            "kubelet": {"flags": flags},
        },
    }
    if local_storage is not None:
        node_config["spec"]["instance"] = {"localStorage": {"strategy": local_storage}}
    boundary = "ACCELSTACK"
    shell = (
        f"--{boundary}\nContent-Type: text/x-shellscript\n\n#!/bin/bash\nset -eu\n{node_setup}\n"
        if node_setup
        else ""
    )
    return (
        f'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="{boundary}"\n\n'
        f"--{boundary}\nContent-Type: application/node.eks.aws\n\n"
        f"{json.dumps(node_config, sort_keys=True, indent=2)}\n\n{shell}--{boundary}--\n"
    )


def lnc_setup(pool: ResolvedPool) -> str | None:
    """The shell lines that write a pool's non-default Neuron LNC into the device kind's node
    file, which the Neuron device plugin and runtime read (Neuron EKS docs: user data writes
    NEURON_LOGICAL_NC_CONFIG into /opt/aws/neuron/logical_nc_config); None at the default."""
    if pool.node_lnc_setting is None or pool.device.node_lnc_file is None:
        return None
    lnc_file = pool.device.node_lnc_file
    return (
        f"install -d -m 0755 {lnc_file.rsplit('/', 1)[0]}\n"
        f"echo {pool.node_lnc_setting} > {lnc_file}"
    )


def hugepages_setup(pages: int) -> str | None:
    """Shell lines that allocate `pages` 2 MiB huge pages before the kubelet starts, so it
    reports them as hugepages-2Mi capacity (Kubernetes docs, "Manage HugePages": nodes must
    pre-allocate huge pages; kernel admin guide hugetlbpage: vm.nr_hugepages is the persistent
    pool). The sysctl file keeps the setting across reboots; never lowers a larger pool."""
    if pages <= 0:
        return None
    return (
        f"echo 'vm.nr_hugepages = {pages}' > /etc/sysctl.d/90-accelstack-efa-hugepages.conf\n"
        f"if (( $(cat /proc/sys/vm/nr_hugepages) < {pages} )); then "
        f"sysctl -w vm.nr_hugepages={pages}; fi"
    )


def node_setup(args: AcceleratorNodeGroupArgs) -> str | None:
    """The shell part of the pool's user data: LNC file and huge pages, as needed."""
    parts = [p for p in (lnc_setup(args.pool), hugepages_setup(args.hugepages_2mi)) if p]
    return "\n".join(parts) or None


def allow_all_within(
    prefix: str,
    security_group_id: pulumi.Input[str],
    opts: pulumi.ResourceOptions,
    descriptions: tuple[str, str],
) -> None:
    """All traffic from a security group to itself, ingress AND egress: EFA needs both, and a
    missing self-egress rule is the classic silent EFA failure. `{prefix}-self-ingress` and
    `{prefix}-self-egress`; descriptions are (ingress, egress)."""
    aws.vpc.SecurityGroupIngressRule(
        f"{prefix}-self-ingress",
        security_group_id=security_group_id,
        ip_protocol="-1",
        referenced_security_group_id=security_group_id,
        description=descriptions[0],
        opts=opts,
    )
    aws.vpc.SecurityGroupEgressRule(
        f"{prefix}-self-egress",
        security_group_id=security_group_id,
        ip_protocol="-1",
        referenced_security_group_id=security_group_id,
        description=descriptions[1],
        opts=opts,
    )


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@dataclass(frozen=True)
class ClusterRef:
    """What node groups need from the cluster."""

    name: pulumi.Input[str]
    endpoint: pulumi.Input[str]
    certificate_authority: pulumi.Input[str]
    service_cidr: pulumi.Input[str]
    security_group_id: pulumi.Input[str]
    vpc_id: pulumi.Input[str]
    partition: pulumi.Input[str] = "aws"
    depends_on: list[pulumi.Resource] = field(default_factory=list)
    #: The repositories of the stack's ECR pull-through cache rules (`<prefix>/*` ARNs) and
    #: the actions a node needs on them to pull through the cache (inventory
    #: registry_cache_actions); none without the private registry path
    cache_repositories: list[pulumi.Input[str]] = field(default_factory=list)
    cache_actions: tuple[str, ...] = ()


def _node_role(
    owner: pulumi.Resource, name: str, cluster: ClusterRef, tags: dict[str, str]
) -> tuple[aws.iam.Role, list[pulumi.Resource]]:
    partition = cluster.partition
    child = pulumi.ResourceOptions(parent=owner)
    role = aws.iam.Role(
        f"{name}-node-role",
        assume_role_policy=assume_role_policy("ec2.amazonaws.com"),
        tags=tags,
        opts=child,
    )
    attachments: list[pulumi.Resource] = [
        aws.iam.RolePolicyAttachment(
            f"{name}-node-role-{p}",
            role=role.name,
            policy_arn=managed_policy_output(partition, p),
            opts=child,
        )
        for p in NODE_ROLE_POLICIES
    ]
    if cluster.cache_actions and cluster.cache_repositories:
        attachments.append(_pull_through_policy(owner, name, role, cluster))
    return role, attachments


def _pull_through_policy(
    owner: pulumi.Resource, name: str, role: aws.iam.Role, cluster: ClusterRef
) -> aws.iam.RolePolicy:
    """The node role pulls through the stack's ECR cache rules: import the upstream image and
    create the cache repository on first pull, on the rules' repositories only
    (https://docs.aws.amazon.com/AmazonECR/latest/userguide/pull-through-cache-iam.html)."""
    doc = pulumi.Output.all(*cluster.cache_repositories).apply(
        lambda arns: policy_json(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Sid": "PullThroughCache",
                        "Effect": "Allow",
                        "Action": sorted(cluster.cache_actions),
                        "Resource": sorted(str(a) for a in arns),
                    }
                ],
            }
        )
    )
    return aws.iam.RolePolicy(
        f"{name}-node-role-pull-through",
        role=role.id,
        policy=doc,
        opts=pulumi.ResourceOptions(parent=owner),
    )


def _tag_specs(tags: dict[str, str], name: str) -> list[Any]:
    full = {**tags, "Name": name}
    return [{"resource_type": r, "tags": full} for r in ("instance", "volume", "network-interface")]


# ---------------------------------------------------------------------------------------
# AcceleratorNodeGroup
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AcceleratorNodeGroupArgs:
    pool: ResolvedPool
    kubernetes_version: str
    cluster: ClusterRef
    subnet_id: pulumi.Input[str]
    #: The pool's launch templates and node groups: names and priced inputs (inventory)
    groups: NodeGroups
    tags: dict[str, str] = field(default_factory=dict)  # stable tags for resource inputs
    instance_tags: dict[str, str] = field(default_factory=dict)  # all tags, for instances
    hugepages_2mi: int = 0  # 2 MiB huge pages the node allocates for EFA (launch.yaml pods)
    #: The zone's subnet in the secondary CIDR, for the node groups the address plan puts there
    secondary_subnet_id: pulumi.Input[str] | None = None
    update: NodeGroupUpdateFacts | None = None  # None: one node at a time, provider timeouts
    node_repair: bool = False  # nodeRepairConfig.enabled (fed by the node monitoring agent)
    #: Node groups already declared (earlier pools), by creation step: a group of step k waits
    #: for every group of step k-1 (resolve's ClusterProfile staging)
    earlier_steps: Mapping[int, Sequence[pulumi.Resource]] = field(default_factory=dict)
    step_minutes: int = 0  # minutes one creation step takes (ClusterProfile)

    @classmethod
    def from_stack(
        cls,
        stack: Stack,
        pool: ResolvedPool,
        cluster: ClusterRef,
        subnet_id: pulumi.Input[str],
        secondary_subnet_id: pulumi.Input[str] | None = None,
        earlier_steps: Mapping[int, Sequence[pulumi.Resource]] | None = None,
    ) -> AcceleratorNodeGroupArgs:
        return cls(
            pool=pool,
            kubernetes_version=stack.kubernetes_version,
            cluster=cluster,
            subnet_id=subnet_id,
            secondary_subnet_id=secondary_subnet_id,
            groups=pool_node_groups(stack, pool),
            tags=stable_tags(stack.tags),
            instance_tags=stack.tags,
            hugepages_2mi=pool.hugepages_2mi,
            update=stack.node_group_update,
            node_repair=stack.node_repair,
            earlier_steps=dict(earlier_steps or {}),
            step_minutes=stack.profile.step_minutes,
        )


class AcceleratorNodeGroup(pulumi.ComponentResource):
    node_group: aws.eks.NodeGroup  # the first of `node_groups`
    node_groups: list[aws.eks.NodeGroup]  # one per `pool.node_groups` part
    node_group_name: pulumi.Output[str]
    security_group_id: pulumi.Output[str] | None
    node_role_arn: pulumi.Output[str]

    def __init__(
        self, name: str, args: AcceleratorNodeGroupArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("accelstack:nodegroup:AcceleratorNodeGroup", name, None, opts)
        check_children(name, *args.groups)
        role, attachments = _node_role(self, name, args.cluster, args.tags)
        ami = image_id(self, args.pool)  # the AMI pinned in the stack config
        security_groups: list[pulumi.Input[str]] = [args.cluster.security_group_id]
        efa_sg = _efa_security_group(self, name, args)
        self.security_group_id = None
        if efa_sg is not None:
            security_groups.append(efa_sg.id)
            self.security_group_id = efa_sg.id
        parts = args.pool.node_groups
        # each launch template targets the reservation of the first node group launching from it
        reservation = {p.launch_template: p.reservation_id for p in reversed(parts)}
        shared = _shared_template_inputs(args, security_groups)
        lts = {  # one per reservation behind the pool, or per placement group of a large pool
            role: _pool_launch_template(self, name, args, ami, shared, lt, reservation[role], role)
            for role, lt in args.groups.launch_templates.items()
        }
        by_step: dict[int, list[pulumi.Resource]] = {
            k: list(v) for k, v in args.earlier_steps.items()
        }
        self.node_groups = []
        for p, declared in zip(parts, args.groups.node_groups, strict=True):
            after = by_step.get(p.step - 1, [])
            group = _pool_node_group(
                self, args, role.arn, [*attachments, *after], lts[p.launch_template], p, declared
            )
            self.node_groups.append(group)
            by_step.setdefault(p.step, []).append(group)
        for i, group in enumerate(self.node_groups):  # the first keeps its tags' names
            owner = name if i == 0 else f"{name}-{args.pool.node_groups[i].role}"
            propagated_tags(self, owner, group, args.instance_tags)
        ng = self.node_group = self.node_groups[0]
        self.node_group_name = ng.node_group_name
        self.node_role_arn = role.arn
        self.register_outputs({"nodeGroupName": self.node_group_name})


def _efa_security_group(
    parent: pulumi.Resource, name: str, args: AcceleratorNodeGroupArgs
) -> aws.ec2.SecurityGroup | None:
    """For an EFA pool: a security group that allows all traffic between the pool's nodes."""
    if not args.pool.efa:
        return None
    child = pulumi.ResourceOptions(parent=parent)
    sg = aws.ec2.SecurityGroup(
        f"{name}-efa-sg",
        vpc_id=args.cluster.vpc_id,
        description=f"EFA traffic between {args.pool.name} nodes (self only)",
        tags={**args.tags, "Name": f"{name}-efa"},
        opts=child,
    )
    allow_all_within(f"{name}-efa", sg.id, child, ("EFA: all from self", "EFA: all to self"))
    return sg


def _placement(
    parent: pulumi.Resource, name: str, pool: ResolvedPool, tags: dict[str, str], lt_role: str
) -> Any:
    """The existing placement group the pool's reservation lives in, or, when
    `pool.placement_group`, a cluster placement group for the launch template `lt_role`:
    `<pool>-pg` for `lt`, `<pool>-pg-<n>` for `lt-<n>` (resolve gives each launch bucket's
    node groups of a large pool a launch template of their own, scale.yaml placement)."""
    if pool.placement_group_name is not None:
        return {"group_name": pool.placement_group_name}
    if not pool.placement_group:
        return None
    pg = aws.ec2.PlacementGroup(
        naming.placement_group(name, lt_role),
        strategy="cluster",
        tags=tags,
        opts=pulumi.ResourceOptions(parent=parent),
    )
    return {"group_name": pg.name}


@dataclass(frozen=True)
class _TemplateInputs:
    """What every launch template of a pool carries alike, built once per pool."""

    user_data: pulumi.Output[str]
    #: the EFA interfaces with their security groups (None without EFA)
    interfaces: pulumi.Output[list[Any]] | None
    security_groups: list[pulumi.Input[str]]


def _shared_template_inputs(
    args: AcceleratorNodeGroupArgs, security_groups: list[pulumi.Input[str]]
) -> _TemplateInputs:
    """The pool's nodeadm user data and EFA interfaces, each one Output for all of the pool's
    launch templates (a large pool has one per placement group)."""
    pool, c = args.pool, args.cluster
    labels, taints = registration_labels(pool), node_taints(pool)
    user_data = pulumi.Output.all(
        c.name, c.endpoint, c.certificate_authority, c.service_cidr
    ).apply(
        lambda a: _b64(
            nodeadm_user_data(
                a[0], a[1], a[2], a[3], labels, taints, node_setup(args), pool.local_storage
            )
        )
    )
    nics = efa_network_interfaces(pool)
    interfaces = (
        pulumi.Output.all(*security_groups).apply(
            lambda ids: [{**nic, "security_groups": list(ids)} for nic in nics]
        )
        if nics
        else None
    )
    return _TemplateInputs(user_data, interfaces, security_groups)


def _pool_launch_template(
    parent: pulumi.Resource,
    name: str,
    args: AcceleratorNodeGroupArgs,
    ami: pulumi.Input[str],
    shared: _TemplateInputs,
    declared: Billable,
    reservation_id: str | None,
    lt_role: str,
) -> aws.ec2.LaunchTemplate:
    """One of the pool's launch templates (one per reservation behind the pool, or per
    placement group of a large pool): its name and priced inputs (root volume, a Capacity
    Block's instance type) as the inventory declares them, plus the EKS AMI, the pool's
    nodeadm user data and EFA interfaces, its placement and the reservation."""
    pool = args.pool
    placement = _placement(parent, name, pool, args.tags, lt_role)
    interfaces = shared.interfaces
    return aws.ec2.LaunchTemplate(
        declared.name,
        description=f"accelstack pool {pool.name}",
        image_id=ami,
        user_data=shared.user_data,
        update_default_version=True,
        metadata_options=EKS_NODE_IMDS,
        network_interfaces=interfaces,
        vpc_security_group_ids=None if interfaces is not None else shared.security_groups,
        placement=placement,
        capacity_reservation_specification=capacity_reservation(pool, reservation_id),
        instance_market_options=market_options(pool),
        # stable tags only: a tag_specifications edit creates a version, which rolls every
        # node (terraform-provider-aws ec2_launch_template.go; EKS launch-templates guide);
        # user tags reach instances through the group's propagated tags instead
        tag_specifications=_tag_specs(args.tags, f"{name}"),
        tags=args.tags,
        opts=pulumi.ResourceOptions(parent=parent),
        **declared.args,
    )


def _pool_node_group(
    parent: pulumi.Resource,
    args: AcceleratorNodeGroupArgs,
    role_arn: pulumi.Input[str],
    attachments: list[pulumi.Resource],
    lt: aws.ec2.LaunchTemplate,
    part: NodeGroupPart,
    declared: Billable,
) -> aws.eks.NodeGroup:
    """One managed node group of the pool (`part`, from resolve): name, instance types,
    capacity type, size and labels as the inventory declares them (`declared`: what the cost
    guard prices), from the pool's launch template, in the subnet the address plan gives it;
    auto repair, update batches and timeouts sized to it (resilience.yaml)."""
    pool, c = args.pool, args.cluster
    subnet = args.subnet_id if part.subnet == "primary" else args.secondary_subnet_id
    if subnet is None:
        raise ValueError(f"pool {pool.name}: node group {part.role} needs the secondary subnet")
    facts = args.update
    repair: Any = {"enabled": True} if args.node_repair else None
    upd: Any = update_config(pool, facts, part.nodes) if facts else {"max_unavailable": 1}
    return aws.eks.NodeGroup(
        declared.name,
        cluster_name=c.name,
        node_role_arn=role_arn,
        subnet_ids=[subnet],
        update_config=upd,
        node_repair_config=repair,
        launch_template={"id": lt.id, "version": lt.latest_version.apply(str)},
        taints=node_taints(pool) or None,
        tags=args.tags,
        opts=pulumi.ResourceOptions(
            parent=parent,
            depends_on=[*attachments, *c.depends_on],
            ignore_changes=NODE_GROUP_IGNORE,
            custom_timeouts=(
                node_group_timeouts(pool, facts, part.nodes, args.step_minutes) if facts else None
            ),
        ),
        **declared.args,
    )


def _asg_name(resources: Any) -> str:
    """The name of the node group's Auto Scaling group (EKS creates one per group)."""
    return str(resources[0].autoscaling_groups[0].name)


def propagated_tags(
    parent: pulumi.Resource, name: str, ng: aws.eks.NodeGroup, tags: dict[str, str]
) -> None:
    """The user tags (those beyond the stable ones) on the node group's Auto Scaling group,
    propagated to the instances it launches: EKS does not pass node-group tags to instances,
    and putting them in the launch template would make a tag edit roll the pool. Named by a
    hash of the key, so editing a value updates one tag in place. Running nodes keep the
    tags they launched with until they are replaced."""
    asg = ng.resources.apply(_asg_name)
    stable = stable_tags(tags)
    for key in sorted(k for k in tags if k not in stable):
        aws.autoscaling.Tag(
            naming.asg_tag(name, short_hash(key)),
            autoscaling_group_name=asg,
            tag={"key": key, "value": tags[key], "propagate_at_launch": True},
            opts=pulumi.ResourceOptions(parent=parent),
        )


# ---------------------------------------------------------------------------------------
# SystemNodeGroup (+ coredns, which needs nodes to become active)
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SystemNodeGroupArgs:
    cluster: ClusterRef
    subnet_ids: list[pulumi.Input[str]]
    #: The launch template and node group: names and priced inputs (inventory)
    groups: NodeGroups
    tags: dict[str, str] = field(default_factory=dict)
    instance_tags: dict[str, str] = field(default_factory=dict)
    addon_versions: dict[str, str] = field(default_factory=dict)  # catalog pins
    kubernetes_version: str = ""  # what coredns's version follows (components/addons.py)

    @classmethod
    def from_stack(
        cls, stack: Stack, cluster: ClusterRef, subnet_ids: list[pulumi.Input[str]]
    ) -> SystemNodeGroupArgs:
        return cls(
            cluster=cluster,
            subnet_ids=subnet_ids,
            groups=system_billables(stack),
            tags=stable_tags(stack.tags),
            instance_tags=stack.tags,
            addon_versions=stack.addon_versions,
            kubernetes_version=stack.kubernetes_version,
        )


class SystemNodeGroup(pulumi.ComponentResource):
    node_group: aws.eks.NodeGroup
    node_group_name: pulumi.Output[str]

    def __init__(
        self, name: str, args: SystemNodeGroupArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("accelstack:nodegroup:SystemNodeGroup", name, None, opts)
        check_children(name, *args.groups)
        c = args.cluster
        role, attachments = _node_role(self, name, c, args.tags)
        (declared_lt,) = args.groups.launch_templates.values()
        (declared_ng,) = args.groups.node_groups
        lt = aws.ec2.LaunchTemplate(
            declared_lt.name,
            description="accelstack system nodes",
            update_default_version=True,
            metadata_options=EKS_NODE_IMDS,
            tag_specifications=_tag_specs(args.tags, name),
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self),
            **declared_lt.args,
        )
        ng = aws.eks.NodeGroup(
            declared_ng.name,
            cluster_name=c.name,
            node_role_arn=role.arn,
            subnet_ids=args.subnet_ids,
            ami_type="AL2023_x86_64_STANDARD",
            update_config={"max_unavailable": 1},
            launch_template={"id": lt.id, "version": lt.latest_version.apply(str)},
            tags=args.tags,
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[*attachments, *c.depends_on],
                ignore_changes=NODE_GROUP_IGNORE,
            ),
            **declared_ng.args,
        )
        propagated_tags(self, name, ng, args.instance_tags)
        aws.eks.Addon(
            f"{name}-addon-coredns",
            cluster_name=c.name,
            addon_name="coredns",
            addon_version=addon_version("coredns", args.kubernetes_version, args.addon_versions),
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[ng]),
        )
        self.node_group = ng
        self.node_group_name = ng.node_group_name
        self.register_outputs({"nodeGroupName": self.node_group_name})
