"""Cross-field rules: what the spec's shape cannot say, checked against the catalog.

Each rule is one small function decorated with `@rule(name, summary)`: it receives a
`Context` and yields `(yaml_path, message)` pairs. The decorator registers nothing: this
module's rules are listed in `MODULE_RULES` at its end, and `SPEC_RULES`
(accelstack/spec/ruleset.py) lists every spec module's tuple in report order.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

from accelstack import rulebook
from accelstack.catalog import (
    Catalog,
    DeviceKind,
    Family,
    Framework,
    InstanceType,
    image_sdk,
    sdk_version,
)
from accelstack.catalog.blocks import CapacityBlocks
from accelstack.catalog.sections import (
    new_region_hint,
    new_type_hint,
    overlay_hint,
    service_row,
)
from accelstack.clock import today
from accelstack.errors import CatalogError, allowed, did_you_mean, shown
from accelstack.naming import IDENTITY_TAG_KEYS, IDENTITY_TAG_PREFIXES
from accelstack.spec.models import (
    FSX_MOUNT_PATH,
    OPEN_CIDRS,
    RESERVED_ENV_NAMES,
    RESERVED_ENV_PREFIXES,
    RESERVED_POOL_NAMES,
    SECRET_NAME_RE,
    Pool,
    Reservation,
    Spec,
    Standalone,
)

Finding = rulebook.Finding  # (YAML path, message)


@dataclass(frozen=True)
class PoolFacts:
    """A pool whose instance type is a known accelerated type, with its catalog rows."""

    index: int
    pool: Pool
    inst: InstanceType
    family: Family
    kind: DeviceKind

    @property
    def at(self) -> str:
        return f"pools[{self.index}]"


@dataclass(frozen=True)
class Context:
    spec: Spec
    catalog: Catalog

    @cached_property
    def region_ok(self) -> bool:
        return self.spec.region in self.catalog.regions

    @cached_property
    def pool_names(self) -> list[str]:
        return [p.name for p in self.spec.pools]

    @cached_property
    def known_pools(self) -> list[PoolFacts]:
        out = []
        for i, pool in enumerate(self.spec.pools):
            inst = self.catalog.instances.get(pool.instance_type)
            if inst is None or not inst.accelerated:
                continue
            family = self.catalog.families[inst.family]
            kind = self.catalog.device_kinds[family.device_kind]
            out.append(PoolFacts(i, pool, inst, family, kind))
        return out


Check = Callable[[Context], Iterator[Finding]]
Rule = rulebook.Rule


def rule(name: str, summary: str) -> Callable[[Check], Rule[Context]]:
    """`@rule(name, summary)`: the function becomes a spec rule; list it in `MODULE_RULES`."""
    return rulebook.rule(name, summary)


# ---------------------------------------------------------------------------------------
# Region and zone
# ---------------------------------------------------------------------------------------


@rule("region-known", "the region has accelerated offerings in the catalog")
def _region(ctx: Context) -> Iterator[Finding]:
    if not ctx.region_ok:
        regions = ctx.catalog.regions
        hint = did_you_mean(ctx.spec.region, regions)
        yield (
            "region",
            f"{shown(ctx.spec.region)} has no accelerated offerings in the catalog{hint} "
            f"(known: {allowed(regions, 20)}){new_region_hint(ctx.spec.region, hint)}",
        )


@rule("zone-known", "availability_zone is a zone name or id of the region")
def _zone(ctx: Context) -> Iterator[Finding]:
    spec, cat = ctx.spec, ctx.catalog
    if (
        ctx.region_ok
        and spec.availability_zone
        and not cat.zone_id(spec.region, spec.availability_zone)
    ):
        zones = cat.regions[spec.region].zones
        names = [*zones, *zones.values()]
        yield (
            "availability_zone",
            f"{shown(spec.availability_zone)} is not a zone of {spec.region}"
            f"{did_you_mean(spec.availability_zone, names)} (known: {allowed(names)})",
        )


@rule(
    "network-subnet-addresses",
    "network.private_subnet_addresses: an existing VPC's zones of the region",
)
def _subnet_addresses(ctx: Context) -> Iterator[Finding]:
    net, cat = ctx.spec.network, ctx.catalog
    if not net.private_subnet_addresses:
        return
    if net.mode != "existing":
        yield (
            "network.private_subnet_addresses",
            "applies to network.mode 'existing' only (a created VPC is sized by accelstack)",
        )
        return
    if not ctx.region_ok:
        return
    zones = cat.regions[ctx.spec.region].zones
    names = [*zones, *zones.values()]
    for zone in net.private_subnet_addresses:
        if cat.zone_id(ctx.spec.region, zone) is None:
            yield (
                f"network.private_subnet_addresses.{zone}",
                f"{shown(zone)} is not a zone of {ctx.spec.region}"
                f"{did_you_mean(zone, names)} (known: {allowed(names)})",
            )


# ---------------------------------------------------------------------------------------
# Pools
# ---------------------------------------------------------------------------------------


@rule("pool-name-unique", "pool names are unique")
def _pool_unique(ctx: Context) -> Iterator[Finding]:
    names = ctx.pool_names
    for i, name in enumerate(names):
        if names.index(name) != i:
            yield (
                f"pools[{i}].name",
                f"{shown(name)} is used by pools[{names.index(name)}] already; "
                "pool names must be unique",
            )


@rule("pool-name-reserved", "a pool is not named like the stack's own node groups")
def _pool_reserved(ctx: Context) -> Iterator[Finding]:
    for i, name in enumerate(ctx.pool_names):
        if name in RESERVED_POOL_NAMES:
            yield (
                f"pools[{i}].name",
                f"{shown(name)} is the name of the stack's own system node group; "
                "pick another pool name",
            )


@rule("pool-type-accelerated", "a pool's instance type is a known accelerated type")
def _pool_type(ctx: Context) -> Iterator[Finding]:
    cat = ctx.catalog
    known = allowed(cat.accelerated_types())
    for i, pool in enumerate(ctx.spec.pools):
        itype = pool.instance_type
        if itype not in cat.instances:
            hint = did_you_mean(itype, cat.accelerated_types())
            yield (
                f"pools[{i}].instance_type",
                f"{shown(itype)} is not a supported instance type{hint} (supported: {known})"
                + new_type_hint(itype, hint),
            )
        elif not cat.instances[itype].accelerated:
            yield (
                f"pools[{i}].instance_type",
                f"{shown(itype)} is a CPU type; pools need an accelerated type (known: {known})",
            )


@rule("pool-preview", "preview instance types need 'preview: true'")
def _pool_preview(ctx: Context) -> Iterator[Finding]:
    for f in ctx.known_pools:
        if f.inst.preview and not ctx.spec.preview:
            yield (
                f"{f.at}.instance_type",
                f"{shown(f.pool.instance_type)} is a preview type whose facts are "
                "partly estimated; set 'preview: true' at the top level to use it",
            )


@rule("pool-efa-supported", "EFA only on types that support it")
def _pool_efa(ctx: Context) -> Iterator[Finding]:
    for f in ctx.known_pools:
        if f.pool.efa and not f.inst.efa_supported:
            efa_types = sorted(
                n
                for n, x in ctx.catalog.instances.items()
                if x.efa_supported and x.family == f.inst.family
            )
            yield (
                f"{f.at}.efa",
                f"EFA is not supported on {f.pool.instance_type}; "
                f"use efa: false or an EFA type ({allowed(efa_types)})",
            )
        if f.pool.efa_interface_style and not (f.pool.efa is not False and f.inst.efa_supported):
            yield (f"{f.at}.efa_interface_style", "is set but EFA is off for this pool")


def _reserved_options(ctx: Context) -> list[str]:
    return [n for n, row in ctx.catalog.purchase_options.items() if row.needs_reservation]


@rule("pool-reservation-id", "capacity-block and reservation need reservation_id; others refuse it")
def _pool_reservation(ctx: Context) -> Iterator[Finding]:
    for f in ctx.known_pools:
        option = f.pool.purchase.option
        needs_id = ctx.catalog.purchase(option).needs_reservation
        if needs_id and not f.pool.purchase.reservation_id and not f.pool.purchase.reservations:
            yield (
                f"{f.at}.purchase.reservation_id",
                f"is required for purchase option '{option}' "
                "(the cr-... id of the capacity block or reservation)",
            )
        if not needs_id and f.pool.purchase.reservation_id:
            yield (
                f"{f.at}.purchase.reservation_id",
                f"is only allowed with {' or '.join(_reserved_options(ctx))}, not '{option}'",
            )


@rule(
    "pool-reservation-placement-group",
    "purchase.placement_group only with an on-demand capacity reservation (EC2 User Guide)",
)
def _pool_reservation_placement(ctx: Context) -> Iterator[Finding]:
    """A reservation created in a cluster placement group is used by launches into that group;
    Capacity Blocks place their instances themselves (catalog scale.yaml `placement`)."""
    facts = ctx.catalog.scale.placement
    for f in ctx.known_pools:
        purchase = f.pool.purchase
        if purchase.placement_group is None:
            continue
        row = ctx.catalog.purchase(purchase.option)
        if not (row.needs_reservation and row.capacity_type == facts.reservation_capacity_type):
            allowed = [
                name
                for name, r in ctx.catalog.purchase_options.items()
                if r.needs_reservation and r.capacity_type == facts.reservation_capacity_type
            ]
            yield (
                f"{f.at}.purchase.placement_group",
                f"is only allowed with {' or '.join(allowed)}, not '{purchase.option}' "
                f"({facts.capacity_block_source})",
            )


@rule(
    "pool-placement-groups",
    "placement_groups per-launch only where accelstack creates the pool's placement group",
)
def _pool_placement_groups(ctx: Context) -> Iterator[Finding]:
    """accelstack creates a cluster placement group for an EFA pool on no reservation only;
    a reservation's pool launches where its capacity is (catalog scale.yaml `placement`)."""
    for f in ctx.known_pools:
        if f.pool.placement_groups != "per-launch":
            continue
        purchase = f.pool.purchase
        if purchase.reservation_id or purchase.reservations:
            yield (
                f"{f.at}.placement_groups",
                f"'per-launch' applies to pools on no reservation; purchase option "
                f"'{purchase.option}' launches where its reservation is (allowed: one)",
            )
        elif f.pool.efa is False or not f.inst.efa_supported:
            yield (
                f"{f.at}.placement_groups",
                "'per-launch' applies to EFA pools, which get cluster placement groups; EFA is "
                "off for this pool (allowed: one)",
            )


@rule("network-ecr-endpoints", "network.ecr_endpoints only for an existing VPC of an EKS stack")
def _network_ecr_endpoints(ctx: Context) -> Iterator[Finding]:
    """A created VPC gets the ECR endpoints when its pull is NAT-bound (catalog scale.yaml
    image_delivery); the setting asks for them in an existing VPC."""
    net = ctx.spec.network
    if not net.ecr_endpoints:
        return
    if net.mode != "existing":
        yield (
            "network.ecr_endpoints",
            "applies to an existing VPC (mode: existing); a created VPC gets the ECR endpoints "
            "when its image pull is NAT-bound",
        )
    elif ctx.spec.orchestration != "eks":
        yield ("network.ecr_endpoints", "applies to EKS stacks (the nodes' security group)")


@rule("pool-logical-cores", "logical_cores on Neuron pools only, dividing the cores per chip")
def _pool_lnc(ctx: Context) -> Iterator[Finding]:
    for f in ctx.known_pools:
        lnc = f.pool.logical_cores
        if lnc is not None and not f.kind.compile_cache:
            yield (
                f"{f.at}.logical_cores",
                f"applies to Neuron pools only; {f.pool.instance_type} is {f.family.accelerator}",
            )
        elif lnc is not None and f.inst.physical_cores_per_chip % lnc:
            yield (
                f"{f.at}.logical_cores",
                f"{lnc} does not divide the {f.inst.physical_cores_per_chip} cores per chip of "
                f"{f.pool.instance_type} (allowed: 1)",
            )


@rule("pool-compile-cache", "a pool's compile_cache only on Neuron pools")
def _pool_cache(ctx: Context) -> Iterator[Finding]:
    for f in ctx.known_pools:
        if f.pool.compile_cache and not f.kind.compile_cache:
            yield (
                f"{f.at}.compile_cache",
                f"a compile cache is for Neuron pools only; "
                f"{f.pool.instance_type} is {f.family.accelerator}",
            )


def _zone_findings(ctx: Context, f: PoolFacts, offered: Sequence[str]) -> Iterator[Finding]:
    spec, pool = ctx.spec, f.pool
    zone = pool.availability_zone or spec.availability_zone
    if not zone:
        return
    zid = ctx.catalog.zone_id(spec.region, zone)
    field = f"{f.at}.availability_zone" if pool.availability_zone else "availability_zone"
    if zid is None:
        if pool.availability_zone:
            zones = ctx.catalog.regions[spec.region].zones
            yield (
                field,
                f"{shown(zone)} is not a zone of {spec.region} (known: "
                f"{allowed([*zones, *zones.values()])})",
            )
    elif zid not in offered:
        yield (
            field,
            f"zone {shown(zone)} ({zid}) does not offer {pool.instance_type}; "
            f"zones that do: {', '.join(offered)}",
        )


@rule("pool-offered", "the region (and the pool's zone) offers the type, per the catalog")
def _pool_offered(ctx: Context) -> Iterator[Finding]:
    if not ctx.region_ok:
        return
    for f in ctx.known_pools:
        offered = ctx.catalog.zones_offering(ctx.spec.region, f.pool.instance_type)
        if not offered:
            elsewhere = ctx.catalog.regions_offering(f.pool.instance_type)
            yield (
                f"{f.at}.instance_type",
                f"{f.pool.instance_type} is not offered in {ctx.spec.region} "
                f"per the catalog (offered in: {allowed(elsewhere) or 'no known region'})",
            )
        else:
            yield from _zone_findings(ctx, f, offered)


@rule("pool-priced", "the pool's purchase option has a sourced price (prices fail closed)")
def _pool_priced(ctx: Context) -> Iterator[Finding]:
    if not ctx.region_ok:
        return
    for f in ctx.known_pools:
        if not ctx.catalog.zones_offering(ctx.spec.region, f.pool.instance_type):
            continue
        try:
            ctx.catalog.instance_rate(ctx.spec.region, f.pool.instance_type, f.pool.purchase.option)
        except CatalogError as exc:
            yield (
                f"{f.at}.purchase.option",
                f"{exc} (prices fail closed: add the row, or pick a priced option)",
            )


# ---------------------------------------------------------------------------------------
# Cluster, access, network
# ---------------------------------------------------------------------------------------


@rule("system-nodes-cpu", "system nodes use a known CPU type")
def _system_nodes(ctx: Context) -> Iterator[Finding]:
    sys_type = ctx.spec.cluster.system_nodes.instance_type
    cat = ctx.catalog
    if sys_type is None:
        return
    if sys_type not in cat.instances:
        yield (
            "cluster.system_nodes.instance_type",
            f"{shown(sys_type)} is not a known instance type{did_you_mean(sys_type, cat.instances)}",
        )
    elif cat.instances[sys_type].accelerated:
        cpu = sorted(n for n, x in cat.instances.items() if not x.accelerated)
        yield (
            "cluster.system_nodes.instance_type",
            f"{shown(sys_type)} is an accelerated type; system nodes are CPU types ({allowed(cpu)})",
        )


@rule("kubernetes-version", "the EKS version is known and not past extended support")
def _k8s_version(ctx: Context) -> Iterator[Finding]:
    k8s = ctx.spec.cluster.kubernetes_version
    versions = ctx.catalog.defaults.eks_versions
    if k8s is None:
        return
    if k8s not in versions:
        yield (
            "cluster.kubernetes_version",
            f"{shown(k8s)} is not supported"
            f"{did_you_mean(k8s, versions)} (allowed: {', '.join(versions)})",
        )
    elif versions[k8s].status(today()) == "ended":
        live = [v for v, w in versions.items() if w.status(today()) != "ended"]
        yield (
            "cluster.kubernetes_version",
            f"{shown(k8s)} reached the end of EKS extended support on "
            f"{versions[k8s].extended_support_end}; use one of {', '.join(live)}",
        )


#: The widest union of access CIDRs accepted: a /8 worth of addresses. Wider sets (e.g.
#: 0.0.0.0/1 + 128.0.0.0/1) open the port to (nearly) the whole internet.
MAX_ACCESS_ADDRESSES = 2**24


def _ipv4(path: str, cidr: str) -> Iterator[Finding | ipaddress.IPv4Network]:
    """The IPv4 network of one CIDR field, or the finding that says why it is not one."""
    try:
        net = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        yield (path, f"{shown(cidr)} is not a CIDR block (e.g. 203.0.113.0/24)")
        return
    if not isinstance(net, ipaddress.IPv4Network):
        yield (path, f"{shown(cidr)} is an IPv6 range; this field takes IPv4 CIDR blocks only")
    elif str(net) in OPEN_CIDRS or net.prefixlen == 0:
        yield (path, f"{shown(cidr)} opens the port to the whole internet; list your own ranges")
    else:
        yield net


def _cidr_findings(field: str, cidrs: Sequence[str]) -> Iterator[Finding]:
    """Each CIDR is IPv4 and not open; no duplicates; the union stays within a /8."""
    nets: list[ipaddress.IPv4Network] = []
    for j, cidr in enumerate(cidrs):
        for got in _ipv4(f"{field}[{j}]", cidr):
            if not isinstance(got, ipaddress.IPv4Network):
                yield got
            elif got in nets:
                yield (
                    f"{field}[{j}]",
                    f"{shown(cidr)} is listed twice ({field}[{nets.index(got)}] is the same range)",
                )
            else:
                nets.append(got)
    total = sum(n.num_addresses for n in ipaddress.collapse_addresses(nets))
    if total > MAX_ACCESS_ADDRESSES:
        yield (
            field,
            f"together these ranges cover {total:,} addresses, more than a /8 "
            f"({MAX_ACCESS_ADDRESSES:,}): that opens the port to much of the internet; "
            "list your own ranges",
        )


@rule(
    "api-access",
    "EKS: the public API endpoint is on, limited to the deployer's CIDRs (none open to everyone)",
)
def _api_access(ctx: Context) -> Iterator[Finding]:
    cluster = ctx.spec.cluster
    if ctx.spec.orchestration != "eks":
        return
    if not cluster.endpoint_public_access:
        yield (
            "cluster.endpoint_public_access",
            "is false, but `pulumi up` installs the device plugins, namespace and volume "
            "through the API from outside the VPC; set it to true and list your CIDRs in "
            "public_access_cidrs (README: how the Kubernetes layer reaches the API)",
        )
    yield from _cidr_findings("cluster.public_access_cidrs", cluster.public_access_cidrs)
    if cluster.endpoint_public_access and not cluster.public_access_cidrs:
        yield (
            "cluster.public_access_cidrs",
            "must list the CIDRs allowed to reach the public endpoint (0.0.0.0/0 is refused)",
        )


#: An IAM role or user ARN in any partition (aws, aws-cn, aws-us-gov, ...); EKS access entries
#: take IAM principals, and `*` or a malformed ARN must never reach cluster-admin.
ADMIN_ARN_RE = re.compile(r"arn:aws[a-z-]*:iam::[0-9]{12}:(role|user)/[A-Za-z0-9+=,.@_/-]{1,512}")


@rule("admin-arns", "admin_principal_arns are distinct IAM role or user ARNs (no wildcards)")
def _admin_arns(ctx: Context) -> Iterator[Finding]:
    arns = ctx.spec.cluster.admin_principal_arns
    for j, arn in enumerate(arns):
        at = f"cluster.admin_principal_arns[{j}]"
        if not ADMIN_ARN_RE.fullmatch(arn) or "*" in arn:
            yield (
                at,
                f"{shown(arn)} is not an IAM role or user ARN "
                "(arn:aws:iam::123456789012:role/NAME or :user/NAME; no wildcards)",
            )
        elif arns.index(arn) != j:
            yield (at, f"{shown(arn)} is listed twice (also at [{arns.index(arn)}])")


@rule("cluster-admin", "EKS: someone is given cluster-admin (an admin principal or creator_admin)")
def _cluster_admin(ctx: Context) -> Iterator[Finding]:
    cluster = ctx.spec.cluster
    if ctx.spec.orchestration == "eks" and not (
        cluster.admin_principal_arns or cluster.creator_admin
    ):
        yield (
            "cluster.admin_principal_arns",
            "is empty and creator_admin is false: nobody could reach the cluster, not even "
            "`pulumi up`; list the deploying identity's ARN (or set creator_admin: true)",
        )


@rule("ssh-access", "SSH CIDRs are narrow and need a key pair")
def _ssh_access(ctx: Context) -> Iterator[Finding]:
    sa = ctx.spec.standalone
    yield from _cidr_findings("standalone.ssh_cidrs", sa.ssh_cidrs)
    if sa.ssh_cidrs and not sa.ssh_key_name:
        yield (
            "standalone.ssh_cidrs",
            "needs standalone.ssh_key_name (SSH is off by default; "
            "access is through SSM Session Manager)",
        )


@rule("network-mode", "existing-VPC fields with mode 'existing' only, create fields otherwise")
def _network_mode(ctx: Context) -> Iterator[Finding]:
    net = ctx.spec.network
    if net.mode == "existing":
        if not net.vpc_id:
            yield ("network.vpc_id", "is required when network.mode is 'existing'")
        if not net.private_subnet_ids:
            yield ("network.private_subnet_ids", "is required when network.mode is 'existing'")
        if net.vpc_cidr:
            yield ("network.vpc_cidr", "applies only when network.mode is 'create'")
        return
    for name in ("vpc_id", "private_subnet_ids", "public_subnet_ids"):
        if getattr(net, name):
            yield (f"network.{name}", "applies only when network.mode is 'existing'")


@rule("network-subnets-unique", "an existing VPC lists each subnet once")
def _subnets_unique(ctx: Context) -> Iterator[Finding]:
    """A subnet listed twice counts once for the zones the pools need (the plan places subnet i
    in the i-th pool zone, so a repeat would put two zones' nodes in one subnet)."""
    net = ctx.spec.network
    for field in ("private_subnet_ids", "public_subnet_ids"):
        seen: set[str] = set()
        for i, sid in enumerate(getattr(net, field) or ()):
            if sid in seen:
                yield (
                    f"network.{field}[{i}]",
                    f"repeats {sid!r}; list each subnet once (one private subnet per pool zone)",
                )
            seen.add(sid)


@rule("vpc-cidr", "a created VPC's CIDR is a private IPv4 /16 to /20")
def _vpc_cidr(ctx: Context) -> Iterator[Finding]:
    net = ctx.spec.network
    if net.mode != "create" or not net.vpc_cidr:
        return
    try:
        n = ipaddress.ip_network(net.vpc_cidr)
    except ValueError:
        yield ("network.vpc_cidr", f"{shown(net.vpc_cidr)} is not a CIDR block (e.g. 10.42.0.0/16)")
        return
    if not isinstance(n, ipaddress.IPv4Network):
        yield ("network.vpc_cidr", f"{shown(net.vpc_cidr)} is IPv6; a VPC's primary CIDR is IPv4")
    elif not n.is_private or n.prefixlen > 20 or n.prefixlen < 16:
        yield ("network.vpc_cidr", f"{shown(net.vpc_cidr)} must be a private /16 to /20")


# ---------------------------------------------------------------------------------------
# Cache, storage, workload
# ---------------------------------------------------------------------------------------


@rule("compile-cache-neuron", "compile_cache needs a Neuron pool")
def _compile_cache(ctx: Context) -> Iterator[Finding]:
    if ctx.spec.compile_cache is not None and not any(
        f.kind.compile_cache for f in ctx.known_pools
    ):
        yield (
            "compile_cache",
            "is set but no pool is a Neuron pool (the Neuron compile cache serves trn pools only)",
        )


@rule("fsx-throughput", "FSx throughput needs an FSx size")
def _fsx(ctx: Context) -> Iterator[Finding]:
    storage = ctx.spec.storage
    if storage.fsx_throughput_per_tib and not storage.fsx_lustre_gib:
        yield ("storage.fsx_throughput_per_tib", "is set but storage.fsx_lustre_gib is not")


@rule("fsx-priced", "the FSx for Lustre throughput has a sourced price (prices fail closed)")
def _fsx_priced(ctx: Context) -> Iterator[Finding]:
    storage, d = ctx.spec.storage, ctx.catalog.defaults
    if not storage.fsx_lustre_gib or not ctx.region_ok:
        return
    tput = storage.fsx_throughput_per_tib or d.fsx_throughput_per_tib
    item = ctx.catalog.fsx_price_item(d.fsx_deployment_type, tput)
    try:
        ctx.catalog.service_rate(ctx.spec.region, item)
    except CatalogError:
        priced = sorted(
            r.item.rsplit("-", 1)[-1]
            for r in ctx.catalog.service_rates
            if r.item
            and r.item.startswith(ctx.catalog.fsx_price_item(d.fsx_deployment_type, None) + "-")
        )
        yield (
            "storage.fsx_throughput_per_tib",
            f"{tput} MB/s per TiB has no price in the catalog (prices fail closed; "
            f"priced: {', '.join(priced) or 'none'}); "
            + overlay_hint("prices.yaml", "services", service_row("*", item)),
        )


@rule("workload-pool", "workload.pool names a pool (required when there are several)")
def _workload_pool(ctx: Context) -> Iterator[Finding]:
    wl, names = ctx.spec.workload, ctx.pool_names
    if wl.pool is None and len(names) > 1:
        yield (
            "workload.pool",
            f"is required when there are several pools (one of: {', '.join(names)})",
        )
    elif wl.pool is not None and wl.pool not in names:
        yield (
            "workload.pool",
            f"{shown(wl.pool)} is not a pool of this stack{did_you_mean(wl.pool, names)}"
            f" (pools: {', '.join(names)})",
        )


def _workload_facts(ctx: Context) -> PoolFacts | None:
    """The workload pool's facts, when the pool is resolvable and a known accelerated type."""
    wl, names = ctx.spec.workload, ctx.pool_names
    if (wl.pool is None and len(names) > 1) or (wl.pool is not None and wl.pool not in names):
        return None
    target = ctx.spec.workload_pool
    return next((f for f in ctx.known_pools if f.pool is target), None)


@rule("workload-framework", "the framework runs on the workload pool's device kind")
def _workload_framework(ctx: Context) -> Iterator[Finding]:
    f, wl = _workload_facts(ctx), ctx.spec.workload
    if f is None or wl.framework in (None, *f.kind.frameworks, *ctx.catalog.retired_frameworks):
        return
    every = sorted({x for k in ctx.catalog.device_kinds.values() for x in k.frameworks})
    yield (
        "workload.framework",
        f"{shown(wl.framework)} cannot run on {f.pool.instance_type}"
        f"{did_you_mean(wl.framework, every)} (allowed there: {', '.join(f.kind.frameworks)})",
    )


@rule("workload-precompile", "precompile_steps on Neuron pools only")
def _workload_precompile(ctx: Context) -> Iterator[Finding]:
    f, wl = _workload_facts(ctx), ctx.spec.workload
    if f is not None and wl.precompile_steps and not f.kind.compile_cache:
        yield (
            "workload.precompile_steps",
            f"pre-compilation is a Neuron step; {f.pool.instance_type} does not use it",
        )


@rule("workload-precision", "the precision has a peak figure for the accelerator")
def _workload_precision(ctx: Context) -> Iterator[Finding]:
    f, wl = _workload_facts(ctx), ctx.spec.workload
    if f is not None and wl.precision not in f.family.peak_tflops:
        yield (
            "workload.precision",
            f"'{wl.precision}' has no peak figure for "
            f"{f.family.accelerator} (allowed: {', '.join(f.family.peak_tflops)})",
        )


@rule("calibration-types", "every calibration entry names a known accelerated instance type")
def _calibration_types(ctx: Context) -> Iterator[Finding]:
    cat = ctx.catalog
    for i, m in enumerate(ctx.spec.calibration):
        if m.instance_type not in cat.accelerated_types():
            yield (
                f"calibration[{i}].instance_type",
                f"{shown(m.instance_type)} is not a known accelerated instance type"
                f"{did_you_mean(m.instance_type, cat.accelerated_types())}",
            )


@rule("workload-entrypoint", "the entrypoint does not start with '-'")
def _workload_entrypoint(ctx: Context) -> Iterator[Finding]:
    ep = ctx.spec.workload.entrypoint
    if ep.startswith("-"):
        yield (
            "workload.entrypoint",
            f"{ep[:40]!r} starts with '-': torchrun would "
            "read it as an option; use a path such as ./train.py",
        )


def _env_name_reserved(name: str) -> bool:
    return name in RESERVED_ENV_NAMES or name.startswith(RESERVED_ENV_PREFIXES)


@rule(
    "workload-env-names", "workload.env sets no reserved, rank/rendezvous or secret-looking names"
)
def _workload_env(ctx: Context) -> Iterator[Finding]:
    for name in ctx.spec.workload.env:
        if _env_name_reserved(name):
            yield (
                f"workload.env.{name}",
                "the launch script uses this variable itself, or torchrun, the orchestrator "
                "or bash sets it (rank, rendezvous, world size, shell specials); pick another name",
            )
        if SECRET_NAME_RE.search(name):
            yield (
                f"workload.env.{name}",
                "looks like a secret; secrets never go into rendered "
                "files: mount them from AWS Secrets Manager or a Kubernetes Secret instead",
            )


@rule("model-shape", "model layers and hidden_size go together")
def _model_shape(ctx: Context) -> Iterator[Finding]:
    m = ctx.spec.workload.model
    if (m.layers is None) != (m.hidden_size is None):
        yield ("workload.model", "layers and hidden_size go together (both or neither)")


@rule("standalone-only-ec2", "the standalone section only with orchestration 'ec2'")
def _standalone(ctx: Context) -> Iterator[Finding]:
    if ctx.spec.orchestration == "eks" and ctx.spec.standalone != Standalone():
        yield ("standalone", "applies only when orchestration is 'ec2'")


@rule("tags-identity", "user tags do not replace the stack's identity tags")
def _tags_identity(ctx: Context) -> Iterator[Finding]:
    for key in ctx.spec.tags:
        if key in IDENTITY_TAG_KEYS or key.startswith(IDENTITY_TAG_PREFIXES):
            yield (
                f"tags.{key}",
                f"{shown(key)} is a tag the stack sets itself (run commands and the cost report "
                f"find its resources by it; reserved: {', '.join(IDENTITY_TAG_KEYS)}, "
                f"{', '.join(p + '*' for p in IDENTITY_TAG_PREFIXES)}); pick another key",
            )


# ---------------------------------------------------------------------------------------
# FSx paths (the rules on names, tags and the subnet IP budget run on the resolved stack:
# accelstack/resolve/rules.py)
# ---------------------------------------------------------------------------------------


@rule("workload-fsx-path", "an entrypoint under /fsx needs storage.fsx_lustre_gib")
def _workload_fsx(ctx: Context) -> Iterator[Finding]:
    wl = ctx.spec.workload
    on_fsx = wl.entrypoint == FSX_MOUNT_PATH or wl.entrypoint.startswith(FSX_MOUNT_PATH + "/")
    if on_fsx and not ctx.spec.storage.fsx_lustre_gib:
        yield (
            "workload.entrypoint",
            f"'{wl.entrypoint}' is on the FSx mount {FSX_MOUNT_PATH} but the stack has no FSx "
            "(storage.fsx_lustre_gib): set it, or put the script elsewhere on the nodes",
        )


# ---------------------------------------------------------------------------------------
# Training paths (frameworks), images and LNC per family
# ---------------------------------------------------------------------------------------


def _framework_row(ctx: Context, f: PoolFacts) -> Framework | None:
    """The workload's framework row when it is one the workload pool's family allows."""
    name = ctx.spec.workload.framework or ctx.catalog.default_framework(f.family)
    if name not in ctx.catalog.family_frameworks(f.family):
        return None
    return ctx.catalog.frameworks.get(name or "")


@rule("workload-framework-retired", "a retired framework name is refused with what replaced it")
def _framework_retired(ctx: Context) -> Iterator[Finding]:
    name = ctx.spec.workload.framework
    if name is not None and name in ctx.catalog.retired_frameworks:
        yield ("workload.framework", ctx.catalog.retired_frameworks[name])


@rule("workload-framework-family", "the framework is one the workload pool's family allows")
def _framework_family(ctx: Context) -> Iterator[Finding]:
    f, name = _workload_facts(ctx), ctx.spec.workload.framework
    if f is None or name is None or name not in f.kind.frameworks:
        return
    here = ctx.catalog.family_frameworks(f.family)
    if name not in here:
        yield (
            "workload.framework",
            f"'{name}' does not run on {f.pool.instance_type} ({f.family.accelerator}); "
            f"allowed there: {', '.join(here)}",
        )


@rule("workload-image-required", "a framework without a public image needs workload.image (EKS)")
def _image_required(ctx: Context) -> Iterator[Finding]:
    f = _workload_facts(ctx)
    fw = _framework_row(ctx, f) if f else None
    eks = ctx.spec.orchestration == "eks"
    if fw is not None and eks and fw.default_image is None and not ctx.spec.workload.image:
        yield ("workload.image", f"is required for framework '{fw.name}': {fw.image_note}")


def _sdk_findings(image: str, sdk: str, fw: Framework, family: Family) -> Iterator[str]:
    have = sdk_version(sdk)
    floors = [(fw.min_sdk, f"framework '{fw.name}'"), (family.min_neuron_sdk, family.accelerator)]
    for floor, who in floors:
        if floor and have < sdk_version(floor):
            yield f"'{image}' carries Neuron SDK {sdk}; {who} needs SDK {floor} or newer"
    if fw.max_sdk and have[: len(sdk_version(fw.max_sdk))] > sdk_version(fw.max_sdk):
        yield (
            f"'{image}' carries Neuron SDK {sdk}; framework '{fw.name}' is not in SDKs after "
            f"{fw.max_sdk} ({fw.status_note})"
        )


@rule(
    "workload-image-sdk", "an image tag's Neuron SDK is in the range the framework and family need"
)
def _image_sdk(ctx: Context) -> Iterator[Finding]:
    f, image = _workload_facts(ctx), ctx.spec.workload.image
    fw = _framework_row(ctx, f) if f else None
    sdk = image_sdk(image) if image else None
    if f is None or fw is None or image is None or sdk is None or not f.kind.compile_cache:
        return
    for message in _sdk_findings(image, sdk, fw, f.family):
        yield ("workload.image", message)


@rule("pool-logical-cores-family", "logical_cores is a setting the pool's family accepts")
def _lnc_family(ctx: Context) -> Iterator[Finding]:
    for f in ctx.known_pools:
        lnc = f.pool.logical_cores
        if lnc is not None and f.kind.compile_cache and lnc not in f.family.logical_cores_allowed:
            yield (
                f"{f.at}.logical_cores",
                f"{lnc} is not an LNC setting of {f.family.accelerator} "
                f"(allowed: {', '.join(map(str, f.family.logical_cores_allowed))})",
            )


@rule(
    "workload-precompile-path", "pre-compile settings only on a framework with a pre-compile phase"
)
def _precompile_path(ctx: Context) -> Iterator[Finding]:
    f, wl = _workload_facts(ctx), ctx.spec.workload
    fw = _framework_row(ctx, f) if f else None
    if fw is None or fw.precompile:
        if wl.precompile_args and not wl.precompile_steps:
            yield ("workload.precompile_args", "apply only with precompile_steps above 0")
        return
    if wl.precompile_steps and f is not None and f.kind.compile_cache:
        yield (
            "workload.precompile_steps",
            f"framework '{fw.name}' has no pre-compile phase (it compiles at the first step); "
            "remove it, or use framework 'xla'",
        )
    if wl.precompile_args:
        yield ("workload.precompile_args", f"framework '{fw.name}' has no pre-compile phase")


@rule(
    "capacity-block-limits",
    "a capacity-block pool fits the instances per block and per account (EC2 User Guide)",
)
def _capacity_block_limits(ctx: Context) -> Iterator[Finding]:
    cb = ctx.catalog.capacity_blocks
    for f in ctx.known_pools:
        purchase = f.pool.purchase
        if purchase.option != "capacity-block":
            continue
        held = sum(r.nodes for r in purchase.reservations) or purchase.instances or f.pool.nodes
        if held > cb.max_instances_per_account:
            yield (f"{f.at}.nodes", f"{held}: {cb.over_limit(held)}")
        elif purchase.reservations:
            yield from _blocks_within_limit(f.at, purchase.reservations, cb)
        elif held > cb.max_instances_per_block:
            blocks = cb.blocks_for(held)
            yield (
                f"{f.at}.nodes",
                f"{held} nodes exceed the {cb.max_instances_per_block} instances of one Capacity "
                f"Block (the pool names one reservation_id); they need {len(blocks)} blocks "
                f"({', '.join(map(str, blocks))}): list them under purchase.reservations or use "
                f"at most {cb.max_instances_per_block} nodes ({cb.source})",
            )


@rule(
    "capacity-block-account-limit",
    "the stack's capacity-block pools together fit the instances per account (EC2 User Guide)",
)
def _capacity_block_account_limit(ctx: Context) -> Iterator[Finding]:
    """The per-account limit holds across Capacity Blocks, so across the stack's pools: each
    pool within it can still add up to more (the per-pool rule names a single pool over it)."""
    cb = ctx.catalog.capacity_blocks
    held = [
        (f, sum(r.nodes for r in f.pool.purchase.reservations) or f.pool.nodes)
        for f in ctx.known_pools
        if f.pool.purchase.option == "capacity-block"
    ]
    total = sum(n for _, n in held)
    if len(held) < 2 or total <= cb.max_instances_per_account:
        return
    parts = ", ".join(f"{f.pool.name}: {n}" for f, n in held)
    yield (
        "pools",
        f"capacity-block pools hold {total} instances ({parts}), over the "
        f"{cb.max_instances_per_account} an account can hold across Capacity Blocks "
        f"({cb.max_instances_per_block} per block; {cb.source})",
    )


def _blocks_within_limit(
    at: str, reservations: Sequence[Reservation], cb: CapacityBlocks
) -> Iterator[Finding]:
    """Each Capacity Block behind a pool holds at most the per-block instance count."""
    for i, r in enumerate(reservations):
        if r.nodes > cb.max_instances_per_block:
            yield (
                f"{at}.purchase.reservations[{i}].nodes",
                f"{r.nodes} exceeds the {cb.max_instances_per_block} instances of one Capacity "
                f"Block: split it across several blocks ({cb.source})",
            )


@rule("calibration-mfu-band", "a calibration's MFU is a plausible training-step MFU (catalog band)")
def _calibration_band(ctx: Context) -> Iterator[Finding]:
    lo, hi = ctx.catalog.throughput.spreads.mfu_band
    for i, m in enumerate(ctx.spec.calibration):
        if not lo <= m.mfu <= hi:
            yield (
                f"calibration[{i}].mfu",
                f"{m.mfu:.3g} is outside the plausible {lo:g}-{hi:g} for a training step "
                f"(a CPU run or a proxy model recorded with the full size?); re-run "
                "`accelstack trial` and `accelstack calibrate`",
            )


# ---------------------------------------------------------------------------------------
# Job layer (`jobs`): controller rows of the catalog's charts table
# ---------------------------------------------------------------------------------------

#: Kueue integration name of each manifest kind (the `integrations.frameworks` entries of
#: Kueue's configuration; kubernetes-sigs/kueue charts/kueue/values.yaml).
KUEUE_INTEGRATION = {
    "trainjob": "trainer.kubeflow.org/trainjob",
    "pytorchjob": "kubeflow.org/pytorchjob",
    "job": "batch/job",
}


def _controller(ctx: Context) -> str:
    return ctx.spec.jobs.controller or ctx.catalog.default_job_controller()


@rule("jobs-eks-only", "the jobs section applies to EKS stacks only")
def _jobs_eks(ctx: Context) -> Iterator[Finding]:
    j = ctx.spec.jobs
    if ctx.spec.orchestration == "eks":
        return
    for field, value in (("controller", j.controller), ("version", j.version), ("kind", j.kind)):
        if value is not None:
            yield (f"jobs.{field}", "applies to orchestration eks only (standalone has no jobs)")
    if j.kueue:
        yield ("jobs.kueue", "applies to orchestration eks only")


@rule("jobs-controller", "jobs.controller is a controller the catalog pins, or none")
def _jobs_controller(ctx: Context) -> Iterator[Finding]:
    name = ctx.spec.jobs.controller
    known = ctx.catalog.job_controllers()
    if name is not None and name not in known:
        yield (
            "jobs.controller",
            f"'{name}' is not a job controller (allowed: {', '.join(known)})"
            f"{did_you_mean(name, known)}",
        )


@rule("jobs-version", "jobs.version is the version the catalog pins for the controller")
def _jobs_version(ctx: Context) -> Iterator[Finding]:
    version, name = ctx.spec.jobs.version, _controller(ctx)
    if version is None or name not in ctx.catalog.job_controllers():
        return
    chart = ctx.catalog.controller_chart(name)
    if chart is None:
        yield ("jobs.version", f"controller '{name}' installs nothing, so it has no version")
    elif version.lstrip("v") != chart.version.lstrip("v"):
        yield (
            "jobs.version",
            f"'{version}' is not a version of controller '{name}' the catalog pins "
            f"(allowed: {chart.version}; source: {chart.source.split(' ')[0]})",
        )


@rule("jobs-kind", "jobs.kind needs the controller that runs it (job needs none)")
def _jobs_kind(ctx: Context) -> Iterator[Finding]:
    kind, name = ctx.spec.jobs.kind, _controller(ctx)
    if kind is None or kind == "job" or name not in ctx.catalog.job_controllers():
        return
    chart = ctx.catalog.controller_chart(name)
    own = chart.manifest_kind if chart else None
    if own != kind:
        runs = [c.controller for c in ctx.catalog.charts.values() if c.manifest_kind == kind]
        yield (
            "jobs.kind",
            f"{kind} needs jobs.controller '{(runs or ['none'])[0]}', but the controller is "
            f"'{name}': nothing would run it (allowed with '{name}': "
            f"{', '.join(sorted({'job', own or 'job'}))})",
        )


@rule("jobs-topology", "topology-aware scheduling needs Kueue and pools EC2 reports topology for")
def _jobs_topology(ctx: Context) -> Iterator[Finding]:
    if not ctx.spec.jobs.topology_aware:
        return
    if not ctx.spec.jobs.kueue or ctx.spec.orchestration != "eks":
        yield ("jobs.topology_aware", "needs jobs.kueue: true on orchestration eks")
        return
    known = ctx.catalog.scale.topology_labels.instance_types
    for i, p in enumerate(ctx.spec.pools):
        if p.instance_type not in known:
            yield (
                f"pools[{i}].instance_type",
                f"{p.instance_type} carries no network-topology labels (EC2 reports topology "
                f"for {', '.join(known)}); set jobs.topology_aware: false",
            )


@rule("jobs-kueue", "Kueue admits the job's kind (its pinned chart's integrations)")
def _jobs_kueue(ctx: Context) -> Iterator[Finding]:
    if not ctx.spec.jobs.kueue or ctx.spec.orchestration != "eks":
        return
    queues = [c for c in ctx.catalog.charts.values() if c.role == "queue"]
    chart = ctx.catalog.controller_chart(_controller(ctx))
    kind = ctx.spec.jobs.kind or (chart.manifest_kind if chart else None) or "job"
    integration = KUEUE_INTEGRATION.get(kind, kind)
    if not queues:
        yield ("jobs.kueue", "the catalog has no queue chart")
    elif integration not in queues[0].integrations:
        yield (
            "jobs.kueue",
            f"Kueue {queues[0].version} as installed does not admit {kind} ({integration}); "
            f"it admits {', '.join(queues[0].integrations)}: use jobs.controller trainer",
        )


#: This module's rules, in report order (the kind's RuleSet lists this tuple).
MODULE_RULES: tuple[Rule[Context], ...] = (
    _region,
    _zone,
    _subnet_addresses,
    _pool_unique,
    _pool_reserved,
    _pool_type,
    _pool_preview,
    _pool_efa,
    _pool_reservation,
    _pool_reservation_placement,
    _pool_placement_groups,
    _network_ecr_endpoints,
    _pool_lnc,
    _pool_cache,
    _pool_offered,
    _pool_priced,
    _system_nodes,
    _k8s_version,
    _api_access,
    _admin_arns,
    _cluster_admin,
    _ssh_access,
    _network_mode,
    _subnets_unique,
    _vpc_cidr,
    _compile_cache,
    _fsx,
    _fsx_priced,
    _workload_pool,
    _workload_framework,
    _workload_precompile,
    _workload_precision,
    _calibration_types,
    _workload_entrypoint,
    _workload_env,
    _model_shape,
    _standalone,
    _tags_identity,
    _workload_fsx,
    _framework_retired,
    _framework_family,
    _image_required,
    _image_sdk,
    _lnc_family,
    _precompile_path,
    _capacity_block_limits,
    _capacity_block_account_limit,
    _calibration_band,
    _jobs_eks,
    _jobs_controller,
    _jobs_version,
    _jobs_kind,
    _jobs_topology,
    _jobs_kueue,
)
