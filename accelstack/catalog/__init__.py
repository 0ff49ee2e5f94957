"""The catalog: instance facts, offerings and prices, read from the YAML files beside this module.

Everything downstream (spec validation, plan, components, templates, cost) asks the catalog;
nothing else knows a number about an instance type.
"""

from __future__ import annotations

import re
from datetime import date
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from accelstack.errors import (
    CatalogError,
    MissingPrice,
    UnknownInstanceType,
    allowed,
    did_you_mean,
)

CATALOG_DIR = Path(__file__).resolve().parent

PurchaseOption = Literal[
    "on-demand", "spot", "savings-plan-1y", "savings-plan-3y", "capacity-block", "reservation"
]
PURCHASE_OPTIONS: tuple[str, ...] = (
    "on-demand",
    "spot",
    "savings-plan-1y",
    "savings-plan-3y",
    "capacity-block",
    "reservation",
)
#: Options billed at another option's rate (AWS bills an on-demand capacity reservation at the
#: on-demand rate).
RATE_ALIASES: dict[str, str] = {"reservation": "on-demand"}
Precision = Literal["bf16", "fp16", "fp8"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


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
    default_mfu: float | None
    mfu_source: str
    default_logical_cores: int = Field(ge=1)
    default_root_volume_gib: int = Field(ge=8)
    logical_cores_allowed: tuple[int, ...] = (1,)
    frameworks: tuple[str, ...] | None = None  # None: the device kind's
    default_framework: str | None = None  # None: the device kind's
    min_neuron_sdk: str | None = None


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
    preview: bool = False
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


class Defaults(_Frozen):
    kubernetes_version: str
    eks_versions: dict[str, EksVersion]
    system_instance_type: str
    system_nodes: int
    system_root_volume_gib: int
    vpc_cidr: str
    efa_interface_style: Literal["efa", "efa-only"]
    compile_cache_prefix: str
    compile_cache_expire_days: int
    fsx_deployment_type: str
    fsx_throughput_per_tib: int
    ec2_user_data_limit_bytes: int = Field(gt=0)
    configmap_limit_bytes: int = Field(gt=0)
    training_namespace: str
    training_service_account: str
    hours_per_month: int
    training_bytes_per_param: dict[str, float]
    usable_memory_fraction: float = Field(gt=0, le=1)
    training_overhead_factor: float = Field(ge=1)
    training_overhead_source: str
    s3_assumed_gib: float = Field(gt=0)

    @property
    def supported_kubernetes_versions(self) -> tuple[str, ...]:
        return tuple(self.eks_versions)


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
    regions: dict[str, RegionOfferings]
    offerings_source: str
    instance_rates: tuple[Rate, ...]
    service_rates: tuple[Rate, ...]
    hours_per_month: int

    # ---- instance facts -------------------------------------------------------------
    def instance(self, name: str) -> InstanceType:
        try:
            return self.instances[name]
        except KeyError:
            raise UnknownInstanceType(
                f"'{name}' is not a known instance type{did_you_mean(name, self.instances)}"
                f" (known: {allowed(self.accelerated_types())})"
            ) from None

    def accelerated_types(self) -> list[str]:
        return sorted(n for n, i in self.instances.items() if i.accelerated)

    def family_of(self, instance_type: str) -> Family:
        return self.families[self.instance(instance_type).family]

    def device_kind_of(self, instance_type: str) -> DeviceKind:
        return self.device_kinds[self.family_of(instance_type).device_kind]

    def family_frameworks(self, family: Family) -> tuple[str, ...]:
        """Frameworks the family allows (its own list, else its device kind's)."""
        if family.frameworks is not None:
            return family.frameworks
        return self.device_kinds[family.device_kind].frameworks

    def default_framework(self, family: Family) -> str | None:
        """The family's default framework (its own, else its device kind's)."""
        return family.default_framework or self.device_kinds[family.device_kind].default_framework

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

    # ---- offerings --------------------------------------------------------------------
    def region(self, region: str) -> RegionOfferings:
        try:
            return self.regions[region]
        except KeyError:
            raise CatalogError(
                f"region '{region}' has no accelerated offerings in the catalog"
                f"{did_you_mean(region, self.regions)} (known: {allowed(self.regions)})"
            ) from None

    def zones_offering(self, region: str, instance_type: str) -> tuple[str, ...]:
        """Zone ids in `region` that offer `instance_type` (empty when none)."""
        return self.region(region).types.get(instance_type, ())

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
        billed_as = RATE_ALIASES.get(option, option)
        rate = self._rate_index.get((region, instance_type, billed_as))
        if rate is None:
            known = sorted(
                o for (r, t, o) in self._rate_index if r == region and t == instance_type
            )
            have = f"; priced options there: {', '.join(known)}" if known else ""
            raise MissingPrice(
                f"no {billed_as} price for {instance_type} in {region} in the catalog{have}"
            )
        return rate

    def has_rate(self, region: str, instance_type: str, option: str) -> bool:
        return (region, instance_type, RATE_ALIASES.get(option, option)) in self._rate_index

    @staticmethod
    def fsx_price_item(deployment_type: str, throughput_per_tib: int | None) -> str:
        """The prices.yaml item of an FSx for Lustre file system (the cost guard prices it)."""
        item = f"fsx-lustre-{deployment_type.lower().replace('_', '')}"
        return item if throughput_per_tib is None else f"{item}-{throughput_per_tib}"

    def service_rate(self, region: str, item: str) -> Rate:
        for rate in self.service_rates:
            if rate.item == item and rate.region in (region, "*"):
                return rate
        raise MissingPrice(f"no price for '{item}' in {region} in the catalog")


def _read(name: str, base: Path) -> dict[str, object]:
    path = base / name
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise CatalogError(f"{path}: cannot read catalog file: {exc}") from None
    if not isinstance(data, dict):
        raise CatalogError(f"{path}: catalog file must be a mapping")
    return data


def _named(items: dict[str, dict[str, object]]) -> dict[str, dict[str, object]]:
    return {k: {**v, "name": k} for k, v in items.items()}


@lru_cache(maxsize=4)
def load_catalog(base: Path = CATALOG_DIR) -> Catalog:
    """Load and validate the catalog files; cached per directory."""
    inst = _read("instances.yaml", base)
    offer = _read("offerings.yaml", base)
    extra = _read("offerings_extra.yaml", base)
    prices = _read("prices.yaml", base)
    regions: dict[str, dict[str, object]] = {}
    for region, body in dict(offer["regions"]).items():  # type: ignore[call-overload]
        regions[region] = {"zones": dict(body["zones"]), "types": dict(body["types"])}
    for region, body in dict(extra.get("regions", {})).items():  # type: ignore[call-overload]
        reg = regions.setdefault(region, {"zones": {}, "types": {}})
        reg["zones"] = {**reg["zones"], **body.get("zones", {})}  # type: ignore[dict-item]
        reg["types"] = {**reg["types"], **body.get("types", {})}  # type: ignore[dict-item]
        reg["estimated_types"] = tuple(body.get("types", {}))
    catalog = Catalog.model_validate(
        {
            "device_kinds": _named(inst["device_kinds"]),  # type: ignore[arg-type]
            "frameworks": _named(inst["frameworks"]),  # type: ignore[arg-type]
            "retired_frameworks": inst.get("retired_frameworks", {}),
            "quotas": inst["quotas"],
            "families": _named(inst["families"]),  # type: ignore[arg-type]
            "instances": _named(inst["instances"]),  # type: ignore[arg-type]
            "defaults": inst["defaults"],
            "regions": regions,
            "offerings_source": offer["source"],
            "instance_rates": prices["instances"],
            "service_rates": prices["services"],
            "hours_per_month": prices["hours_per_month"],
        }
    )
    _check_integrity(catalog)
    return catalog


def _check_integrity(c: Catalog) -> None:
    """Cross-references inside the catalog; a broken catalog must not load."""
    for name, fam in c.families.items():
        if fam.device_kind not in c.device_kinds:
            raise CatalogError(f"families.{name}.device_kind: unknown '{fam.device_kind}'")
    _check_frameworks(c)
    for name, inst in c.instances.items():
        if inst.family not in c.families:
            raise CatalogError(f"instances.{name}.family: unknown '{inst.family}'")
        if inst.efa_interfaces > inst.network_cards:
            raise CatalogError(f"instances.{name}: more EFA interfaces than network cards")
        for field in (*inst.dit_exceptions, *inst.estimated_fields):
            if field not in InstanceType.model_fields:
                raise CatalogError(f"instances.{name}: unknown field '{field}' in exceptions")
    seen: set[tuple[str, str, str]] = set()
    for rate in c.instance_rates:
        key = (rate.region, rate.type or "", rate.option or "")
        if rate.type not in c.instances:
            raise CatalogError(f"prices: unknown instance type '{rate.type}'")
        if rate.option not in PURCHASE_OPTIONS or rate.option in RATE_ALIASES:
            raise CatalogError(f"prices: {rate.type} in {rate.region}: bad option '{rate.option}'")
        if key in seen:
            raise CatalogError(f"prices: duplicate row {key}")
        seen.add(key)
    if c.defaults.kubernetes_version not in c.defaults.eks_versions:
        raise CatalogError("defaults.kubernetes_version is not in defaults.eks_versions")
    if c.defaults.system_instance_type not in c.instances:
        raise CatalogError("defaults.system_instance_type is not in instances")


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
