"""Price ranges (price_ranges.yaml): the plausible low/high of every estimated instance rate.

A row gives factors of the rate (`low` -0.13, `high` 0.40) for an option, optionally only for
some types; it applies only to a rate marked `estimate: true` (an observed or API-refreshed
rate has no span). `span_for` returns (low x usd, high x usd) factors and the row's source.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from accelstack.errors import CatalogError

PRICE_RANGES_FILE = Path(__file__).resolve().parent / "price_ranges.yaml"


class PriceRange(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

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
    out = []
    for i, row in enumerate(data["price_ranges"]):
        try:
            out.append(PriceRange.model_validate(row))
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise CatalogError(f"{path}: price_ranges[{i}].{where}: {err['msg']}") from None
    return tuple(out)


@lru_cache(maxsize=4)
def load_price_ranges(path: Path = PRICE_RANGES_FILE) -> tuple[PriceRange, ...]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise CatalogError(f"{path}: cannot read catalog file: {exc}") from None
    return parse_price_ranges(data, path)


def span_for(instance_type: str, option: str, estimate: bool) -> tuple[float, float, str] | None:
    """(low factor, high factor, source) of an estimated rate, e.g. (0.87, 1.40, ...); None
    for an observed rate. An estimated rate no row covers is a CatalogError (fail closed)."""
    if not estimate:
        return None
    row = next((r for r in load_price_ranges() if r.matches(instance_type, option)), None)
    if row is None:
        raise CatalogError(
            f"{PRICE_RANGES_FILE.name}: no price range for the estimated {option} rate of "
            f"{instance_type}; add a row with its low, high and source"
        )
    return 1.0 + row.low, 1.0 + row.high, row.source
