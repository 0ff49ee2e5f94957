"""The spec rules: what the spec's shape cannot say, checked on the resolved stack.

`resolve` accepts any spec that passed the schema and attaches the catalog's facts to it (each
pool's instance, family and device rows, its zone, the workload pool); these rules read those
facts from the `Stack`, never a resolver of their own. A pool whose type is not a known
accelerated type has no resolved pool (`pool-type-accelerated` names it), so the rules on pool
facts iterate `stack.pools` and the rules on what was written iterate `stack.spec.pools`.

Each rule is one small function decorated with `@spec_rule(name, summary)`: it receives the
`Stack` and yields `(yaml_path, message)` pairs. The decorator registers nothing: this module's
rules are listed in `MODULE_RULES` at its end, and `SPEC_RULES` (accelstack/resolve/ruleset.py)
lists every spec-rule module's tuple in report order. They run before the stack rules
(accelstack/resolve/rules.py), which read what needs a valid spec (address plan, names).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterator, Sequence

from accelstack import rulebook
from accelstack.catalog import Family, Framework, image_sdk, sdk_version
from accelstack.catalog.blocks import CapacityBlocks
from accelstack.catalog.flops import ModelShape, executed_share
from accelstack.catalog.sections import (
    new_region_hint,
    new_type_hint,
    overlay_hint,
    service_row,
)
from accelstack.clock import today
from accelstack.errors import CatalogError, allowed, did_you_mean, shown
from accelstack.naming import IDENTITY_TAG_KEYS, IDENTITY_TAG_PREFIXES
from accelstack.resolve.stack import MIN_CLUSTER_ZONES, ResolvedPool, Stack, vpc_cidr_problem
from accelstack.spec.models import (
    FSX_MOUNT_PATH,
    OPEN_CIDRS,
    RESERVED_ENV_NAMES,
    RESERVED_ENV_PREFIXES,
    RESERVED_POOL_NAMES,
    SECRET_NAME_RE,
    Measured,
    Reservation,
    Standalone,
)

Finding = rulebook.Finding  # (YAML path, message)
Check = Callable[[Stack], Iterator[Finding]]
SpecRule = rulebook.Rule[Stack]


def spec_rule(name: str, summary: str) -> Callable[[Check], SpecRule]:
    """`@spec_rule(name, summary)`: the function becomes a spec rule; list it in
    `MODULE_RULES`."""
    return rulebook.rule(name, summary)


def _pool_names(stack: Stack) -> list[str]:
    return [p.name for p in stack.spec.pools]


# ---------------------------------------------------------------------------------------
# Region and zone
# ---------------------------------------------------------------------------------------


@spec_rule("region-known", "the region has accelerated offerings in the catalog")
def _region(stack: Stack) -> Iterator[Finding]:
    if not stack.region_known:
        regions = stack.catalog.regions
        hint = did_you_mean(stack.spec.region, regions)
        yield (
            "region",
            f"{shown(stack.spec.region)} has no accelerated offerings in the catalog{hint} "
            f"(known: {allowed(regions, 20)}){new_region_hint(stack.spec.region, hint)}",
        )


@spec_rule("zone-known", "availability_zone is a zone name or id of the region")
def _zone(stack: Stack) -> Iterator[Finding]:
    spec, cat = stack.spec, stack.catalog
    if (
        stack.region_known
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


@spec_rule(
    "network-subnet-addresses",
    "network.private_subnet_addresses: an existing VPC's zones of the region",
)
def _subnet_addresses(stack: Stack) -> Iterator[Finding]:
    net, cat = stack.spec.network, stack.catalog
    if not net.private_subnet_addresses:
        return
    if net.mode != "existing":
        yield (
            "network.private_subnet_addresses",
            "applies to network.mode 'existing' only (a created VPC is sized by accelstack)",
        )
        return
    if not stack.region_known:
        return
    zones = cat.regions[stack.spec.region].zones
    names = [*zones, *zones.values()]
    for zone in net.private_subnet_addresses:
        if cat.zone_id(stack.spec.region, zone) is None:
            yield (
                f"network.private_subnet_addresses.{zone}",
                f"{shown(zone)} is not a zone of {stack.spec.region}"
                f"{did_you_mean(zone, names)} (known: {allowed(names)})",
            )


@spec_rule(
    "cluster-zones",
    "cluster.zones: zones of the region, at least two different ones (EKS control plane), EKS only",
)
def _cluster_zones(stack: Stack) -> Iterator[Finding]:
    """EKS wants the control plane's subnets in at least two Availability Zones ("You must
    specify at least two subnets in different Availability Zones": EKS user guide,
    network-reqs.html)."""
    zones_given, cat = stack.spec.cluster.zones, stack.catalog
    if not zones_given:
        return
    if stack.spec.orchestration != "eks":
        yield ("cluster.zones", "applies to orchestration 'eks' only (no control plane)")
        return
    if not stack.region_known:
        return
    known = cat.regions[stack.spec.region].zones
    names = [*known, *known.values()]
    ids = []
    for i, zone in enumerate(zones_given):
        zid = cat.zone_id(stack.spec.region, zone)
        if zid is None:
            yield (
                f"cluster.zones[{i}]",
                f"{shown(zone)} is not a zone of {stack.spec.region}"
                f"{did_you_mean(zone, names)} (known: {allowed(names)})",
            )
        ids.append(zid)
    found = {z for z in ids if z}
    if len(found) == len([z for z in ids if z]) and len(found) >= MIN_CLUSTER_ZONES:
        return
    if None not in ids:
        yield (
            "cluster.zones",
            f"{', '.join(zones_given)}: the EKS control plane needs subnets in at least "
            f"{MIN_CLUSTER_ZONES} different zones, each named once",
        )


# ---------------------------------------------------------------------------------------
# Pools
# ---------------------------------------------------------------------------------------


@spec_rule("pool-name-unique", "pool names are unique")
def _pool_unique(stack: Stack) -> Iterator[Finding]:
    names = _pool_names(stack)
    for i, name in enumerate(names):
        if names.index(name) != i:
            yield (
                f"pools[{i}].name",
                f"{shown(name)} is used by pools[{names.index(name)}] already; "
                "pool names must be unique",
            )


@spec_rule("pool-name-reserved", "a pool is not named like the stack's own node groups")
def _pool_reserved(stack: Stack) -> Iterator[Finding]:
    for i, name in enumerate(_pool_names(stack)):
        if name in RESERVED_POOL_NAMES:
            yield (
                f"pools[{i}].name",
                f"{shown(name)} is the name of the stack's own system node group; "
                "pick another pool name",
            )


@spec_rule("pool-type-accelerated", "a pool's instance type is a known accelerated type")
def _pool_type(stack: Stack) -> Iterator[Finding]:
    cat = stack.catalog
    known = allowed(cat.accelerated_types())
    for i, pool in enumerate(stack.spec.pools):
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


@spec_rule("pool-preview", "preview instance types need 'preview: true'")
def _pool_preview(stack: Stack) -> Iterator[Finding]:
    for f in stack.pools:
        if f.instance.preview and not stack.spec.preview:
            yield (
                f"{f.at}.instance_type",
                f"{shown(f.spec.instance_type)} is a preview type whose facts are "
                "partly estimated; set 'preview: true' at the top level to use it",
            )


@spec_rule("pool-efa-supported", "EFA only on types that support it")
def _pool_efa(stack: Stack) -> Iterator[Finding]:
    for f in stack.pools:
        if f.spec.efa and not f.instance.efa_supported:
            efa_types = sorted(
                n
                for n, x in stack.catalog.instances.items()
                if x.efa_supported and x.family == f.instance.family
            )
            yield (
                f"{f.at}.efa",
                f"EFA is not supported on {f.spec.instance_type}; "
                f"use efa: false or an EFA type ({allowed(efa_types)})",
            )
        if f.spec.efa_interface_style and not (
            f.spec.efa is not False and f.instance.efa_supported
        ):
            yield (f"{f.at}.efa_interface_style", "is set but EFA is off for this pool")


def _reserved_options(stack: Stack) -> list[str]:
    return [n for n, row in stack.catalog.purchase_options.items() if row.needs_reservation]


@spec_rule(
    "pool-reservation-id", "capacity-block and reservation need reservation_id; others refuse it"
)
def _pool_reservation(stack: Stack) -> Iterator[Finding]:
    for f in stack.pools:
        option = f.spec.purchase.option
        needs_id = stack.catalog.purchase(option).needs_reservation
        if needs_id and not f.spec.purchase.reservation_id and not f.spec.purchase.reservations:
            yield (
                f"{f.at}.purchase.reservation_id",
                f"is required for purchase option '{option}' "
                "(the cr-... id of the capacity block or reservation)",
            )
        if not needs_id and f.spec.purchase.reservation_id:
            yield (
                f"{f.at}.purchase.reservation_id",
                f"is only allowed with {' or '.join(_reserved_options(stack))}, not '{option}'",
            )


@spec_rule(
    "pool-reservation-placement-group",
    "purchase.placement_group only with an on-demand capacity reservation (EC2 User Guide)",
)
def _pool_reservation_placement(stack: Stack) -> Iterator[Finding]:
    """A reservation created in a cluster placement group is used by launches into that group;
    Capacity Blocks place their instances themselves (catalog scale.yaml `placement`)."""
    facts = stack.catalog.scale.placement
    for f in stack.pools:
        purchase = f.spec.purchase
        if purchase.placement_group is None:
            continue
        row = stack.catalog.purchase(purchase.option)
        if not (row.needs_reservation and row.capacity_type == facts.reservation_capacity_type):
            allowed = [
                name
                for name, r in stack.catalog.purchase_options.items()
                if r.needs_reservation and r.capacity_type == facts.reservation_capacity_type
            ]
            yield (
                f"{f.at}.purchase.placement_group",
                f"is only allowed with {' or '.join(allowed)}, not '{purchase.option}' "
                f"({facts.capacity_block_source})",
            )


@spec_rule(
    "pool-placement-groups",
    "placement_groups per-launch only where accelstack creates the pool's placement group",
)
def _pool_placement_groups(stack: Stack) -> Iterator[Finding]:
    """accelstack creates a cluster placement group for an EFA pool on no reservation only;
    a reservation's pool launches where its capacity is (catalog scale.yaml `placement`)."""
    for f in stack.pools:
        if f.spec.placement_groups != "per-launch":
            continue
        purchase = f.spec.purchase
        if purchase.reservation_id or purchase.reservations:
            yield (
                f"{f.at}.placement_groups",
                f"'per-launch' applies to pools on no reservation; purchase option "
                f"'{purchase.option}' launches where its reservation is (allowed: one)",
            )
        elif f.spec.efa is False or not f.instance.efa_supported:
            yield (
                f"{f.at}.placement_groups",
                "'per-launch' applies to EFA pools, which get cluster placement groups; EFA is "
                "off for this pool (allowed: one)",
            )


@spec_rule(
    "network-ecr-endpoints", "network.ecr_endpoints only for an existing VPC of an EKS stack"
)
def _network_ecr_endpoints(stack: Stack) -> Iterator[Finding]:
    """A created VPC gets the ECR endpoints when its pull is NAT-bound (catalog scale.yaml
    image_delivery); the setting asks for them in an existing VPC."""
    net = stack.spec.network
    if not net.ecr_endpoints:
        return
    if net.mode != "existing":
        yield (
            "network.ecr_endpoints",
            "applies to an existing VPC (mode: existing); a created VPC gets the ECR endpoints "
            "when its image pull is NAT-bound",
        )
    elif stack.spec.orchestration != "eks":
        yield ("network.ecr_endpoints", "applies to EKS stacks (the nodes' security group)")


@spec_rule("pool-logical-cores", "logical_cores on Neuron pools only, dividing the cores per chip")
def _pool_lnc(stack: Stack) -> Iterator[Finding]:
    for f in stack.pools:
        lnc = f.spec.logical_cores
        if lnc is not None and not f.device.compile_cache:
            yield (
                f"{f.at}.logical_cores",
                f"applies to Neuron pools only; {f.spec.instance_type} is {f.family.accelerator}",
            )
        elif lnc is not None and f.instance.physical_cores_per_chip % lnc:
            yield (
                f"{f.at}.logical_cores",
                f"{lnc} does not divide the {f.instance.physical_cores_per_chip} cores per chip of "
                f"{f.spec.instance_type} (allowed: 1)",
            )


@spec_rule("pool-compile-cache", "a pool's compile_cache only on Neuron pools")
def _pool_cache(stack: Stack) -> Iterator[Finding]:
    for f in stack.pools:
        if f.spec.compile_cache and not f.device.compile_cache:
            yield (
                f"{f.at}.compile_cache",
                f"a compile cache is for Neuron pools only; "
                f"{f.spec.instance_type} is {f.family.accelerator}",
            )


@spec_rule("pool-labels-at-boot", "labels_at_boot on EKS pools only (nodeadm's kubelet flags)")
def _pool_labels_at_boot(stack: Stack) -> Iterator[Finding]:
    if stack.spec.orchestration == "eks":
        return
    for i, pool in enumerate(stack.spec.pools):
        if pool.labels_at_boot:
            yield (
                f"pools[{i}].labels_at_boot",
                "is an EKS node setting (nodeadm's kubelet flags); standalone nodes "
                "(orchestration ec2) boot the DLAMI without nodeadm: allowed here: false, or "
                "leave it unset",
            )


def _zone_findings(stack: Stack, f: ResolvedPool, offered: Sequence[str]) -> Iterator[Finding]:
    spec, pool = stack.spec, f.spec
    zone = pool.availability_zone or spec.availability_zone
    if not zone:
        return
    zid = stack.catalog.zone_id(spec.region, zone)
    field = f"{f.at}.availability_zone" if pool.availability_zone else "availability_zone"
    if zid is None:
        if pool.availability_zone:
            zones = stack.catalog.regions[spec.region].zones
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


@spec_rule("pool-offered", "the region (and the pool's zone) offers the type, per the catalog")
def _pool_offered(stack: Stack) -> Iterator[Finding]:
    if not stack.region_known:
        return
    for f in stack.pools:
        offered = stack.catalog.zones_offering(stack.spec.region, f.spec.instance_type)
        if not offered:
            elsewhere = stack.catalog.regions_offering(f.spec.instance_type)
            yield (
                f"{f.at}.instance_type",
                f"{f.spec.instance_type} is not offered in {stack.spec.region} "
                f"per the catalog (offered in: {allowed(elsewhere) or 'no known region'})",
            )
        else:
            yield from _zone_findings(stack, f, offered)


@spec_rule("pool-priced", "the pool's purchase option has a sourced price (prices fail closed)")
def _pool_priced(stack: Stack) -> Iterator[Finding]:
    if not stack.region_known:
        return
    for f in stack.pools:
        if not stack.catalog.zones_offering(stack.spec.region, f.spec.instance_type):
            continue
        try:
            stack.catalog.instance_rate(
                stack.spec.region, f.spec.instance_type, f.spec.purchase.option
            )
        except CatalogError as exc:
            yield (
                f"{f.at}.purchase.option",
                f"{exc} (prices fail closed: add the row, or pick a priced option)",
            )


# ---------------------------------------------------------------------------------------
# Cluster, access, network
# ---------------------------------------------------------------------------------------


@spec_rule("system-nodes-cpu", "system nodes use a known CPU type")
def _system_nodes(stack: Stack) -> Iterator[Finding]:
    sys_type = stack.spec.cluster.system_nodes.instance_type
    cat = stack.catalog
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


@spec_rule("kubernetes-version", "the EKS version is known and not past extended support")
def _k8s_version(stack: Stack) -> Iterator[Finding]:
    k8s = stack.spec.cluster.kubernetes_version
    versions = stack.catalog.defaults.eks_versions
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


@spec_rule(
    "api-access",
    "EKS: the public API endpoint is on, limited to the deployer's CIDRs (none open to everyone)",
)
def _api_access(stack: Stack) -> Iterator[Finding]:
    cluster = stack.spec.cluster
    if stack.spec.orchestration != "eks":
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


@spec_rule("admin-arns", "admin_principal_arns are distinct IAM role or user ARNs (no wildcards)")
def _admin_arns(stack: Stack) -> Iterator[Finding]:
    arns = stack.spec.cluster.admin_principal_arns
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


@spec_rule(
    "cluster-admin", "EKS: someone is given cluster-admin (an admin principal or creator_admin)"
)
def _cluster_admin(stack: Stack) -> Iterator[Finding]:
    cluster = stack.spec.cluster
    if stack.spec.orchestration == "eks" and not (
        cluster.admin_principal_arns or cluster.creator_admin
    ):
        yield (
            "cluster.admin_principal_arns",
            "is empty and creator_admin is false: nobody could reach the cluster, not even "
            "`pulumi up`; list the deploying identity's ARN (or set creator_admin: true)",
        )


@spec_rule("ssh-access", "SSH CIDRs are narrow and need a key pair")
def _ssh_access(stack: Stack) -> Iterator[Finding]:
    sa = stack.spec.standalone
    yield from _cidr_findings("standalone.ssh_cidrs", sa.ssh_cidrs)
    if sa.ssh_cidrs and not sa.ssh_key_name:
        yield (
            "standalone.ssh_cidrs",
            "needs standalone.ssh_key_name (SSH is off by default; "
            "access is through SSM Session Manager)",
        )


@spec_rule("network-mode", "existing-VPC fields with mode 'existing' only, create fields otherwise")
def _network_mode(stack: Stack) -> Iterator[Finding]:
    net = stack.spec.network
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


@spec_rule("network-subnets-unique", "an existing VPC lists each subnet once")
def _subnets_unique(stack: Stack) -> Iterator[Finding]:
    """A subnet listed twice counts once for the zones the pools need (the plan places subnet i
    in the i-th pool zone, so a repeat would put two zones' nodes in one subnet)."""
    net = stack.spec.network
    for field in ("private_subnet_ids", "public_subnet_ids"):
        seen: set[str] = set()
        for i, sid in enumerate(getattr(net, field) or ()):
            if sid in seen:
                yield (
                    f"network.{field}[{i}]",
                    f"repeats {sid!r}; list each subnet once (one private subnet per pool zone)",
                )
            seen.add(sid)


@spec_rule("vpc-cidr", "a created VPC's CIDR is a private IPv4 /16 to /20")
def _vpc_cidr(stack: Stack) -> Iterator[Finding]:
    net = stack.spec.network
    if net.mode != "create" or not net.vpc_cidr:
        return
    problem = vpc_cidr_problem(net.vpc_cidr)
    if problem is not None:
        yield ("network.vpc_cidr", problem)


# ---------------------------------------------------------------------------------------
# Cache, storage, workload
# ---------------------------------------------------------------------------------------


@spec_rule("compile-cache-neuron", "compile_cache needs a Neuron pool")
def _compile_cache(stack: Stack) -> Iterator[Finding]:
    if stack.spec.compile_cache is not None and not any(
        f.device.compile_cache for f in stack.pools
    ):
        yield (
            "compile_cache",
            "is set but no pool is a Neuron pool (the Neuron compile cache serves trn pools only)",
        )


@spec_rule("fsx-throughput", "FSx throughput needs an FSx size")
def _fsx(stack: Stack) -> Iterator[Finding]:
    storage = stack.spec.storage
    if storage.fsx_throughput_per_tib and not storage.fsx_lustre_gib:
        yield ("storage.fsx_throughput_per_tib", "is set but storage.fsx_lustre_gib is not")


@spec_rule("fsx-priced", "the FSx for Lustre throughput has a sourced price (prices fail closed)")
def _fsx_priced(stack: Stack) -> Iterator[Finding]:
    storage, d = stack.spec.storage, stack.catalog.defaults
    if not storage.fsx_lustre_gib or not stack.region_known:
        return
    tput = storage.fsx_throughput_per_tib or d.fsx_throughput_per_tib
    item = stack.catalog.fsx_price_item(d.fsx_deployment_type, tput)
    try:
        stack.catalog.service_rate(stack.spec.region, item)
    except CatalogError:
        priced = sorted(
            r.item.rsplit("-", 1)[-1]
            for r in stack.catalog.service_rates
            if r.item
            and r.item.startswith(stack.catalog.fsx_price_item(d.fsx_deployment_type, None) + "-")
        )
        yield (
            "storage.fsx_throughput_per_tib",
            f"{tput} MB/s per TiB has no price in the catalog (prices fail closed; "
            f"priced: {', '.join(priced) or 'none'}); "
            + overlay_hint("prices.yaml", "services", service_row("*", item)),
        )


@spec_rule("workload-pool", "workload.pool names a pool (required when there are several)")
def _workload_pool(stack: Stack) -> Iterator[Finding]:
    wl, names = stack.spec.workload, _pool_names(stack)
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


@spec_rule("workload-framework", "the framework runs on the workload pool's device kind")
def _workload_framework(stack: Stack) -> Iterator[Finding]:
    f, wl = stack.known_workload_pool, stack.spec.workload
    if f is None or wl.framework in (None, *f.device.frameworks, *stack.catalog.retired_frameworks):
        return
    every = sorted({x for k in stack.catalog.device_kinds.values() for x in k.frameworks})
    yield (
        "workload.framework",
        f"{shown(wl.framework)} cannot run on {f.spec.instance_type}"
        f"{did_you_mean(wl.framework, every)} (allowed there: {', '.join(f.device.frameworks)})",
    )


@spec_rule("workload-precompile", "precompile_steps on Neuron pools only")
def _workload_precompile(stack: Stack) -> Iterator[Finding]:
    f, wl = stack.known_workload_pool, stack.spec.workload
    if f is not None and wl.precompile_steps and not f.device.compile_cache:
        yield (
            "workload.precompile_steps",
            f"pre-compilation is a Neuron step; {f.spec.instance_type} does not use it",
        )


@spec_rule("workload-precision", "the precision has a peak figure for the accelerator")
def _workload_precision(stack: Stack) -> Iterator[Finding]:
    f, wl = stack.known_workload_pool, stack.spec.workload
    if f is not None and wl.precision not in f.family.peak_tflops:
        yield (
            "workload.precision",
            f"'{wl.precision}' has no peak figure for "
            f"{f.family.accelerator} (allowed: {', '.join(f.family.peak_tflops)})",
        )


@spec_rule("calibration-types", "every calibration entry names a known accelerated instance type")
def _calibration_types(stack: Stack) -> Iterator[Finding]:
    cat = stack.catalog
    for i, m in enumerate(stack.spec.calibration):
        if m.instance_type not in cat.accelerated_types():
            yield (
                f"calibration[{i}].instance_type",
                f"{shown(m.instance_type)} is not a known accelerated instance type"
                f"{did_you_mean(m.instance_type, cat.accelerated_types())}",
            )


@spec_rule("workload-entrypoint", "the entrypoint does not start with '-'")
def _workload_entrypoint(stack: Stack) -> Iterator[Finding]:
    ep = stack.spec.workload.entrypoint
    if ep.startswith("-"):
        yield (
            "workload.entrypoint",
            f"{ep[:40]!r} starts with '-': torchrun would "
            "read it as an option; use a path such as ./train.py",
        )


def _env_name_reserved(name: str) -> bool:
    return name in RESERVED_ENV_NAMES or name.startswith(RESERVED_ENV_PREFIXES)


@spec_rule(
    "workload-env-names", "workload.env sets no reserved, rank/rendezvous or secret-looking names"
)
def _workload_env(stack: Stack) -> Iterator[Finding]:
    for name in stack.spec.workload.env:
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


@spec_rule("model-shape", "model layers and hidden_size go together")
def _model_shape(stack: Stack) -> Iterator[Finding]:
    m = stack.spec.workload.model
    if (m.layers is None) != (m.hidden_size is None):
        yield ("workload.model", "layers and hidden_size go together (both or neither)")


@spec_rule("standalone-only-ec2", "the standalone section only with orchestration 'ec2'")
def _standalone(stack: Stack) -> Iterator[Finding]:
    if stack.spec.orchestration == "eks" and stack.spec.standalone != Standalone():
        yield ("standalone", "applies only when orchestration is 'ec2'")


@spec_rule("tags-identity", "user tags do not replace the stack's identity tags")
def _tags_identity(stack: Stack) -> Iterator[Finding]:
    for key in stack.spec.tags:
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


@spec_rule("workload-fsx-path", "an entrypoint under /fsx needs storage.fsx_lustre_gib")
def _workload_fsx(stack: Stack) -> Iterator[Finding]:
    wl = stack.spec.workload
    on_fsx = wl.entrypoint == FSX_MOUNT_PATH or wl.entrypoint.startswith(FSX_MOUNT_PATH + "/")
    if on_fsx and not stack.spec.storage.fsx_lustre_gib:
        yield (
            "workload.entrypoint",
            f"'{wl.entrypoint}' is on the FSx mount {FSX_MOUNT_PATH} but the stack has no FSx "
            "(storage.fsx_lustre_gib): set it, or put the script elsewhere on the nodes",
        )


# ---------------------------------------------------------------------------------------
# Training paths (frameworks), images and LNC per family
# ---------------------------------------------------------------------------------------


@spec_rule(
    "workload-framework-retired", "a retired framework name is refused with what replaced it"
)
def _framework_retired(stack: Stack) -> Iterator[Finding]:
    name = stack.spec.workload.framework
    if name is not None and name in stack.catalog.retired_frameworks:
        yield ("workload.framework", stack.catalog.retired_frameworks[name])


@spec_rule("workload-framework-family", "the framework is one the workload pool's family allows")
def _framework_family(stack: Stack) -> Iterator[Finding]:
    f, name = stack.known_workload_pool, stack.spec.workload.framework
    if f is None or name is None or name not in f.device.frameworks:
        return
    here = stack.catalog.family_frameworks(f.family)
    if name not in here:
        yield (
            "workload.framework",
            f"'{name}' does not run on {f.spec.instance_type} ({f.family.accelerator}); "
            f"allowed there: {', '.join(here)}",
        )


@spec_rule(
    "workload-image-required", "a framework without a public image needs workload.image (EKS)"
)
def _image_required(stack: Stack) -> Iterator[Finding]:
    f = stack.known_workload_pool
    fw = f.framework if f else None
    eks = stack.spec.orchestration == "eks"
    if fw is not None and eks and fw.default_image is None and not stack.spec.workload.image:
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


@spec_rule(
    "workload-image-sdk", "an image tag's Neuron SDK is in the range the framework and family need"
)
def _image_sdk(stack: Stack) -> Iterator[Finding]:
    f, image = stack.known_workload_pool, stack.spec.workload.image
    fw = f.framework if f else None
    sdk = image_sdk(image) if image else None
    if f is None or fw is None or image is None or sdk is None or not f.device.compile_cache:
        return
    for message in _sdk_findings(image, sdk, fw, f.family):
        yield ("workload.image", message)


@spec_rule("pool-logical-cores-family", "logical_cores is a setting the pool's family accepts")
def _lnc_family(stack: Stack) -> Iterator[Finding]:
    for f in stack.pools:
        lnc = f.spec.logical_cores
        if lnc is not None and f.device.compile_cache and lnc not in f.family.logical_cores_allowed:
            yield (
                f"{f.at}.logical_cores",
                f"{lnc} is not an LNC setting of {f.family.accelerator} "
                f"(allowed: {', '.join(map(str, f.family.logical_cores_allowed))})",
            )


@spec_rule(
    "workload-precompile-path", "pre-compile settings only on a framework with a pre-compile phase"
)
def _precompile_path(stack: Stack) -> Iterator[Finding]:
    f, wl = stack.known_workload_pool, stack.spec.workload
    fw = f.framework if f else None
    if fw is None or fw.precompile:
        if wl.precompile_args and not wl.precompile_steps:
            yield ("workload.precompile_args", "apply only with precompile_steps above 0")
        return
    if wl.precompile_steps and f is not None and f.device.compile_cache:
        yield (
            "workload.precompile_steps",
            f"framework '{fw.name}' has no pre-compile phase (it compiles at the first step); "
            "remove it, or use framework 'xla'",
        )
    if wl.precompile_args:
        yield ("workload.precompile_args", f"framework '{fw.name}' has no pre-compile phase")


@spec_rule(
    "capacity-block-limits",
    "a capacity-block pool fits the instances per block and per account (EC2 User Guide)",
)
def _capacity_block_limits(stack: Stack) -> Iterator[Finding]:
    cb = stack.catalog.capacity_blocks
    for f in stack.pools:
        purchase = f.spec.purchase
        if not f.purchase.capacity_block:
            continue
        held = sum(r.nodes for r in purchase.reservations) or purchase.instances or f.spec.nodes
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


@spec_rule(
    "capacity-block-account-limit",
    "the stack's capacity-block pools together fit the instances per account (EC2 User Guide)",
)
def _capacity_block_account_limit(stack: Stack) -> Iterator[Finding]:
    """The per-account limit holds across Capacity Blocks, so across the stack's pools: each
    pool within it can still add up to more (the per-pool rule names a single pool over it)."""
    cb = stack.catalog.capacity_blocks
    held = [
        (f, sum(r.nodes for r in f.spec.purchase.reservations) or f.spec.nodes)
        for f in stack.pools
        if f.purchase.capacity_block
    ]
    total = sum(n for _, n in held)
    if len(held) < 2 or total <= cb.max_instances_per_account:
        return
    parts = ", ".join(f"{f.spec.name}: {n}" for f, n in held)
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


@spec_rule(
    "calibration-mfu-band",
    "a calibration's MFU is above the catalog floor and its executed FLOP rate within the "
    "device's dense peak",
)
def _calibration_band(stack: Stack) -> Iterator[Finding]:
    floor = stack.catalog.throughput.spreads.mfu_floor
    for i, m in enumerate(stack.spec.calibration):
        where = f"calibration[{i}].mfu"
        if m.mfu < floor:
            yield (
                where,
                f"{m.mfu:.3g} is below {floor:g}, the floor of a training step (a CPU run "
                "recorded as an accelerator, a stalled run?); re-run `accelstack trial` and "
                "`accelstack calibrate`",
            )
            continue
        over = _executed_over_peak(stack, m)
        if over is not None:
            yield where, over


def _executed_over_peak(stack: Stack, m: Measured) -> str | None:
    """The entry executed more than its device's dense peak (its MFU x executed / counted
    FLOPs of the shape and sequence it recorded: accelstack.catalog.flops), or None."""
    inst = stack.catalog.instances.get(m.instance_type)
    fam = stack.catalog.families.get(inst.family) if inst else None
    peak = fam.peak_tflops.get(m.precision) if fam else None
    if fam is None or peak is None:  # calibration-types names an unknown type
        return None
    s = m.shape
    shape = ModelShape(
        params_billion=(s.active_params_billion if s else None) or m.params_billion,
        layers=s.layers if s else None,
        hidden_size=s.hidden_size if s else None,
        vocab=s.vocab if s else None,
    )
    recompute = "full" if m.activation_checkpointing else "none"
    share = m.mfu * executed_share(shape, m.sequence_length, recompute)
    if share <= 1 + 1e-9:
        return None
    return (
        f"{m.mfu:.3g} executes at least {share * peak:,.0f} TFLOP/s per accelerator (the "
        f"executed share of its counted FLOPs), above the {fam.accelerator}'s dense "
        f"{m.precision} peak of {peak:,.0f}: a proxy model recorded with the full size, a "
        "wrong device count?"
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


def _controller(stack: Stack) -> str:
    return stack.spec.jobs.controller or stack.catalog.default_job_controller()


@spec_rule("jobs-eks-only", "the jobs section applies to EKS stacks only")
def _jobs_eks(stack: Stack) -> Iterator[Finding]:
    j = stack.spec.jobs
    if stack.spec.orchestration == "eks":
        return
    for field, value in (("controller", j.controller), ("version", j.version), ("kind", j.kind)):
        if value is not None:
            yield (f"jobs.{field}", "applies to orchestration eks only (standalone has no jobs)")
    if j.kueue:
        yield ("jobs.kueue", "applies to orchestration eks only")


@spec_rule("jobs-controller", "jobs.controller is a controller the catalog pins, or none")
def _jobs_controller(stack: Stack) -> Iterator[Finding]:
    name = stack.spec.jobs.controller
    known = stack.catalog.job_controllers()
    if name is not None and name not in known:
        yield (
            "jobs.controller",
            f"'{name}' is not a job controller (allowed: {', '.join(known)})"
            f"{did_you_mean(name, known)}",
        )


@spec_rule("jobs-version", "jobs.version is the version the catalog pins for the controller")
def _jobs_version(stack: Stack) -> Iterator[Finding]:
    version, name = stack.spec.jobs.version, _controller(stack)
    if version is None or name not in stack.catalog.job_controllers():
        return
    chart = stack.catalog.controller_chart(name)
    if chart is None:
        yield ("jobs.version", f"controller '{name}' installs nothing, so it has no version")
    elif version.lstrip("v") != chart.version.lstrip("v"):
        yield (
            "jobs.version",
            f"'{version}' is not a version of controller '{name}' the catalog pins "
            f"(allowed: {chart.version}; source: {chart.source.split(' ')[0]})",
        )


@spec_rule("jobs-kind", "jobs.kind needs the controller that runs it (job needs none)")
def _jobs_kind(stack: Stack) -> Iterator[Finding]:
    kind, name = stack.spec.jobs.kind, _controller(stack)
    if kind is None or kind == "job" or name not in stack.catalog.job_controllers():
        return
    chart = stack.catalog.controller_chart(name)
    own = chart.manifest_kind if chart else None
    if own != kind:
        runs = [c.controller for c in stack.catalog.charts.values() if c.manifest_kind == kind]
        yield (
            "jobs.kind",
            f"{kind} needs jobs.controller '{(runs or ['none'])[0]}', but the controller is "
            f"'{name}': nothing would run it (allowed with '{name}': "
            f"{', '.join(sorted({'job', own or 'job'}))})",
        )


@spec_rule(
    "jobs-topology", "topology-aware scheduling needs Kueue and pools EC2 reports topology for"
)
def _jobs_topology(stack: Stack) -> Iterator[Finding]:
    if not stack.spec.jobs.topology_aware:
        return
    if not stack.spec.jobs.kueue or stack.spec.orchestration != "eks":
        yield ("jobs.topology_aware", "needs jobs.kueue: true on orchestration eks")
        return
    known = stack.catalog.scale.topology_labels.instance_types
    for i, p in enumerate(stack.spec.pools):
        if p.instance_type not in known:
            yield (
                f"pools[{i}].instance_type",
                f"{p.instance_type} carries no network-topology labels (EC2 reports topology "
                f"for {', '.join(known)}); set jobs.topology_aware: false",
            )


@spec_rule("jobs-kueue", "Kueue admits the job's kind (its pinned chart's integrations)")
def _jobs_kueue(stack: Stack) -> Iterator[Finding]:
    if not stack.spec.jobs.kueue or stack.spec.orchestration != "eks":
        return
    queues = [c for c in stack.catalog.charts.values() if c.role == "queue"]
    chart = stack.catalog.controller_chart(_controller(stack))
    kind = stack.spec.jobs.kind or (chart.manifest_kind if chart else None) or "job"
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
MODULE_RULES: tuple[SpecRule, ...] = (
    _region,
    _zone,
    _subnet_addresses,
    _cluster_zones,
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
    _pool_labels_at_boot,
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
