"""Resolve a validated spec against the catalog: every default filled, every fact attached.

This is the single place where spec meets catalog. Plan, components, templates and the cost
guard read `Stack` and never look up instance facts or defaults themselves. The rules that
need these derived facts run on the built stack (`rules.py`); `accelstack.resolve.resolve`
builds and checks.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from accelstack import naming
from accelstack.catalog import (
    Catalog,
    Defaults,
    DeviceKind,
    Family,
    Framework,
    HelmChart,
    InstanceType,
    LaunchFacts,
    MetricsAddon,
    PurchaseOptionFacts,
    PythonEnv,
    load_catalog,
)
from accelstack.catalog.ipbudget import (
    AddressPlan,
    plan_addresses,
    plan_existing,
    pool_group_demands,
    system_demand,
)
from accelstack.catalog.purchase import OptionLists
from accelstack.catalog.resilience import NodeGroupUpdateFacts
from accelstack.catalog.scale import (
    ClusterProfile,
    NodeGroupPart,
    UltraServer,
    group_role,
    split_nodes,
)
from accelstack.catalog.sizing import (
    MemoryFit,
    fsx_tier_for,
    fsx_write_seconds,
    memory_fit,
    training_state_bytes,
)
from accelstack.errors import AccelstackError, CatalogError, shown
from accelstack.resolve.node import PodResources, node_hugepages_2mi, pod_resources, python_env
from accelstack.spec import Pool, Spec
from accelstack.spec.models import NAME_RE, Budget, Cluster, Network, Standalone, Workload

#: EKS needs subnets in at least two zones for its control-plane network interfaces.
MIN_CLUSTER_ZONES = 2


@dataclass(frozen=True)
class ResolvedPool:
    name: str
    spec: Pool
    index: int  # the pool's place in the spec's `pools` (its YAML path: `at`)
    instance: InstanceType
    family: Family
    device: DeviceKind
    nodes: int
    purchase_option: str
    purchase: PurchaseOptionFacts  # what the option means (catalog purchase_options.yaml)
    reservation_id: str | None
    efa: bool
    efa_interfaces: int  # 0 when EFA is off
    efa_interface_style: str
    root_volume_gib: int
    #: The zone the pool's subnet is in; '' when none can be found (an unknown region, a type
    #: the region does not offer): only on a stack the spec rules refuse (`region-known`,
    #: `pool-offered`), so no stack that passed `resolve` has it.
    zone_id: str
    logical_cores: int
    neuron_cores: int  # cores the runtime sees: NeuronCores at the LNC setting, or GPUs
    procs_per_node: int  # torchrun --nproc_per_node: one process per core
    compile_cache: bool
    placement_group: bool  # cluster placement group: EFA pools not on a reservation
    #: What one node gives the training pod (accelstack/resolve/node.py): requests that fit
    #: its allocatable CPU and memory; None when it has no room for one (`pool-pod-room`
    #: refuses it, so read `pod` on a stack that passed `resolve`)
    pod_room: PodResources | None
    hugepages_2mi: int  # 2 MiB huge pages an EFA node allocates (0 without EFA)
    python_env: PythonEnv  # the DLAMI Python environment of its training path
    #: spec placement_groups 'per-launch': a created placement group (and launch template) per
    #: launch bucket's node groups (catalog scale.yaml placement)
    placement_per_launch: bool = False
    #: The existing cluster placement group the pool's reservation lives in (spec
    #: purchase.placement_group): the pool launches into it; None: none named
    placement_group_name: str | None = None
    #: nodeadm `spec.instance.localStorage.strategy` (container storage on the NVMe instance
    #: store, catalog scale.yaml instance_store) when the spec asks for it (pool
    #: container_storage: instance_store_raid0); None: the root volume (also when unset)
    local_storage: str | None = None
    #: The public SSM parameter (a moving alias) the pool's AMI comes from: the EKS-optimized
    #: AL2023 image for orchestration eks, the DLAMI for orchestration ec2.
    ami_parameter: str | None = None
    #: The AMI id pinned for `ami_parameter` in the Pulumi stack config (`accelstack:amis`);
    #: None: not pinned (the program refuses unless `allow_unpinned_ami`).
    image_id: str | None = None
    allow_unpinned_ami: bool = False
    #: The training path: the workload's on the workload pool, the family's default elsewhere;
    #: None where the family does not allow the one named (refused by the spec rules).
    framework: Framework | None = None
    #: The managed node groups the pool spans (each within the EKS per-group limit), in order;
    #: the first keeps the pool's one-group name (see `with_node_groups`).
    node_groups: tuple[NodeGroupPart, ...] = ()
    #: (reservation id, nodes) of every reservation or Capacity Block behind the pool, in the
    #: spec's order; `reservation_id` is the first. Empty: no reservation.
    reservations: tuple[tuple[str, int], ...] = ()
    #: The UltraServer the pool's type is a member of (catalog scale.yaml), or None
    ultraserver: UltraServer | None = None
    spare_nodes: int = 0  # running nodes beyond `nodes` (a restart needs no new capacity)
    #: The node labels beyond the pool's own that scheduling depends on: what the pool's
    #: device-plugin charts' default affinity requires (charts.<name>.node_labels, e.g.
    #: nvidia.com/gpu.present) and, in a stack with an UltraServer pool, which Neuron allocation
    #: serves the node (naming.NEURON_ALLOCATION_LABEL: dra or device-plugin; see
    #: `with_node_groups`)
    scheduling_labels: Mapping[str, str] = field(default_factory=dict)
    #: nodes register with `scheduling_labels` in nodeadm's kubelet flags too (spec
    #: labels_at_boot); False: only the pool's own there (EKS applies the rest a little later)
    labels_at_boot: bool = False
    #: How the workload's training state fits this pool's type (None: the precision has no
    #: bytes-per-parameter figure, which validation refuses)
    memory_fit: MemoryFit | None = None

    @property
    def at(self) -> str:
        """The pool's YAML path in the spec (`pools[i]`)."""
        return f"pools[{self.index}]"

    @property
    def pod(self) -> PodResources:
        """The training pod's requests on one node (every stack that passed `resolve` has
        them: `pool-pod-room`)."""
        if self.pod_room is None:
            raise CatalogError(f"pool '{self.name}' ({self.instance_type}): no room for a pod")
        return self.pod_room

    @property
    def cores_per_process(self) -> int:
        """Cores each torchrun process holds (NEURON_RT_NUM_CORES): the pool's cores shared
        out over its processes."""
        return max(1, self.neuron_cores // self.procs_per_node)

    @property
    def node_lnc_setting(self) -> str | None:
        """The line user data writes into the device kind's `node_lnc_file` when the pool
        overrides its family's default LNC (Trn2/Trn3); None when the node keeps the default."""
        if (
            self.device.node_lnc_file is None
            or self.logical_cores == self.family.default_logical_cores
        ):
            return None
        return f"NEURON_LOGICAL_NC_CONFIG={self.logical_cores}"

    @property
    def instance_type(self) -> str:
        return self.instance.name

    @property
    def accelerators_per_node(self) -> int:
        return self.instance.chips

    @property
    def targets_reservation(self) -> bool:
        return self.reservation_id is not None

    @property
    def running_nodes(self) -> int:
        """Nodes the node group keeps running: the job's plus its spares."""
        return self.nodes + self.spare_nodes

    @property
    def held_instances(self) -> int | None:
        """Instances the pool's one capacity block or reservation holds, as the spec states it
        (purchase.instances; None: its nodes, or several reservations listed with their own)."""
        return self.spec.purchase.instances

    @property
    def reserved_capacity(self) -> bool:
        """On a capacity block or reservation: no room for surge nodes, minSize 0."""
        return self.purchase.needs_reservation


@dataclass(frozen=True)
class ClusterAccess:
    """Who and what reaches the EKS control plane, and how it is upgraded (spec `cluster`)."""

    endpoint_public_access: bool
    public_access_cidrs: tuple[str, ...]  # the deployer's egress CIDRs (the public endpoint)
    admin_principal_arns: tuple[str, ...]  # IAM principals given cluster-admin access entries
    creator_admin: bool  # EKS grants the creator cluster-admin
    support_type: str  # the EKS upgrade policy (STANDARD | EXTENDED)


@dataclass(frozen=True)
class ExistingNetwork:
    """The VPC and subnets of `network.mode: existing` (the stack creates none)."""

    vpc_id: str
    private_subnet_ids: tuple[str, ...]
    public_subnet_ids: tuple[str, ...]


@dataclass(frozen=True)
class SshAccess:
    """SSH to standalone nodes: off (SSM Session Manager only) unless a key pair is named."""

    key_name: str | None
    cidrs: tuple[str, ...]  # source CIDRs of the tcp/22 ingress (none: no ingress)


@dataclass(frozen=True)
class CheckpointPlan:
    """Where checkpoints go and how fast they are written (resilience.yaml `checkpoint`)."""

    bucket: str | None  # an existing bucket, or None: the stack creates <stack>-ckpt-<account>
    prefix: str  # key prefix; each job writes under PREFIX/JOB/
    state_bytes: float  # one full checkpoint: params x bytes per param at the precision
    write_seconds: float  # the target for a full checkpoint write
    keep: int  # full checkpoints the storage holds
    #: days a replaced (noncurrent) object version is kept (resilience.yaml `checkpoint`)
    noncurrent_expire_days: int
    fsx_path: str | None  # the FSx path linked to the prefix (data repository association)
    fsx_gib: int | None
    fsx_throughput_per_tib: int | None  # spec'd, else the lowest tier meeting the target
    fsx_write_seconds: float | None  # at that tier

    @property
    def stored_gib(self) -> float:
        """S3 storage the prefix holds: `keep` full checkpoints."""
        return self.keep * self.state_bytes / 2**30


@dataclass(frozen=True)
class Stack:
    spec: Spec
    catalog: Catalog
    pools: tuple[ResolvedPool, ...]
    kubernetes_version: str
    system_instance_type: str
    system_nodes: int
    system_root_volume_gib: int
    vpc_cidr: str
    compile_cache_enabled: bool
    compile_cache_bucket: str | None  # existing bucket, or None = create
    compile_cache_prefix: str
    compile_cache_expire_days: int
    framework: str
    image: str
    tags: dict[str, str] = field(default_factory=dict)
    checkpoint: CheckpointPlan | None = None  # EKS stacks: the durable checkpoint location
    #: Where the pools' AMI pins came from (`Pulumi.<stack>.yaml`, or the offline plan's
    #: simulation); None: no stack config was read (see `with_ami_pins`).
    amis_source: str | None = None
    deployment: str = ""  # resource-name prefix when it differs from the spec's name
    #: Addresses of a created VPC: VPC CNI settings, secondary CIDR and its subnets
    address_plan: AddressPlan = field(default_factory=AddressPlan)
    #: What the stack's size asks of the cluster: control-plane tier, creation steps of the
    #: node groups, system nodes (catalog scale.yaml `large_cluster`; see `with_node_groups`)
    profile: ClusterProfile = field(default_factory=ClusterProfile)

    @property
    def name(self) -> str:
        """Prefix of every resource name: the spec's name, or the deployment's (`deployment_name`)."""
        return self.deployment or self.spec.name

    def with_ami_pins(self, pins: Mapping[str, str], allow_unpinned: bool, source: str) -> Stack:
        """The stack with each pool's AMI taken from `pins` (SSM parameter -> AMI id, the
        stack config `accelstack:amis`); a pool whose parameter has no pin keeps image_id
        None and boots only when `allow_unpinned` (`accelstack:allowUnpinnedAmis`)."""
        pools = tuple(
            replace(
                p,
                image_id=pins.get(p.ami_parameter) if p.ami_parameter else None,
                allow_unpinned_ami=allow_unpinned,
            )
            for p in self.pools
        )
        return replace(self, pools=pools, amis_source=source)

    def with_image(self, image: str) -> Stack:
        """The stack with its training image pulled as `image` (`render --registry`: the
        same image through the stack's pull-through cache); the spec's `workload.image` stays
        as written."""
        return replace(self, image=image)

    @property
    def system_instance(self) -> InstanceType | None:
        """The system nodes' instance type row (None: a type the catalog does not list)."""
        return self.catalog.instances.get(self.system_instance_type)

    @property
    def addon_versions(self) -> dict[str, str]:
        """EKS add-on -> the version the catalog pins for this Kubernetes version (may be
        empty: those add-ons start at EKS's default for the version, see instances.yaml)."""
        return dict(self.catalog.defaults.eks_addon_versions.get(self.kubernetes_version, {}))

    @property
    def ami_parameters(self) -> dict[str, list[str]]:
        """AMI parameter name -> the pools that boot from it."""
        out: dict[str, list[str]] = {}
        for p in self.pools:
            if p.ami_parameter:
                out.setdefault(p.ami_parameter, []).append(p.name)
        return out

    @property
    def region(self) -> str:
        return self.spec.region

    # ---- what consumers read of the spec and the catalog, so none reaches into either ---
    @property
    def orchestration(self) -> str:
        """`eks` (EKS node groups) or `ec2` (standalone instances)."""
        return self.spec.orchestration

    @property
    def workload(self) -> Workload:
        """The training job (model, tokens, precision, entrypoint, image as written)."""
        return self.spec.workload

    @property
    def cluster(self) -> Cluster:
        """The spec's EKS settings as written (the resolved ones: `kubernetes_version`,
        `system_*`)."""
        return self.spec.cluster

    @property
    def network(self) -> Network:
        """The spec's network section as written (the resolved CIDR: `vpc_cidr`)."""
        return self.spec.network

    @property
    def standalone(self) -> Standalone:
        """The spec's standalone (orchestration ec2) settings."""
        return self.spec.standalone

    @property
    def budget(self) -> Budget:
        """The spec's cost limits and MFU."""
        return self.spec.budget

    @property
    def workload_zone(self) -> str | None:
        """The zone the spec names for the workload pool (its own, else the stack's), as
        written (a name or an id); None: the catalog's first zone offering the type."""
        return self.spec.workload_pool.availability_zone or self.spec.availability_zone

    @property
    def preview(self) -> bool:
        """The spec allows preview instance types."""
        return self.spec.preview

    @property
    def fsx_lustre_gib(self) -> int | None:
        """The FSx for Lustre file system's size, when the stack has one."""
        return self.spec.storage.fsx_lustre_gib

    @property
    def defaults(self) -> Defaults:
        """The catalog's defaults the stack was resolved with (instances.yaml `defaults`)."""
        return self.catalog.defaults

    @property
    def launch(self) -> LaunchFacts:
        """The catalog's launch facts the rendered artifacts use (launch.yaml)."""
        return self.catalog.launch

    @property
    def nodes_per_node_group(self) -> int:
        """The most nodes one EKS managed node group holds (scale.yaml limits, the EKS quota)."""
        return int(self.catalog.scale.limits.nodes_per_node_group.value)

    @property
    def training_namespace(self) -> str:
        """The namespace the training pods run in."""
        return self.catalog.defaults.training_namespace

    @property
    def option_lists(self) -> OptionLists:
        """The purchase options by role (`compare`'s, its defaults, commitments), from the
        catalog the stack was resolved with, a user's overlay included."""
        return self.catalog.option_lists

    @property
    def workload_memory_fit(self) -> MemoryFit | None:
        """How the workload's training state fits the workload pool's type (None: the
        precision has no bytes-per-parameter figure, which validation refuses)."""
        return self.workload_pool.memory_fit

    @property
    def workload_pool(self) -> ResolvedPool:
        return self.pool(self.spec.workload_pool.name)

    @property
    def known_workload_pool(self) -> ResolvedPool | None:
        """The workload pool, or None while the spec leaves it undetermined (workload.pool
        names no pool, or is unset with several pools) or its type is not a known accelerated
        type: the spec rules refuse all three, so on a stack that passed `resolve` it is
        `workload_pool`."""
        name = workload_pool_name(self.spec)
        if name is None:
            return None
        written = self.spec.pool(name)  # the first pool of the name (`pool-name-unique`)
        return next((p for p in self.pools if p.spec is written), None)

    @property
    def region_known(self) -> bool:
        """The catalog has offerings for the spec's region (`region-known` refuses others)."""
        return self.spec.region in self.catalog.regions

    @property
    def placed(self) -> bool:
        """Every pool of the spec resolved to a known accelerated type in a zone of a known
        region: what the address plan needs. Always true on a stack that passed `resolve`."""
        return (
            self.region_known
            and len(self.pools) == len(self.spec.pools)
            and all(p.zone_id for p in self.pools)
        )

    @property
    def private_image_pull(self) -> bool:
        """Whether the nodes pull the training image inside the VPC: the stack has the private
        registry path (`profile.private_registry`: ECR endpoints) and the image is in the
        stack region's private ECR (its own repositories or its pull-through cache)."""
        host = self.image.split("/", 1)[0]
        ecr = re.fullmatch(r"\d{12}\.dkr\.ecr\.([a-z0-9-]+)\.amazonaws\.com", host)
        return self.profile.private_registry and ecr is not None and ecr[1] == self.region

    def pool(self, name: str) -> ResolvedPool:
        for p in self.pools:
            if p.name == name:
                return p
        raise KeyError(name)

    def compile_cache_prefix_for(self, pool: str) -> str:
        """Each pool gets its own prefix: concurrent jobs sharing one prefix can corrupt it."""
        return f"{self.compile_cache_prefix}{pool}/"

    def compile_cache_url(self, pool: str, bucket: str) -> str:
        return f"s3://{bucket}/{self.compile_cache_prefix_for(pool)}"

    @property
    def training_service_account(self) -> str:
        """ServiceAccount of the training pods; the components bind it to the cache role."""
        return self.catalog.defaults.training_service_account

    @property
    def checkpoint_bucket_resource(self) -> str:
        """Logical name of the checkpoint bucket the program creates (the cost guard prices it
        from the training state)."""
        return naming.checkpoint_bucket_resource(self.name)

    @property
    def checkpoint_config_name(self) -> str:
        """ConfigMap (training namespace) holding the checkpoint URL the pods read."""
        return naming.checkpoint_config(self.name)

    @property
    def fsx_throughput_per_tib(self) -> int:
        """The FSx throughput tier: the checkpoint plan's (spec'd, else the lowest meeting the
        write target) on EKS; the spec's or the catalog default otherwise."""
        if self.checkpoint and self.checkpoint.fsx_throughput_per_tib:
            return self.checkpoint.fsx_throughput_per_tib
        st = self.spec.storage.fsx_throughput_per_tib
        return st or self.catalog.defaults.fsx_throughput_per_tib

    @property
    def fsx_claim_name(self) -> str | None:
        """PersistentVolumeClaim of the stack's FSx for Lustre file system, when it has one."""
        return naming.fsx(self.name) if self.spec.storage.fsx_lustre_gib else None

    # ---- what the components read: each a resolved fact, never the spec or catalog ------
    @property
    def access(self) -> ClusterAccess:
        """The control plane's access and upgrade policy (spec `cluster`, schema defaults)."""
        c = self.spec.cluster
        return ClusterAccess(
            endpoint_public_access=c.endpoint_public_access,
            public_access_cidrs=c.public_access_cidrs,
            admin_principal_arns=c.admin_principal_arns,
            creator_admin=c.creator_admin,
            support_type=c.support_type,
        )

    @property
    def existing_network(self) -> ExistingNetwork | None:
        """The existing VPC the stack deploys into; None: the stack creates its network."""
        net = self.spec.network
        if net.mode != "existing" or net.vpc_id is None:
            return None
        return ExistingNetwork(net.vpc_id, net.private_subnet_ids, net.public_subnet_ids)

    @property
    def ssh(self) -> SshAccess:
        """SSH to the standalone nodes (spec `standalone.ssh_*`)."""
        sa = self.spec.standalone
        return SshAccess(sa.ssh_key_name, sa.ssh_cidrs)

    @property
    def cni_network_policy(self) -> dict[str, str]:
        """vpc-cni configuration values that turn its network policy agent on (catalog
        defaults `vpc_cni_network_policy`): the jobs' NetworkPolicies are enforced only so."""
        return dict(self.catalog.defaults.vpc_cni_network_policy)

    @property
    def monitoring_addon(self) -> str | None:
        """The EKS node monitoring agent add-on that feeds node auto repair (resilience.yaml);
        None: not installed."""
        return self.catalog.resilience.node_repair.monitoring_addon

    @property
    def node_repair(self) -> bool:
        """Accelerator node groups repair their nodes (`nodeRepairConfig`, resilience.yaml)."""
        return self.catalog.resilience.node_repair.enabled

    @property
    def node_group_update(self) -> NodeGroupUpdateFacts:
        """How accelerator node groups roll and how long their updates may take
        (resilience.yaml `node_group_update`)."""
        return self.catalog.resilience.node_group_update

    @property
    def metrics_addon(self) -> MetricsAddon | None:
        """The accelerator-metrics add-on the stack installs (instances.yaml `metrics_addon`);
        None: metrics off (`jobs.metrics: false`, standalone) or no row in the catalog."""
        return self.catalog.metrics_addon if self.metrics else None

    @property
    def rdzv_port(self) -> int:
        """The torchrun rendezvous port (spec `workload.rdzv_port`)."""
        return self.spec.workload.rdzv_port

    @property
    def torchrun_max_restarts(self) -> int:
        """The node-fault budget: torchrun restarts its workers in place this many times
        (launch.yaml `fault_tolerance`)."""
        return self.catalog.launch.fault_tolerance.torchrun_max_restarts

    @property
    def ssm_document_limit_bytes(self) -> int:
        """The largest SSM document content a standalone pool's install may be (instances.yaml
        defaults)."""
        return self.catalog.defaults.ssm_document_limit_bytes

    # ---- job layer (charts rows of role job-controller / queue; spec `jobs`) -------------
    @property
    def job_controller(self) -> str:
        """The job controller the stack installs: the spec's, else the catalog default (EKS);
        `none` on standalone clusters."""
        if self.spec.orchestration != "eks":
            return "none"
        return self.spec.jobs.controller or self.catalog.default_job_controller()

    @property
    def job_controller_chart(self) -> HelmChart | None:
        return self.catalog.controller_chart(self.job_controller)

    @property
    def job_kind(self) -> str:
        """The manifest `render` lists first: the spec's, else the controller's own kind."""
        chart = self.job_controller_chart
        return self.spec.jobs.kind or (chart.manifest_kind if chart else None) or "job"

    @property
    def queue_chart(self) -> HelmChart | None:
        """The Kueue chart the stack installs (the catalog's `queue` row) with `jobs.kueue`."""
        queues = [c for c in self.catalog.charts.values() if c.role == "queue"]
        return queues[0] if self.kueue and queues else None

    @property
    def kueue(self) -> bool:
        return self.spec.orchestration == "eks" and self.spec.jobs.kueue

    @property
    def metrics(self) -> bool:
        """Accelerator metrics add-on on (EKS, `jobs.metrics`, default true)."""
        return self.spec.orchestration == "eks" and self.spec.jobs.metrics

    @property
    def topology_levels(self) -> tuple[str, ...]:
        """Kueue Topology levels (highest first, the host last) with `jobs.topology_aware` and
        Kueue on; () otherwise."""
        if not (self.kueue and self.spec.jobs.topology_aware):
            return ()
        t = self.catalog.scale.topology_labels
        return (*t.labels, t.kueue_lowest_level)

    @property
    def topology_preference(self) -> tuple[str, str] | None:
        """(annotation, level) a job's pod templates carry under topology-aware scheduling:
        pack under the lowest network layer (the level above the host)."""
        levels = self.topology_levels
        if not levels:
            return None
        return (self.catalog.scale.topology_labels.kueue_preferred_annotation, levels[-2])

    @property
    def queue_name(self) -> str | None:
        """The Kueue LocalQueue the job manifests name (label kueue.x-k8s.io/queue-name)."""
        return naming.queue(self.name) if self.kueue else None

    @property
    def ultraserver_pools(self) -> tuple[ResolvedPool, ...]:
        """Pools of UltraServer members: their nodes get devices through the Neuron DRA driver
        and the UltraServer Operator places jobs on whole UltraServers."""
        return tuple(p for p in self.pools if p.ultraserver is not None)

    @property
    def zone_ids(self) -> tuple[str, ...]:
        return tuple(sorted({p.zone_id for p in self.pools}))

    @property
    def network_zone_ids(self) -> tuple[str, ...]:
        """Zones the stack's network spans: a standalone (ec2) stack's pools' zones only (EFA
        traffic does not cross zones, no control plane needs a second); an EKS stack's pool
        zones topped up with the region's other zones (sorted by zone id) until the control
        plane has MIN_CLUSTER_ZONES."""
        if self.spec.orchestration == "ec2":
            return self.zone_ids
        zones = list(self.zone_ids)
        for zid in sorted(self.catalog.region(self.region).zones.values()):
            if len(zones) >= MIN_CLUSTER_ZONES:
                break
            if zid not in zones:
                zones.append(zid)
        return tuple(zones)


def ami_parameter(spec: Spec, catalog: Catalog, device: DeviceKind, k8s: str) -> str | None:
    """The public SSM parameter a pool's AMI comes from (catalog facts, no branching on types)."""
    if spec.orchestration == "ec2":
        return device.standalone_ami_parameter
    return catalog.defaults.eks_ami_parameter.format(
        kubernetes_version=k8s, variant=device.eks_ami_variant
    )


def _zone_for(spec: Spec, pool: Pool, catalog: Catalog) -> str:
    """The zone id the pool's subnet goes in (`Catalog.pool_zone`); '' in an unknown region or
    where the region offers the type in no zone (`region-known` and `pool-offered` refuse)."""
    if spec.region not in catalog.regions:
        return ""
    wanted = pool.availability_zone or spec.availability_zone
    return catalog.pool_zone(spec.region, pool.instance_type, wanted) or ""


def workload_pool_name(spec: Spec) -> str | None:
    """The name of the pool the workload runs on: `workload.pool`, or the only pool when it is
    unset; None when it names no pool or is unset with several (`workload-pool` refuses)."""
    names = [p.name for p in spec.pools]
    wanted = spec.workload.pool
    if wanted is None:
        return names[0] if len(names) == 1 else None
    return wanted if wanted in names else None


def _framework(cat: Catalog, fam: Family, name: str) -> Framework | None:
    """The training path `name` when the family allows it; None for one it does not (the
    workload's own, which `workload-framework` and `workload-framework-family` refuse)."""
    return cat.frameworks.get(name) if name in cat.family_frameworks(fam) else None


def _neuron_cores(cat: Catalog, instance_type: str, lnc: int) -> int:
    """Cores torchrun starts one process per; 0 where the LNC setting does not divide the
    chip's cores (`pool-logical-cores` refuses it)."""
    try:
        return cat.neuron_cores(instance_type, lnc)
    except CatalogError:
        return 0


def _local_storage(p: Pool, cat: Catalog) -> str | None:
    """nodeadm's local-storage strategy for the pool: only where its spec asks for the
    instance store (the spec rule `pool-container-storage` refuses it on a type without one).
    Unset keeps the root volume, so a spec written before the setting existed boots with the
    user data it did and upgrading accelstack rolls none of its nodes."""
    if p.container_storage != "instance_store_raid0":
        return None
    return cat.scale.instance_store.strategy_for(p.instance_type)


def _resolve_pool(spec: Spec, index: int, p: Pool, cat: Catalog) -> ResolvedPool | None:
    """One pool with its catalog rows (None: its type is not a known accelerated type, which
    `pool-type-accelerated` refuses); the workload pool runs the spec's framework, every other
    pool its family's default."""
    d = cat.defaults
    inst = cat.instances.get(p.instance_type)
    if inst is None or not inst.accelerated:
        return None
    fam = cat.families[inst.family]
    dev = cat.device_kinds[fam.device_kind]
    efa = inst.efa_supported if p.efa is None else p.efa
    lnc = p.logical_cores or fam.default_logical_cores
    own = spec.workload.framework if p.name == workload_pool_name(spec) else None
    fw_name = own or cat.default_framework(fam) or ""
    cores = _neuron_cores(cat, p.instance_type, lnc)
    framework = _framework(cat, fam, fw_name)
    return ResolvedPool(
        name=p.name,
        spec=p,
        index=index,
        instance=inst,
        family=fam,
        device=dev,
        nodes=p.nodes,
        purchase_option=p.purchase.option,
        purchase=cat.purchase(p.purchase.option),
        reservation_id=p.purchase.reservation_id
        or (p.purchase.reservations[0].id if p.purchase.reservations else None),
        reservations=_reservations(p),
        efa=efa,
        efa_interfaces=inst.efa_interfaces if efa else 0,
        efa_interface_style=p.efa_interface_style or d.efa_interface_style,
        root_volume_gib=p.root_volume_gib or fam.default_root_volume_gib,
        zone_id=_zone_for(spec, p, cat),
        logical_cores=lnc,
        neuron_cores=cores,
        procs_per_node=cores,
        compile_cache=dev.compile_cache and p.compile_cache is not False,
        placement_group=efa and p.purchase.reservation_id is None and not p.purchase.reservations,
        pod_room=pod_resources(cat.launch.pods, inst, efa),
        hugepages_2mi=node_hugepages_2mi(cat.launch.pods, efa),
        python_env=python_env(cat.launch.dlami_python_envs, dev, fam, framework),
        placement_group_name=p.purchase.placement_group,
        placement_per_launch=p.placement_groups == "per-launch",
        local_storage=_local_storage(p, cat),
        labels_at_boot=bool(p.labels_at_boot),
        framework=framework,
        ami_parameter=ami_parameter(spec, cat, dev, _kubernetes_version(spec, cat)),
        spare_nodes=p.spare_nodes,
        memory_fit=_memory_fit(spec, p, cat),
    )


def _memory_fit(spec: Spec, p: Pool, cat: Catalog) -> MemoryFit | None:
    """The workload's training state on the pool's type (None: no bytes-per-parameter figure
    for the precision)."""
    wl = spec.workload
    if not _state_known(spec, cat):
        return None
    m = wl.model
    return memory_fit(
        cat,
        p.instance_type,
        m.params_billion,
        wl.precision,
        m.expert_params_billion,
        wl.expert_parallel,
    )


def vpc_cidr_problem(cidr: str) -> str | None:
    """Why `cidr` cannot be a created VPC's primary CIDR (a private IPv4 /16 to /20), or None:
    the rule `vpc-cidr` says it, and the address plan is worked out only without one."""
    try:
        net = ipaddress.ip_network(cidr)
    except ValueError:
        return f"{shown(cidr)} is not a CIDR block (e.g. 10.42.0.0/16)"
    if not isinstance(net, ipaddress.IPv4Network):
        return f"{shown(cidr)} is IPv6; a VPC's primary CIDR is IPv4"
    if not net.is_private or net.prefixlen > 20 or net.prefixlen < 16:
        return f"{shown(cidr)} must be a private /16 to /20"
    return None


def _state_known(spec: Spec, cat: Catalog) -> bool:
    """The catalog has a bytes-per-parameter figure for the workload's precision (the training
    state, so the memory fit and the checkpoint size, rest on it)."""
    return spec.workload.precision in cat.defaults.training_bytes_per_param


def checkpoint_plan(spec: Spec, cat: Catalog) -> CheckpointPlan | None:
    """The stack's checkpoint location and write speed (EKS stacks; None for ec2)."""
    if spec.orchestration != "eks" or not _state_known(spec, cat):
        return None
    facts, ck, st = cat.resilience.checkpoint, spec.checkpoint, spec.storage
    state = training_state_bytes(cat, spec.workload.model.params_billion, spec.workload.precision)
    seconds = 60 * (ck.write_minutes or facts.write_minutes)
    tier = write_s = None
    if st.fsx_lustre_gib:
        tiers = facts.fsx_throughput_tiers
        tier = st.fsx_throughput_per_tib or fsx_tier_for(state, st.fsx_lustre_gib, seconds, tiers)
        tier = tier or max(tiers)  # validation refuses a target no tier meets
        write_s = fsx_write_seconds(state, st.fsx_lustre_gib, tier)
    return CheckpointPlan(
        bucket=ck.bucket,
        prefix=ck.prefix or facts.prefix,
        state_bytes=state,
        write_seconds=seconds,
        keep=facts.keep,
        noncurrent_expire_days=facts.noncurrent_expire_days,
        fsx_path=facts.fsx_file_system_path if st.fsx_lustre_gib else None,
        fsx_gib=st.fsx_lustre_gib,
        fsx_throughput_per_tib=tier,
        fsx_write_seconds=write_s,
    )


def _reservations(p: Pool) -> tuple[tuple[str, int], ...]:
    """(id, nodes) of each reservation behind the pool: the list, else the one reservation_id
    holding every running node (nodes + spare_nodes), else none."""
    if p.purchase.reservations:
        return tuple((r.id, r.nodes) for r in p.purchase.reservations)
    if p.purchase.reservation_id:
        return ((p.purchase.reservation_id, p.nodes + p.spare_nodes),)
    return ()


def _kubernetes_version(spec: Spec, cat: Catalog) -> str:
    return spec.cluster.kubernetes_version or cat.defaults.kubernetes_version


def with_node_groups(stack: Stack) -> Stack:
    """The stack with each pool split into managed node groups of at most the EKS per-group
    limit (full groups first: growing a pool adds groups after the ones it has) and the
    created VPC's address plan, which says which subnet each group takes addresses from."""
    scale = stack.catalog.scale
    per_group, per_pg = (
        scale.limits.nodes_per_node_group.value,
        scale.node_groups_per_placement_group,
    )
    parts = {
        p.name: _reservation_parts(p, per_group, per_pg)
        if _splittable(p, scale.max_pool_nodes)
        else []
        for p in stack.pools
    }
    sizes = {name: tuple(n for n, _, _ in ps) for name, ps in parts.items()}
    stack, steps = _with_profile(stack, sizes)
    plan = _address_plan(stack, sizes)
    ultra = {
        p.device.name for p in stack.pools if p.instance_type in stack.catalog.scale.ultraservers
    }
    pools = tuple(
        replace(
            p,
            ultraserver=stack.catalog.scale.ultraservers.get(p.instance_type),
            scheduling_labels=_scheduling_labels(stack.catalog, p, ultra),
            node_groups=tuple(
                NodeGroupPart(
                    role=group_role(i),
                    nodes=n,
                    subnet=plan.subnet_of(p.name, i),
                    reservation_id=rid,
                    launch_template=lt,
                    step=steps[p.name][i],
                )
                for i, (n, rid, lt) in enumerate(parts[p.name])
            ),
        )
        for p in stack.pools
    )
    return replace(stack, pools=pools, address_plan=plan)


def _splittable(pool: ResolvedPool, most: int) -> bool:
    """Whether the pool's node groups are worked out: not for more nodes (running, or held by
    its reservations) than one cluster holds in one pool (`most`), which `pool-node-groups`
    and `pool-fleet-capacity` refuse: a count that large is never materialised."""
    held = sum(n for _, n in pool.reservations)
    return max(pool.running_nodes, held) <= most


def _scheduling_labels(cat: Catalog, pool: ResolvedPool, ultra: set[str]) -> dict[str, str]:
    """The pool's scheduling labels: its device-plugin charts' affinity labels, and the Neuron
    allocation label where a pool of its device kind is an UltraServer pool (`ultra`: those
    device kinds): 'dra' on UltraServer members, 'device-plugin' on the others; none in stacks
    without UltraServer pools (their node groups do not change)."""
    out = dict(cat.chart_node_labels(pool.device.name))
    if pool.device.name in ultra:
        dra = pool.instance_type in cat.scale.ultraservers
        out[naming.NEURON_ALLOCATION_LABEL] = "dra" if dra else "device-plugin"
    return out


def _with_profile(
    stack: Stack, sizes: Mapping[str, tuple[int, ...]]
) -> tuple[Stack, dict[str, tuple[int, ...]]]:
    """The stack with its cluster profile (EKS only) and its system nodes from it (unless the
    spec sets them), and each node group's creation step by pool: the control-plane tier for
    the stack's running nodes, steps of at most the account's launch bucket in creation order
    (pools in order, their groups in order)."""
    facts = stack.catalog.scale.large_cluster
    order = [n for p in stack.pools for n in sizes[p.name]]
    flat = facts.staging.steps(tuple(order))
    steps: dict[str, tuple[int, ...]] = {}
    at = 0
    for p in stack.pools:
        steps[p.name] = flat[at : at + len(sizes[p.name])]
        at += len(sizes[p.name])
    if stack.spec.orchestration != "eks":
        return stack, {p.name: (0,) * len(sizes[p.name]) for p in stack.pools}
    pool_nodes = sum(order)
    by_size = max(stack.system_nodes, facts.system_nodes_for(pool_nodes))
    system = stack.spec.cluster.system_nodes.nodes or by_size
    nodes = pool_nodes + system
    biggest = max(
        (sum(n for n, s in zip(order, flat, strict=True) if s == k) for k in set(flat)),
        default=0,
    )
    profile = ClusterProfile(
        nodes=nodes,
        tier=facts.control_plane.tier_for(nodes),
        steps=(max(flat) + 1) if flat else 1,
        step_minutes=facts.staging.step_minutes(biggest),
        system_nodes=system,
        private_registry=_private_registry(stack.spec.network, stack.catalog, nodes),
    )
    return replace(stack, profile=profile, system_nodes=system), steps


def _private_registry(net: Network, cat: Catalog, nodes: int) -> bool:
    """The private registry path (ECR endpoints, pull-through cache): a created VPC gets it
    once the pull is NAT-bound (scale.yaml image_delivery); an existing VPC only when the spec
    asks (network.ecr_endpoints), since it may have the endpoints already."""
    if net.mode == "existing":
        return net.ecr_endpoints
    return cat.scale.image_delivery.nat_bound(nodes)


def _reservation_parts(
    pool: ResolvedPool, per_group: int, per_placement_group: int = 1
) -> list[tuple[int, str | None, str]]:
    """(nodes, reservation id, launch template role) of each node group: every reservation
    behind the pool in order (its own launch template targets it: `lt`, `lt-2`, ...), each
    split into groups of at most `per_group`; a pool on no reservation is one run of groups.
    A pool in created cluster placement groups `per-launch` gives every `per_placement_group`
    node groups (by index, so growing never moves a group) a launch template, and so a
    placement group, of their own (scale.yaml placement); the first keeps `lt`."""
    runs = pool.reservations or ((None, pool.running_nodes),)
    parts = [
        (n, rid, naming.launch_template_role(k))
        for k, (rid, total) in enumerate(runs)
        for n in split_nodes(total, per_group)
    ]
    if not (pool.placement_group and pool.placement_per_launch):
        return parts
    return [
        (n, rid, naming.launch_template_role(i // per_placement_group))
        for i, (n, rid, _) in enumerate(parts)
    ]


def _address_plan(stack: Stack, sizes: Mapping[str, tuple[int, ...]]) -> AddressPlan:
    """The address plan of an EKS stack: a created VPC's (secondary CIDR when needed), or an
    existing VPC's from its zones' free addresses when the spec gives them
    (network.private_subnet_addresses; preflight counts the others); standalone instances keep
    the defaults."""
    net = stack.spec.network
    if stack.spec.orchestration != "eks" or not stack.placed:
        return AddressPlan()
    if net.mode != "create" and not net.private_subnet_addresses:
        return AddressPlan()
    if net.mode == "create" and vpc_cidr_problem(stack.vpc_cidr) is not None:
        return AddressPlan()  # `vpc-cidr` refuses it
    cat = stack.catalog
    groups = [
        g
        for i, p in enumerate(stack.pools)
        for g in pool_group_demands(
            cat,
            f"pools[{i}]",
            p.name,
            p.zone_id,
            p.instance,
            sizes[p.name],
            p.efa_interfaces,
            p.efa_interface_style,
        )
    ]
    zones = stack.network_zone_ids
    system = system_demand(
        cat, cat.instances.get(stack.system_instance_type), stack.system_nodes, zones
    )
    if net.mode != "create":
        free = {
            cat.zone_id(stack.region, z) or z: n for z, n in net.private_subnet_addresses.items()
        }
        return plan_existing(cat, free, groups, system)
    return plan_addresses(cat, stack.region, stack.vpc_cidr, zones, groups, system)


def deployment_name(spec_name: str, pulumi_stack: str) -> str:
    """The resource-name prefix of one Pulumi stack deploying the spec `spec_name`.

    The spec's own stack (stack name == spec name) keeps the spec's name, so existing stacks see
    no renames; any other stack (dev, staging, prod) appends its name: `<spec>-<stack>`. So
    several stacks of one spec coexist in one account. The result must still be a valid stack
    name (lowercase letters, digits, '-', at most 40 characters) since physical names derive
    from it; otherwise one line names both."""
    if pulumi_stack == spec_name:
        return spec_name
    name = f"{spec_name}-{pulumi_stack}"
    if not re.fullmatch(NAME_RE, name):
        raise AccelstackError(
            f"Pulumi stack {shown(pulumi_stack)} with spec {shown(spec_name)} gives the "
            f"resource-name prefix {shown(name)}, which is not valid: lowercase letters, digits "
            "and '-', at most 40 characters; choose a shorter stack name"
        )
    return name


def check_region(spec: Spec, configured: str | None, source: str = "aws:region") -> None:
    """A region set in the Pulumi stack's config must be the spec's region: honoured when
    equal, refused (one line naming both) when it conflicts; unset means the spec's."""
    if configured and configured != spec.region:
        raise AccelstackError(
            f"stack config {source} is {shown(configured)} but spec {shown(spec.name)} deploys "
            f"to region {shown(spec.region)}; set {source} to {spec.region} or change the "
            "spec's region"
        )


def resolve_unchecked(
    spec: Spec, catalog: Catalog | None = None, *, name: str | None = None
) -> Stack:
    """Fill defaults from the catalog, WITHOUT the rules on the resolved stack: use
    `accelstack.resolve.resolve`, which runs them. The spec must have passed `check_rules`.
    `name`: the resource-name prefix when the deployment differs from the spec
    (`deployment_name`).

    Unchecked on purpose, for two kinds of caller: `render.trial.trial_stack`, which derives
    a short trial run from a stack that passed the rules (a trial on fewer nodes than the
    memory fit asks is the point of a trial), and `cli.specfiles.resolved_target`, which runs
    the rules itself (`check_stack`) and reads the refused stack's memory fit to name `new`'s
    --nodes; and tests
    of the later safety nets (the deploy rules of accelstack/plan/rules, e.g. the name and
    tag checks, and render's bounds on generated names), which need a stack the stack rules
    would refuse to show those catch it too or hold beyond it."""
    cat = catalog or load_catalog()
    d = cat.defaults
    resolved = (_resolve_pool(spec, i, p, cat) for i, p in enumerate(spec.pools))
    pools = [p for p in resolved if p is not None]
    cc = spec.compile_cache
    wl_name = workload_pool_name(spec)
    wl_pool = next((p for p in pools if p.name == wl_name), None)
    fw = wl_pool.framework if wl_pool else None
    framework = fw.name if fw else ""
    image = spec.workload.image or (fw.default_image if fw else None) or ""
    tags = naming.stack_tags(name or spec.name, spec.tags)
    stack = Stack(
        spec=spec,
        catalog=cat,
        pools=tuple(pools),
        kubernetes_version=_kubernetes_version(spec, cat),
        system_instance_type=spec.cluster.system_nodes.instance_type or d.system_instance_type,
        system_nodes=spec.cluster.system_nodes.nodes or d.system_nodes,
        system_root_volume_gib=spec.cluster.system_nodes.root_volume_gib
        or d.system_root_volume_gib,
        vpc_cidr=spec.network.vpc_cidr or d.vpc_cidr,
        compile_cache_enabled=any(p.compile_cache for p in pools),
        compile_cache_bucket=cc.bucket if cc else None,
        compile_cache_prefix=(cc.prefix if cc and cc.prefix else d.compile_cache_prefix),
        compile_cache_expire_days=(
            cc.expire_days if cc and cc.expire_days else d.compile_cache_expire_days
        ),
        framework=framework,
        image=image,
        tags=tags,
        checkpoint=checkpoint_plan(spec, cat),
        deployment=name if name and name != spec.name else "",
    )
    return with_node_groups(stack)
