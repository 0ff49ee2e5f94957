"""The usage file: how much of the items AWS bills per use a stack consumes each month, which
no plan can know (the data its NAT gateways process, its S3 requests, the data that crosses
zones), priced from the catalog's rates and shown beside the stack's cost, as Infracost's usage
file does for Terraform (https://www.infracost.io/docs/features/usage_based_resources/; its
keys are used here: `aws_nat_gateway` monthly_data_processed_gb, `aws_s3_bucket`
monthly_tier_1_requests / monthly_tier_2_requests, `aws_data_transfer`
monthly_intra_region_gb: infracost/infracost internal/resources/aws/nat_gateway.go,
data_transfer.go).

    # accelstack-usage.yaml (beside Pulumi.yaml; or --usage FILE, or ACCELSTACK_USAGE)
    version: 0.1
    default:                      # every stack
      nat_gateway:
        monthly_data_processed_gb: 500
      s3_buckets:
        monthly_tier_1_requests: 2000000   # PUT, COPY, POST, LIST
        monthly_tier_2_requests: 20000000  # GET, SELECT and all others
      data_transfer:
        monthly_intra_region_gb: 100       # between zones; billed on both sides
    stacks:
      llama3-70b-trn2:            # one stack's own values, over `default`
        nat_gateway:
          monthly_data_processed_gb: 2000

The amounts are monthly and priced per month; they are shown, in the text, markdown and JSON
of `price`, and are not part of the budget check (the budget holds what the stack's resources
cost by the hour). An item the stack does not have (no NAT gateway: `network.single_nat_gateway`
aside, an existing VPC brings none) is named as not priced. A bad file is one line naming the
file and key, exit 2.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accelstack.catalog import Catalog
from accelstack.cost.pricing import StackCost
from accelstack.errors import Problem, SpecError, did_you_mean, shown
from accelstack.files import file_in_force
from accelstack.resolve import Stack
from accelstack.spec.loader import read_yaml_file
from accelstack.tokens import BUCKET, BUCKET_V2, NAT_GATEWAY

USAGE_FILE = "accelstack-usage.yaml"
USAGE_ENV = "ACCELSTACK_USAGE"
TOP_KEYS = ("version", "default", "stacks")

#: group -> key -> (catalog service item, times each amount is billed, what the line calls it);
#: the catalog row's `unit` says how much one rate buys (`gb`, `1000-requests`)
USAGE_KEYS: dict[str, dict[str, tuple[str, float, str]]] = {
    "nat_gateway": {
        "monthly_data_processed_gb": ("nat-gateway-data", 1, "NAT gateway data processed (GB)"),
    },
    "s3_buckets": {
        "monthly_tier_1_requests": ("s3-requests-tier1", 1, "S3 PUT, COPY, POST, LIST requests"),
        "monthly_tier_2_requests": ("s3-requests-tier2", 1, "S3 GET, SELECT and other requests"),
    },
    "data_transfer": {
        # a GB that crosses zones is billed on both sides
        "monthly_intra_region_gb": ("inter-az-data", 2, "inter-AZ data (GB, both sides billed)"),
    },
}

#: the resource types a group's usage applies to (a stack without them: not priced)
GROUP_TYPES: dict[str, tuple[str, ...]] = {
    "nat_gateway": (NAT_GATEWAY,),
    "s3_buckets": (BUCKET, BUCKET_V2),
    "data_transfer": (),  # any stack
}


@dataclass(frozen=True)
class UsageFile:
    source: str
    default: dict[str, dict[str, float]]
    stacks: dict[str, dict[str, dict[str, float]]]

    def for_stack(self, name: str) -> dict[str, dict[str, float]]:
        """The stack's usage: `default`, each group's keys overridden by the stack's own."""
        merged = {group: dict(keys) for group, keys in self.default.items()}
        for group, keys in self.stacks.get(name, {}).items():
            merged.setdefault(group, {}).update(keys)
        return merged


@dataclass(frozen=True)
class UsageLine:
    group: str
    key: str
    label: str
    amount: float
    item: str
    rate_usd: float
    unit: str  # what one rate buys (the catalog row's unit)
    billed_times: float
    monthly_usd: float | None  # None: the stack has no such resource
    estimate: bool
    source: str


@dataclass(frozen=True)
class UsageCost:
    source: str
    lines: tuple[UsageLine, ...]

    @property
    def monthly_usd(self) -> float:
        return sum(line.monthly_usd or 0.0 for line in self.lines)

    @property
    def estimate(self) -> bool:
        return any(line.estimate for line in self.lines if line.monthly_usd is not None)


def _amount(value: object, file: str, path: str) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not math.isfinite(float(value)) or float(value) < 0:  # type: ignore[arg-type]
        raise SpecError([Problem(file, path, f"is {shown(value)}; allowed: a number of 0 or more")])
    return float(value)  # type: ignore[arg-type]


def _mapping(value: object, file: str, path: str, what: str) -> dict[Any, Any]:
    if not isinstance(value, dict):
        raise SpecError([Problem(file, path, f"must be a mapping of {what}, found {shown(value)}")])
    return value


def _groups(value: object, file: str, path: str) -> dict[str, dict[str, float]]:
    """One block of usage (`default` or a stack's): group -> key -> amount."""
    out: dict[str, dict[str, float]] = {}
    for group, keys in _mapping(value, file, path, "usage groups").items():
        at = f"{path}.{group}"
        if group not in USAGE_KEYS:
            hint = did_you_mean(group, USAGE_KEYS) or f"; allowed: {', '.join(USAGE_KEYS)}"
            raise SpecError([Problem(file, at, "is not a usage group" + hint)])
        allowed = USAGE_KEYS[group]
        out[group] = {}
        for key, amount in _mapping(keys, file, at, "usage keys").items():
            if key not in allowed:
                hint = did_you_mean(key, allowed) or f"; allowed: {', '.join(allowed)}"
                raise SpecError([Problem(file, f"{at}.{key}", "is not a usage key" + hint)])
            out[group][key] = _amount(amount, file, f"{at}.{key}")
    return out


def _read(path: Path) -> dict[Any, Any]:
    file = str(path)
    data = read_yaml_file(path)
    data = _mapping(data, file, "", "version, default and stacks")
    for key in data:
        if key not in TOP_KEYS:
            hint = did_you_mean(key, TOP_KEYS) or f"; allowed: {', '.join(TOP_KEYS)}"
            raise SpecError([Problem(file, str(key), "is not a usage file key" + hint)])
    return data


def load_usage(path: Path) -> UsageFile:
    """Read a usage file; every problem is one line naming the file and key."""
    file = str(path)
    data = _read(path)
    stacks = _mapping(data.get("stacks") or {}, file, "stacks", "stack names")
    return UsageFile(
        file,
        _groups(data.get("default") or {}, file, "default"),
        {str(name): _groups(block, file, f"stacks.{name}") for name, block in stacks.items()},
    )


def find_usage(flag: Path | None = None, root: Path | None = None) -> UsageFile | None:
    """The usage file in force: `flag`, else ACCELSTACK_USAGE, else <root>/accelstack-usage.yaml
    (None when none is set). A named file that does not exist is refused, never skipped."""
    default = (root or Path.cwd()) / USAGE_FILE
    found = file_in_force(flag, "--usage", USAGE_ENV, default, "usage")
    return None if found is None else load_usage(found)


def usage_cost(stack: Stack, cost: StackCost, usage: UsageFile, catalog: Catalog) -> UsageCost:
    """Each usage amount of the stack, priced at `catalog`'s rate for the stack's region."""
    types = {item.type for item in cost.items}
    return UsageCost(usage.source, usage_lines(stack.name, stack.region, types, usage, catalog))


def usage_lines(
    name: str, region: str, types: Iterable[str], usage: UsageFile, catalog: Catalog
) -> tuple[UsageLine, ...]:
    """The usage amounts the file gives stack `name`, each priced at `catalog`'s rate for
    `region`; a group whose resource types (`types`: what the stack's plan prices) the stack
    lacks is not priced. `price --usage` and `diff` (each side's plan) both read these."""
    present = set(types)
    lines: list[UsageLine] = []
    for group, keys in usage.for_stack(name).items():
        has = not GROUP_TYPES[group] or any(t in present for t in GROUP_TYPES[group])
        for key, amount in keys.items():
            lines.append(_priced(catalog, region, (group, key), amount, has))
    return tuple(lines)


def _priced(
    catalog: Catalog, region: str, where: tuple[str, str], amount: float, has: bool
) -> UsageLine:
    group, key = where
    item, times, label = USAGE_KEYS[group][key]
    rate = catalog.service_rate(region, item)
    unit = rate.unit or "unit"
    usd = amount * times / unit_size(unit) * rate.usd if has else None
    return UsageLine(
        group, key, label, amount, item, rate.usd, unit, times, usd, rate.estimate, rate.source
    )


def unit_size(unit: str) -> float:
    """How many of the amount's units one rate buys: `1000-requests` 1000, `gb` 1."""
    match = re.match(r"(\d+)-", unit)
    return float(match.group(1)) if match else 1.0


def _line_text(line: UsageLine) -> str:
    mark = "*" if line.estimate else ""
    if line.monthly_usd is None:
        return f"  {line.label}: {line.amount:,.0f}: not priced, the stack has none ({line.group})"
    both = f" x {line.billed_times:g}" if line.billed_times != 1 else ""
    return (
        f"  {line.label}: {line.amount:,.0f}{both} at ${line.rate_usd:g} per {line.unit} "
        f"= ${line.monthly_usd:,.2f}{mark}/month"
    )


def usage_text(u: UsageCost) -> str:
    """The usage block of the text report."""
    head = f"usage-priced items (monthly, from {u.source}; not in the budget check):"
    total = f"  total ${u.monthly_usd:,.2f}{'*' if u.estimate else ''}/month"
    return "\n".join([head, *(_line_text(line) for line in u.lines), total]) + "\n"


def usage_markdown(u: UsageCost) -> str:
    rows = [
        f"| {line.label} | {line.amount:,.0f} | "
        + (
            "not priced (none in the stack)"
            if line.monthly_usd is None
            else f"${line.monthly_usd:,.2f}"
        )
        + (" *" if line.estimate and line.monthly_usd is not None else "")
        + " |"
        for line in u.lines
    ]
    return (
        "\n".join(
            [
                f"\n**Usage-priced items** (monthly, from `{u.source}`; not in the budget check)\n",
                "| item | monthly amount | USD/month |",
                "|---|---|---|",
                *rows,
                f"| total | | ${u.monthly_usd:,.2f} |",
            ]
        )
        + "\n"
    )


def usage_dict(u: UsageCost) -> dict[str, Any]:
    return {
        "source": u.source,
        "monthly_usd": u.monthly_usd,
        "estimate": u.estimate,
        "lines": [
            {
                "group": line.group,
                "key": line.key,
                "amount": line.amount,
                "item": line.item,
                "rate_usd": line.rate_usd,
                "unit": line.unit,
                "billed_times": line.billed_times,
                "monthly_usd": line.monthly_usd,
                "estimate": line.estimate,
                "source": line.source,
            }
            for line in u.lines
        ],
    }
