"""Price ranges (price_ranges.yaml): the plausible low/high of every estimated instance rate.

A row gives factors of the rate (`low` -0.13, `high` 0.40) for an option, optionally only for
some types; it applies only to a rate marked `estimate: true` (an observed or API-refreshed
rate has no span). The catalog loads the file as one of its sections (catalog/sections.py),
so an overlay's rows merge on top; `Catalog.price_span` returns (low, high) factors and the
row's source.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from accelstack.catalog.records import validate_rows
from accelstack.errors import CatalogError

PRICE_RANGES_FILE = Path(__file__).resolve().parent / "price_ranges.yaml"


class PriceRange(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    option: str = Field(min_length=1)
    types: tuple[str, ...] = ()  # empty: every type under the option
    low: float = Field(gt=-1, le=0)
    high: float = Field(ge=0, lt=10)
    source: str = Field(min_length=1)

    def matches(self, instance_type: str, option: str) -> bool:
        return option == self.option and (not self.types or instance_type in self.types)


def parse_price_ranges(data: object, path: Path) -> tuple[PriceRange, ...]:
    if not isinstance(data, dict) or not isinstance(data.get("price_ranges"), list):
        raise CatalogError(f"{path}: no list 'price_ranges' (is the file truncated?)")
    return tuple(validate_rows(PriceRange, data["price_ranges"], path, "price_ranges"))


class MissingRange(CatalogError):
    """No price_ranges.yaml row covers an estimated rate (the catalog adds the overlay hint:
    sections.py, which reads this module, owns the hints)."""


def span_in(
    ranges: tuple[PriceRange, ...], instance_type: str, option: str, estimate: bool
) -> tuple[float, float, str] | None:
    """(low factor, high factor, source) of an estimated rate, e.g. (0.87, 1.40, ...); None
    for an observed rate. An estimated rate no row covers is a CatalogError (fail closed)."""
    if not estimate:
        return None
    row = next((r for r in ranges if r.matches(instance_type, option)), None)
    if row is None:
        raise MissingRange(
            f"{PRICE_RANGES_FILE.name}: no price range for the estimated {option} rate of "
            f"{instance_type}"
        )
    return 1.0 + row.low, 1.0 + row.high, row.source
