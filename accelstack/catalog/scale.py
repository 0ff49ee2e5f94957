"""Scale facts (scale.yaml): service limits with their quota codes, the address-space steps for
large pools, UltraServer units. Pure data and small helpers; sources are in the YAML."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field

from accelstack import naming
from accelstack.catalog.facts import Frozen


class Limit(Frozen):
    """One documented limit: its default value, the Service Quotas code when it has one."""

    value: int = Field(ge=1)
    service: str
    quota_code: str | None
    adjustable: bool
    what: str
    source: str

    def named(self) -> str:
        """'nodes per EKS managed node group (450, quota L-BD136A63)'."""
        code = f", quota {self.quota_code}" if self.quota_code else ""
        return f"{self.what} ({self.value}{code})"


class Limits(Frozen):
    nodes_per_node_group: Limit
    node_groups_per_cluster: Limit
    clusters_per_region: Limit
    vpcs_per_region: Limit
    ipv4_cidr_blocks_per_vpc: Limit
    placement_groups_per_region: Limit
    fleet_target_capacity: Limit

    def by_quota_code(self) -> dict[str, tuple[str, Limit]]:
        """quota code -> (field name, limit), for the limits Service Quotas knows."""
        return {
            lim.quota_code: (name, lim)
            for name, lim in self
            if isinstance(lim, Limit) and lim.quota_code
        }


class CompactCni(Frozen):
    warm_ip_target: int = Field(ge=0)
    minimum_ip_target: int = Field(ge=0)
    pods_per_node_estimate: int = Field(ge=1)
    source: str

    @property
    def addresses_per_node(self) -> int:
        """Secondary addresses one node holds: MINIMUM_IP_TARGET, plus WARM_IP_TARGET as
        headroom for the pods beyond it."""
        return self.minimum_ip_target + self.warm_ip_target

    def env(self) -> dict[str, str]:
        """The vpc-cni add-on `env` configuration values."""
        return {
            "WARM_IP_TARGET": str(self.warm_ip_target),
            "MINIMUM_IP_TARGET": str(self.minimum_ip_target),
        }


class AddressSpace(Frozen):
    compact_cni: CompactCni
    secondary_cidr: str
    secondary_cidr_source: str


class UltraServerPlacement(Frozen):
    """What places jobs on whole UltraServers on EKS: a chart of the catalog, from a version,
    on a Kubernetes version at least `min_kubernetes`; `operator`: whether the chart's Neuron
    UltraServer Operator serves this family (its docs name the instance types it supports),
    with the source."""

    chart: str
    chart_version: str
    min_kubernetes: str
    operator: bool
    operator_source: str


class UltraServerDRA(Frozen):
    """How a pod claims one whole UltraServer node through the Neuron DRA driver (scale.yaml
    ultraservers.<type>.dra, with the source): the DeviceClass, the CEL selector of the
    node device, the driver's opaque config kind, the modes it accepts, the node label that
    names each UltraServer and Kueue's resource name for the claimed devices."""

    device_class: str
    selector: str
    config_api_version: str
    config_kind: str
    modes: tuple[int, ...]
    server_label: str
    kueue_resource: str
    source: str
    #: where a pod reads its node's UltraServer id and position at a mode (`{mode}` filled in),
    #: and the recipe that places a job's pods and orders its ranks by them
    server_id_file: str | None = None
    node_id_file: str | None = None
    placement_source: str = ""

    def id_files(self, mode: int) -> tuple[str, str] | None:
        """(server id file, node id file) at `mode`, or None when the catalog has neither."""
        if self.server_id_file is None or self.node_id_file is None:
            return None
        return self.server_id_file.format(mode=mode), self.node_id_file.format(mode=mode)


class UltraServer(Frozen):
    instances: int = Field(ge=2)
    status: Literal["available", "preview"]
    source: str
    placement: UltraServerPlacement
    dra: UltraServerDRA | None = None

    def whole(self, nodes: int) -> bool:
        return nodes % self.instances == 0

    def units(self, nodes: int) -> int:
        return math.ceil(nodes / self.instances)


class TopologyLabels(Frozen):
    labels: tuple[str, ...]
    source: str
    instance_types: tuple[str, ...] = ()
    instance_types_source: str = ""
    kueue_lowest_level: str = "kubernetes.io/hostname"
    kueue_preferred_annotation: str = "kueue.x-k8s.io/podset-preferred-topology"


class ControlPlaneTier(Frozen):
    """One EKS provisioned control-plane tier: its API name and documented capacity."""

    tier: str
    api_concurrency: int = Field(ge=1)
    pod_scheduling_rate: int = Field(ge=1)

    @property
    def price_item(self) -> str:
        """The prices.yaml services item of the tier (per cluster-hour)."""
        return f"eks-control-plane-{self.tier}"


class ControlPlaneFacts(Frozen):
    standard_max_nodes: int = Field(ge=1)
    pods_per_node: int = Field(ge=1)
    reschedule_seconds: int = Field(ge=1)
    tiers: tuple[ControlPlaneTier, ...] = Field(min_length=1)
    source: str

    def tier_for(self, nodes: int) -> ControlPlaneTier | None:
        """None (standard) up to `standard_max_nodes`; else the first tier that schedules every
        node's pods within the window, or the last tier."""
        if nodes <= self.standard_max_nodes:
            return None
        pods = nodes * self.pods_per_node
        fits = (t for t in self.tiers if t.pod_scheduling_rate * self.reschedule_seconds >= pods)
        return next(fits, self.tiers[-1])


class StagingFacts(Frozen):
    launch_bucket: int = Field(ge=1)
    launch_refill_per_second: float = Field(gt=0)
    node_ready_minutes: int = Field(ge=1)
    source: str

    def steps(self, groups: tuple[int, ...]) -> tuple[int, ...]:
        """The creation step of each node group (sizes in creation order): groups join the
        current step while its nodes stay within the launch bucket; a group never splits."""
        out: list[int] = []
        step, held = 0, 0
        for n in groups:
            if held and held + n > self.launch_bucket:
                step, held = step + 1, 0
            out.append(step)
            held += n
        return tuple(out)

    def step_minutes(self, nodes: int) -> int:
        """Minutes a step of `nodes` takes to be Ready: launches beyond the bucket wait for its
        refill, then every node boots and joins."""
        wait = max(0, nodes - self.launch_bucket) / self.launch_refill_per_second / 60
        return math.ceil(wait) + self.node_ready_minutes


class SystemNodesRow(Frozen):
    max_nodes: int = Field(ge=1)
    nodes: int = Field(ge=1)


class LargeClusterFacts(Frozen):
    control_plane: ControlPlaneFacts
    staging: StagingFacts
    system_nodes: tuple[SystemNodesRow, ...] = Field(min_length=1)
    system_nodes_source: str

    def system_nodes_for(self, nodes: int) -> int:
        rows = sorted(self.system_nodes, key=lambda r: r.max_nodes)
        return next((r.nodes for r in rows if nodes <= r.max_nodes), rows[-1].nodes)


class ClusterProfile(Frozen):
    """What a stack's size asks of the cluster (resolve computes it once, `Stack.profile`):
    the control-plane tier (None: standard), the creation steps of the node groups, the
    minutes one step takes, the system nodes."""

    nodes: int = 0  # the stack's running nodes: pools' nodes and spares, and system nodes
    tier: ControlPlaneTier | None = None
    steps: int = 1
    step_minutes: int = 0
    system_nodes: int = 0
    #: ECR interface endpoints and pull-through cache rules in the created VPC (scale.yaml
    #: image_delivery.private_registry: the stack's pull is NAT-bound)
    private_registry: bool = False


class PlacementFacts(Frozen):
    """Where a pool on reserved capacity is placed (sources in scale.yaml `placement`)."""

    reservation_capacity_type: str  # capacity type of the purchase options a group applies to
    reservation_source: str
    capacity_block_source: str
    max_nodes_per_group_source: str
    ultraserver_blocks_source: str
    #: why a pool's `placement_groups: per-launch` puts the node groups one launch bucket
    #: starts at once in a placement group of their own (ScaleFacts.node_groups_per_placement_group)
    per_launch_source: str


class InstanceStoreDisks(Frozen):
    disks: int = Field(ge=1)
    disk_gb: int = Field(ge=1)


class InstanceStoreFacts(Frozen):
    """NVMe instance store per type and the nodeadm local-storage strategy for containers."""

    raid0_min_disks: int = Field(ge=1)
    strategy: Literal["RAID0", "RAID10", "Mount"]
    source: str
    types: dict[str, InstanceStoreDisks] = Field(default_factory=dict)

    def strategy_for(self, instance_type: str) -> str | None:
        """The nodeadm localStorage strategy for the type, or None (no or too few disks)."""
        row = self.types.get(instance_type)
        return self.strategy if row and row.disks >= self.raid0_min_disks else None


class CacheRule(Frozen):
    """One ECR pull-through cache rule: the upstream registry's name and its URL."""

    upstream: str
    url: str


class PrivateRegistry(Frozen):
    """ECR interface endpoints and pull-through cache rules (scale.yaml, with sources)."""

    endpoint_services: tuple[str, ...]
    endpoint_source: str
    cache_rules: tuple[CacheRule, ...]
    cache_source: str
    iam_actions: tuple[str, ...]
    iam_source: str


class ImageDelivery(Frozen):
    nat_gateway_gbps: float = Field(gt=0)
    nat_gateway_source: str
    node_pull_gbps: float = Field(gt=0)
    node_pull_source: str
    private_registry: PrivateRegistry

    def nat_bound(self, nodes: int) -> bool:
        """Whether `nodes` pulling at once are bound by the NAT gateway, not by their own pull:
        the stack then gets the private registry path (`ClusterProfile.private_registry`)."""
        return nodes * self.node_pull_gbps > self.nat_gateway_gbps

    def pull_hours(self, nodes: int, image_gb: float, private: bool = False) -> float:
        """Hours until every node of a pool has the image: the slower of one node's pull and
        all nodes' bytes through the zone's NAT gateway; with `private` (the stack's private
        ECR through its ECR endpoints, layers from S3 through the gateway endpoint) no NAT
        gateway carries the bytes and one node's pull bounds it."""
        one = image_gb * 8 / self.node_pull_gbps
        all_ = 0.0 if private else nodes * image_gb * 8 / self.nat_gateway_gbps
        return max(one, all_) / 3600


class OnDemandCapacity(Frozen):
    """Above how many on-demand instances of one type `compare` flags a size: capacity that
    size is a reservation, not an on-demand launch (scale.yaml `on_demand_capacity`)."""

    max_instances: int = Field(ge=1)
    source: str = Field(min_length=1)


class ScaleFacts(Frozen):
    limits: Limits
    on_demand_capacity: OnDemandCapacity
    topology_labels: TopologyLabels
    address_space: AddressSpace
    large_cluster: LargeClusterFacts
    placement: PlacementFacts
    instance_store: InstanceStoreFacts
    image_delivery: ImageDelivery
    ultraservers: dict[str, UltraServer] = Field(default_factory=dict)
    ultraservers_preview: dict[str, str] = Field(default_factory=dict)
    #: region -> why a stack there cannot be priced from the bundled catalog
    price_gaps: dict[str, str] = Field(default_factory=dict)

    @property
    def max_pool_nodes(self) -> int:
        """The most nodes one pool can have in one cluster at the default quotas: every node
        group but the system one, each full."""
        lim = self.limits
        return (lim.node_groups_per_cluster.value - 1) * lim.nodes_per_node_group.value

    @property
    def node_groups_per_placement_group(self) -> int:
        """How many node groups of a `placement_groups: per-launch` pool share one created
        cluster placement group: the full groups that fit in one launch bucket (they launch
        at once), at least one (scale.yaml placement.per_launch_source)."""
        bucket = self.large_cluster.staging.launch_bucket
        return max(1, bucket // self.limits.nodes_per_node_group.value)


def split_nodes(nodes: int, per_group: int) -> tuple[int, ...]:
    """A pool's nodes over managed node groups of at most `per_group`: full groups first, the
    rest in the last. Growing a pool only fills the last group and adds groups after it, so the
    earlier groups (and their names) stay."""
    if nodes <= 0:
        return ()
    full, rest = divmod(nodes, per_group)
    return (per_group,) * full + ((rest,) if rest else ())


class NodeGroupPart(Frozen):
    """One managed node group of a pool: its resource role (`ng`, `ng-2`, ...: the first keeps
    the name a one-group pool always had), its node count and which subnet of its zone it
    takes addresses from ('primary' or 'secondary', see ipbudget.plan_addresses)."""

    role: str
    nodes: int = Field(ge=1)
    subnet: Literal["primary", "secondary"] = "primary"
    reservation_id: str | None = None  # the reservation or Capacity Block it launches into
    launch_template: str = "lt"  # role of the pool's launch template it uses (one per reservation)
    step: int = 0  # creation step (ClusterProfile): waits for every node group of the step before


def group_role(index: int) -> str:
    """A node group's role (accelstack/naming.py `node_group_role`)."""
    return naming.node_group_role(index)
