"""The billable resources a stack declares, derived once from the resolved `Stack`.

A `Billable` is one resource the program creates that AWS charges for, or whose inputs set
such a charge (a node group's launch template holds its root volumes): its Pulumi type token,
its logical name, its parent component, and `args`, the inputs its price depends on, in the
Python SDK's snake_case form. The components create these resources under these names from
these args; the cost guard prices the same records (`Billable.inputs`: the args as a plan
records them, camelCase) with the rules that price a real plan. So `plan`/`check`, which price
the planned resources, and the deploy-time guard, which has no plan, give the same figure by
construction; tests/test_inventory.py holds every preset's plan to the records.

`billables(stack)` lists them in the cost report's order. Pure: no pulumi, no network.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from accelstack import naming, tokens
from accelstack.catalog.scale import NodeGroupPart
from accelstack.naming import EFA_LABEL, POOL_LABEL
from accelstack.resolve import ResolvedPool, Stack

#: The root device of the EKS-optimized AL2023 AMIs the node groups boot: Amazon Linux boots
#: from /dev/xvda (https://docs.aws.amazon.com/ebs/latest/userguide/device_naming.html).
EKS_ROOT_DEVICE = "/dev/xvda"
#: Inputs whose values are maps of user keys (labels, tags): Pulumi passes their keys as they
#: are, so `camel` leaves them alone.
MAP_INPUTS = frozenset({"labels", "tags"})


def _camel_key(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def camel(value: Any, key: str = "") -> Any:
    """SDK inputs (snake_case keys) as the engine records them (camelCase); the keys of map
    inputs (labels, tags) stay as they are; None values are dropped, as the engine drops them."""
    if isinstance(value, Mapping):
        if key in MAP_INPUTS:
            return dict(value)
        return {_camel_key(k): camel(v, k) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [camel(v) for v in value]
    return value


@dataclass(frozen=True)
class Billable:
    """One billable resource: what the component creates and the cost guard prices."""

    type: str
    name: str
    parent: str
    #: The inputs the price depends on (SDK snake_case); the component passes them as they are
    args: Mapping[str, Any] = field(default_factory=dict)
    #: The declared launch template it launches from (node groups, fleets), by name
    launch_template: str | None = None
    #: The zones an interface endpoint has a subnet in (billed per zone); the component passes
    #: the zones' subnet ids as `subnet_ids`
    subnet_zones: tuple[str, ...] = ()

    @property
    def inputs(self) -> dict[str, Any]:
        """`args` as a plan records them, plus the launch-template link the pricer follows."""
        out: dict[str, Any] = camel(self.args)
        lt = self.launch_template
        if lt is not None and self.type == tokens.NODE_GROUP:
            out["launchTemplate"] = {"name": lt}
        elif lt is not None and self.type == tokens.FLEET:
            config = dict(out["launchTemplateConfigs"][0])
            config["launchTemplateSpecification"] = {"launchTemplateName": lt}
            out["launchTemplateConfigs"] = [config]
        if self.subnet_zones:  # one subnet per zone, as the plan records their ids
            out["subnetIds"] = list(self.subnet_zones)
        return out


# ---------------------------------------------------------------------------------------
# Node groups: the pure derivations the components use
# ---------------------------------------------------------------------------------------


def root_volume(size_gib: int, device: str | None = EKS_ROOT_DEVICE) -> list[dict[str, Any]]:
    """The launch template's root volume: encrypted gp3, deleted with the instance."""
    return [
        {
            "device_name": device,
            "ebs": {
                "volume_size": size_gib,
                "volume_type": "gp3",
                "encrypted": "true",
                "delete_on_termination": "true",
            },
        }
    ]


def scaling_config(pool: ResolvedPool, nodes: int | None = None) -> dict[str, int]:
    """Desired and max = the job's nodes plus spares (`nodes`: one node group's share of
    them, resolve's `node_groups`); min 0 on a capacity block or reservation (EKS scales a
    Capacity Block group to 0 before the block ends, and the upgrade path scales it to 0
    first: capacity-blocks-mng.adoc), else the running count. The spec owns the size (the
    node groups ignore none of it), so every resize sends min <= desired <= max together."""
    running = pool.running_nodes if nodes is None else nodes
    return {
        "desired_size": running,
        "min_size": 0 if pool.reserved_capacity else running,
        "max_size": running,
    }


def instance_type_placement(pool: ResolvedPool) -> tuple[str | None, list[str] | None]:
    """(launch template instance type, node group instance types): a Capacity Block node group
    takes its type from the launch template and none on the node group (EKS "Capacity Blocks
    for ML" with managed node groups); every other pool sets it on the node group."""
    if pool.purchase.launch_market is not None:
        return pool.instance_type, None
    return None, [pool.instance_type]


def node_labels(
    pool: ResolvedPool, plugin_labels: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Pool, device-kind and EFA labels, plus what the device-plugin chart's default affinity
    requires (`charts.<name>.node_labels` in the catalog, e.g. nvidia.com/gpu.present)."""
    labels = {POOL_LABEL: pool.name, pool.device.node_label.key: pool.device.node_label.value}
    if pool.efa:
        labels[EFA_LABEL] = "true"
    labels.update(plugin_labels or {})
    return labels


def plugin_labels(pool: ResolvedPool) -> dict[str, str]:
    """The labels beyond the pool's own: the device-plugin chart's affinity, the allocation
    (resolved once: `ResolvedPool.scheduling_labels`)."""
    return dict(pool.scheduling_labels)


@dataclass(frozen=True)
class NodeGroups:
    """One component's managed node groups and the launch templates they launch from."""

    launch_templates: Mapping[str, Billable]  # by role (`lt`, `lt-2`, ...)
    node_groups: tuple[Billable, ...]  # in `pool.node_groups` order

    def __iter__(self) -> Any:
        return iter([*self.launch_templates.values(), *self.node_groups])


def _launch_template(name: str, parent: str, instance_type: str | None, gib: int) -> Billable:
    args: dict[str, Any] = {"block_device_mappings": root_volume(gib)}
    if instance_type is not None:
        args["instance_type"] = instance_type
    return Billable(tokens.LAUNCH_TEMPLATE, name, parent, args)


def _node_group(
    name: str,
    parent: str,
    lt: str,
    types: Sequence[str] | None,
    capacity: str,
    scaling: Any,
    labels: dict[str, str],
) -> Billable:
    args: dict[str, Any] = {
        "instance_types": list(types) if types is not None else None,
        "capacity_type": capacity,
        "scaling_config": scaling,
        "labels": labels,
    }
    return Billable(tokens.NODE_GROUP, name, parent, args, launch_template=lt)


def pool_node_groups(stack: Stack, pool: ResolvedPool) -> NodeGroups:
    """A pool's launch templates (one per reservation behind it) and node groups (one per
    `pool.node_groups` part), named `<stack>-<pool>-<role>`."""
    comp = naming.pool_prefix(stack.name, pool.name)
    lt_type, ng_types = instance_type_placement(pool)
    lts: dict[str, Billable] = {}
    for part in pool.node_groups:
        if part.launch_template not in lts:
            lts[part.launch_template] = _launch_template(
                naming.launch_template(stack.name, pool.name, part.launch_template),
                comp,
                lt_type,
                pool.root_volume_gib,
            )
    labels = node_labels(pool, plugin_labels(pool))
    groups = tuple(
        _pool_part(stack, pool, part, lts[part.launch_template].name, ng_types, labels)
        for part in pool.node_groups
    )
    return NodeGroups(lts, groups)


def _pool_part(
    stack: Stack,
    pool: ResolvedPool,
    part: NodeGroupPart,
    lt: str,
    types: list[str] | None,
    labels: dict[str, str],
) -> Billable:
    return _node_group(
        naming.pool_node_group(stack.name, pool.name, part.role),
        naming.pool_prefix(stack.name, pool.name),
        lt,
        types,
        pool.purchase.capacity_type,
        scaling_config(pool, part.nodes),
        labels,
    )


def system_node_group(stack: Stack) -> NodeGroups:
    """The EKS system nodes: on-demand, a fixed count, the device kind's CPU label."""
    comp = naming.system_nodes(stack.name)
    kind = stack.catalog.device_kind_of(stack.system_instance_type)
    n = stack.system_nodes
    lt = _launch_template(
        naming.system_launch_template(stack.name), comp, None, stack.system_root_volume_gib
    )
    ng = _node_group(
        naming.system_node_group(stack.name),
        comp,
        lt.name,
        [stack.system_instance_type],
        # what the spec does not choose is billed under the purchase table's reference option
        stack.catalog.purchase(stack.option_lists.reference).capacity_type,
        {"desired_size": n, "min_size": n, "max_size": n},
        {kind.node_label.key: kind.node_label.value},
    )
    return NodeGroups({"lt": lt}, (ng,))


# ---------------------------------------------------------------------------------------
# Standalone pools (EC2 Fleet)
# ---------------------------------------------------------------------------------------


def fleet_capacity(pool: ResolvedPool) -> dict[str, Any]:
    """The fleet's capacity: all `pool.nodes` in one request, all or nothing, one zone, one
    type, in the pool's market (spot and capacity blocks through the fleet, not the LT)."""
    market = pool.purchase.fleet_market  # catalog purchase_options (botocore ec2 enum)
    all_or_nothing: dict[str, Any] = {
        "single_instance_type": True,
        "single_availability_zone": True,
        "min_target_capacity": pool.nodes,
    }
    out: dict[str, Any] = {
        "target_capacity_specification": {
            "default_target_capacity_type": market,
            "total_target_capacity": pool.nodes,
        },
    }
    if market == "spot":
        out["spot_options"] = all_or_nothing
    else:
        if pool.purchase.reservation_first:
            all_or_nothing["capacity_reservation_options"] = {
                "usage_strategy": "use-capacity-reservations-first"
            }
        out["on_demand_options"] = all_or_nothing
    return out


@dataclass(frozen=True)
class FleetPool:
    """A standalone pool: its launch template (named, so the fleet finds it) and its fleet."""

    launch_template: Billable
    fleet: Billable

    def __iter__(self) -> Any:
        return iter([self.launch_template, self.fleet])


def fleet_pool(stack: Stack, pool: ResolvedPool) -> FleetPool:
    """The launch template (the root volume on the device the pool's DLAMI boots from, catalog
    device_kinds.*.standalone_root_device) and one EC2 Fleet for all of the pool's nodes."""
    name = naming.launch_template(stack.name, pool.name)
    lt = Billable(
        tokens.LAUNCH_TEMPLATE,
        name,
        stack.name,
        {
            "name": name,
            "instance_type": pool.instance_type,
            "block_device_mappings": root_volume(
                pool.root_volume_gib, pool.device.standalone_root_device
            ),
        },
    )
    fleet = Billable(
        tokens.FLEET,
        naming.fleet(stack.name, pool.name),
        stack.name,
        {
            "launch_template_configs": [{"overrides": [{"instance_type": pool.instance_type}]}],
            **fleet_capacity(pool),
            "tags": {POOL_LABEL: pool.name},
        },
        launch_template=name,
    )
    return FleetPool(lt, fleet)


# ---------------------------------------------------------------------------------------
# Network, control plane, storage, add-ons
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NatGateway:
    """A zone's NAT gateway and its Elastic IP."""

    zone: str
    eip: Billable
    gateway: Billable

    def __iter__(self) -> Any:
        return iter([self.eip, self.gateway])


def nat_gateways(stack: Stack) -> tuple[NatGateway, ...]:
    """A NAT gateway (and its Elastic IP) in every zone of a created network, so no zone's
    traffic crosses to another zone's NAT (inter-AZ data charges); the first zone's only with
    network.single_nat_gateway; none in an existing network."""
    net = stack.spec.network
    if net.mode != "create":
        return ()
    zones = stack.network_zone_ids
    comp = naming.network(stack.name)
    return tuple(
        NatGateway(
            zone,
            Billable(tokens.EIP, f"{naming.nat_gateway(comp, zone)}-eip", comp, {"domain": "vpc"}),
            Billable(tokens.NAT_GATEWAY, naming.nat_gateway(comp, zone), comp),
        )
        for zone in (zones[:1] if net.single_nat_gateway else zones)
    )


def s3_endpoint(stack: Stack) -> Billable | None:
    """The S3 gateway endpoint of a created network (gateway endpoints carry no charge)."""
    if stack.spec.network.mode != "create":
        return None
    comp = naming.network(stack.name)
    args = {"service_name": f"com.amazonaws.{stack.region}.s3", "vpc_endpoint_type": "Gateway"}
    return Billable(tokens.VPC_ENDPOINT, f"{comp}-s3", comp, args)


def ecr_endpoints(stack: Stack) -> tuple[Billable, ...]:
    """The ECR api and dkr interface endpoints of a network whose stack's profile asks for the
    private registry path (scale.yaml image_delivery.private_registry; an existing VPC only
    with network.ecr_endpoints): private DNS
    on, one subnet in every zone in use, each zone billed per hour."""
    if not stack.profile.private_registry:
        return ()
    comp = naming.network(stack.name)
    reg = stack.catalog.scale.image_delivery.private_registry
    return tuple(
        Billable(
            tokens.VPC_ENDPOINT,
            naming.ecr_endpoint(comp, svc),
            comp,
            {
                "service_name": f"com.amazonaws.{stack.region}.{svc}",
                "vpc_endpoint_type": "Interface",
                "private_dns_enabled": True,
            },
            subnet_zones=stack.network_zone_ids,
        )
        for svc in reg.endpoint_services
    )


@dataclass(frozen=True)
class CacheRule:
    """One ECR pull-through cache rule of the stack: resource name, repository prefix,
    upstream registry URL (not billed: cached images are ECR storage, usage)."""

    name: str
    prefix: str
    upstream_url: str


def registry_cache_rules(stack: Stack) -> tuple[CacheRule, ...]:
    """The pull-through cache rules that come with the private registry path (none without)."""
    if not stack.profile.private_registry:
        return ()
    comp = naming.network(stack.name)
    rules = stack.catalog.scale.image_delivery.private_registry.cache_rules
    return tuple(
        CacheRule(f"{comp}-cache-{r.upstream}", naming.cache_prefix(stack.name, r.upstream), r.url)
        for r in rules
    )


def registry_cache_actions(stack: Stack) -> tuple[str, ...]:
    """The IAM actions the node role needs on the cache rules' repositories (least privilege,
    scale.yaml image_delivery.private_registry.iam_source); none without cache rules."""
    if not registry_cache_rules(stack):
        return ()
    return stack.catalog.scale.image_delivery.private_registry.iam_actions


@dataclass(frozen=True)
class ControlPlane:
    cluster: Billable
    secrets_key: Billable

    def __iter__(self) -> Any:
        return iter([self.cluster, self.secrets_key])


def control_plane(stack: Stack) -> ControlPlane:
    """The EKS control plane (billed per hour, standard or extended support by its version,
    plus its provisioned tier when the stack's profile has one) and the KMS key that encrypts
    its secrets."""
    comp = naming.cluster(stack.name)
    args: dict[str, Any] = {"version": stack.kubernetes_version}
    if stack.profile.tier is not None:  # the provisioned tier the stack's size asks for
        args["control_plane_scaling_config"] = {"tier": stack.profile.tier.tier}
    return ControlPlane(
        Billable(tokens.CLUSTER, f"{comp}-eks", comp, args),
        Billable(tokens.KMS_KEY, f"{comp}-secrets-key", comp),
    )


def file_system(stack: Stack) -> Billable | None:
    """FSx for Lustre, when storage.fsx_lustre_gib asks for it."""
    gib = stack.spec.storage.fsx_lustre_gib
    if not gib:
        return None
    comp = naming.fsx(stack.name)
    args = {
        "storage_capacity": gib,
        "deployment_type": stack.catalog.defaults.fsx_deployment_type,
        "per_unit_storage_throughput": stack.fsx_throughput_per_tib,
    }
    return Billable(tokens.LUSTRE, f"{comp}-lustre", comp, args)


def compile_cache_bucket(stack: Stack) -> Billable | None:
    """The compile-cache bucket accelstack creates: when a pool caches and no bucket was given.
    Its component is the EKS CompileCache, or the standalone cluster's `-cache` children."""
    if not stack.compile_cache_enabled or stack.compile_cache_bucket is not None:
        return None
    eks = stack.spec.orchestration == "eks"
    owner = naming.compile_cache(stack.name) if eks else naming.standalone_cache(stack.name)
    return Billable(tokens.BUCKET, naming.bucket_resource(owner), owner if eks else stack.name)


def checkpoint_bucket(stack: Stack) -> Billable | None:
    """The checkpoint bucket, when the stack creates one (EKS, no checkpoint.bucket)."""
    if stack.checkpoint is None or stack.checkpoint.bucket is not None:
        return None
    owner = naming.checkpoints(stack.name)
    return Billable(tokens.BUCKET, naming.bucket_resource(owner), owner)


def metrics_addon(stack: Stack) -> Billable | None:
    """The accelerator-metrics add-on (billed per node), when the stack turns it on."""
    addon = stack.catalog.metrics_addon
    if not stack.metrics or addon is None:
        return None
    comp = naming.metrics(stack.name)
    return Billable(tokens.ADDON, f"{comp}-addon", comp, {"addon_name": addon.addon_name})


def _optional(*items: Billable | None) -> list[Billable]:
    return [b for b in items if b is not None]


def compute(stack: Stack) -> list[Billable]:
    """The nodes: EKS control plane, system and pool node groups; or the standalone fleets."""
    if stack.spec.orchestration == "ec2":
        return [b for p in stack.pools for b in fleet_pool(stack, p)]
    out: list[Billable] = [*control_plane(stack), *system_node_group(stack)]
    for pool in stack.pools:
        out.extend(pool_node_groups(stack, pool))
    return out


def billables(stack: Stack) -> list[Billable]:
    """Every billable resource the program declares for `stack`, in the cost report's order."""
    network = [b for nat in nat_gateways(stack) for b in nat]
    return [
        *compute(stack),
        *network,
        *_optional(s3_endpoint(stack), file_system(stack), compile_cache_bucket(stack)),
        *ecr_endpoints(stack),
        *_optional(metrics_addon(stack), checkpoint_bucket(stack)),
    ]
