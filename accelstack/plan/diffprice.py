"""What a diff carries of a stack's pricing besides its totals: each priced line item's quantity
and unit price (`PricedLine`, from the cost guard's line items: `cost/pricing.LineItem`), paired
per resource across the two sides (`Billed`: "16 -> 24 x trn2.48xlarge at $X/h"), and the
usage-priced items of the side's usage file (`SideUsage`, from `cost/usage.py`: NAT GB, S3
requests, inter-AZ GB at the catalog's rates), which are estimates outside the budget verdict.

Each class has the JSON form the diff document writes (`to_dict`) and reads back
(`from_dict`); a field an older document or an older accelstack's `plan --format json` lacks
reads as empty, never as an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from accelstack.cost.pricing import LineItem


@dataclass(frozen=True)
class PricedLine:
    """One priced line item of a resource on one side: `quantity` `unit`s of `rate_of`, each
    billed `unit_usd`, `monthly_usd` in all."""

    resource: str
    type: str
    what: str  # the cost report's description ("16 x trn2.48xlarge (on-demand)")
    rate_of: str  # the instance type or catalog item one unit is billed at ("": not known)
    quantity: float
    unit: str  # "instance-hour", "GiB-month", ...
    unit_usd: float
    monthly_usd: float
    estimate: bool = False

    @classmethod
    def of(cls, item: LineItem, hours_per_month: float) -> PricedLine:
        """A cost guard line item, its monthly USD over the catalog's hours per month."""
        return cls(
            resource=item.resource,
            type=item.type,
            what=item.what,
            rate_of=item.rate_of,
            quantity=float(item.quantity),
            unit=item.unit,
            unit_usd=float(item.unit_usd),
            monthly_usd=round(item.hourly_usd * hours_per_month, 2),
            estimate=item.estimate,
        )

    @classmethod
    def from_item_dict(cls, d: Mapping[str, Any], hours_per_month: float) -> PricedLine | None:
        """A line item of `plan --format json` (`cost.items[]`, the cost guard's JSON); None
        when it lacks the quantity, unit or unit price (an older accelstack's document)."""
        try:
            quantity, unit_usd = float(d["quantity"]), float(d["unit_usd"])
            unit, resource = str(d["unit"]), str(d["resource"])
            hourly = float(d["hourly_usd"])
        except (KeyError, TypeError, ValueError):
            return None
        return cls(
            resource=resource,
            type=str(d.get("type") or ""),
            what=str(d.get("what") or ""),
            rate_of=str(d.get("rate_of") or ""),
            quantity=quantity,
            unit=unit,
            unit_usd=unit_usd,
            monthly_usd=round(hourly * hours_per_month, 2),
            estimate=bool(d.get("estimate", False)),
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # every field, in order: flat values

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PricedLine:
        return cls(
            resource=str(d["resource"]),
            type=str(d.get("type") or ""),
            what=str(d.get("what") or ""),
            rate_of=str(d.get("rate_of") or ""),
            quantity=float(d["quantity"]),
            unit=str(d["unit"]),
            unit_usd=float(d["unit_usd"]),
            monthly_usd=float(d.get("monthly_usd") or 0.0),
            estimate=bool(d.get("estimate", False)),
        )


@dataclass(frozen=True)
class Billed:
    """One priced line item of a listed resource before and after (None: not on that side)."""

    base: PricedLine | None
    head: PricedLine | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "base": self.base.to_dict() if self.base else None,
            "head": self.head.to_dict() if self.head else None,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Billed:
        base, head = d.get("base"), d.get("head")
        return cls(
            PricedLine.from_dict(base) if base else None,
            PricedLine.from_dict(head) if head else None,
        )


def _keyed(lines: Iterable[PricedLine]) -> dict[tuple[str, int], PricedLine]:
    """Lines by (unit, their order among the resource's lines of that unit): a node group's
    instance-hours pair with its instance-hours whatever the type, its volumes in order."""
    out: dict[tuple[str, int], PricedLine] = {}
    for line in lines:
        n = sum(1 for unit, _ in out if unit == line.unit)
        out[(line.unit, n)] = line
    return out


def billed_pairs(base: Iterable[PricedLine], head: Iterable[PricedLine]) -> tuple[Billed, ...]:
    """One resource's line items on the two sides, paired (head order, then the base's rest)."""
    old, new = _keyed(base), _keyed(head)
    order = [*new, *(k for k in old if k not in new)]
    return tuple(Billed(old.get(k), new.get(k)) for k in order)


@dataclass(frozen=True)
class UsageItem:
    """One usage amount of the usage file priced at the catalog's rate (`cost/usage.UsageLine`):
    `amount` x `billed_times` / what one rate buys (`unit`) x `rate_usd`; `monthly_usd` None
    when the stack has no resource it applies to."""

    group: str
    key: str
    label: str
    amount: float
    item: str
    rate_usd: float
    unit: str
    billed_times: float
    monthly_usd: float | None
    estimate: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # every field, in order: flat values

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> UsageItem:
        monthly = d.get("monthly_usd")
        return cls(
            group=str(d["group"]),
            key=str(d["key"]),
            label=str(d.get("label") or d["key"]),
            amount=float(d["amount"]),
            item=str(d.get("item") or ""),
            rate_usd=float(d.get("rate_usd") or 0.0),
            unit=str(d.get("unit") or ""),
            billed_times=float(d.get("billed_times") or 1.0),
            monthly_usd=None if monthly is None else float(monthly),
            estimate=bool(d.get("estimate", False)),
        )


@dataclass(frozen=True)
class SideUsage:
    """A side's usage-priced items, from its usage file (`source`, relative to the project)."""

    source: str
    items: tuple[UsageItem, ...]

    @property
    def monthly_usd(self) -> float:
        return round(sum(i.monthly_usd or 0.0 for i in self.items), 2)

    @property
    def estimate(self) -> bool:
        return any(i.estimate for i in self.items if i.monthly_usd is not None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "monthly_usd": self.monthly_usd,
            "estimate": self.estimate,
            "items": [i.to_dict() for i in self.items],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SideUsage:
        return cls(str(d["source"]), tuple(UsageItem.from_dict(i) for i in d.get("items") or ()))


@dataclass(frozen=True)
class UsageChange:
    """One stack's usage-priced items on the two sides (None: that side has no usage file).
    Usage estimates: never in the budget verdict, the totals or the thresholds."""

    base: SideUsage | None
    head: SideUsage | None

    @property
    def delta_monthly_usd(self) -> float:
        return round(
            (self.head.monthly_usd if self.head else 0.0)
            - (self.base.monthly_usd if self.base else 0.0),
            2,
        )

    def pairs(self) -> list[tuple[UsageItem | None, UsageItem | None]]:
        """The items of the two sides paired by group and key (head order, then the base's)."""
        old = {(i.group, i.key): i for i in (self.base.items if self.base else ())}
        new = {(i.group, i.key): i for i in (self.head.items if self.head else ())}
        order = [*new, *(k for k in old if k not in new)]
        return [(old.get(k), new.get(k)) for k in order]

    def to_dict(self) -> dict[str, Any]:
        return {
            "base": self.base.to_dict() if self.base else None,
            "head": self.head.to_dict() if self.head else None,
            "delta_monthly_usd": self.delta_monthly_usd,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> UsageChange:
        base, head = d.get("base"), d.get("head")
        return cls(
            SideUsage.from_dict(base) if base else None,
            SideUsage.from_dict(head) if head else None,
        )
