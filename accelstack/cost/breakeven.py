"""Break-even of a `compare` pick against its runner-up, and whether the call is too close.

The pick stays cheapest while its run costs no more than the runner-up's. Its run cost is the
stack's hourly cost x wall hours, and wall hours = compute hours x (MFU now / MFU) / goodput +
one-time hours, so the lowest MFU that keeps it cheapest is

    mfu* = compute hours x MFU now / goodput / (runner-up run $ / (stack $/h x spot factor)
           - one-time hours)

(continuous hours: a Capacity Block window rounds up on top of it), and the highest instance
rate is

    rate* = (runner-up run $ - rest of the stack $/h x wall hours) / (nodes x billed pool hours).

A pick whose run-cost range overlaps the runner-up's is too close to call: the estimate cannot
tell them apart, a trial on both can. The run-cost ranges carry the MFU and goodput ranges and,
for an estimated rate, its price span (price_ranges.yaml); the line prints that span beside
the price now.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Side:
    """What the arithmetic needs of one (instance type, option) row."""

    instance_type: str
    option: str
    nodes: int
    run_usd: float
    run_usd_range: tuple[float, float]
    wall_hours: float
    hourly_usd: float  # whole stack
    other_hourly_usd: float  # whole stack less the workload pool
    instance_rate_usd: float
    billed_pool_hours: float | None
    spot_factor: float
    mfu: float
    compute_hours: float
    goodput: float
    one_time_hours: float
    instance_rate_range: tuple[float, float] | None = None  # an estimated rate's span


@dataclass(frozen=True)
class BreakEven:
    pick: str  # instance type
    runner_up: str  # "type (option)"
    runner_up_run_usd: float
    mfu_now: float
    mfu_at_least: float | None  # None: no MFU makes it cheapest
    price_now: float
    price_at_most: float
    too_close: bool
    runner_up_within_budget: bool = True
    pick_run_usd: float = 0.0
    price_range: tuple[float, float] | None = None  # the pick's estimated rate: low, high

    def _price_now(self) -> str:
        now = f"now ${self.price_now:,.2f}"
        lo, hi = self.price_range or (self.price_now, self.price_now)
        if hi - lo > 1e-9:
            now += f", an estimate: ${lo:,.2f}-${hi:,.2f}"
        return now

    def line(self) -> str:
        if self.runner_up_run_usd < self.pick_run_usd:
            return (
                f"break-even: {self.runner_up} runs for less (${self.runner_up_run_usd:,.0f} "
                f"against ${self.pick_run_usd:,.0f}) but is over budget; {self.pick} would match "
                f"it at MFU >= {self.mfu_at_least or float('inf'):.2f} (now {self.mfu_now:.2f}) "
                f"or a price <= ${self.price_at_most:,.2f}/h per instance "
                f"({self._price_now()})"
            )
        mfu = (
            f"its MFU >= {self.mfu_at_least:.2f} (now {self.mfu_now:.2f})"
            if self.mfu_at_least is not None
            else f"no MFU (now {self.mfu_now:.2f}) covers its one-time hours"
        )
        return (
            f"break-even: {self.pick} stays cheapest while {mfu} and its price <= "
            f"${self.price_at_most:,.2f}/h per instance ({self._price_now()}); "
            f"runner-up {self.runner_up} at ${self.runner_up_run_usd:,.0f}"
            + ("" if self.runner_up_within_budget else " (over budget)")
        )


def overlaps(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def break_even(pick: Side, runner: Side, runner_within_budget: bool = True) -> BreakEven:
    """The MFU and price at which `pick` stops being cheaper than `runner`."""
    target = runner.run_usd
    hours_budget = target / (pick.hourly_usd * pick.spot_factor) - pick.one_time_hours
    steady = pick.compute_hours * pick.mfu / pick.goodput
    mfu_at_least = steady / hours_budget if hours_budget > 0 else None
    pool_hours = pick.billed_pool_hours or pick.wall_hours
    rate = (target - pick.other_hourly_usd * pick.wall_hours) / (pick.nodes * pool_hours)
    return BreakEven(
        pick=pick.instance_type,
        runner_up=f"{runner.instance_type} ({runner.option})",
        runner_up_run_usd=target,
        mfu_now=pick.mfu,
        mfu_at_least=mfu_at_least,
        price_now=pick.instance_rate_usd,
        price_at_most=max(0.0, rate),
        too_close=overlaps(pick.run_usd_range, runner.run_usd_range),
        runner_up_within_budget=runner_within_budget,
        pick_run_usd=pick.run_usd,
        price_range=pick.instance_rate_range,
    )
