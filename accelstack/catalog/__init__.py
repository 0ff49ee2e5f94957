"""The catalog: instance facts, offerings and prices, read from the YAML files beside this module.

Everything downstream (spec validation, plan, components, templates, cost) asks the catalog;
nothing else knows a number about an instance type.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from accelstack.catalog import cache
from accelstack.catalog.blocks import CapacityBlocks
from accelstack.catalog.overlay import check_dir, check_keys, identity, merge, overlay_dir
from accelstack.catalog.price_ranges import MissingRange, PriceRange, span_in
from accelstack.catalog.purchase import OptionLists, option_lists
from accelstack.catalog.purchase import PurchaseOptionFacts as PurchaseOptionFacts
from accelstack.catalog.records import LeftOut, Shape, TrainingRecord
from accelstack.catalog.resilience import ResilienceFacts
from accelstack.catalog.scale import ScaleFacts
from accelstack.catalog.sections import (
    BY_FILE,
    SECTIONS,
    Section,
    new_curve_hint,
    new_region_hint,
    new_type_hint,
    overlay_hint,
    section_of_field,
    service_row,
)
from accelstack.catalog.throughput import MfuCurve, StepFamily, Throughput
from accelstack.catalog.yamlread import safe_load
from accelstack.errors import (
    CatalogError,
    MissingPrice,
    UnknownInstanceType,
    allowed,
    did_you_mean,
    shown,
)

CATALOG_DIR = Path(__file__).resolve().parent
_AS_OF = re.compile(r"^\d{4}(-\d{2}){0,2}$")

PurchaseOption = Literal[
    "on-demand", "spot", "savings-plan-1y", "savings-plan-3y", "capacity-block", "reservation"
]
PURCHASE_OPTIONS: tuple[str, ...] = get_args(PurchaseOption)
Precision = Literal["bf16", "fp16", "fp8"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Taint(_Frozen):
    key: str
    value: str
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Label(_Frozen):
    key: str
    value: str


class DeviceKind(_Frozen):
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


class Framework(_Frozen):
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


class Family(_Frozen):
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


class InstanceType(_Frozen):
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


class Rate(_Frozen):
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


class Quotas(_Frozen):
    on_demand: str = Field(alias="on-demand")
    spot: str


class EksVersion(_Frozen):
    standard_support_end: date
    extended_support_end: date

    def status(self, on: date) -> Literal["standard", "extended", "ended"]:
        if on < self.standard_support_end:
            return "standard"
        return "extended" if on < self.extended_support_end else "ended"


class SpotInterruption(_Frozen):
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


class Defaults(_Frozen):
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


class PodFacts(_Frozen):
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


class DaemonSetFacts(_Frozen):
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


class FaultTolerance(_Frozen):
    job_restarts: int = Field(ge=1)
    torchrun_max_restarts: int = Field(ge=1)


class PythonEnv(_Frozen):
    """A DLAMI Python environment the sbatch file activates."""

    device_kind: str
    path: str
    families: tuple[str, ...]
    activate: str
    source: str


class FabricTool(_Frozen):
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


class FabricTestFacts(_Frozen):
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


class FlightRecorder(_Frozen):
    """PyTorch's NCCL flight recorder on CUDA jobs (launch.yaml nccl_flight_recorder)."""

    dist_backends: tuple[str, ...]
    trace_buffer_size: int = Field(ge=1)
    source: str


class LaunchFacts(_Frozen):
    pods: PodFacts
    fault_tolerance: FaultTolerance
    dlami_python_envs: tuple[PythonEnv, ...]
    fabric_test: FabricTestFacts | None = None
    nccl_flight_recorder: FlightRecorder | None = None
    daemonsets: tuple[DaemonSetFacts, ...] = ()


class ChartCheck(_Frozen):
    """One of a chart's own checks on its values (a template that fails the install): when
    `key` is true, every `excludes` key must be false and every `requires` key true."""

    key: str
    excludes: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()


class HelmChart(_Frozen):
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


class MetricsAddon(_Frozen):
    """The accelerator-metrics add-on (instances.yaml `metrics_addon`, sources there)."""

    addon_name: str
    namespace: str
    service_account: str
    policy: str
    rate_item: str  # the prices.yaml service item billed per node-hour
    source: str


class RegionOfferings(_Frozen):
    zones: dict[str, str]  # zone name -> zone id
    types: dict[str, tuple[str, ...]]  # instance type -> zone ids
    estimated_types: tuple[str, ...] = ()


class Catalog(_Frozen):
    device_kinds: dict[str, DeviceKind]
    frameworks: dict[str, Framework]
    retired_frameworks: dict[str, str]
    quotas: dict[str, Quotas]
    families: dict[str, Family]
    instances: dict[str, InstanceType]
    defaults: Defaults
    charts: dict[str, HelmChart]
    metrics_addon: MetricsAddon | None = None
    regions: dict[str, RegionOfferings]
    offerings_source: str
    instance_rates: tuple[Rate, ...]
    service_rates: tuple[Rate, ...]
    hours_per_month: int
    records: tuple[TrainingRecord, ...]
    left_out: tuple[LeftOut, ...] = ()
    record_shapes: dict[str, Shape] = Field(default_factory=dict)  # records.yaml shapes
    throughput: Throughput
    capacity_blocks: CapacityBlocks
    price_ranges: tuple[PriceRange, ...] = ()  # price_ranges.yaml: estimated rates' spans
    launch: LaunchFacts
    purchase_options: dict[str, PurchaseOptionFacts]
    purchase_sources: dict[str, str]
    scale: ScaleFacts  # scale.yaml: limits, address space, UltraServers
    resilience: ResilienceFacts

    def price_span(
        self, instance_type: str, option: str, estimate: bool
    ) -> tuple[float, float, str] | None:
        """(low factor, high factor, source) of an estimated rate (price_ranges.yaml, the
        overlay's rows on top); None for an observed rate; no row for an estimate fails closed."""
        try:
            return span_in(self.price_ranges, instance_type, option, estimate)
        except MissingRange as exc:
            row = (
                f"{{option: {option}, types: [{instance_type}], low: ..., high: ..., source: ...}}"
            )
            raise CatalogError(
                f"{exc}; {overlay_hint('price_ranges.yaml', 'price_ranges', row)}"
            ) from None

    # ---- instance facts -------------------------------------------------------------
    def instance(self, name: str) -> InstanceType:
        try:
            return self.instances[name]
        except KeyError:
            hint = did_you_mean(name, self.instances)
            raise UnknownInstanceType(
                f"{shown(name)} is not a known instance type{hint}"
                f" (known: {allowed(self.accelerated_types())}){new_type_hint(name, hint)}"
            ) from None

    def accelerated_types(self) -> list[str]:
        return sorted(n for n, i in self.instances.items() if i.accelerated)

    def family_of(self, instance_type: str) -> Family:
        return self.families[self.instance(instance_type).family]

    def device_kind_of(self, instance_type: str) -> DeviceKind:
        return self.device_kinds[self.family_of(instance_type).device_kind]

    def compare_candidates(self) -> tuple[str, ...]:
        """`accelstack compare`'s default candidates: the rows flagged `compare`, in order."""
        return tuple(n for n, i in self.instances.items() if i.compare)

    def controller_chart(self, controller: str) -> HelmChart | None:
        """The job-controller row that `jobs.controller: <controller>` installs (None: none)."""
        for c in self.charts.values():
            if c.role == "job-controller" and c.controller == controller:
                return c
        return None

    def default_job_controller(self) -> str:
        """The jobs.controller an EKS stack gets when its spec names none."""
        return next(
            (c.controller for c in self.charts.values() if c.default and c.controller), "none"
        )

    def job_controllers(self) -> list[str]:
        """The jobs.controller values the catalog can install (plus `none`)."""
        return [*sorted(c.controller for c in self.charts.values() if c.controller), "none"]

    def chart_node_labels(self, device_kind: str) -> dict[str, str]:
        """Node labels the charts of a device kind require by their default affinity."""
        out: dict[str, str] = {}
        for c in self.charts.values():
            if c.role == "device-plugin" and c.device_kind == device_kind:
                out.update(c.node_labels)
        return out

    def family_frameworks(self, family: Family) -> tuple[str, ...]:
        """Frameworks the family allows (its own list, else its device kind's)."""
        if family.frameworks is not None:
            return family.frameworks
        return self.device_kinds[family.device_kind].frameworks

    def default_framework(self, family: Family) -> str | None:
        """The family's default framework (its own, else its device kind's)."""
        return family.default_framework or self.device_kinds[family.device_kind].default_framework

    def default_image(self, instance_type: str, framework: str | None = None) -> str | None:
        """The image `instance_type` runs when the spec names none: the default image of the
        training path (`framework`, else the family's default) when the family allows it,
        else the device kind's."""
        family = self.family_of(instance_type)
        name = framework or self.default_framework(family)
        fw = self.frameworks.get(name or "")
        if fw is not None and name in self.family_frameworks(family) and fw.default_image:
            return fw.default_image
        return self.device_kind_of(instance_type).default_image

    def neuron_cores(self, instance_type: str, logical_cores: int | None = None) -> int:
        """Cores torchrun starts one process per (NeuronCores at the logical-core setting;
        GPUs on NVIDIA)."""
        inst = self.instance(instance_type)
        fam = self.families[inst.family]
        lnc = logical_cores or fam.default_logical_cores
        if inst.physical_cores_per_chip % lnc:
            raise CatalogError(
                f"logical core setting {lnc} does not divide the "
                f"{inst.physical_cores_per_chip} cores per chip of {instance_type}"
            )
        return inst.chips * inst.physical_cores_per_chip // lnc

    def mfu_curve(self, family: str, precision: str) -> MfuCurve:
        """The family's steady-state MFU curve for `precision`; an extrapolated curve comes
        with its source curve's coefficients (x its factor) and stack offsets."""
        tp = self.throughput
        curve = tp.curve_for(family, precision)
        if curve is None:
            raise CatalogError(
                f"family {family} has no MFU curve for {precision}; set budget.mfu, or "
                + new_curve_hint(family, precision)
            )
        if curve.from_curve is None:
            return curve
        src = curve.from_curve
        base = tp.curve_for(src.family, src.precision)
        if base is None or base.from_curve is not None:
            raise CatalogError(
                f"throughput.yaml: curve {family}/{precision}: from_curve "
                f"{src.family}/{src.precision} is not a fitted curve"
            )
        return curve.model_copy(
            update={
                "intercept": base.intercept,
                "slope": base.slope,
                "params_range": base.params_range,
                "stacks": base.stacks,
                "residual_range": base.residual_range,
                "sequence_range": base.sequence_range,
                "records": base.records,
            }
        )

    def step_family(self, family: str) -> StepFamily:
        """The family's step terms (attention rates, link and expert terms); an extrapolated
        family comes with its source family's terms (the attention rate marked relative when
        `attention_relative_to_dense`), and without an expert term unless it inherits one."""
        own = self.throughput.step_for(family)
        if own is None:
            raise CatalogError(f"throughput: step: no entry for family {family}")
        if own.from_family is None:
            return own
        base = self.throughput.step_for(own.from_family)
        if base is None or base.from_family is not None:
            raise CatalogError(
                f"throughput: step: {family}: from_family {own.from_family} is not a fitted family"
            )
        return own.model_copy(
            update={
                "attention_centre": base.attention_centre,
                "attention_stacks": base.attention_stacks,
                "context_parallel_loss_centre": base.context_parallel_loss_centre,
                "context_parallel_loss_stacks": base.context_parallel_loss_stacks,
                "tensor_parallel_efficiency": own.tensor_parallel_efficiency
                if own.tensor_parallel_efficiency is not None or own.attention_relative_to_dense
                else base.tensor_parallel_efficiency,
                "experts": own.experts or (base.experts if own.inherit_experts else None),
            }
        )

    def region(self, region: str) -> RegionOfferings:
        try:
            return self.regions[region]
        except KeyError:
            hint = did_you_mean(region, self.regions)
            raise CatalogError(
                f"region {shown(region)} has no accelerated offerings in the catalog{hint} "
                f"(known: {allowed(self.regions)}){new_region_hint(region, hint)}"
            ) from None

    def zones_offering(self, region: str, instance_type: str) -> tuple[str, ...]:
        """Zone ids in `region` that offer `instance_type` (empty when none)."""
        return self.region(region).types.get(instance_type, ())

    def pool_zone(self, region: str, instance_type: str, wanted: str | None) -> str | None:
        """The zone id a pool's subnet is placed in: the zone asked for (name or id) when the
        region has it, else the first zone offering the type; None when none does. The one
        placement rule: resolve places pools with it, the spec rules budget IPs with it."""
        zid = self.zone_id(region, wanted) if wanted else None
        if zid is not None:
            return zid
        offered = self.zones_offering(region, instance_type)
        return offered[0] if offered else None

    def zone_id(self, region: str, zone: str) -> str | None:
        """Resolve a zone name or id to a zone id; None when the region has no such zone."""
        reg = self.region(region)
        if zone in reg.zones.values():
            return zone
        return reg.zones.get(zone)

    def regions_offering(self, instance_type: str) -> list[str]:
        return sorted(r for r, o in self.regions.items() if instance_type in o.types)

    # ---- prices -----------------------------------------------------------------------
    @cached_property
    def _rate_index(self) -> dict[tuple[str, str, str], Rate]:
        return {(r.region, r.type or "", r.option or ""): r for r in self.instance_rates}

    def instance_rate(self, region: str, instance_type: str, option: str) -> Rate:
        """Hourly rate for one instance; raises MissingPrice (never returns 0 for unknown)."""
        self.instance(instance_type)
        billed_as = self.purchase(option).price_key
        rate = self._rate_index.get((region, instance_type, billed_as))
        if rate is None:
            known = sorted(
                o for (r, t, o) in self._rate_index if r == region and t == instance_type
            )
            have = f"; priced options there: {', '.join(known)}" if known else ""
            row = (
                f"{{region: {region}, type: {instance_type}, option: {billed_as}, usd: ..., "
                "as_of: YYYY-MM, source: ...}"
            )
            raise MissingPrice(
                f"no {billed_as} price for {instance_type} in {region} in the catalog{have}; "
                + overlay_hint("prices.yaml", "instances", row)
            )
        return rate

    def has_rate(self, region: str, instance_type: str, option: str) -> bool:
        return (region, instance_type, self.purchase(option).price_key) in self._rate_index

    @cached_property
    def option_lists(self) -> OptionLists:
        """The purchase options `compare` accepts, compares by default, and commits to, from
        this catalog's purchase_options rows (computed once per catalog)."""
        return option_lists(self.purchase_options)

    def purchase(self, option: str) -> PurchaseOptionFacts:
        """The purchase_options.yaml row of an option (the spec allows only these)."""
        try:
            return self.purchase_options[option]
        except KeyError:
            raise CatalogError(
                f"unknown purchase option {shown(option)}{did_you_mean(option, self.purchase_options)}"
            ) from None

    @staticmethod
    def fsx_price_item(deployment_type: str, throughput_per_tib: int | None) -> str:
        """The prices.yaml item of an FSx for Lustre file system (the cost guard prices it)."""
        item = f"fsx-lustre-{deployment_type.lower().replace('_', '')}"
        return item if throughput_per_tib is None else f"{item}-{throughput_per_tib}"

    def service_rate(self, region: str, item: str) -> Rate:
        for rate in self.service_rates:
            if rate.item == item and rate.region in (region, "*"):
                return rate
        raise MissingPrice(
            f"no price for '{item}' in {region} in the catalog; "
            + overlay_hint("prices.yaml", "services", service_row(region, item))
        )


def _where(name: str, base: Path, overlay: Path | None) -> Path:
    """The file an error in `name` is reported against: the overlay's when it has one."""
    if overlay is not None and (overlay / name).exists():
        return overlay / name
    return base / name


def _paths(section: Section, base: Path, overlay: Path | None) -> tuple[Path, Path | None]:
    """The bundled file of a section, and the overlay's file of that name if it has one."""
    path = base / section.file
    if not path.exists() and base != CATALOG_DIR:  # a partial catalog directory (tests)
        path = CATALOG_DIR / section.file
    top = overlay / section.file if overlay is not None else None
    return path, top if top is not None and top.exists() else None


def _read(section: Section, base: Path, overlay: Path | None = None) -> dict[str, object]:
    """A catalog file, with the overlay's file of that name merged on top (overlay.py), the
    section's lists of rows merged row by row."""
    path, top = _paths(section, base, overlay)
    data = _read_path(path)
    if top is not None:
        own = _read_path(top)
        check_keys(own, data, top)
        data = merge(data, own, section.rows)
    return data


def _cache_key(base: Path, overlay: Path | None) -> str | None:
    """The parsed-catalog cache's name for these files (None: one cannot be read; loading
    then reports it)."""
    try:
        read = [p for s in SECTIONS for p in _paths(s, base, overlay) if p is not None]
        return cache.key((str(p), p.read_bytes()) for p in read)
    except OSError:
        return None


def _read_path(path: Path) -> dict[str, object]:
    try:
        data = safe_load(path.read_text(encoding="utf-8"))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise CatalogError(
            f"{path}: cannot read catalog file: {exc.problem or exc.context}{where}"
        ) from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise CatalogError(f"{path}: cannot read catalog file: {reason}") from None
    if not isinstance(data, dict):
        raise CatalogError(f"{path}: catalog file must be a mapping (is it truncated?)")
    return data


def _fields(
    base: Path, overlay: Path | None = None
) -> tuple[dict[str, object], dict[str, dict[str, object]]]:
    """The catalog's fields from its files (every section of `SECTIONS`, in order), and each
    file's merged mapping; a missing or misshapen section names its file and YAML path."""
    fields: dict[str, object] = {}
    files: dict[str, dict[str, object]] = {}
    for section in SECTIONS:
        data = files[section.file] = _read(section, base, overlay)
        where = _where(section.file, base, overlay)
        try:
            fields.update(section.build(data, where, fields))
        except KeyError as exc:
            raise CatalogError(f"{where}: no section {exc} (is the file truncated?)") from None
        except ValidationError as exc:
            raise CatalogError(f"{where}: {_problem(exc, section, where, data, False)}") from None
        except (TypeError, AttributeError, ValueError):
            raise CatalogError(
                f"{where}: a section has the wrong shape (is the file truncated?)"
            ) from None
    return fields, files


def _problem(
    exc: ValidationError, section: Section, where: Path, merged: dict[str, object], field: bool
) -> str:
    """`path: message (N problems in all)` of a validation error's first problem, the path in
    YAML terms: a `Catalog` field (`field`) as the file's key, a row of a merged list at its
    index in the overlay's own file when it came from there."""
    err = exc.errors()[0]
    loc: list[int | str] = list(err["loc"])
    if field and loc:
        key = section.fields.get(str(loc[0]), "")
        loc = [key, *loc[1:]] if key else loc[1:]
    if len(loc) > 1 and str(loc[0]) in section.rows and where.parent != CATALOG_DIR:
        own = _overlay_index(merged, where, str(loc[0]), section.rows[str(loc[0])], loc[1])
        loc[1] = own if own is not None else loc[1]
    path = "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in loc).lstrip(".")
    return f"{path + ': ' if path else ''}{err['msg']} ({exc.error_count()} problems in all)"


def catalog_file(name: str, overlay: Path | None = None) -> dict[str, Any]:
    """One bundled catalog file merged with the overlay's (default: the one in effect), for
    the modules that read a file themselves (`Section.reader`); checked when the catalog
    loads (`load_catalog`)."""
    section = BY_FILE[name]
    return _read(section, CATALOG_DIR, overlay if overlay is not None else overlay_dir())


def load_catalog(base: Path | None = None, overlay: Path | None = None) -> Catalog:
    """Load and validate the catalog files (default: the ones beside this module, with the
    user's overlay on top: `--catalog DIR` / ACCELSTACK_CATALOG_DIR, see overlay.py); cached
    per directory. A broken file is one CatalogError line naming it."""
    if overlay is not None:
        overlay = check_dir(overlay)
    elif base is None:
        overlay = overlay_dir()
    return _load(base or CATALOG_DIR, overlay)


@lru_cache(maxsize=4)
def _load(base: Path, overlay: Path | None = None) -> Catalog:
    """The catalog of these files: from the parsed-catalog cache (cache.py) when it has them,
    else parsed, validated and checked, then stored there."""
    name = _cache_key(base, overlay)
    cached = cache.read(name) if name else None
    if isinstance(cached, Catalog):
        return cached
    catalog = _parse(base, overlay)
    if name:
        cache.write(name, catalog)
    return catalog


def _parse(base: Path, overlay: Path | None) -> Catalog:
    fields, files = _fields(base, overlay)
    try:
        catalog = Catalog.model_validate(fields)
    except ValidationError as exc:
        raise _validation_error(exc, files, base, overlay) from None
    for check, prefixes in _CHECKS:
        try:
            check(catalog)
        except CatalogError as exc:
            name = prefixes.get(re.split(r"[.:\s\[]", str(exc), maxsplit=1)[0], "instances.yaml")
            raise CatalogError(f"{_where(name, base, overlay)}: {exc}") from None
    return catalog


def _validation_error(
    exc: ValidationError,
    files: dict[str, dict[str, object]],
    base: Path,
    overlay: Path | None,
) -> CatalogError:
    """One line: the file the bad value came from (the overlay's when it has that file) and
    its YAML path there."""
    loc = exc.errors()[0]["loc"]
    section = (section_of_field(str(loc[0])) if loc else None) or SECTIONS[0]
    where = _where(section.file, base, overlay)
    return CatalogError(f"{where}: {_problem(exc, section, where, files[section.file], True)}")


def _overlay_index(
    merged: dict[str, object], where: Path, key: str, ident: tuple[str, ...], index: object
) -> int | None:
    """The index, in the overlay's own list, of the merged row at `index` (None: the row is
    the bundled file's)."""
    rows = merged.get(key)
    if not isinstance(rows, list) or not isinstance(index, int) or index >= len(rows):
        return None
    own = _read_path(where).get(key)
    wanted = identity(rows[index], ident)
    for i, row in enumerate(own if isinstance(own, list) else []):
        if identity(row, ident) == wanted:
            return i
    return None


def _check_curves(c: Catalog) -> None:
    """Every accelerated family has one curve per precision it has a peak for; a fitted curve
    names steady-state records of its family and precision; an extrapolated one names a
    fitted curve. Every record names a known family."""
    records = {r.id: r for r in c.records}
    curves = c.throughput.curves
    for name, fam in c.families.items():
        for precision in fam.peak_tflops:
            n = sum(cur.family == name and precision in cur.precisions for cur in curves)
            if n != 1:
                raise CatalogError(f"throughput: curves: need exactly one {name}/{precision}")
    for i, cur in enumerate(curves):
        where = f"throughput: curves[{i}] ({cur.family})"
        if cur.family not in c.families:
            raise CatalogError(f"{where}: unknown family{did_you_mean(cur.family, c.families)}")
        fitted = cur.intercept is not None and cur.slope is not None and cur.params_range
        if cur.basis == "fitted" and (not fitted or not cur.records or cur.from_curve):
            raise CatalogError(f"{where}: a fitted curve needs coefficients and records")
        if cur.basis == "extrapolated" and (cur.from_curve is None or cur.records):
            raise CatalogError(f"{where}: an extrapolated curve needs from_curve, no records")
        for rid in cur.records:
            rec = records.get(rid)
            if rec is None:
                raise CatalogError(f"{where}: unknown record '{rid}'{did_you_mean(rid, records)}")
            if rec.family != cur.family or rec.precision not in cur.precisions:
                raise CatalogError(f"{where}: record '{rid}' is {rec.family}/{rec.precision}")
            if rec.kind != "steady_state":
                raise CatalogError(f"{where}: record '{rid}' is {rec.kind}, not steady_state")
        for precision in cur.precisions:
            c.mfu_curve(cur.family, precision)
    for rec in c.records:
        if rec.family not in c.families:
            raise CatalogError(f"records: {rec.id}: unknown family '{rec.family}'")
    _check_step(c, records)


def _check_step(c: Catalog, records: dict[str, TrainingRecord]) -> None:
    """Every family with a curve has one step entry; an expert term names steady-state
    mixture-of-experts records of its family."""
    names = [s.family for s in c.throughput.step]
    for family in sorted({cur.family for cur in c.throughput.curves}):
        if names.count(family) != 1:
            raise CatalogError(
                f"throughput: step: need exactly one entry for {family} (its attention, link and "
                "expert terms; a new family: {family: ..., basis: extrapolated, from_family: "
                "h100, attention_relative_to_dense: true, inherit_experts: false, reason: ...})"
            )
        c.step_family(family)
    for entry in c.throughput.step:
        for rid in entry.experts.records if entry.experts else ():
            rec = records.get(rid)
            if rec is None:
                raise CatalogError(
                    f"throughput: step {entry.family}: unknown record '{rid}'"
                    f"{did_you_mean(rid, records)}"
                )
            if rec.family != entry.family or not rec.experts:
                raise CatalogError(
                    f"throughput: step {entry.family}: record '{rid}' is not a mixture of "
                    f"experts of {entry.family}"
                )


def _check_integrity(c: Catalog) -> None:
    """Cross-references inside the catalog; a broken catalog must not load."""
    for name, fam in c.families.items():
        if fam.device_kind not in c.device_kinds:
            raise CatalogError(f"families.{name}.device_kind: unknown '{fam.device_kind}'")
    _check_curves(c)
    _check_frameworks(c)
    for name, inst in c.instances.items():
        if inst.family not in c.families:
            raise CatalogError(f"instances.{name}.family: unknown '{inst.family}'")
        if inst.efa_interfaces > inst.network_cards:
            raise CatalogError(f"instances.{name}: more EFA interfaces than network cards")
        for field in (*inst.dit_exceptions, *inst.estimated_fields):
            if field not in InstanceType.model_fields:
                raise CatalogError(f"instances.{name}: unknown field '{field}' in exceptions")
    for rate in (*c.instance_rates, *c.service_rates):
        if not _AS_OF.match(rate.as_of) or not rate.source.strip():
            raise CatalogError(
                f"prices: {rate.type or rate.item} in {rate.region}: every row needs a source "
                f"and as_of YYYY, YYYY-MM or YYYY-MM-DD (found as_of '{rate.as_of}')"
            )
    seen: set[tuple[str, str, str]] = set()
    for rate in c.instance_rates:
        key = (rate.region, rate.type or "", rate.option or "")
        if rate.type not in c.instances:
            raise CatalogError(f"prices: unknown instance type '{rate.type}'")
        row = c.purchase_options.get(rate.option or "")
        if row is None or row.rate_alias:
            raise CatalogError(f"prices: {rate.type} in {rate.region}: bad option '{rate.option}'")
        if key in seen:
            raise CatalogError(f"prices: duplicate row {key}")
        seen.add(key)
    for name, chart in c.charts.items():
        if chart.device_kind is not None and chart.device_kind not in c.device_kinds:
            raise CatalogError(f"charts.{name}.device_kind: unknown '{chart.device_kind}'")
    for i, ds in enumerate(c.launch.daemonsets):
        if ds.chart is not None and ds.chart not in c.charts:
            raise CatalogError(
                f"charts: no row '{ds.chart}', which launch.yaml daemonsets[{i}] ({ds.name}) "
                f"is created by{did_you_mean(ds.chart, c.charts)}"
            )
    if c.defaults.kubernetes_version not in c.defaults.eks_versions:
        raise CatalogError("defaults.kubernetes_version is not in defaults.eks_versions")
    if c.defaults.system_instance_type not in c.instances:
        raise CatalogError("defaults.system_instance_type is not in instances")


def _check_launch(c: Catalog) -> None:
    """launch.yaml: every Python environment names a known device kind and family, and every
    accelerated family has exactly one default environment."""
    defaults: dict[str, int] = {}
    for i, env in enumerate(c.launch.dlami_python_envs):
        if env.device_kind not in c.device_kinds:
            raise CatalogError(
                f"launch.dlami_python_envs[{i}].device_kind: unknown '{env.device_kind}'"
            )
        for fam in env.families:
            if c.families.get(fam) is None or c.families[fam].device_kind != env.device_kind:
                raise CatalogError(
                    f"launch.dlami_python_envs[{i}].families: '{fam}' is not a "
                    f"{env.device_kind} family"
                )
            defaults[fam] = defaults.get(fam, 0) + 1
    for name, family in c.families.items():
        if c.device_kinds[family.device_kind].device_resource and defaults.get(name) != 1:
            raise CatalogError(
                f"launch.dlami_python_envs: family '{name}' needs exactly one default environment"
            )


def _check_daemonsets(c: Catalog) -> None:
    """launch.yaml daemonsets: each row is created by exactly one of an add-on and a chart
    (which `_check_integrity` holds to a row of `charts`), and its device kind is known."""
    for i, ds in enumerate(c.launch.daemonsets):
        at = f"launch.daemonsets[{i}]"
        if (ds.addon is None) == (ds.chart is None):
            raise CatalogError(f"{at}: name exactly one of addon and chart (found {ds.name!r})")
        if ds.device_kind is not None and ds.device_kind not in c.device_kinds:
            raise CatalogError(f"{at}.device_kind: unknown '{ds.device_kind}'")


def _check_addon_sources(c: Catalog) -> None:
    """Every Kubernetes version's add-on row says where it came from."""
    d = c.defaults
    for version in d.eks_addon_versions:
        if not d.eks_addon_sources.get(version):
            raise CatalogError(
                f"defaults.eks_addon_sources: no source for the add-on versions of Kubernetes "
                f"{version} (defaults.eks_addon_versions)"
            )


def _check_frameworks(c: Catalog) -> None:
    """Every framework a device kind or family names exists and runs on that device kind."""
    for name, fw in c.frameworks.items():
        if fw.device_kind not in c.device_kinds:
            raise CatalogError(f"frameworks.{name}.device_kind: unknown '{fw.device_kind}'")
    for kname, kind in c.device_kinds.items():
        for fw_name in (
            *kind.frameworks,
            *([kind.default_framework] if kind.default_framework else []),
        ):
            if fw_name not in c.frameworks or c.frameworks[fw_name].device_kind != kname:
                raise CatalogError(f"device_kinds.{kname}: framework '{fw_name}' is not one of its")
    for fname, fam in c.families.items():
        allowed_here = c.family_frameworks(fam)
        default = c.default_framework(fam)
        for fw_name in allowed_here:
            if fw_name not in c.device_kinds[fam.device_kind].frameworks:
                raise CatalogError(
                    f"families.{fname}.frameworks: '{fw_name}' is not a framework of its device kind"
                )
        if default is not None and default not in allowed_here:
            raise CatalogError(
                f"families.{fname}.default_framework: '{default}' is not allowed there"
            )


#: The integrity checks run on a loaded catalog, each with the file its errors name (by the
#: message's first word; instances.yaml otherwise).
_CHECKS: tuple[tuple[Callable[[Catalog], None], dict[str, str]], ...] = (
    (
        _check_integrity,
        {"prices": "prices.yaml", "throughput": "throughput.yaml", "records": "records.yaml"},
    ),
    (_check_launch, {"launch": "launch.yaml"}),
    (_check_daemonsets, {"launch": "launch.yaml"}),
    (_check_addon_sources, {}),
)
