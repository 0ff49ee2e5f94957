"""The catalog's fact models: an instance type, its family and device, prices, defaults, charts,
launch and pod facts, each a frozen pydantic model that `accelstack.catalog.model.Catalog`
holds and `accelstack.catalog.load` builds from the YAML files."""

from __future__ import annotations

import re
from datetime import date
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

PurchaseOption = Literal[
    "on-demand", "spot", "savings-plan-1y", "savings-plan-3y", "capacity-block", "reservation"
]
PURCHASE_OPTIONS: tuple[str, ...] = get_args(PurchaseOption)
Precision = Literal["bf16", "fp16", "fp8"]


class Frozen(BaseModel):
    """The base of every fact model: immutable, no unknown field, built on first use."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Taint(Frozen):
    key: str
    value: str
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Label(Frozen):
    key: str
    value: str


class DeviceKind(Frozen):
    name: str = ""
    frameworks: tuple[str, ...]
    default_framework: str | None
    eks_ami_variant: str
    standalone_ami_parameter: str | None
    standalone_root_device: str | None = None  # the root device name of that AMI
    device_resource: str | None
    core_resource: str | None
    taint: Taint | None
    node_label: Label
    compile_cache: bool
    quota_family: str
    default_image: str | None
    node_lnc_file: str | None = None
    accelerator_probe: Literal["neuron-dev", "nvidia-smi"] | None = None


class Framework(Frozen):
    """A training path on a device kind: its launch template, image, SDK range and cache."""

    name: str = ""
    device_kind: str
    title: str
    status: Literal["supported", "beta", "maintenance"]
    status_note: str
    node_template: str
    dist_backend: str
    ranks_note: str
    default_image: str | None
    image_note: str
    min_sdk: str | None = None
    max_sdk: str | None = None
    compile_cache: Literal["s3", "filesystem", "none"]
    cache_var: str | None
    precompile: bool
    nccl_net_plugin: str | None = None
    nccl_net: str | None = None
    # `accelstack trial --reference` (accelstack/trial/reference.py, eager PyTorch) runs here
    reference_benchmark: bool = False
    source: str


def sdk_version(text: str) -> tuple[int, ...]:
    """'2.27.0' -> (2, 27, 0)."""
    return tuple(int(x) for x in text.split("."))


def image_sdk(image: str) -> str | None:
    """The Neuron SDK version an image tag shows (`...-sdk2.30.0-...`), or None."""
    tag = image.rsplit("/", 1)[-1].partition("@")[0].partition(":")[2]
    match = re.search(r"(?:^|[-_.])sdk(\d+\.\d+(?:\.\d+)?)", tag)
    return match.group(1) if match else None


class Family(Frozen):
    name: str = ""
    accelerator: str
    device_kind: str
    peak_tflops: dict[str, float]
    peak_source: str
    peak_as_of: str
    default_logical_cores: int = Field(ge=1)
    default_root_volume_gib: int = Field(ge=8)
    logical_cores_allowed: tuple[int, ...] = (1,)
    frameworks: tuple[str, ...] | None = None  # None: the device kind's
    default_framework: str | None = None  # None: the device kind's
    min_neuron_sdk: str | None = None
    # What the device calls itself (CUDA's device name; fnmatch patterns): `calibrate` refuses
    # a record from a device another family names, or one this family does not. Empty: the
    # device reports no name (Neuron: a record's host instance type from neuron-ls is checked)
    device_names: tuple[str, ...] = ()
    #: chip-to-chip link bandwidth inside an instance, GB/s per chip as the vendor publishes it
    #: (NVLink, NeuronLink): the step model's tensor-parallel and expert all-to-all terms
    #: read it; None where no figure is published
    chip_link_gb_per_s: float | None = Field(default=None, gt=0)
    chip_link_source: str | None = None


class InstanceType(Frozen):
    name: str = ""
    family: str
    chips: int = Field(ge=0)
    physical_cores_per_chip: int = Field(ge=0)
    accelerator_memory_gib: float = Field(ge=0)
    vcpus: int = Field(ge=1)
    memory_gib: float = Field(gt=0)
    network_cards: int = Field(ge=1)
    efa_interfaces: int = Field(ge=0)
    efa_gbps: int = Field(ge=0)
    ipv4_per_interface: int = Field(ge=1)
    preview: bool = False
    compare: bool = False  # a default candidate of `accelstack compare`
    estimated_fields: tuple[str, ...] = ()
    source: str
    dit_exceptions: dict[str, str] = Field(default_factory=dict)

    @property
    def accelerated(self) -> bool:
        return self.chips > 0

    @property
    def efa_supported(self) -> bool:
        return self.efa_interfaces > 0

    @property
    def physical_cores(self) -> int:
        return self.chips * self.physical_cores_per_chip


class Rate(Frozen):
    """One price row. `usd` is per instance-hour for instances, per `unit` for services."""

    region: str
    usd: float = Field(ge=0)
    as_of: str
    estimate: bool
    source: str
    note: str | None = None
    type: str | None = None
    option: str | None = None
    item: str | None = None
    unit: str | None = None


class Quotas(Frozen):
    on_demand: str = Field(alias="on-demand")
    spot: str


class EksVersion(Frozen):
    standard_support_end: date
    extended_support_end: date

    def status(self, on: date) -> Literal["standard", "extended", "ended"]:
        if on < self.standard_support_end:
            return "standard"
        return "extended" if on < self.extended_support_end else "ended"


class SpotInterruption(Frozen):
    """How compare prices spot: extra wall time from interruptions (instances.yaml, sourced)."""

    interruptions_per_node_month: float = Field(ge=0)
    lost_hours_per_interruption: float = Field(ge=0)
    estimate: bool
    source: str

    def overhead_factor(self, nodes: int, hours_per_month: float) -> float:
        """Wall-time multiplier for a synchronous job on `nodes` spot nodes: any node's
        interruption stops every node, so interruptions add up over the nodes."""
        per_hour = self.interruptions_per_node_month / hours_per_month
        return 1.0 + nodes * per_hour * self.lost_hours_per_interruption


class Defaults(Frozen):
    kubernetes_version: str
    eks_versions: dict[str, EksVersion]
    system_instance_type: str
    system_nodes: int
    system_root_volume_gib: int
    vpc_cidr: str
    efa_interface_style: Literal["efa", "efa-only"]
    eks_ami_parameter: str  # format string: {kubernetes_version}, {variant}
    compile_cache_prefix: str
    compile_cache_expire_days: int
    fsx_deployment_type: str
    fsx_throughput_per_tib: int
    ssm_document_limit_bytes: int = Field(gt=0)
    configmap_limit_bytes: int = Field(gt=0)
    training_namespace: str
    training_service_account: str
    hours_per_month: int
    training_bytes_per_param: dict[str, float]
    # of those, an expert parameter's bytes kept on its expert-parallel group only
    expert_parallel_bytes_per_param: dict[str, float] = Field(default_factory=dict)
    usable_memory_fraction: float = Field(gt=0, le=1)
    s3_assumed_gib: float = Field(gt=0)
    vpc_cni_warm_enis: int = Field(ge=0)
    #: vpc-cni configuration values that turn its network policy agent on (sourced in the YAML)
    vpc_cni_network_policy: dict[str, str] = Field(default_factory=dict)
    #: Kubernetes version -> add-on name -> pinned add-on version (sourced in the YAML)
    eks_addon_versions: dict[str, dict[str, str]] = Field(default_factory=dict)
    #: Kubernetes version -> where its add-on row came from (a table, or DescribeAddonVersions
    #: as `accelstack addons refresh` read it)
    eks_addon_sources: dict[str, str] = Field(default_factory=dict)
    subnet_reserved_ips: int = Field(ge=0)
    spot_interruption: SpotInterruption

    @property
    def supported_kubernetes_versions(self) -> tuple[str, ...]:
        return tuple(self.eks_versions)


class PodFacts(Frozen):
    """What a training pod asks for (launch.yaml `pods`; sources there)."""

    kube_reserved_cpu_tiers: tuple[tuple[int, float], ...]
    kube_reserved_memory_mib_per_pod: int = Field(ge=0)
    kube_reserved_memory_mib_base: int = Field(ge=0)
    max_pods_small: int = Field(ge=1)
    max_pods_large: int = Field(ge=1)
    max_pods_small_up_to_vcpus: int = Field(ge=1)
    eviction_hard_memory_mib: int = Field(ge=0)
    vm_memory_overhead_fraction: float = Field(ge=0, lt=1)
    daemonset_reserve_millicores: int = Field(ge=0)
    daemonset_reserve_mib: int = Field(ge=0)
    efa_hugepages_2mi_mib: int = Field(ge=0)
    efa_node_hugepages_mib: int = Field(ge=0)
    efa_add_capabilities: tuple[str, ...]


class DaemonSetFacts(Frozen):
    """A DaemonSet the stack's add-ons or charts put on nodes (launch.yaml `daemonsets`, with
    sources): what creates it, where it runs, what its pod requests and advertises."""

    name: str
    addon: str | None = None  # the EKS add-on that creates it (the plan's addonName)
    chart: str | None = None  # the catalog chart (charts key) whose release creates it
    enabled_key: str | None = None  # the release values key that turns it on
    node_selector_key: str | None = None  # the release values key holding its nodeSelector
    tolerations_key: str | None = None  # the release values key holding its tolerations
    device_kind: str | None = None  # an add-on's DaemonSet that runs on this device kind only
    advertises: Literal["device", "efa", "dra"] | None = None
    cpu_millicores: int = Field(ge=0)
    memory_mib: int = Field(ge=0)
    estimate: bool = False
    source: str


class FaultTolerance(Frozen):
    job_restarts: int = Field(ge=1)
    torchrun_max_restarts: int = Field(ge=1)


class PythonEnv(Frozen):
    """A DLAMI Python environment the sbatch file activates."""

    device_kind: str
    path: str
    families: tuple[str, ...]
    activate: str
    source: str


class FabricTool(Frozen):
    """The collective benchmark of one device kind (launch.yaml fabric_test.tools)."""

    tool: Literal["nccl-tests", "nccom-test"]
    image: str | None  # None: the workload image
    binary: str
    source: str
    #: the image's OpenMPI launcher by absolute path (None: the tool starts mpirun itself)
    mpirun: str | None = None
    #: what the image must hold, checked at the test's start (commands or absolute paths)
    requires: tuple[str, ...] = ()
    requires_source: str | None = None


class FabricTestFacts(Frozen):
    """Fabric acceptance test: tolerance on the network-bound bus bandwidth, sizes, tools."""

    tolerance: float = Field(gt=0, le=1)
    estimate: bool
    min_bytes: str
    max_bytes: str
    iterations: int = Field(ge=1)
    tools: dict[str, FabricTool]
    #: mpirun's SSH arguments where no Trainer sets them (its MPI runtime's default), and source
    rsh_args: str = ""
    rsh_args_source: str = ""
    #: how long the launcher waits for every node's sshd before it fails naming the node
    ssh_wait_seconds: int = Field(600, ge=1)


class FlightRecorder(Frozen):
    """PyTorch's NCCL flight recorder on CUDA jobs (launch.yaml nccl_flight_recorder)."""

    dist_backends: tuple[str, ...]
    trace_buffer_size: int = Field(ge=1)
    source: str


class LaunchFacts(Frozen):
    pods: PodFacts
    fault_tolerance: FaultTolerance
    dlami_python_envs: tuple[PythonEnv, ...]
    fabric_test: FabricTestFacts | None = None
    nccl_flight_recorder: FlightRecorder | None = None
    daemonsets: tuple[DaemonSetFacts, ...] = ()


class ChartCheck(Frozen):
    """One of a chart's own checks on its values (a template that fails the install): when
    `key` is true, every `excludes` key must be false and every `requires` key true."""

    key: str
    excludes: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()


class HelmChart(Frozen):
    """A device-plugin chart: pinned version, source, and the values keys accelstack sets."""

    name: str = ""
    chart: str
    version: str
    repo: str | None
    namespace: str
    device_kind: str | None  # installed for pools of this device kind; None: for EFA pools
    source: str
    values_keys: tuple[str, ...]
    values_source: str
    instance_list_key: str | None  # the values key that lists the instance types it serves
    node_labels: dict[str, str] = Field(default_factory=dict)  # its default affinity needs
    #: device-plugin (installed per the pools' devices), job-controller (per jobs.controller)
    #: or queue (Kueue, per jobs.kueue)
    role: Literal["device-plugin", "job-controller", "queue"] = "device-plugin"
    kind: Literal["helm", "kustomize"] = "helm"
    controller: str | None = None  # the jobs.controller value that installs a job controller
    default: bool = False  # the job controller of an EKS stack whose spec names none
    manifest_kind: str | None = None  # the manifest render lists first with this controller
    api_version: str | None = None  # the API its custom resources are served under
    bundles: dict[str, str] = Field(default_factory=dict)  # dependency charts it installs
    bundles_source: str | None = None
    integrations: tuple[str, ...] = ()  # job kinds a queue admits as installed
    #: The chart's own checks on its values, the defaults of the keys they read, the source
    #: (the deploy rule `chart-config-checks` holds each release to them)
    config_checks: tuple[ChartCheck, ...] = ()
    #: Queue (Kueue): the values key holding the manager Configuration as YAML text, and the
    #: chart's default Configuration entries accelstack keeps when it writes that key
    manager_config_key: str | None = None
    manager_config: dict[str, Any] = Field(default_factory=dict)
    manager_config_source: str | None = None
    value_defaults: dict[str, bool] = Field(default_factory=dict)
    config_checks_source: str | None = None


class MetricsAddon(Frozen):
    """The accelerator-metrics add-on (instances.yaml `metrics_addon`, sources there)."""

    addon_name: str
    namespace: str
    service_account: str
    policy: str
    rate_item: str  # the prices.yaml service item billed per node-hour
    source: str


class RegionOfferings(Frozen):
    zones: dict[str, str]  # zone name -> zone id
    types: dict[str, tuple[str, ...]]  # instance type -> zone ids
    estimated_types: tuple[str, ...] = ()
