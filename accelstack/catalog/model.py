"""The loaded catalog (`Catalog`): every fact table of the YAML files beside this module, with
the lookups the rest of accelstack asks (an instance type, its price per purchase option, a
region's offerings, a curve, a record); built and checked by `accelstack.catalog.load`."""

from __future__ import annotations

from functools import cached_property

from pydantic import Field

from accelstack.catalog.blocks import CapacityBlocks
from accelstack.catalog.facts import (
    Defaults,
    DeviceKind,
    Family,
    Framework,
    Frozen,
    HelmChart,
    InstanceType,
    LaunchFacts,
    MetricsAddon,
    Quotas,
    Rate,
    RegionOfferings,
)
from accelstack.catalog.price_ranges import MissingRange, PriceRange, span_in
from accelstack.catalog.purchase import OptionLists, PurchaseOptionFacts, option_lists
from accelstack.catalog.records import LeftOut, Shape, TrainingRecord
from accelstack.catalog.resilience import ResilienceFacts
from accelstack.catalog.scale import ScaleFacts
from accelstack.catalog.sections import (
    new_curve_hint,
    new_region_hint,
    new_type_hint,
    overlay_hint,
    service_row,
)
from accelstack.catalog.throughput import MfuCurve, StepFamily, Throughput
from accelstack.errors import (
    CatalogError,
    MissingPrice,
    UnknownInstanceType,
    allowed,
    did_you_mean,
    shown,
)


class Catalog(Frozen):
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
