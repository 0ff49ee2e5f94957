"""Preflight: ask the AWS account the questions that break deployments, before anything is created.

Each check returns `CheckResult`s (PASS / FAIL / WARN, a message and the fix). The checks are
pure functions of a resolved `Stack` and an `AwsClients` seam, so tests inject moto-backed or
Stubber-wrapped boto3 clients. Nothing here creates, changes or deletes anything in AWS.

Checks (docs/preflight.md explains each, with the IAM actions it needs):

- offering: each pool's instance type is offered in its zone (DescribeInstanceTypeOfferings by
  zone id; zone names differ per account, zone ids do not), and which zones would work if not.
- quota: vCPU quotas cover nodes x vCPUs summed per quota code (Service Quotas), with the exact
  increase to request. Pools on a capacity reservation or block are not counted: launching into
  a reservation consumes the reserved capacity, not On-Demand quota (an On-Demand Capacity
  Reservation is checked against the quota when it is created; a Capacity Block is bought).
- ami: the AMI SSM parameters resolve in the region (EKS-optimized AL2023 neuron/nvidia for
  orchestration eks, the Neuron DLAMI / GPU DLAMI for orchestration ec2).
- reservation: a named capacity reservation or block exists, is active or scheduled, is for the
  pool's instance type, holds at least `nodes` instances, and is in the pool's zone.
- bucket: the compile-cache bucket accelstack creates (`<stack>-ncc-<account>`) is free (404) or
  already ours (200), 403 is taken; a bucket named in the spec is used as is, so it must exist
  and be ours.
- kubernetes: the Kubernetes version is offered by EKS (DescribeClusterVersions); where that API
  cannot be asked, the catalog's list is used and the result is a warning.
- limits: the EKS quotas the node groups need (nodes per managed node group, node groups per
  cluster) and the VPC's IPv4 CIDR blocks when a secondary CIDR is added, against the
  account's applied values (catalog scale.yaml names each limit, its code and source).
- subnets: an existing VPC's private subnets have the free addresses their zone's nodes take
  (DescribeSubnets AvailableIpAddressCount).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from accelstack import naming
from accelstack.errors import AccelstackError

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client
    from mypy_boto3_eks import EKSClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_service_quotas import ServiceQuotasClient
    from mypy_boto3_ssm import SSMClient

    from accelstack.preflight.scale_checks import LimitNeed
    from accelstack.resolve import ResolvedPool, Stack

Status = Literal["PASS", "FAIL", "WARN"]
PASS: Status = "PASS"
FAIL: Status = "FAIL"
WARN: Status = "WARN"

#: The checks, in the order they run and print.
CHECKS: tuple[str, ...] = (
    "offering",
    "quota",
    "limits",
    "subnets",
    "ami",
    "reservation",
    "bucket",
    "kubernetes",
)

#: Capacity reservation states: usable now, usable later, or dead.
RESERVATION_ACTIVE = frozenset({"active"})
RESERVATION_LATER = frozenset({"scheduled", "pending", "payment-pending", "assessing", "delayed"})
#: IAM actions each check needs (printed with a permission failure).
IAM_ACTIONS: dict[str, str] = {
    "offering": "ec2:DescribeInstanceTypeOfferings",
    "quota": "servicequotas:GetServiceQuota, servicequotas:GetAWSDefaultServiceQuota",
    "ami": "ssm:GetParameters",
    "reservation": "ec2:DescribeCapacityReservations",
    "bucket": "s3:ListBucket (HeadBucket), sts:GetCallerIdentity",
    "kubernetes": "eks:DescribeClusterVersions",
    "limits": "servicequotas:GetServiceQuota, servicequotas:GetAWSDefaultServiceQuota, "
    "eks:ListClusters, ec2:DescribeVpcs",
    "subnets": "ec2:DescribeSubnets",
}
#: Errors that mean "you may not ask", not "the answer is no".
DENIED_CODES = frozenset(
    {"AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "AuthFailure"}
)


class PreflightError(AccelstackError):
    """Preflight could not talk to AWS at all (no credentials, unknown profile, no endpoint)."""


@dataclass(frozen=True)
class CheckResult:
    """One line of the preflight report."""

    check: str  # one of CHECKS
    subject: str  # what was checked: "pool trn1", "quota L-2C3B7624", ...
    status: Status
    message: str
    fix: str | None = None

    def to_dict(self) -> dict[str, str | None]:
        return asdict(self)


@dataclass
class AwsClients:
    """The seam between the checks and AWS: boto3 clients for one region (EC2, Service Quotas, SSM, S3, EKS, STS)."""

    region: str
    ec2: EC2Client
    service_quotas: ServiceQuotasClient
    ssm: SSMClient
    s3: S3Client
    eks: EKSClient
    sts: Any = None  # STS (GetCallerIdentity: the account id in the generated bucket name)

    @classmethod
    def from_session(
        cls, region: str, profile: str | None = None, endpoint_url: str | None = None
    ) -> AwsClients:
        """Clients from boto3's normal credential chain (env, profile, SSO, instance role).

        `endpoint_url` points every client at one emulator (moto server, LocalStack).
        """
        import boto3
        from botocore.config import Config
        from botocore.exceptions import ProfileNotFound

        try:
            session = boto3.Session(profile_name=profile, region_name=region)
        except ProfileNotFound as exc:
            raise PreflightError(
                f"{exc}; list profiles with `aws configure list-profiles`"
            ) from None
        config = Config(retries={"max_attempts": 3, "mode": "standard"}, connect_timeout=10)
        kw: dict[str, Any] = {"region_name": region, "config": config}
        if endpoint_url:
            kw["endpoint_url"] = endpoint_url
        return cls(
            region=region,
            ec2=session.client("ec2", **kw),
            service_quotas=session.client("service-quotas", **kw),
            ssm=session.client("ssm", **kw),
            s3=session.client("s3", **kw),
            eks=session.client("eks", **kw),
            sts=session.client("sts", **kw),
        )


# ---------------------------------------------------------------------------------------
# Pure helpers
# ---------------------------------------------------------------------------------------


def ami_parameters(stack: Stack) -> dict[str, list[str]]:
    """AMI parameter name -> pools that boot from it, for the stack's orchestration."""
    return stack.ami_parameters


@dataclass(frozen=True)
class QuotaNeed:
    """vCPUs one quota code must cover, and who needs them."""

    quota_code: str
    quota_family: str
    market: str
    vcpus: int
    users: tuple[str, ...]  # "pool trn1: 4 x trn1.32xlarge (512 vCPUs)"


def quota_needs(stack: Stack) -> tuple[list[QuotaNeed], list[ResolvedPool]]:
    """vCPUs per quota code (nodes x vCPUs summed), and the pools left out (on reservations).

    EKS system nodes count against the standard On-Demand quota.
    """
    cat = stack.catalog
    acc: dict[str, tuple[str, str, int, list[str]]] = {}
    skipped: list[ResolvedPool] = []

    def add(family: str, market: str, vcpus: int, who: str) -> None:
        quotas = cat.quotas[family]
        code = quotas.on_demand if market == "on-demand" else quotas.spot
        fam, mkt, total, users = acc.get(code, (family, market, 0, []))
        acc[code] = (fam, mkt, total + vcpus, [*users, who])

    for pool in stack.pools:
        market = pool.purchase.quota_market  # catalog purchase_options; None: reserved ahead
        if market is None:
            skipped.append(pool)
            continue
        vcpus = pool.running_nodes * pool.instance.vcpus  # spare nodes need quota too
        add(
            pool.device.quota_family,
            market,
            vcpus,
            f"pool {pool.name}: {pool.running_nodes} x {pool.instance_type} ({vcpus} vCPUs)",
        )
    if stack.orchestration == "eks":
        sys_inst = cat.instance(stack.system_instance_type)
        kind = cat.device_kinds[cat.families[sys_inst.family].device_kind]
        vcpus = stack.system_nodes * sys_inst.vcpus
        reference = cat.purchase(stack.option_lists.reference)  # what system nodes are billed as
        if reference.quota_market is not None:  # always: the reference row launches on demand
            add(
                kind.quota_family,
                reference.quota_market,
                vcpus,
                f"system nodes: {stack.system_nodes} x {sys_inst.name} ({vcpus} vCPUs)",
            )
    needs = [
        QuotaNeed(code, fam, mkt, total, tuple(users))
        for code, (fam, mkt, total, users) in sorted(acc.items())
    ]
    return needs, skipped


def quota_increase_command(region: str, quota_code: str, desired: int) -> str:
    return (
        "aws service-quotas request-service-quota-increase --service-code ec2 "
        f"--quota-code {quota_code} --desired-value {desired} --region {region}"
    )


def _pool_field(stack: Stack, pool: ResolvedPool, field: str) -> str:
    index = [p.name for p in stack.pools].index(pool.name)  # resolved in the spec's order
    return f"pools[{index}].{field}"


def _error_code(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", ""))
    return ""


def _error_text(exc: Exception, limit: int = 160) -> str:
    """One short line: the error code and message (emulators may answer with HTML pages)."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        err = response.get("Error", {})
        code, msg = str(err.get("Code", "")), str(err.get("Message", ""))
        text = f"{code}: {msg}" if msg else code
    else:
        text = str(exc) or type(exc).__name__
    text = " ".join(re.sub(r"<[^>]*>", " ", text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _not_checked(check: str, subject: str, exc: Exception) -> CheckResult:
    """A check AWS would not answer: a warning with the permission to grant."""
    code = _error_code(exc)
    if code in DENIED_CODES:
        fix = f"grant {IAM_ACTIONS[check]} to the caller, then re-run preflight"
    else:
        fix = f"re-run preflight; if it persists, check by hand ({IAM_ACTIONS[check]})"
    return CheckResult(check, subject, WARN, f"could not check: {_error_text(exc)}", fix)


# ---------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------


def _zones_offering(clients: AwsClients, instance_type: str) -> list[str]:
    paginator = clients.ec2.get_paginator("describe_instance_type_offerings")
    zones: set[str] = set()
    for page in paginator.paginate(
        LocationType="availability-zone-id",
        Filters=[{"Name": "instance-type", "Values": [instance_type]}],
    ):
        zones.update(o["Location"] for o in page.get("InstanceTypeOfferings", []))
    return sorted(zones)


def check_offerings(stack: Stack, clients: AwsClients) -> list[CheckResult]:
    out: list[CheckResult] = []
    cache: dict[str, list[str]] = {}
    for pool in stack.pools:
        subject = f"pool {pool.name}"
        try:
            if pool.instance_type not in cache:
                cache[pool.instance_type] = _zones_offering(clients, pool.instance_type)
        except Exception as exc:
            if not _is_client_error(exc):
                raise
            out.append(_not_checked("offering", subject, exc))
            continue
        zones = cache[pool.instance_type]
        where = f"{pool.instance_type} in {pool.zone_id} ({stack.region})"
        if pool.zone_id in zones:
            out.append(CheckResult("offering", subject, PASS, f"{where} is offered"))
            continue
        # Capacity-block-only types may be missing from public offerings; the reservation
        # check is the authority for reserved capacity.
        status = WARN if pool.targets_reservation else FAIL
        field = _pool_field(stack, pool, "availability_zone")
        if zones:
            msg = f"{where} is not offered; zones that offer it: {', '.join(zones)}"
            fix = f"set {field}: {zones[0]} (or another zone listed)"
        else:
            elsewhere = stack.catalog.regions_offering(pool.instance_type)
            others = [r for r in elsewhere if r != stack.region]
            msg = f"{pool.instance_type} is not offered in any zone of {stack.region}"
            fix = (
                f"choose a region that offers it ({', '.join(others)} per the catalog)"
                if others
                else "choose another instance type; no region in the catalog offers it"
            )
        if pool.targets_reservation:
            msg += f"; {pool.reservation_id} decides (see the reservation check)"
        out.append(CheckResult("offering", subject, status, msg, fix))
    return out


def _quota_value(clients: AwsClients, code: str, service: str = "ec2") -> tuple[float, bool]:
    """The applied quota value, else AWS's default (a quota never changed may have no applied
    value). Returns (value, is_default)."""
    sq = clients.service_quotas
    try:
        return float(
            sq.get_service_quota(ServiceCode=service, QuotaCode=code)["Quota"]["Value"]
        ), False
    except Exception as exc:
        if _error_code(exc) != "NoSuchResourceException":
            raise
    default = sq.get_aws_default_service_quota(ServiceCode=service, QuotaCode=code)
    return float(default["Quota"]["Value"]), True


def check_quotas(stack: Stack, clients: AwsClients) -> list[CheckResult]:
    needs, skipped = quota_needs(stack)
    out: list[CheckResult] = []
    for need in needs:
        subject = f"quota {need.quota_code}"
        label = f"{need.quota_family} {need.market} vCPUs"
        try:
            value, is_default = _quota_value(clients, need.quota_code)
        except Exception as exc:
            if not _is_client_error(exc):
                raise
            out.append(_not_checked("quota", subject, exc))
            continue
        have = math.floor(value)
        origin = " (AWS default)" if is_default else ""
        detail = "; ".join(need.users)
        if have >= need.vcpus:
            out.append(
                CheckResult(
                    "quota",
                    subject,
                    PASS,
                    f"{label}: quota {have}{origin} covers the {need.vcpus} needed ({detail}); "
                    "instances already running in the region count against it too",
                )
            )
        else:
            out.append(
                CheckResult(
                    "quota",
                    subject,
                    FAIL,
                    f"{label}: quota {have}{origin} is below the {need.vcpus} needed ({detail})",
                    quota_increase_command(stack.region, need.quota_code, need.vcpus),
                )
            )
    for pool in skipped:
        out.append(
            CheckResult(
                "quota",
                f"pool {pool.name}",
                PASS,
                f"launches into {pool.purchase_option} {pool.reservation_id}: reserved capacity "
                "does not consume On-Demand vCPU quota",
            )
        )
    return out


def _judge_limit(stack: Stack, need: LimitNeed, value: float, is_default: bool) -> CheckResult:
    """One EKS/VPC quota against what the stack needs, naming the limit and its source."""
    lim = need.limit
    have = math.floor(value)
    origin = " (AWS default)" if is_default else ""
    where = f"{lim.what}: quota {need.quota_code} is {have}{origin}"
    if have >= need.need:
        return CheckResult(
            "limits", f"quota {need.quota_code}", PASS, f"{where}, {need.need} needed ({need.who})"
        )
    fix = (
        f"aws service-quotas request-service-quota-increase --service-code {lim.service} "
        f"--quota-code {need.quota_code} --desired-value {need.need} --region {stack.region}"
    )
    return CheckResult(
        "limits",
        f"quota {need.quota_code}",
        FAIL,
        f"{where}, below the {need.need} needed ({need.who}; {lim.source.split()[0]})",
        f"{fix}, or use fewer nodes",
    )


def _in_use(clients: AwsClients, what: str | None) -> int:
    """How many of a Region-wide resource the account already has (EKS clusters, VPCs)."""
    if what == "clusters":
        pages = clients.eks.get_paginator("list_clusters").paginate()
        return sum(len(page.get("clusters", [])) for page in pages)
    if what == "vpcs":
        return len(clients.ec2.describe_vpcs().get("Vpcs", []))
    return 0


def check_limits(stack: Stack, clients: AwsClients) -> list[CheckResult]:
    """The EKS and VPC quotas the stack's node groups and network need (scale_checks); a
    Region-wide one also counts what the account already has."""
    from dataclasses import replace

    from accelstack.preflight.scale_checks import limit_needs

    out: list[CheckResult] = []
    for need in limit_needs(stack):
        try:
            value, is_default = _quota_value(clients, need.quota_code, need.limit.service)
            used = _in_use(clients, need.in_use)
        except Exception as exc:
            if not _is_client_error(exc):
                raise
            out.append(_not_checked("limits", f"quota {need.quota_code}", exc))
            continue
        if used:
            need = replace(need, need=need.need + used, who=f"{need.who} + {used} existing")
        out.append(_judge_limit(stack, need, value, is_default))
    return out


def _subnet_free(clients: AwsClients, ids: tuple[str, ...]) -> dict[str, list[tuple[str, int]]]:
    """zone id -> (subnet id, free addresses) of the named subnets."""
    found: dict[str, list[tuple[str, int]]] = {}
    for sn in clients.ec2.describe_subnets(SubnetIds=list(ids))["Subnets"]:
        found.setdefault(str(sn.get("AvailabilityZoneId")), []).append(
            (str(sn["SubnetId"]), int(sn.get("AvailableIpAddressCount", 0)))
        )
    return found


def _cni_basis(stack: Stack) -> str:
    """What the addresses per node were counted at: the compact settings, or the defaults."""
    env = stack.address_plan.cni_env
    if env:
        settings = ", ".join(f"{k}={v}" for k, v in sorted(env.items()))
        return f"counted at the compact VPC CNI settings the stack applies ({settings})"
    return "the VPC CNI keeps a warm ENI of addresses per node"


def check_subnets(stack: Stack, clients: AwsClients) -> list[CheckResult]:
    """An existing VPC's private subnets: the free addresses in each pool's zone cover what its
    nodes take at the plan's VPC CNI settings (the defaults, or the compact ones the address
    plan applies at scale; a created VPC is sized by validation instead)."""
    from accelstack.preflight.scale_checks import zone_address_needs

    net = stack.network
    if net.mode != "existing" or stack.orchestration != "eks":
        return []
    try:
        free = _subnet_free(clients, net.private_subnet_ids)
    except Exception as exc:
        if not _is_client_error(exc):
            raise
        return [_not_checked("subnets", "network.private_subnet_ids", exc)]
    out: list[CheckResult] = []
    for zone, needs in sorted(zone_address_needs(stack).items()):
        need = sum(n for _, n in needs)
        have = sum(n for _, n in free.get(zone, []))
        names = ", ".join(f"{s} ({n} free)" for s, n in free.get(zone, [])) or "no subnet"
        detail = ", ".join(f"{who}: {n}" for who, n in needs)
        msg = f"{names}: {have} free addresses, {need} needed ({detail})"
        if have >= need:
            out.append(CheckResult("subnets", f"zone {zone}", PASS, msg))
            continue
        out.append(
            CheckResult(
                "subnets",
                f"zone {zone}",
                FAIL,
                f"{msg}; {_cni_basis(stack)} "
                "(https://docs.aws.amazon.com/eks/latest/best-practices/vpc-cni.html)",
                "set network.private_subnet_addresses for this zone (the stack then applies "
                "compact VPC CNI settings when the defaults do not fit), add a larger private "
                "subnet in this zone to network.private_subnet_ids, use fewer nodes, or "
                "network.mode 'create' (a created VPC adds a secondary CIDR and compact VPC "
                "CNI settings for large pools)",
            )
        )
    return out


def check_amis(stack: Stack, clients: AwsClients) -> list[CheckResult]:
    params = ami_parameters(stack)
    if not params:
        return []
    names = sorted(params)
    found: dict[str, str] = {}
    missing: set[str] = set()
    try:
        for i in range(0, len(names), 10):  # GetParameters takes at most 10 names
            resp = clients.ssm.get_parameters(Names=names[i : i + 10])
            found.update({p["Name"]: p.get("Value", "") for p in resp.get("Parameters", [])})
            missing.update(resp.get("InvalidParameters", []))
    except Exception as exc:
        if not _is_client_error(exc):
            raise
        return [_not_checked("ami", "ami parameters", exc)]
    out: list[CheckResult] = []
    for name in names:
        pools = ", ".join(params[name])
        subject = f"ami for {pools}"
        if name in found:
            out.append(
                CheckResult(
                    "ami", subject, PASS, f"{name} resolves to {found[name]} in {stack.region}"
                )
            )
            continue
        if stack.orchestration == "eks":
            fix = (
                f"use a cluster.kubernetes_version whose AL2023 AMI exists in {stack.region} "
                "(list them: aws ssm get-parameters-by-path --path /aws/service/eks/optimized-ami/ "
                f"--recursive --region {stack.region}) or another region"
            )
        else:
            prefix = name.rsplit("/", 3)[0]
            fix = (
                f"choose a region where it is published (aws ssm get-parameters-by-path --path "
                f"{prefix} --recursive --region REGION), or change the device kind's "
                "standalone_ami_parameter in the catalog"
            )
        out.append(
            CheckResult(
                "ami",
                subject,
                FAIL,
                f"{name} does not resolve in {stack.region}"
                + ("" if name in missing else " (not returned)"),
                fix,
            )
        )
    return out


def _fmt_time(value: object) -> str:
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return str(value)


#: One finding about a reservation: (what is wrong or notable, the fix); None when all is well.
_Finding = tuple[str, str] | None


def _reservation_kind(cr: dict[str, Any]) -> str:
    return "capacity block" if cr.get("ReservationType") == "capacity-block" else "reservation"


def _reservation_zone_id(stack: Stack, cr: dict[str, Any]) -> Any:
    """The reservation's zone id, from its zone name (through the catalog) when AWS gave none."""
    zone_id = cr.get("AvailabilityZoneId")
    zone_name = cr.get("AvailabilityZone")
    if zone_id is None and zone_name:
        zone_id = stack.catalog.zone_id(stack.region, str(zone_name))
    return zone_id


def _reservation_dead(stack: Stack, pool: ResolvedPool, cr: dict[str, Any]) -> _Finding:
    state = str(cr.get("State", "unknown"))
    if state in RESERVATION_ACTIVE | RESERVATION_LATER:
        return None
    return (
        f"is {state}",
        f"buy a new capacity block or create a new reservation and set "
        f"{_pool_field(stack, pool, 'purchase.reservation_id')} to its cr- id",
    )


def _reservation_wrong_type(stack: Stack, pool: ResolvedPool, cr: dict[str, Any]) -> _Finding:
    itype = cr.get("InstanceType")
    if itype == pool.instance_type:
        return None
    return (
        f"is for {itype}, not {pool.instance_type}",
        f"set {_pool_field(stack, pool, 'instance_type')}: {itype}, or use a reservation "
        f"for {pool.instance_type}",
    )


def _reservation_too_small(stack: Stack, pool: ResolvedPool, cr: dict[str, Any]) -> _Finding:
    total = int(cr.get("TotalInstanceCount", 0))
    if total >= pool.running_nodes:
        return None
    return (
        f"holds {total} instance(s), fewer than the {pool.running_nodes} nodes asked for",
        (
            f"set {_pool_field(stack, pool, 'nodes')}: {total}"
            if not pool.spare_nodes
            else f"lower {_pool_field(stack, pool, 'nodes')} + spare_nodes to {total}"
        )
        + f", or extend the reservation to {pool.running_nodes} instances",
    )


def _reservation_wrong_zone(stack: Stack, pool: ResolvedPool, cr: dict[str, Any]) -> _Finding:
    zone_id = _reservation_zone_id(stack, cr)
    if zone_id is None or zone_id == pool.zone_id:
        return None
    return (
        f"is in {zone_id} ({cr.get('AvailabilityZone')}), not the pool's zone {pool.zone_id}",
        f"set {_pool_field(stack, pool, 'availability_zone')}: {zone_id}",
    )


def _reservation_not_started(stack: Stack, pool: ResolvedPool, cr: dict[str, Any]) -> _Finding:
    if str(cr.get("State", "unknown")) not in RESERVATION_LATER:
        return None
    return (
        "instances cannot launch until it is active",
        f"deploy after it starts ({_fmt_time(cr.get('StartDate', 'its start date'))})",
    )


def _reservation_in_use(stack: Stack, pool: ResolvedPool, cr: dict[str, Any]) -> _Finding:
    available = cr.get("AvailableInstanceCount")
    if available is None or int(available) >= pool.running_nodes:
        return None
    total = int(cr.get("TotalInstanceCount", 0))
    return (
        f"only {available} of {total} are free (other instances use the rest)",
        f"stop the instances using {pool.reservation_id}, or set "
        f"{_pool_field(stack, pool, 'nodes')}: {available}",
    )


def _reservation_other_option(stack: Stack, pool: ResolvedPool, cr: dict[str, Any]) -> _Finding:
    # EC2's ReservationType of the capacity the pool's option buys
    expected = "capacity-block" if pool.purchase.capacity_block else "default"
    if cr.get("ReservationType", expected) == expected:
        return None
    return (
        f"the pool says purchase.option '{pool.purchase_option}' but AWS "
        f"reports reservation type '{cr.get('ReservationType')}' (prices may be wrong)",
        f"set {_pool_field(stack, pool, 'purchase.option')}: "
        + _option_buying(stack, str(cr.get("ReservationType"))),
    )


def _option_buying(stack: Stack, reservation_type: str) -> str:
    """The purchase option whose capacity EC2 reports as `reservation_type` (a Capacity
    Block's ReservationType is `capacity-block`, any other reservation's `default`), from the
    purchase table's rows."""
    lists = stack.option_lists
    if reservation_type == "capacity-block" and lists.capacity_block:
        return lists.capacity_block[0]
    return next(o for o in lists.needs_reservation if o not in lists.capacity_block)


_ReservationRule = Callable[["Stack", "ResolvedPool", dict[str, Any]], _Finding]
#: What makes a reservation unusable for the pool (FAIL; all are reported together).
_RESERVATION_PROBLEMS: tuple[_ReservationRule, ...] = (
    _reservation_dead,
    _reservation_wrong_type,
    _reservation_too_small,
    _reservation_wrong_zone,
)
#: What makes a usable reservation worth a warning (WARN; the first one is reported).
_RESERVATION_WARNINGS: tuple[_ReservationRule, ...] = (
    _reservation_not_started,
    _reservation_in_use,
    _reservation_other_option,
)


def _reservation_summary(stack: Stack, pool: ResolvedPool, cr: dict[str, Any]) -> str:
    window = ""
    if cr.get("StartDate") or cr.get("EndDate"):
        window = (
            f", {_fmt_time(cr.get('StartDate', '?'))} to {_fmt_time(cr.get('EndDate', 'open'))}"
        )
    state = str(cr.get("State", "unknown"))
    total = int(cr.get("TotalInstanceCount", 0))
    return (
        f"{_reservation_kind(cr)} {pool.reservation_id}: {state}, {total} x "
        f"{cr.get('InstanceType')} in {_reservation_zone_id(stack, cr)}{window}"
    )


def judge_reservation(stack: Stack, pool: ResolvedPool, cr: dict[str, Any]) -> CheckResult:
    """Pure: compare one DescribeCapacityReservations entry with the pool that targets it."""
    subject = f"pool {pool.name}"
    problems = [p for rule in _RESERVATION_PROBLEMS if (p := rule(stack, pool, cr)) is not None]
    if problems:
        return CheckResult(
            "reservation",
            subject,
            FAIL,
            f"{_reservation_kind(cr)} {pool.reservation_id} " + "; ".join(p for p, _ in problems),
            "; ".join(f for _, f in problems),
        )
    summary = _reservation_summary(stack, pool, cr)
    for rule in _RESERVATION_WARNINGS:
        warning = rule(stack, pool, cr)
        if warning is not None:
            return CheckResult("reservation", subject, WARN, f"{summary}; {warning[0]}", warning[1])
    return CheckResult("reservation", subject, PASS, summary)


def check_reservations(stack: Stack, clients: AwsClients) -> list[CheckResult]:
    """Every reservation behind every pool, each judged against the nodes the pool launches
    into it."""
    from dataclasses import replace

    out: list[CheckResult] = []
    for whole in stack.pools:
        for rid, nodes in whole.reservations:
            one = replace(whole, reservation_id=rid, nodes=nodes, spare_nodes=0)
            out.append(_check_reservation(stack, clients, one))
    return out


def _check_reservation(stack: Stack, clients: AwsClients, pool: ResolvedPool) -> CheckResult:
    """One reservation (`pool.reservation_id`, holding `pool.nodes`)."""
    assert pool.reservation_id is not None
    try:
        resp = clients.ec2.describe_capacity_reservations(
            CapacityReservationIds=[pool.reservation_id]
        )
    except Exception as exc:
        if not _is_client_error(exc):
            raise
        if _error_code(exc).startswith("InvalidCapacityReservationId"):
            return _missing_reservation(stack, pool)
        return _not_checked("reservation", f"pool {pool.name}", exc)
    entries = [
        dict(cr)
        for cr in resp.get("CapacityReservations", [])
        if cr.get("CapacityReservationId") == pool.reservation_id
    ]
    if not entries:
        return _missing_reservation(stack, pool)
    return judge_reservation(stack, pool, entries[0])


def _missing_reservation(stack: Stack, pool: ResolvedPool) -> CheckResult:
    return CheckResult(
        "reservation",
        f"pool {pool.name}",
        FAIL,
        f"{pool.reservation_id} does not exist in {stack.region} for this account",
        "check the id and region (aws ec2 describe-capacity-reservations --region "
        f"{stack.region}); for a capacity block, find and buy one with aws ec2 "
        f"describe-capacity-block-offerings --instance-type {pool.instance_type} "
        f"--instance-count {pool.nodes} --capacity-duration-hours 24",
    )


def generated_bucket_name(stack_name: str, account_id: str) -> str:
    """The name accelstack gives the compile-cache bucket it creates (naming.cache_bucket, as
    the components)."""
    return naming.cache_bucket(stack_name, account_id)


def check_bucket(stack: Stack, clients: AwsClients) -> list[CheckResult]:
    """The compile-cache bucket, then an existing checkpoint bucket."""
    return [*_cache_bucket(stack, clients), *_checkpoint_bucket(stack, clients)]


def _checkpoint_bucket(stack: Stack, clients: AwsClients) -> list[CheckResult]:
    """`checkpoint.bucket` is used as it is: it must exist, be ours, and be in the stack's
    region (FSx links only a bucket of its own region; FSx user guide, data repositories)."""
    named = stack.checkpoint.bucket if stack.checkpoint else None
    if named is None:
        return []
    subject = f"checkpoint bucket {named}"
    try:
        resp = clients.s3.head_bucket(Bucket=named)
    except Exception as exc:
        if not _is_client_error(exc):
            raise
        code = _error_code(exc)
        if code not in (*_BUCKET_MISSING_CODES, *_BUCKET_TAKEN_CODES):
            return [_not_checked("bucket", subject, exc)]
        why = "does not exist" if code in _BUCKET_MISSING_CODES else "belongs to another account"
        return [
            CheckResult(
                "bucket",
                subject,
                FAIL,
                f"{named} {why}; checkpoint.bucket names an existing bucket of yours",
                "create it in the stack's region, or drop checkpoint.bucket to let accelstack "
                "create one",
            )
        ]
    region = resp.get("BucketRegion") or resp.get("ResponseMetadata", {}).get(
        "HTTPHeaders", {}
    ).get("x-amz-bucket-region")
    if region and region != stack.region:
        return [
            CheckResult(
                "bucket",
                subject,
                FAIL,
                f"{named} is in {region}, not the stack's region {stack.region}: FSx cannot "
                "link it and every checkpoint write crosses regions",
                f"use a bucket in {stack.region}",
            )
        ]
    return [CheckResult("bucket", subject, PASS, f"{named} exists, is ours, in {stack.region}")]


def _cache_bucket(stack: Stack, clients: AwsClients) -> list[CheckResult]:
    """A named bucket (`compile_cache.bucket`) is used as it is: it must exist and be ours.
    Without one, accelstack creates `<stack>-ncc-<account>`: that name must be free or ours."""
    if not stack.compile_cache_enabled:
        return []
    named = stack.compile_cache_bucket
    if named is None:
        try:
            account = str(clients.sts.get_caller_identity()["Account"])
        except Exception as exc:
            if not _is_client_error(exc):
                raise
            return [_not_checked("bucket", "compile cache", exc)]
        bucket = generated_bucket_name(stack.name, account)
    else:
        bucket = named
    try:
        resp = clients.s3.head_bucket(Bucket=bucket)
    except Exception as exc:
        if not _is_client_error(exc):
            raise
        return [_bucket_refused(stack, bucket, named, exc)]
    return [_bucket_found(stack, bucket, named, resp)]


#: HeadBucket error codes: the bucket does not exist / it belongs to another account.
_BUCKET_MISSING_CODES = ("404", "NoSuchBucket", "NotFound")
_BUCKET_TAKEN_CODES = ("403", "AccessDenied", "Forbidden")


def _bucket_refused(stack: Stack, bucket: str, named: str | None, exc: Exception) -> CheckResult:
    """HeadBucket answered with an error: free (or missing), taken, or not checked."""
    code = _error_code(exc)
    if code in _BUCKET_MISSING_CODES:
        return _bucket_missing(stack, bucket, named)
    if code in _BUCKET_TAKEN_CODES:
        return _bucket_taken(bucket, named)
    return _not_checked("bucket", f"bucket {bucket}", exc)


def _bucket_missing(stack: Stack, bucket: str, named: str | None) -> CheckResult:
    subject = f"bucket {bucket}"
    if named is None:
        return CheckResult("bucket", subject, PASS, f"{bucket} is free: accelstack will create it")
    return CheckResult(
        "bucket",
        subject,
        FAIL,
        f"{bucket} does not exist; compile_cache.bucket names an existing bucket "
        "to use, and accelstack does not create it",
        f"create it (aws s3 mb s3://{bucket} --region {stack.region}), or drop "
        "compile_cache.bucket to let accelstack create one",
    )


def _bucket_taken(bucket: str, named: str | None) -> CheckResult:
    fix = (
        "choose another compile_cache.bucket name, or drop it to let accelstack create "
        "one (if the bucket is yours, grant s3:ListBucket on it)"
        if named
        else "set compile_cache.bucket to an existing bucket of yours (if this bucket "
        "is yours, grant s3:ListBucket on it)"
    )
    return CheckResult(
        "bucket",
        f"bucket {bucket}",
        FAIL,
        f"{bucket} exists and belongs to another account (HeadBucket: 403 Forbidden)",
        fix,
    )


def _bucket_found(
    stack: Stack, bucket: str, named: str | None, resp: Mapping[str, Any]
) -> CheckResult:
    """HeadBucket answered 200: ours; a warning when it is in another region."""
    subject = f"bucket {bucket}"
    region = resp.get("BucketRegion") or resp.get("ResponseMetadata", {}).get(
        "HTTPHeaders", {}
    ).get("x-amz-bucket-region")
    if region and region != stack.region:
        return CheckResult(
            "bucket",
            subject,
            WARN,
            f"{bucket} is ours but in {region}, not {stack.region}: every cache read "
            "crosses regions (latency and transfer charges)",
            f"use a bucket in {stack.region}",
        )
    how = "" if named else " (created by an earlier deploy)"
    return CheckResult("bucket", subject, PASS, f"{bucket} exists and is ours{how}")


def _eks_versions(clients: AwsClients) -> dict[str, str]:
    """version -> versionStatus (STANDARD_SUPPORT, EXTENDED_SUPPORT, UNSUPPORTED)."""
    if not hasattr(clients.eks, "describe_cluster_versions"):
        raise AttributeError("this botocore has no eks.describe_cluster_versions")
    versions: dict[str, str] = {}
    kwargs: dict[str, Any] = {"includeAll": True}
    while True:
        resp = clients.eks.describe_cluster_versions(**kwargs)
        for v in resp.get("clusterVersions", []):
            status = v.get("versionStatus") or str(v.get("status", "")).upper().replace("-", "_")
            versions[str(v.get("clusterVersion"))] = status
        token = resp.get("nextToken")
        if not token:
            return versions
        kwargs["nextToken"] = token


#: The spec field that names the Kubernetes version.
_KUBERNETES_FIELD = "cluster.kubernetes_version"


def check_kubernetes(stack: Stack, clients: AwsClients) -> list[CheckResult]:
    if stack.orchestration != "eks":
        return []
    try:
        versions = _eks_versions(clients)
    except Exception as exc:
        if not (_is_client_error(exc) or isinstance(exc, AttributeError)):
            raise
        return [_kubernetes_from_catalog(stack, exc)]
    return [_judge_kubernetes(stack, versions)]


def _kubernetes_from_catalog(stack: Stack, exc: Exception) -> CheckResult:
    """EKS could not be asked: the catalog's supported list decides (WARN at best)."""
    version = stack.kubernetes_version
    subject = f"kubernetes {version}"
    known = stack.defaults.supported_kubernetes_versions
    reason = _error_text(exc)
    if version in known:
        return CheckResult(
            "kubernetes",
            subject,
            WARN,
            f"EKS could not be asked ({reason}); the catalog lists {version} as "
            f"supported ({', '.join(known)})",
            f"confirm with aws eks describe-cluster-versions --region {stack.region} "
            f"({IAM_ACTIONS['kubernetes']})",
        )
    return CheckResult(
        "kubernetes",
        subject,
        FAIL,
        f"{version} is not in the catalog's supported list ({', '.join(known)}); EKS "
        f"could not be asked ({reason})",
        f"set {_KUBERNETES_FIELD} to one of {', '.join(known)}",
    )


def _judge_kubernetes(stack: Stack, versions: dict[str, str]) -> CheckResult:
    """Compare the spec's version with EKS's versions and their support status."""
    version = stack.kubernetes_version
    subject = f"kubernetes {version}"
    supported = sorted(
        (v for v, s in versions.items() if s in ("STANDARD_SUPPORT", "EXTENDED_SUPPORT")),
        key=_version_key,
    )
    status = versions.get(version)
    if status == "STANDARD_SUPPORT":
        return CheckResult("kubernetes", subject, PASS, f"EKS offers {version} (standard support)")
    standard = [v for v in supported if versions[v] == "STANDARD_SUPPORT"]
    if status == "EXTENDED_SUPPORT":
        return CheckResult(
            "kubernetes",
            subject,
            WARN,
            f"{version} is in EKS extended support: the control plane costs 0.60 USD/hour "
            "instead of 0.10",
            f"set {_KUBERNETES_FIELD} to a standard-support version ({', '.join(standard)})",
        )
    what = "no longer supported" if status == "UNSUPPORTED" else "not offered"
    return CheckResult(
        "kubernetes",
        subject,
        FAIL,
        f"{version} is {what} by EKS in {stack.region} (offered: {', '.join(supported)})",
        f"set {_KUBERNETES_FIELD} to one of {', '.join(standard or supported)}",
    )


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) if x.isdigit() else 0 for x in v.split("."))


# ---------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------

CHECK_FUNCTIONS: dict[str, Callable[[Stack, AwsClients], list[CheckResult]]] = {
    "offering": check_offerings,
    "quota": check_quotas,
    "limits": check_limits,
    "subnets": check_subnets,
    "ami": check_amis,
    "reservation": check_reservations,
    "bucket": check_bucket,
    "kubernetes": check_kubernetes,
}


def _is_client_error(exc: Exception) -> bool:
    """An answer from AWS that says no (an error code, or a reply that is not AWS's format, as
    emulators give for APIs they lack), as opposed to no answer at all: missing credentials
    and connection failures propagate, and `run_preflight` turns them into PreflightError."""
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        ConnectionError,
        NoCredentialsError,
        PartialCredentialsError,
    )
    from botocore.parsers import ResponseParserError

    if isinstance(exc, NoCredentialsError | PartialCredentialsError | ConnectionError):
        return False
    return isinstance(exc, ClientError | BotoCoreError | ResponseParserError)


def run_preflight(
    stack: Stack, clients: AwsClients, only: Iterable[str] | None = None
) -> list[CheckResult]:
    """Run the checks in order. Raises PreflightError when AWS cannot be reached at all."""
    from botocore.exceptions import (
        ConnectionError,
        NoCredentialsError,
        NoRegionError,
        PartialCredentialsError,
    )

    wanted = list(only) if only is not None else list(CHECKS)
    results: list[CheckResult] = []
    for name in wanted:
        try:
            results.extend(CHECK_FUNCTIONS[name](stack, clients))
        except (NoCredentialsError, PartialCredentialsError) as exc:
            raise PreflightError(
                f"no usable AWS credentials ({exc}); set AWS_PROFILE or pass --profile, or "
                "export AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY"
            ) from None
        except ConnectionError as exc:
            raise PreflightError(f"cannot reach AWS: {exc}") from None
        except NoRegionError as exc:  # pragma: no cover - the spec always names a region
            raise PreflightError(str(exc)) from None
    return results


def summarize(results: Iterable[CheckResult]) -> dict[str, int]:
    counts: dict[str, int] = {PASS: 0, FAIL: 0, WARN: 0}
    for r in results:
        counts[r.status] += 1
    return counts


def format_text(stack: Stack, results: list[CheckResult]) -> str:
    lines = [f"preflight {stack.name} ({stack.region}, orchestration {stack.orchestration})"]
    width = max((len(r.check) for r in results), default=0)
    for r in results:
        lines.append(f"{r.status}  {r.check:<{width}}  {r.subject}: {r.message}")
        if r.fix and r.status != PASS:
            lines.append(f"      {'':<{width}}  fix: {r.fix}")
    c = summarize(results)
    lines.append(f"{c[PASS]} passed, {c[FAIL]} failed, {c[WARN]} warning(s)")
    return "\n".join(lines) + "\n"


def format_json(stack: Stack, results: list[CheckResult]) -> str:
    from accelstack.jsonout import dumps

    doc = {
        "stack": stack.name,
        "region": stack.region,
        "orchestration": stack.orchestration,
        "ok": not any(r.status == FAIL for r in results),
        "summary": summarize(results),
        "checks": [r.to_dict() for r in results],
    }
    return dumps(doc)
