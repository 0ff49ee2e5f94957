"""Price every billable resource a stack declares, before anything is created.

Pricers (one function per resource type, in `PRICERS`) are keyed on the Pulumi type token of a resource (`aws:eks/nodeGroup:NodeGroup`, ...)
and read the resource's inputs as Pulumi sends them (camelCase). Every type is either priced
by a pricer in `PRICERS` or declared free in `FREE` with the reason; anything else is an error
naming the type and region (`UnpricedResource`), never $0. A missing catalog price raises
`MissingPrice` the same way.

Two entry points share the pricers:

* `price_plan(stack, resources)` prices the resources of a real plan (plan engine, policy pack);
* `price_stack(stack)` prices without a plan: the same pricers run on `accelstack.inventory`'s
  billable resources, the records the components create their resources from (names, counts,
  priced inputs). The in-program guard uses it (no plan exists yet there); the two agree by
  construction, and tests/test_inventory.py holds every preset's plan to the records.

Pure: no pulumi, no boto3, no network.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from accelstack import tokens
from accelstack.catalog import PURCHASE_OPTIONS, Catalog, Rate
from accelstack.catalog.sections import overlay_hint, service_row
from accelstack.clock import today
from accelstack.errors import MissingPrice
from accelstack.inventory import billables
from accelstack.naming import POOL_LABEL
from accelstack.resolve import Stack

#: EKS managed node groups without a launch template get a 20 GiB root volume.
EKS_DEFAULT_DISK_GIB = 20
NAT_ASSUMPTION = "hourly charge only; data processed ($0.045/GB) is usage and not included"


class ResourceLike(Protocol):
    """What a plan's resource looks like to the pricer (plan.PlannedResource matches)."""

    @property
    def type(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def parent(self) -> str | None: ...

    @property
    def inputs(self) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class Resource:
    """A plain resource record (spec-derived billables, policy-pack resources, tests)."""

    type: str
    name: str
    inputs: Mapping[str, Any]
    parent: str | None = None
    #: logical names of the resources it depends on (a plan's, a preview's property
    #: dependencies): how a node group's launch template is found when its id is not known
    depends_on: tuple[str, ...] = ()


class UnpricedResource(MissingPrice):
    """A resource type with neither a pricer nor a place in FREE."""


# ---------------------------------------------------------------------------------------
# Free types: no charge of their own (each with the reason printed in reports and docs)
# ---------------------------------------------------------------------------------------

FREE: dict[str, str] = {
    "aws:ec2/vpc:Vpc": "no charge",
    "aws:ec2/subnet:Subnet": "no charge",
    "aws:ec2/vpcIpv4CidrBlockAssociation:VpcIpv4CidrBlockAssociation": (
        "no charge for a private IPv4 VPC CIDR block (Amazon VPC pricing)"
    ),
    "aws:ec2/routeTable:RouteTable": "no charge",
    "aws:ec2/route:Route": "no charge",
    "aws:ec2/routeTableAssociation:RouteTableAssociation": "no charge",
    "aws:ec2/internetGateway:InternetGateway": "no charge (data transfer is usage)",
    "aws:ec2/securityGroup:SecurityGroup": "no charge",
    "aws:ec2/securityGroupRule:SecurityGroupRule": "no charge",
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": "no charge",
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": "no charge",
    "aws:ec2/placementGroup:PlacementGroup": "no charge",
    "aws:ecr/pullThroughCacheRule:PullThroughCacheRule": (
        "no charge for the rule; cached images are ECR storage and their pulls usage, not "
        "included (https://aws.amazon.com/ecr/pricing/)"
    ),
    "aws:ec2/launchTemplate:LaunchTemplate": (
        "no charge; its volumes are priced per node with the node group that uses it"
    ),
    "aws:iam/role:Role": "no charge",
    "aws:iam/policy:Policy": "no charge",
    "aws:iam/rolePolicy:RolePolicy": "no charge",
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": "no charge",
    "aws:iam/instanceProfile:InstanceProfile": "no charge",
    "aws:iam/openIdConnectProvider:OpenIdConnectProvider": "no charge",
    "aws:eks/addon:Addon": "no charge (add-on pods run on the priced system nodes)",
    "aws:eks/accessEntry:AccessEntry": "no charge",
    "aws:eks/accessPolicyAssociation:AccessPolicyAssociation": "no charge",
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": "no charge",
    "aws:autoscaling/tag:Tag": "no charge",
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": (
        "no charge (the linked S3 prefix and the file system are priced)"
    ),
    "aws:kms/alias:Alias": "no charge (the key is priced)",
    "aws:s3/bucketPolicy:BucketPolicy": "no charge",
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock": "no charge",
    "aws:s3/bucketVersioning:BucketVersioning": "no charge",
    "aws:s3/bucketVersioningV2:BucketVersioningV2": "no charge",
    "aws:s3/bucketOwnershipControls:BucketOwnershipControls": "no charge",
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration": "no charge",
    "aws:s3/bucketLifecycleConfigurationV2:BucketLifecycleConfigurationV2": "no charge",
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration": (
        "no charge (SSE-S3)"
    ),
    "aws:s3/bucketServerSideEncryptionConfigurationV2:BucketServerSideEncryptionConfigurationV2": (
        "no charge (SSE-S3)"
    ),
    "aws:ssm/parameter:Parameter": "no charge (standard tier)",
    "aws:ssm/document:Document": "no charge (Command documents)",
    "aws:ssm/association:Association": (
        "no charge (State Manager on EC2 instances; https://aws.amazon.com/systems-manager/pricing/)"
    ),
    "aws:cloudwatch/logGroup:LogGroup": (
        "no hourly charge; ingestion and storage are usage and not included"
    ),
    "kubernetes:core/v1:Namespace": "no charge",
    "kubernetes:core/v1:ServiceAccount": "no charge",
    "kubernetes:core/v1:ConfigMap": "no charge",
    "kubernetes:core/v1:Secret": "no charge",
    "kubernetes:core/v1:PersistentVolume": "no charge (the FSx file system behind it is priced)",
    "kubernetes:core/v1:PersistentVolumeClaim": "no charge (binds the priced FSx volume)",
    "kubernetes:rbac.authorization.k8s.io/v1:Role": "no charge",
    "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding": "no charge",
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole": "no charge",
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding": "no charge",
    "kubernetes:scheduling.k8s.io/v1:PriorityClass": "no charge",
    "kubernetes:apps/v1:DaemonSet": "no charge (runs on priced nodes)",
    "kubernetes:helm.sh/v3:Release": (
        "no charge (device plugins, job controller, Kueue: pods on priced nodes)"
    ),
    "kubernetes:kustomize/v2:Directory": "no charge (training operator: pods on priced nodes)",
    "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor": "no charge (a Kueue object)",
    "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue": "no charge (a Kueue object)",
    "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue": "no charge (a Kueue object)",
    "kubernetes:kueue.x-k8s.io/v1beta2:Topology": "no charge (a Kueue object)",
    "kubernetes:helm.sh/v4:Chart": "no charge (device plugins: DaemonSets on priced nodes)",
}
#: Types with a pricer that prices some of their resources and leaves the others free (listed
#: in FREE too): the metrics add-on bills per node, the other EKS add-ons run on priced nodes.
PARTLY_FREE: tuple[str, ...] = (tokens.ADDON,)
#: Prefixes of types that are never billed: component resources, providers, the stack.
FREE_PREFIXES: dict[str, str] = {
    "accelstack:": "component resource (a grouping; its children are priced)",
    "pulumi:providers:": "provider",
    "pulumi:pulumi:Stack": "the stack itself",
}


def free_reason(rtype: str) -> str | None:
    if rtype in FREE:
        return FREE[rtype]
    for prefix, why in FREE_PREFIXES.items():
        if rtype.startswith(prefix):
            return why
    return None


# ---------------------------------------------------------------------------------------
# Line items
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LineItem:
    resource: str  # resource name
    type: str  # Pulumi type
    category: str  # compute | system | control-plane | network | storage | security
    what: str  # "16 x trn2.48xlarge (on-demand)"
    quantity: float
    unit: str  # "instance-hour", "GiB-month", ...
    unit_usd: float
    hourly_usd: float
    estimate: bool
    source: str
    as_of: str
    pool: str | None = None
    option: str | None = None
    assumption: str | None = None
    # (low, high) factors of an estimated rate (price_ranges.yaml); (1, 1) when observed
    span: tuple[float, float] = (1.0, 1.0)
    #: what one unit is billed at: the instance type of an instance-hour, else the catalog
    #: service item (`ebs-gp3`, `nat-gateway`), so a diff can say "16 -> 24 x trn2.48xlarge"
    rate_of: str = ""

    @property
    def hourly_usd_range(self) -> tuple[float, float]:
        return (self.hourly_usd * self.span[0], self.hourly_usd * self.span[1])


@dataclass(frozen=True)
class OptionQuote:
    """One pool under one purchase option: priced, or why not."""

    option: str
    hourly_usd: float | None  # nodes x rate; None when not priced
    rate: Rate | None
    chosen: bool
    reason: str | None = None  # when not priced
    rate_alias: str | None = None  # the option whose rate bills it, from the loaded catalog


@dataclass(frozen=True)
class StackCost:
    region: str
    items: tuple[LineItem, ...]
    free: tuple[tuple[str, int, str], ...]  # (type, count, reason)
    hours_per_month: int
    options: dict[str, tuple[OptionQuote, ...]] = field(default_factory=dict)

    @property
    def hourly_usd(self) -> float:
        return sum(i.hourly_usd for i in self.items)

    @property
    def monthly_usd(self) -> float:
        return self.hourly_usd * self.hours_per_month

    @property
    def estimate(self) -> bool:
        return any(i.estimate for i in self.items)

    def pool_hourly_usd(self, pool: str) -> float:
        return sum(i.hourly_usd for i in self.items if i.pool == pool)

    @property
    def hourly_usd_range(self) -> tuple[float, float]:
        """The stack's hourly cost with every estimated rate at its span's low and high."""
        return (
            sum(i.hourly_usd_range[0] for i in self.items),
            sum(i.hourly_usd_range[1] for i in self.items),
        )

    def other_hourly_usd_range(self, pool: str) -> tuple[float, float]:
        """The same, over everything but `pool` (the workload pool, spanned on its own)."""
        other = [i for i in self.items if i.pool != pool]
        return (
            sum(i.hourly_usd_range[0] for i in other),
            sum(i.hourly_usd_range[1] for i in other),
        )

    def pool_estimate(self, pool: str) -> bool:
        return any(i.estimate for i in self.items if i.pool == pool)

    def by_category(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for i in self.items:
            out[i.category] = out.get(i.category, 0.0) + i.hourly_usd
        return out


# ---------------------------------------------------------------------------------------
# Pricers
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PricingContext:
    catalog: Catalog
    region: str
    #: pool name -> purchase option from the spec (savings plans are only known here)
    pool_options: Mapping[str, str]
    resources: Sequence[ResourceLike]
    #: bucket resource name -> GiB it is sized to hold (the checkpoint bucket: keep x the
    #: training state); other buckets use the catalog's usage assumption
    bucket_gib: Mapping[str, float] = field(default_factory=dict)

    @property
    def hours_per_month(self) -> int:
        return self.catalog.hours_per_month


#: A pricer: one planned resource in, its line items out.
Pricer = Callable[[ResourceLike, PricingContext], list[LineItem]]


def _get(d: Any, *path: str | int) -> Any:
    cur = d
    for p in path:
        if isinstance(p, int):
            if not isinstance(cur, list | tuple) or len(cur) <= p:
                return None
            cur = cur[p]
        else:
            if not isinstance(cur, Mapping):
                return None
            cur = cur.get(p)
    return cur


def _num(value: Any, what: str, res: ResourceLike) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MissingPrice(
            f"cannot price {res.type} '{res.name}': {what} is {value!r}, not a known number"
        )
    return float(value)


def _span(ctx: PricingContext, key: str, option: str, rate: Rate) -> tuple[float, float]:
    """An estimated rate's (low, high) factors from price_ranges.yaml (`option` "service"
    for a service item); an estimate no row covers fails closed (CatalogError)."""
    span = ctx.catalog.price_span(key, option, rate.estimate)
    return (1.0, 1.0) if span is None else (span[0], span[1])


def _service(ctx: PricingContext, item: str, res: ResourceLike) -> Rate:
    try:
        return ctx.catalog.service_rate(ctx.region, item)
    except MissingPrice:
        raise MissingPrice(
            f"no price for '{item}' ({res.type} '{res.name}') in {ctx.region} in the catalog; "
            + overlay_hint("prices.yaml", "services", service_row(ctx.region, item))
        ) from None


def _monthly_item(
    res: ResourceLike,
    ctx: PricingContext,
    *,
    item: str,
    quantity: float,
    unit: str,
    category: str,
    what: str,
    pool: str | None = None,
    assumption: str | None = None,
    estimate: bool = False,
) -> LineItem:
    rate = _service(ctx, item, res)
    hourly = quantity * rate.usd / ctx.hours_per_month
    span = _span(ctx, item, "service", rate)
    return LineItem(
        resource=res.name,
        type=res.type,
        category=category,
        what=what,
        quantity=quantity,
        unit=unit,
        unit_usd=rate.usd,
        hourly_usd=hourly,
        estimate=rate.estimate or estimate,
        source=rate.source,
        as_of=rate.as_of,
        pool=pool,
        assumption=assumption,
        span=span,
        rate_of=item,
    )


def _hourly_item(
    res: ResourceLike,
    ctx: PricingContext,
    *,
    item: str,
    quantity: float,
    unit: str,
    category: str,
    what: str,
    assumption: str | None = None,
) -> LineItem:
    rate = _service(ctx, item, res)
    return LineItem(
        resource=res.name,
        type=res.type,
        category=category,
        what=what,
        quantity=quantity,
        unit=unit,
        unit_usd=rate.usd,
        hourly_usd=quantity * rate.usd,
        estimate=rate.estimate,
        source=rate.source,
        as_of=rate.as_of,
        assumption=assumption,
        span=_span(ctx, item, "service", rate),
        rate_of=item,
    )


def _billed_option(pool: str | None, capacity_type: str, ctx: PricingContext) -> tuple[str, str]:
    """(option, note). The spec's option when the capacity type can carry it (catalog
    purchase_options: savings plans are a billing construct invisible in the plan, ON_DEMAND),
    else the first option of that capacity type."""
    cap = capacity_type.upper()
    options = ctx.catalog.purchase_options
    allows = [n for n, row in options.items() if row.capacity_type == cap]
    if not allows:
        raise MissingPrice(f"unknown node group capacityType '{capacity_type}'")
    wanted = ctx.pool_options.get(pool) if pool else None
    if wanted and wanted in allows:
        return wanted, ""
    if wanted:
        return allows[0], (
            f"spec asks for {wanted} but the node group is {cap}: billed as {allows[0]}"
        )
    return allows[0], ""


def _instance_item(
    res: ResourceLike,
    ctx: PricingContext,
    instance_type: str,
    count: float,
    option: str,
    pool: str | None,
    category: str,
    note: str = "",
) -> LineItem:
    try:
        rate = ctx.catalog.instance_rate(ctx.region, instance_type, option)
    except MissingPrice as exc:
        raise MissingPrice(f"{exc} ({res.type} '{res.name}')") from None
    billed = ctx.catalog.purchase(option).price_key
    shown = option if billed == option else f"{option}, billed {billed}"
    return LineItem(
        resource=res.name,
        type=res.type,
        category=category,
        what=f"{count:g} x {instance_type} ({shown})",
        quantity=count,
        unit="instance-hour",
        unit_usd=rate.usd,
        hourly_usd=count * rate.usd,
        estimate=rate.estimate,
        source=rate.source,
        as_of=rate.as_of,
        pool=pool,
        option=option,
        assumption=note or None,
        span=_span(ctx, instance_type, rate.option or option, rate),
        rate_of=instance_type,
    )


def _volumes(
    mappings: Any,
    res: ResourceLike,
    ctx: PricingContext,
    per: float,
    pool: str | None,
    category: str,
    origin: str,
) -> list[LineItem]:
    out: list[LineItem] = []
    for i, bdm in enumerate(mappings or []):
        ebs = _get(bdm, "ebs")
        if not isinstance(ebs, Mapping):
            continue
        size = _num(ebs.get("volumeSize"), f"{origin} blockDeviceMappings[{i}].ebs.volumeSize", res)
        vtype = str(ebs.get("volumeType") or "gp3")
        assumption = None if ebs.get("volumeType") else "volumeType not set: priced as gp3"
        out.append(
            _monthly_item(
                res,
                ctx,
                item=f"ebs-{vtype}",
                quantity=size * per,
                unit="GiB-month",
                category=category,
                what=f"{per:g} x {size:g} GiB {vtype} ({origin})",
                pool=pool,
                assumption=assumption,
            )
        )
    return out


def _launch_template_for(res: ResourceLike, ctx: PricingContext) -> ResourceLike | None:
    ref = res.inputs.get("launchTemplate")
    lts = [r for r in ctx.resources if r.type == tokens.LAUNCH_TEMPLATE]
    if isinstance(ref, Mapping):
        for key in ("name", "id"):
            val = ref.get(key)
            if not isinstance(val, str) or not val:
                continue
            for lt in lts:
                if val in (lt.name, lt.inputs.get("name")) or (key == "id" and lt.name in val):
                    return lt
    if ref is not None:
        deps = set(getattr(res, "depends_on", ()) or ())
        linked = [lt for lt in lts if lt.name in deps]  # the property dependency on its id
        if len(linked) == 1:
            return linked[0]
    if ref is not None and res.parent is not None:
        siblings = [lt for lt in lts if lt.parent == res.parent]
        if len(siblings) == 1:
            return siblings[0]
    if ref is not None:
        raise MissingPrice(
            f"cannot price the volumes of {res.type} '{res.name}': its launch template "
            "is not in the plan"
        )
    return None


def price_node_group(res: ResourceLike, ctx: PricingContext) -> list[LineItem]:
    inputs = res.inputs
    types = inputs.get("instanceTypes") or []
    if not types and res.inputs.get("launchTemplate") is not None:
        # a Capacity Block node group takes its instance type from its launch template
        lt_type = (_launch_template_for(res, ctx) or res).inputs.get("instanceType")
        types = [lt_type] if lt_type else []
    if not types or not all(isinstance(t, str) for t in types):
        raise MissingPrice(f"cannot price {res.type} '{res.name}': instanceTypes is {types!r}")
    nodes = _num(_get(inputs, "scalingConfig", "desiredSize"), "scalingConfig.desiredSize", res)
    pool = _get(inputs, "labels", POOL_LABEL)
    pool = pool if isinstance(pool, str) else None
    option, note = _billed_option(pool, str(inputs.get("capacityType") or "ON_DEMAND"), ctx)
    # Several types: price the dearest (an upper bound), say so.
    rates = [(ctx.catalog.instance_rate(ctx.region, t, option).usd, t) for t in types]
    itype = max(rates)[1]
    if len(types) > 1:
        note = "; ".join(x for x in (note, f"several types: priced as the dearest, {itype}") if x)
    accelerated = ctx.catalog.instance(itype).accelerated
    category = "compute" if accelerated else "system"
    items = [_instance_item(res, ctx, itype, nodes, option, pool, category, note)]
    lt = _launch_template_for(res, ctx)
    if lt is not None:
        items += _volumes(
            lt.inputs.get("blockDeviceMappings"),
            res,
            ctx,
            nodes,
            pool,
            category,
            "root, launch template",
        )
    else:
        size = inputs.get("diskSize")
        assumption = None
        if size is None:
            size, assumption = EKS_DEFAULT_DISK_GIB, "no diskSize: EKS default 20 GiB gp3"
        gib = _num(size, "diskSize", res)
        items.append(
            _monthly_item(
                res,
                ctx,
                item="ebs-gp3",
                quantity=gib * nodes,
                unit="GiB-month",
                category=category,
                what=f"{nodes:g} x {gib:g} GiB gp3 (root)",
                pool=pool,
                assumption=assumption,
            )
        )
    return items


def price_instance(res: ResourceLike, ctx: PricingContext) -> list[LineItem]:
    inputs = res.inputs
    itype = inputs.get("instanceType")
    if not isinstance(itype, str):
        raise MissingPrice(f"cannot price {res.type} '{res.name}': instanceType is {itype!r}")
    tags = inputs.get("tags") or {}
    pool = tags.get(POOL_LABEL) if isinstance(tags, Mapping) else None
    reference = ctx.catalog.option_lists.reference  # what the spec does not choose
    option = ctx.pool_options.get(pool, reference) if isinstance(pool, str) else reference
    option = _market_option(
        ctx.catalog, option, _get(inputs, "instanceMarketOptions", "marketType")
    )
    category = "compute" if ctx.catalog.instance(itype).accelerated else "system"
    pool_name = pool if isinstance(pool, str) else None
    items = [_instance_item(res, ctx, itype, 1, option, pool_name, category)]
    root = inputs.get("rootBlockDevice")
    if isinstance(root, Mapping) and root.get("volumeSize") is not None:
        items += _volumes([{"ebs": root}], res, ctx, 1, pool_name, category, "root")
    else:
        lt = _launch_template_for(res, ctx)
        if lt is None:
            raise MissingPrice(f"cannot price the root volume of {res.type} '{res.name}'")
        items += _volumes(
            lt.inputs.get("blockDeviceMappings"),
            res,
            ctx,
            1,
            pool_name,
            category,
            "root, launch template",
        )
    return items


def _market_option(catalog: Catalog, wanted: str, market: object) -> str:
    """The option an instance of `market` (a fleet capacity type or an instance market type)
    is billed as: the spec's when that option launches in this market, else the first option
    of the market (catalog purchase_options); no market: the spec's."""
    rows = catalog.purchase_options
    if market is None or rows[wanted].fleet_market == market:
        return wanted
    return next((n for n, row in rows.items() if row.fleet_market == market), wanted)


def price_fleet(res: ResourceLike, ctx: PricingContext) -> list[LineItem]:
    """An EC2 Fleet: totalTargetCapacity instances of its override's type, plus the launch
    template's volumes per instance."""
    inputs = res.inputs
    nodes = _num(
        _get(inputs, "targetCapacitySpecification", "totalTargetCapacity"),
        "targetCapacitySpecification.totalTargetCapacity",
        res,
    )
    itype = _get(inputs, "launchTemplateConfigs", 0, "overrides", 0, "instanceType")
    if not isinstance(itype, str):
        raise MissingPrice(f"cannot price {res.type} '{res.name}': instanceType is {itype!r}")
    market = str(_get(inputs, "targetCapacitySpecification", "defaultTargetCapacityType"))
    markets = {row.fleet_market for row in ctx.catalog.purchase_options.values()}
    if market not in markets:
        raise MissingPrice(f"cannot price {res.type} '{res.name}': capacity type {market!r}")
    pool = _get(inputs, "tags", POOL_LABEL)
    pool_name = pool if isinstance(pool, str) else None
    wanted = ctx.pool_options.get(pool_name) if pool_name else None
    first = next(n for n, row in ctx.catalog.purchase_options.items() if row.fleet_market == market)
    option = _market_option(ctx.catalog, wanted or first, market)
    category = "compute" if ctx.catalog.instance(itype).accelerated else "system"
    items = [_instance_item(res, ctx, itype, nodes, option, pool_name, category)]
    ref = _get(
        inputs, "launchTemplateConfigs", 0, "launchTemplateSpecification", "launchTemplateName"
    )
    lts = [
        r
        for r in ctx.resources
        if r.type == tokens.LAUNCH_TEMPLATE and ref in (r.name, r.inputs.get("name"))
    ]
    if not lts:
        raise MissingPrice(
            f"cannot price the volumes of {res.type} '{res.name}': no launch template"
        )
    items += _volumes(
        lts[0].inputs.get("blockDeviceMappings"),
        res,
        ctx,
        nodes,
        pool_name,
        category,
        "root, launch template",
    )
    return items


def price_eks_cluster(res: ResourceLike, ctx: PricingContext) -> list[LineItem]:
    """Standard or extended support, by the version's EKS calendar on today's date."""
    version = str(res.inputs.get("version") or ctx.catalog.defaults.kubernetes_version)
    window = ctx.catalog.defaults.eks_versions.get(version)
    if window is None:
        raise MissingPrice(
            f"no EKS support window for Kubernetes {version} in the catalog; "
            + overlay_hint(
                "instances.yaml",
                "defaults.eks_versions",
                f"'{version}': {{standard_support_end: YYYY-MM-DD, extended_support_end: YYYY-MM-DD}}",
            )
        )
    status = window.status(today())
    extended = status != "standard"
    when = (
        f"standard support until {window.standard_support_end}"
        if not extended
        else f"extended support since {window.standard_support_end}: upgrade to leave it"
    )
    return [
        _hourly_item(
            res,
            ctx,
            item="eks-cluster-extended" if extended else "eks-cluster",
            quantity=1,
            unit="cluster-hour",
            category="control-plane",
            what=f"EKS control plane ({version}, {status})",
            assumption=f"Kubernetes {version} is in {when} (EKS calendar in the catalog)",
        ),
        *_provisioned_tier(res, ctx),
    ]


def _provisioned_tier(res: ResourceLike, ctx: PricingContext) -> list[LineItem]:
    """The provisioned control-plane tier (controlPlaneScalingConfig.tier), billed per hour on
    top of the cluster-hour; standard or none costs nothing more. A tier the catalog does not
    know, or one without a price, is refused (never $0)."""
    tier = _get(res.inputs, "controlPlaneScalingConfig", "tier")
    if tier in (None, "standard"):
        return []
    known = {t.tier: t for t in ctx.catalog.scale.large_cluster.control_plane.tiers}
    row = known.get(str(tier))
    if row is None:
        raise MissingPrice(
            f"cannot price {res.type} '{res.name}': control-plane tier {tier!r} is not in the "
            f"catalog (scale.yaml large_cluster.control_plane.tiers: {', '.join(known)})"
        )
    return [
        _hourly_item(
            res,
            ctx,
            item=row.price_item,
            quantity=1,
            unit="cluster-hour",
            category="control-plane",
            what=f"EKS provisioned control plane, {row.tier}",
            assumption=(
                f"{row.tier} schedules {row.pod_scheduling_rate} pods/s with "
                f"{row.api_concurrency} API seats (EKS provisioned control plane); chosen for "
                "the stack's node count (scale.yaml large_cluster)"
            ),
        )
    ]


def price_nat(res: ResourceLike, ctx: PricingContext) -> list[LineItem]:
    if res.inputs.get("connectivityType") == "private":
        what = "private NAT gateway"
    else:
        what = "NAT gateway"
    return [
        _hourly_item(
            res,
            ctx,
            item="nat-gateway",
            quantity=1,
            unit="gateway-hour",
            category="network",
            what=what,
            assumption=NAT_ASSUMPTION,
        )
    ]


def price_eip(res: ResourceLike, ctx: PricingContext) -> list[LineItem]:
    return [
        _hourly_item(
            res,
            ctx,
            item="public-ipv4",
            quantity=1,
            unit="ip-hour",
            category="network",
            what="Elastic IP (public IPv4)",
        )
    ]


def price_vpc_endpoint(res: ResourceLike, ctx: PricingContext) -> list[LineItem]:
    kind = str(res.inputs.get("vpcEndpointType") or "Gateway")
    if kind == "Gateway":
        return []  # gateway endpoints (S3, DynamoDB) carry no charge
    subnets = res.inputs.get("subnetIds") or []
    n = float(len(subnets)) if isinstance(subnets, list | tuple) and subnets else 1.0
    return [
        _hourly_item(
            res,
            ctx,
            item="vpc-endpoint-interface",
            quantity=n,
            unit="endpoint-az-hour",
            category="network",
            what=f"interface endpoint in {n:g} zone(s)",
            # the ECR endpoints carry API calls and manifests only; image layers come from S3
            # through the gateway endpoint, which carries no charge (scale.yaml
            # image_delivery.private_registry.endpoint_source)
            assumption="data processed not counted: image layers come through the S3 gateway",
        )
    ]


def price_fsx(res: ResourceLike, ctx: PricingContext) -> list[LineItem]:
    gib = _num(res.inputs.get("storageCapacity"), "storageCapacity", res)
    deploy = str(res.inputs.get("deploymentType") or "SCRATCH_2")
    tput = res.inputs.get("perUnitStorageThroughput")
    item = f"fsx-lustre-{deploy.lower().replace('_', '')}"
    if tput is not None:
        item += f"-{int(_num(tput, 'perUnitStorageThroughput', res))}"
    return [
        _monthly_item(
            res,
            ctx,
            item=item,
            quantity=gib,
            unit="GiB-month",
            category="storage",
            what=f"FSx for Lustre {gib:g} GiB {deploy} {tput or ''}".rstrip(),
        )
    ]


def price_checkpoint_bucket(res: ResourceLike, ctx: PricingContext, gib: float) -> LineItem:
    """The checkpoint bucket, sized from the training state (stored checkpoints x size)."""
    return _monthly_item(
        res,
        ctx,
        item="s3-standard",
        quantity=gib,
        unit="GiB-month",
        category="storage",
        what=f"S3 Standard, {gib:,.0f} GiB of checkpoints",
        assumption=(
            f"checkpoints: {gib:,.0f} GiB (the kept full checkpoints of the training state); "
            "requests, transfer and overwritten versions not included"
        ),
        estimate=True,
    )


def price_bucket(res: ResourceLike, ctx: PricingContext) -> list[LineItem]:
    if res.name in ctx.bucket_gib:
        return [price_checkpoint_bucket(res, ctx, ctx.bucket_gib[res.name])]
    gib = ctx.catalog.defaults.s3_assumed_gib
    return [
        _monthly_item(
            res,
            ctx,
            item="s3-standard",
            quantity=gib,
            unit="GiB-month",
            category="storage",
            what=f"S3 Standard, {gib:g} GiB assumed",
            assumption=(
                f"usage estimate: {gib:g} GiB stored (Neuron compile cache of a few model "
                "configurations); requests and transfer not included"
            ),
            estimate=True,
        )
    ]


def price_kms_key(res: ResourceLike, ctx: PricingContext) -> list[LineItem]:
    return [
        _monthly_item(
            res,
            ctx,
            item="kms-key",
            quantity=1,
            unit="key-month",
            category="security",
            what="KMS customer managed key",
            assumption="requests ($0.03 per 10,000) not included",
        )
    ]


def price_ebs_volume(res: ResourceLike, ctx: PricingContext) -> list[LineItem]:
    gib = _num(res.inputs.get("size"), "size", res)
    vtype = str(res.inputs.get("type") or "gp3")
    return [
        _monthly_item(
            res,
            ctx,
            item=f"ebs-{vtype}",
            quantity=gib,
            unit="GiB-month",
            category="storage",
            what=f"{gib:g} GiB {vtype} volume",
        )
    ]


def price_eks_addon(res: ResourceLike, ctx: PricingContext) -> list[LineItem]:
    """The metrics add-on bills per node (catalog metrics_addon.rate_item); other add-ons run
    on the priced nodes and cost nothing themselves (an empty list: listed as free)."""
    addon = ctx.catalog.metrics_addon
    if addon is None or res.inputs.get("addonName") != addon.addon_name:
        return []
    nodes = sum(
        _num(_get(r.inputs, "scalingConfig", "desiredSize"), "scalingConfig.desiredSize", r)
        for r in ctx.resources
        if r.type == tokens.NODE_GROUP
    )
    return [
        _hourly_item(
            res,
            ctx,
            item=addon.rate_item,
            quantity=nodes,
            unit="node-hour",
            category="monitoring",
            what=f"CloudWatch Container Insights metrics ({addon.addon_name}), {nodes:g} nodes",
            assumption="every node of the cluster sends GPU/Neuron/EFA, node and pod metrics",
        )
    ]


#: Resource type token -> the function that prices it (not a validation rule).
PRICERS: dict[str, Pricer] = {
    tokens.ADDON: price_eks_addon,
    tokens.NODE_GROUP: price_node_group,
    tokens.INSTANCE: price_instance,
    tokens.FLEET: price_fleet,
    tokens.CLUSTER: price_eks_cluster,
    tokens.NAT_GATEWAY: price_nat,
    tokens.EIP: price_eip,
    tokens.VPC_ENDPOINT: price_vpc_endpoint,
    tokens.LUSTRE: price_fsx,
    tokens.BUCKET: price_bucket,
    tokens.BUCKET_V2: price_bucket,
    tokens.KMS_KEY: price_kms_key,
    tokens.EBS_VOLUME: price_ebs_volume,
}


def covered(rtype: str) -> bool:
    """True when `rtype` has a pricer or is free."""
    return rtype in PRICERS or free_reason(rtype) is not None


# ---------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------


def price_resources(
    resources: Sequence[ResourceLike],
    catalog: Catalog,
    region: str,
    pool_options: Mapping[str, str] | None = None,
    bucket_gib: Mapping[str, float] | None = None,
) -> StackCost:
    """Price resources; raises UnpricedResource / MissingPrice, never returns $0 for unknown."""
    ctx = PricingContext(
        catalog, region, dict(pool_options or {}), resources, dict(bucket_gib or {})
    )
    items: list[LineItem] = []
    free: Counter[str] = Counter()
    for res in resources:
        pricer = PRICERS.get(res.type)
        if pricer is not None:
            priced = pricer(res, ctx)
            items.extend(priced)
            if priced or res.type not in PARTLY_FREE:
                continue
        if free_reason(res.type) is None:
            raise UnpricedResource(
                f"no pricer for resource type {res.type} ('{res.name}') in {region}: add a "
                "pricer to accelstack/cost/pricing.py PRICERS or, if AWS does not bill it, to FREE"
            )
        free[res.type] += 1
    return StackCost(
        region=region,
        items=tuple(items),
        free=tuple((t, n, free_reason(t) or "") for t, n in sorted(free.items())),
        hours_per_month=catalog.hours_per_month,
    )


def option_quotes(
    catalog: Catalog, region: str, instance_type: str, nodes: int, chosen: str
) -> tuple[OptionQuote, ...]:
    """The pool under every purchase option, side by side (reservation = on-demand rate)."""
    out = []
    for opt in PURCHASE_OPTIONS:
        alias = catalog.purchase(opt).rate_alias
        if catalog.has_rate(region, instance_type, opt):
            rate = catalog.instance_rate(region, instance_type, opt)
            out.append(OptionQuote(opt, nodes * rate.usd, rate, opt == chosen, None, alias))
        else:
            billed = catalog.purchase(opt).price_key
            why = f"no {billed} price for {instance_type} in {region}"
            out.append(OptionQuote(opt, None, None, opt == chosen, why, alias))
    return tuple(out)


def _with_options(stack: Stack, cost: StackCost) -> StackCost:
    opts = {
        p.name: option_quotes(
            stack.catalog, stack.region, p.instance_type, p.running_nodes, p.purchase_option
        )
        for p in stack.pools
    }
    return StackCost(cost.region, cost.items, cost.free, cost.hours_per_month, opts)


def pool_options(stack: Stack) -> dict[str, str]:
    return {p.name: p.purchase_option for p in stack.pools}


def price_plan(stack: Stack, resources: Iterable[ResourceLike]) -> StackCost:
    """Price the resources of a real plan for `stack`."""
    res = list(resources)
    cost = price_resources(
        res, stack.catalog, stack.region, pool_options(stack), checkpoint_bucket_gib(stack)
    )
    return _with_options(stack, cost)


def checkpoint_bucket_gib(stack: Stack) -> dict[str, float]:
    """The stack's created checkpoint bucket (plan resource name) -> GiB it holds."""
    plan = stack.checkpoint
    if plan is None or plan.bucket is not None:
        return {}
    return {stack.checkpoint_bucket_resource: plan.stored_gib}


def price_stack(stack: Stack) -> StackCost:
    """Price `stack` without a plan (the deploy-time guard): the billable resources the
    components declare (`accelstack.inventory`), through the pricers that price a plan."""
    return price_plan(stack, billables(stack))
