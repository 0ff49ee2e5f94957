"""The purchase-options table (`purchase_options.yaml`): what each `purchase.option` of a pool
means to the components, preflight, pricing, the spec rules and `compare`. Every layer reads
these rows; none keeps its own map from an option to a capacity type, market or price."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from accelstack.errors import CatalogError

FILE = "purchase_options.yaml"
CapacityType = Literal["ON_DEMAND", "SPOT", "CAPACITY_BLOCK"]
FleetMarket = Literal["on-demand", "spot", "capacity-block"]
#: The AWS API a rate is refreshed from (purchase_options.yaml `price_api`)
PriceApi = Literal["price-list", "spot-price-history", "savings-plans", "capacity-block-offerings"]


class PurchaseOptionFacts(BaseModel):
    """One row of the table (field meanings and sources: purchase_options.yaml)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    name: str
    capacity_type: CapacityType
    fleet_market: FleetMarket
    launch_market: Literal["capacity-block"] | None
    quota_market: Literal["on-demand", "spot"] | None
    price_key: str
    billing: str
    commitment_years: int | None
    reservation_id: Literal["required", "refused"]
    reservation_first: bool
    comparable: bool
    compare_default: bool
    price_api: PriceApi | None  # None: `prices refresh` does not fetch it
    limits: dict[str, object] = Field(default_factory=dict)
    sources: tuple[str, ...] = Field(min_length=1)

    @property
    def needs_reservation(self) -> bool:
        return self.reservation_id == "required"

    @property
    def interruptible(self) -> bool:
        """EC2 may take the capacity back (Spot): the run pays for interruptions."""
        return self.capacity_type == "SPOT"

    @property
    def capacity_block(self) -> bool:
        """An EC2 Capacity Block for ML: bought in blocks (capacity_blocks.yaml limits), the
        whole window paid up front (EKS capacityType CAPACITY_BLOCK)."""
        return self.capacity_type == "CAPACITY_BLOCK"

    @property
    def on_demand_terms(self) -> bool:
        """On-Demand capacity with no reservation and no commitment behind it (a launch that
        consumes a Running Instances quota)."""
        return (
            self.capacity_type == "ON_DEMAND"
            and not self.needs_reservation
            and self.commitment_years is None
            and self.quota_market is not None
        )

    @property
    def unreserved_on_demand(self) -> bool:
        """Launched into EC2's On-Demand capacity with no reservation behind it (On-Demand, a
        savings plan's discounted usage): the size is the account's on-demand vCPU quota and
        whatever capacity AWS has, nothing reserved (compare's capacity threshold)."""
        return self.capacity_type == "ON_DEMAND" and not self.needs_reservation

    @property
    def rate_alias(self) -> str | None:
        """The option whose rate this one is billed at, when not its own."""
        return None if self.price_key == self.name else self.price_key


@dataclass(frozen=True)
class OptionLists:
    """The options by what `compare` and `new --cheapest` do with them, in the table's order,
    from the loaded catalog's rows (a user's overlay of purchase_options.yaml included)."""

    comparable: tuple[str, ...]  # `compare --options` accepts these (`comparable`)
    compare_default: tuple[str, ...]  # compared unless asked otherwise (`compare_default`)
    commitment_years: Mapping[str, int]  # a savings plan's term (`commitment_years`)
    needs_reservation: tuple[str, ...]  # bought only with a reservation id
    refreshed: tuple[str, ...]  # `prices refresh` fetches their rates (`price_api` set)
    price_apis: Mapping[str, str]  # option -> the AWS API its rate is refreshed from
    interruptible: tuple[str, ...]  # EC2 may take the capacity back (Spot)
    capacity_block: tuple[str, ...]  # EC2 Capacity Blocks for ML (block limits, windows)
    #: The option a what-if (compare's sizing) is sized under and what the spec does not choose
    #: (the system nodes) is billed as: the first on-demand row with no reservation or
    #: commitment (`PurchaseOptionFacts.on_demand_terms`)
    reference: str

    def order(self, option: str) -> int:
        """The option's place among the comparable ones (ties rank by it); others last."""
        known = self.comparable
        return known.index(option) if option in known else len(known)


def option_lists(rows: Mapping[str, PurchaseOptionFacts]) -> OptionLists:
    return OptionLists(
        comparable=tuple(n for n, r in rows.items() if r.comparable),
        compare_default=tuple(n for n, r in rows.items() if r.compare_default),
        commitment_years={n: r.commitment_years for n, r in rows.items() if r.commitment_years},
        needs_reservation=tuple(n for n, r in rows.items() if r.needs_reservation),
        refreshed=tuple(n for n, r in rows.items() if r.price_api),
        price_apis={n: r.price_api for n, r in rows.items() if r.price_api},
        interruptible=tuple(n for n, r in rows.items() if r.interruptible),
        capacity_block=tuple(n for n, r in rows.items() if r.capacity_block),
        reference=next(n for n, r in rows.items() if r.on_demand_terms),
    )


class PurchaseTable(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    sources: dict[str, str]
    purchase_options: dict[str, PurchaseOptionFacts]

    def first(self, *, capacity_type: str | None = None, fleet_market: str | None = None) -> str:
        """The option a resource of this capacity type / fleet market is billed as when the
        spec names none: the first row that has it."""
        for name, row in self.purchase_options.items():
            if capacity_type in (None, row.capacity_type) and fleet_market in (
                None,
                row.fleet_market,
            ):
                return name
        raise KeyError(capacity_type or fleet_market)


def parse_table(data: object, path: Path, options: tuple[str, ...]) -> PurchaseTable:
    """Validate the table: one row per option of the spec's schema, in its order; every source
    key and price key known. A problem is one CatalogError line naming the file."""
    if not isinstance(data, dict):
        raise CatalogError(f"{path}: catalog file must be a mapping (is it truncated?)")
    rows = data.get("purchase_options")
    named = {k: {**v, "name": k} for k, v in rows.items()} if isinstance(rows, dict) else rows
    try:
        table = PurchaseTable.model_validate({**data, "purchase_options": named})
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        raise CatalogError(f"{path}: {loc}: {err['msg']}") from None
    if tuple(table.purchase_options) != options:
        raise CatalogError(
            f"{path}: purchase_options: rows {', '.join(table.purchase_options)}; the spec "
            f"allows exactly {', '.join(options)} (in that order)"
        )
    for name, row in table.purchase_options.items():
        unknown = [s for s in row.sources if s not in table.sources]
        if unknown:
            raise CatalogError(f"{path}: purchase_options.{name}.sources: unknown {unknown[0]!r}")
        if row.price_key not in table.purchase_options:
            raise CatalogError(
                f"{path}: purchase_options.{name}.price_key: unknown option {row.price_key!r}"
            )
    if not any(r.on_demand_terms for r in table.purchase_options.values()):
        raise CatalogError(
            f"{path}: purchase_options: no ON_DEMAND row without a reservation or commitment "
            "(the reference option what-ifs are sized under and system nodes billed as)"
        )
    return table


@lru_cache(maxsize=4)
def load_table(path: Path, options: tuple[str, ...]) -> PurchaseTable:
    import yaml

    from accelstack.catalog.yamlread import safe_load

    try:
        data = safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise CatalogError(f"{path}: cannot read catalog file: {reason}") from None
    return parse_table(data, path, options)
