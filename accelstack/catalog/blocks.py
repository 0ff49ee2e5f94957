"""EC2 Capacity Blocks for ML (capacity_blocks.yaml): durations, sizes and limits, sourced.

A block is bought for a window of whole days (1-day steps up to 14 days, then 7-day steps up
to 182), for 1 to 64 instances in one zone, and paid up front for the whole window; an account
holds at most 256 instances across blocks. `window_days` rounds a run up to the next window it
can buy; `blocks_for` splits a pool into blocks. The arithmetic is small and lives here beside
the facts it reads.
"""

from __future__ import annotations

import math
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from accelstack.errors import CatalogError


class CapacityBlocks(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    instance_counts: tuple[int, ...] = Field(min_length=1)
    max_instances_per_block: int = Field(ge=1)
    max_instances_per_account: int = Field(ge=1)
    daily_step_days: int = Field(ge=1)
    daily_up_to_days: int = Field(ge=1)
    weekly_step_days: int = Field(ge=1)
    max_days: int = Field(ge=1)
    end_time_utc: str
    start_up_to_weeks_ahead: int = Field(ge=0)
    single_zone: bool
    billed_up_front: bool
    offered: dict[str, tuple[str, ...]] = Field(default_factory=dict)  # type -> regions
    offered_source: str = ""
    as_of: str
    source: str = Field(min_length=1)

    def durations_days(self) -> tuple[int, ...]:
        """Every duration a block can be bought for, in days."""
        daily = range(self.daily_step_days, self.daily_up_to_days + 1, self.daily_step_days)
        first_week = (self.daily_up_to_days // self.weekly_step_days + 1) * self.weekly_step_days
        weekly = range(first_week, self.max_days + 1, self.weekly_step_days)
        return (*daily, *weekly)

    def window_days(self, hours: float) -> int:
        """Days billed for a run of `hours`: the shortest allowed window that holds it, or
        full-length windows back to back (extensions) plus the shortest one for the rest."""
        days = max(hours, 1e-9) / 24.0
        full = math.floor(days / self.max_days) if days > self.max_days else 0
        rest = days - full * self.max_days
        last = next((d for d in self.durations_days() if d >= rest - 1e-9), 0) if rest > 1e-9 else 0
        return full * self.max_days + last

    def blocks_for(self, nodes: int) -> tuple[int, ...]:
        """Block sizes that add up to `nodes` (largest first, from the allowed counts)."""
        out: list[int] = []
        left = nodes
        for size in sorted(self.instance_counts, reverse=True):
            while left >= size:
                out.append(size)
                left -= size
        return tuple(out)

    def over_limit(self, nodes: int) -> str | None:
        """Why `nodes` instances cannot be held in Capacity Blocks, or None."""
        if nodes > self.max_instances_per_account:
            return (
                f"{nodes} instances exceed the {self.max_instances_per_account} an account can "
                f"hold across Capacity Blocks ({self.max_instances_per_block} per block; "
                f"{self.source})"
            )
        return None


def parse_capacity_blocks(data: object, path: Path) -> CapacityBlocks:
    """Validate capacity_blocks.yaml's content (`path`: the file named in errors)."""
    if not isinstance(data, dict) or not isinstance(data.get("capacity_blocks"), dict):
        raise CatalogError(f"{path}: no section 'capacity_blocks' (is the file truncated?)")
    try:
        return CapacityBlocks.model_validate(data["capacity_blocks"])
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise CatalogError(f"{path}: capacity_blocks.{where}: {err['msg']}") from None
