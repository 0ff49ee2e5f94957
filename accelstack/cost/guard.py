"""The budget guard: price the stack, estimate the run, compare with the spec's budget.

* `check_budget(stack, cost=None) -> Verdict`: every limit with its actual figure.
* `enforce(stack, resources=None)`: raises `VerdictError` with a one-line reason when a limit
  is exceeded. The Pulumi program calls it before it builds any resource (pricing from the
  spec: no plan exists yet there); the plan engine calls it with the plan's resources.
* `report_for_plan(stack, plan)`: the text `accelstack plan` prints.

Limits: `budget.max_hourly_usd` (whole stack, chosen purchase options), `max_monthly_usd`
(hourly x hours_per_month from the catalog), `max_run_usd` (whole-stack hourly x estimated
wall hours of the training run).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from accelstack.cost.ceiling import Ceiling
from accelstack.cost.estimate import (
    FLOPS_CONVENTION,
    RunCost,
    TrainingEstimate,
    estimate_training,
)
from accelstack.cost.pricing import (
    LineItem,
    OptionQuote,
    ResourceLike,
    StackCost,
    price_plan,
    price_stack,
)
from accelstack.cost.rundata import run_data
from accelstack.cost.step import Layout
from accelstack.errors import AccelstackError, BudgetMissing, VerdictError
from accelstack.jsonout import dumps
from accelstack.resolve import Stack

EST = "*"  # mark printed next to every figure that used an estimated price


@dataclass(frozen=True)
class LimitCheck:
    field: str  # budget.max_hourly_usd
    label: str  # hourly
    limit: float | None
    actual: float

    @property
    def ok(self) -> bool:
        return self.limit is None or self.actual <= self.limit + 1e-9


@dataclass(frozen=True)
class Verdict:
    stack: str
    pool: str  # the workload pool
    cost: StackCost
    estimate: TrainingEstimate
    run: RunCost
    checks: tuple[LimitCheck, ...]
    spot_factor: float = 1.0  # the workload pool on spot: interruption overhead on wall hours
    blocks: tuple[int, ...] = ()  # Capacity Block sizes of the workload pool
    #: (reservation id, nodes, zone id) of each reservation or Capacity Block behind the
    #: workload pool, in the spec's order (empty: none named)
    reservations: tuple[tuple[str, int, str], ...] = ()
    data_lines: tuple[str, ...] = ()  # per-GB lines of the run (NAT data, inter-AZ)
    unbounded: bool = False  # no limit and no `budget.unlimited`: refused (fails closed)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks) and not self.unbounded

    @property
    def reasons(self) -> list[str]:
        return [
            f"{c.label} ${c.actual:,.2f} exceeds {c.field} ${c.limit:,.2f}"
            for c in self.checks
            if not c.ok and c.limit is not None
        ]

    @property
    def depends_on(self) -> list[str]:
        """What the run figure rests on that is an estimate (workload pool price, MFU)."""
        out = []
        if self.cost.pool_estimate(self.pool):
            out.append(f"the {self.estimate.instance_type} price is an estimate")
        if self.estimate.mfu_is_estimate:
            out.append(f"the MFU is extrapolated ({self.estimate.mfu_source})")
        if self.estimate.mfu_warning:
            out.append(f"the measured MFU may be stale: {self.estimate.mfu_warning}")
        if self.spot_factor > 1.0:
            out.append(f"the spot interruption overhead x{self.spot_factor:.4f} is an estimate")
        return out

    @property
    def exit_code(self) -> int:
        """0 ok; 2 when the spec sets no limit (bad input, as `validate` says); else 1."""
        return 0 if self.ok else self.failure().exit_code

    def failure(self) -> AccelstackError:
        """The error a command raises for this verdict: `BudgetMissing` (exit 2) for a spec
        with no limit, else a `VerdictError` (exit 1) with the one-line reason."""
        if self.unbounded:
            return BudgetMissing(self.one_line())
        return VerdictError(self.one_line())

    def one_line(self) -> str:
        if self.ok:
            return f"{self.stack}: within budget"
        if self.unbounded and not self.reasons:
            return f"{self.stack} has no budget: {NO_LIMIT}"
        mark = " (prices include estimates)" if self.cost.estimate else ""
        return f"{self.stack} is over budget: {'; '.join(self.reasons)}{mark}"


#: Why a spec with no limit is refused, and the two ways out.
NO_LIMIT = (
    "budget sets no max_hourly_usd, max_monthly_usd or max_run_usd; set one, or write "
    "budget: {unlimited: true, reason: ...} to run without a limit on purpose"
)


#: Printed under every side-by-side: a savings-plan rate is a commitment, not a run price.
SAVINGS_PLAN_NOTE = (
    "savings plans commit to this hourly spend for 1 or 3 years: their rate is the run's cost "
    "only if the commitment is used before and after it"
)


def estimate_for(stack: Stack, layout: Layout | None = None) -> TrainingEstimate:
    """The stack's training-run estimate; `layout`: the parallel layout to price (compare's
    deadline sizing), else the default (accelstack.cost.rates.default_layout)."""
    pool = stack.workload_pool
    spec = stack.spec
    return estimate_training(
        stack.catalog,
        pool.instance_type,
        pool.nodes,
        spec.workload,
        spec.budget.mfu,
        spec.calibration,
        private_pull=stack.private_image_pull,
        fit=pool.memory_fit,
        layout=layout,
    )


def spot_factor(stack: Stack) -> float:
    """Wall-time multiplier for a workload pool on interruptible capacity (Spot: the purchase
    table's capacity_type; catalog defaults.spot_interruption)."""
    pool = stack.workload_pool
    if not pool.purchase.interruptible:
        return 1.0
    d = stack.defaults
    return d.spot_interruption.overhead_factor(pool.nodes, d.hours_per_month)


def billed_hours(stack: Stack, wall_hours: float) -> float | None:
    """Pool hours billed for a run: a Capacity Block pool pays its whole window up front (the
    run rounded up to the next duration a block can be bought for); None for other options."""
    if not stack.workload_pool.purchase.capacity_block:
        return None
    return stack.catalog.capacity_blocks.window_days(wall_hours) * 24.0


def pool_price_factors(stack: Stack) -> tuple[float, float]:
    """(low, high) factors of the workload pool's instance rate: its price_ranges.yaml span
    when the rate is an estimate, (1, 1) when observed."""
    pool = stack.workload_pool
    rate = stack.catalog.instance_rate(stack.region, pool.instance_type, pool.purchase_option)
    span = stack.catalog.price_span(
        pool.instance_type, rate.option or pool.purchase_option, rate.estimate
    )
    return (1.0, 1.0) if span is None else (span[0], span[1])


def _ceiling_checks(ceiling: Ceiling | None, actual: dict[str, float]) -> tuple[LimitCheck, ...]:
    """The organisation ceiling's limits (those it sets) as checks, labelled with its file."""
    if ceiling is None:
        return ()
    return tuple(
        LimitCheck(f"ceiling {key} ({ceiling.source})", label, ceiling.limit(key), actual[key])
        for key, label in (
            ("max_hourly_usd", "hourly"),
            ("max_monthly_usd", "monthly"),
            ("max_run_usd", "training run"),
        )
        if ceiling.limit(key) is not None
    )


def _held_capacity(stack: Stack) -> tuple[tuple[int, ...], tuple[tuple[str, int, str], ...]]:
    """The workload pool's Capacity Block sizes (the reservations it names, else the blocks the
    catalog would buy; none off Capacity Blocks) and its (reservation, nodes, zone) rows."""
    wp = stack.workload_pool
    blocks: tuple[int, ...] = ()
    if wp.purchase.capacity_block:
        named = tuple(n for _, n in wp.reservations)
        blocks = named or stack.catalog.capacity_blocks.blocks_for(wp.nodes)
    return blocks, tuple((rid, n, wp.zone_id) for rid, n in wp.reservations)


def check_budget(
    stack: Stack,
    cost: StackCost | None = None,
    ceiling: Ceiling | None = None,
    layout: Layout | None = None,
    estimate: TrainingEstimate | None = None,
) -> Verdict:
    """Price (from the spec unless `cost` is given), estimate (at `layout`, else the default
    layout; `estimate` when the caller has made it already), and check every limit: the
    spec's budget, then the organisation `ceiling`. No limit at all fails closed unless the
    budget says `unlimited: true` (with a reason).

    A workload pool on spot runs longer by the interruption overhead (an estimate)."""
    cost = cost if cost is not None else price_stack(stack)
    est = estimate if estimate is not None else estimate_for(stack, layout)
    pool = stack.workload_pool.name
    factor = spot_factor(stack)
    lo, hi = est.wall_hours_range
    billed = billed_hours(stack, est.wall_hours * factor)
    data = run_data(stack, cost)
    run = RunCost(
        est.wall_hours * factor,
        cost.hourly_usd,
        cost.pool_hourly_usd(pool),
        est.tokens,
        cost.estimate or (factor > 1.0 and stack.defaults.spot_interruption.estimate),
        billed,
        (lo * factor, hi * factor),
        None if billed is None else (billed_hours(stack, lo) or lo, billed_hours(stack, hi) or hi),
        data.usd,
        pool_price_factors(stack),
        cost.other_hourly_usd_range(pool),
    )
    b = stack.budget
    checks: tuple[LimitCheck, ...] = (
        LimitCheck("budget.max_hourly_usd", "hourly", b.max_hourly_usd, cost.hourly_usd),
        LimitCheck("budget.max_monthly_usd", "monthly", b.max_monthly_usd, cost.monthly_usd),
        LimitCheck("budget.max_run_usd", "training run", b.max_run_usd, run.run_usd),
    )
    actual = {"max_hourly_usd": cost.hourly_usd, "max_monthly_usd": cost.monthly_usd}
    checks += _ceiling_checks(ceiling, {**actual, "max_run_usd": run.run_usd})
    unbounded = not b.has_limit and not b.unlimited
    blocks, reservations = _held_capacity(stack)
    return Verdict(
        stack.name,
        pool,
        cost,
        est,
        run,
        checks,
        factor,
        unbounded=unbounded,
        blocks=blocks,
        reservations=reservations,
        data_lines=data.lines,
    )


def enforce(
    stack: Stack,
    resources: Iterable[ResourceLike] | None = None,
    ceiling: Ceiling | None = None,
) -> None:
    """Raise VerdictError (one line) when `stack` exceeds its budget or the organisation
    ceiling; BudgetMissing (exit 2) when it sets no limit at all. Builds nothing."""
    cost = price_plan(stack, resources) if resources is not None else None
    verdict = check_budget(stack, cost, ceiling)
    if not verdict.ok:
        raise verdict.failure()


def report_for_plan(stack: Stack, plan: Any) -> str:
    """The cost report for a plan (anything with `.resources`), verdict line last."""
    cost = price_plan(stack, plan.resources)
    return render_report(check_budget(stack, cost))


# ---------------------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------------------


def _usd(x: float, est: bool = False) -> str:
    digits = 4 if abs(x) < 1 else 2
    return f"${x:,.{digits}f}{EST if est else ''}"


class _SourceRefs:
    """Numbers each distinct (source, as-of) pair in the order the report first cites it."""

    def __init__(self) -> None:
        self.sources: list[str] = []

    def ref(self, src: str, as_of: str) -> str:
        key = f"{src} (as of {as_of})"
        if key not in self.sources:
            self.sources.append(key)
        return f"[{self.sources.index(key) + 1}]"

    def lines(self) -> list[str]:
        return ["sources", *(f"  [{i}] {s}" for i, s in enumerate(self.sources, 1)), ""]


def _line_item_lines(c: StackCost, refs: _SourceRefs) -> list[str]:
    lines = ["line items (USD per hour)"]
    for it in c.items:
        where = it.pool or it.category
        lines.append(
            f"  {where:<14} {it.what:<44} {_usd(it.hourly_usd, it.estimate):>13}"
            f"  {it.unit_usd:g}/{it.unit} {refs.ref(it.source, it.as_of)}"
        )
        if it.assumption:
            lines.append(f"  {'':<14} note: {it.assumption}")
    lines.append(f"  {'total':<14} {'':<44} {_usd(c.hourly_usd, c.estimate):>13}")
    lines.append(f"  monthly ({c.hours_per_month} h): {_usd(c.monthly_usd, c.estimate)}")
    if c.free:
        free = ", ".join(f"{n} x {t.split(':')[-1]}" for t, n, _ in c.free)
        lines.append(f"  not billed: {free}")
    lines.append("")
    return lines


def _quote_line(q: OptionQuote, refs: _SourceRefs) -> str:
    mark = "  <- chosen" if q.chosen else ""
    if q.rate_alias:
        mark = f" (billed at the {q.rate_alias} rate){mark}"
    if q.hourly_usd is None or q.rate is None:
        return f"  {q.option:<16} not priced: {q.reason}{mark}"
    return (
        f"  {q.option:<16} {_usd(q.hourly_usd, q.rate.estimate):>13}"
        f"  {refs.ref(q.rate.source, q.rate.as_of)}{mark}"
    )


def _option_lines(c: StackCost, refs: _SourceRefs) -> list[str]:
    lines: list[str] = []
    for pool, quotes in c.options.items():
        lines.append(f"purchase options, pool {pool} (instances only, USD per hour)")
        lines.extend(_quote_line(q, refs) for q in quotes)
        lines.append(f"  {SAVINGS_PLAN_NOTE}")
        lines.append("")
    return lines


def _rng(lo_hi: tuple[float, float], fmt: str = ",.1f") -> str:
    return f"{lo_hi[0]:{fmt}}-{lo_hi[1]:{fmt}}"


def _throughput_lines(e: TrainingEstimate) -> list[str]:
    """Steady state, scaling and goodput: the two quantities and how they combine."""
    p, g = e.pick, e.parts
    out = [f"  MFU basis: {e.mfu_basis} ({e.mfu_source})"]
    if p.reference is not None:
        out.append(
            f"  step model MFU at this layout, before the node and batch terms: {p.reference:.3f}"
        )
    out += [
        f"  scaling efficiency at {e.nodes} node(s): {e.scaling_efficiency:.3f} "
        f"(range {_rng(p.scaling_range, '.3f')})",
        f"  step MFU: {e.mfu:.3f} (range {_rng(e.mfu_range, '.3f')}) = "
        f"{e.steady_state_tokens_per_second_per_chip:,.0f} tokens/s per chip "
        f"(range {_rng(e.steady_state_tokens_range, ',.0f')})",
        f"  goodput: {e.goodput:.3f} (range {_rng(e.goodput_range, '.3f')}): failures "
        f"{g.failures:.4f} + checkpoint stalls {g.checkpoint:.4f} + other {g.other:.3f}",
        f"  compute {e.compute_hours:,.1f} h / goodput {e.goodput:.3f} + one-time "
        f"{e.one_time_hours:.2f} h = wall {e.wall_hours:,.1f} h "
        f"(range {_rng(e.wall_hours_range)} h; {g.one_time_note})",
    ]
    return out


def _run_lines(v: Verdict) -> list[str]:
    c, e, r = v.cost, v.estimate, v.run
    pest = c.pool_estimate(v.pool)
    out = []
    if v.spot_factor > 1.0:
        out.append(
            f"  spot: wall {r.wall_hours:,.1f} h with the interruption overhead x{v.spot_factor:.4f}"
        )
    if r.billed_pool_hours is not None:
        cb = e.nodes
        out.append(
            f"  capacity block: billed up front for the whole window: {r.wall_hours:,.1f} h "
            f"-> {r.billed_pool_hours / 24:g} day(s) ({r.billed_pool_hours:,.0f} h) x {cb} "
            f"instance(s) in block(s) of {', '.join(map(str, v.blocks))}"
        )
    if len(v.reservations) > 1:
        out.append(
            f"  {len(v.reservations)} reservations behind pool {v.pool} (each its own launch "
            "template and node groups): "
            + "; ".join(f"{rid} {n} node(s) in {zone}" for rid, n, zone in v.reservations)
        )
    lo, hi = r.run_usd_range
    out += [
        f"  accelerator-hours: {e.accelerator_hours:,.0f}; node-hours: {e.node_hours:,.0f}",
        f"  memory fit: at least {e.min_nodes} node(s) of {e.instance_type}; the pool has {e.nodes}",
        f"  run cost, whole stack: {_usd(r.run_usd, r.estimate)} (range {_usd(lo)}-{_usd(hi)})"
        f"  (workload pool only: {_usd(r.pool_run_usd, pest)})",
        f"  USD per million tokens: {_usd(r.usd_per_million_tokens, r.estimate)}  "
        f"(pool only: {_usd(r.pool_usd_per_million_tokens, pest)})",
    ]
    if r.price_factors != (1.0, 1.0):
        p_lo, p_hi = r.price_factors
        out.append(
            f"  run cost range includes the workload pool's estimated rate at x{p_lo:.2f}-"
            f"x{p_hi:.2f} (price_ranges.yaml)"
        )
    out += [f"  {line}" for line in v.data_lines]
    out += [f"  warning: {w}" for w in e.warnings]
    return out


def _training_lines(v: Verdict) -> list[str]:
    e = v.estimate
    return [
        f"training-run estimate (pool {v.pool}: {e.nodes} x {e.instance_type}, {e.chips} chips)",
        f"  FLOPs per token: {e.flops.per_token:.4e} ({FLOPS_CONVENTION}; "
        f"attention {e.flops.attention_per_token:.4e})",
        f"  training FLOPs: {e.flops.total:.4e} over {e.tokens / 1e9:g}B tokens",
        f"  peak: {e.peak_tflops_per_chip:g} TFLOPS per chip, {e.precision} dense",
        *_throughput_lines(e),
        *_run_lines(v),
        *([f"  depends on an estimate: {'; '.join(v.depends_on)}"] if v.depends_on else []),
        "",
    ]


def _check_line(chk: LimitCheck, estimate: bool) -> str:
    if chk.limit is None:
        return f"  {chk.label:<13} {_usd(chk.actual, estimate):>15}   no limit set"
    state = "ok" if chk.ok else "OVER"
    return (
        f"  {chk.label:<13} {_usd(chk.actual, estimate):>15} <= "
        f"{_usd(chk.limit):>15}  {state}  ({chk.field})"
    )


def _budget_lines(v: Verdict) -> list[str]:
    lines = ["budget", *(_check_line(chk, v.cost.estimate) for chk in v.checks)]
    if v.unbounded:
        lines.append(f"  REFUSED: {NO_LIMIT}")
    elif all(c.limit is None for c in v.checks[:3]):  # the spec's own three
        lines.append("  unlimited on purpose (budget.unlimited)")
    return [*lines, ""]


def render_report(v: Verdict) -> str:
    refs = _SourceRefs()
    lines: list[str] = [
        f"cost report: {v.stack} ({v.cost.region})",
        f"{EST} = uses an estimated price or usage assumption",
        "",
    ]
    lines += _line_item_lines(v.cost, refs)
    lines += _option_lines(v.cost, refs)
    lines += _training_lines(v)
    lines += _budget_lines(v)
    lines += refs.lines()
    lines.append(f"verdict: {v.one_line()}")
    return "\n".join(lines) + "\n"


def _item_dict(i: LineItem) -> dict[str, Any]:
    return {
        "resource": i.resource,
        "type": i.type,
        "category": i.category,
        "pool": i.pool,
        "what": i.what,
        "quantity": i.quantity,
        "unit": i.unit,
        "unit_usd": i.unit_usd,
        "rate_of": i.rate_of,  # the instance type or catalog service item the rate is for
        "hourly_usd": round(i.hourly_usd, 6),
        "hourly_usd_range": lohi(i.hourly_usd_range),
        "estimate": i.estimate,
        "source": i.source,
        "as_of": i.as_of,
        "option": i.option,
        "assumption": i.assumption,
    }


def _quote_dict(q: OptionQuote) -> dict[str, Any]:
    return {
        "option": q.option,
        "hourly_usd": q.hourly_usd,
        "chosen": q.chosen,
        "estimate": q.rate.estimate if q.rate else None,
        "reason": q.reason,
    }


def lohi(pair: tuple[float, float]) -> dict[str, float]:
    """The JSON contract's range object."""
    return {"low": pair[0], "high": pair[1]}


def _training_dict(e: TrainingEstimate, r: RunCost) -> dict[str, Any]:
    """The `training` object of the JSON contract (docs/cost.md, "JSON contract")."""
    wall_lo, wall_hi = r.wall_hours_range or (r.wall_hours, r.wall_hours)
    return {
        "instance_type": e.instance_type,
        "nodes": e.nodes,
        "chips": e.chips,
        "precision": e.precision,
        "params_billion": e.params_billion,  # all parameters: the memory fit's size
        "active_params_billion": e.active_params_billion,  # a mixture of experts: FLOPs' size
        "expert_parallel": e.expert_parallel,  # the memory fit's expert-parallel degree
        "peak_tflops_per_chip": e.peak_tflops_per_chip,
        "steady_state_tokens_per_second_per_chip": e.steady_state_tokens_per_second_per_chip,
        "steady_state_tokens_per_second_per_chip_range": lohi(e.steady_state_tokens_range),
        "mfu": e.mfu,
        "mfu_range": lohi(e.mfu_range),
        "mfu_basis": e.mfu_basis,
        "mfu_source": e.mfu_source,
        "mfu_warning": e.mfu_warning,
        "reference_mfu": e.pick.reference,
        "stack": e.pick.stack,  # the training stack whose curve offset was used (null: centre)
        "scaling_efficiency": e.scaling_efficiency,
        "scaling_efficiency_range": lohi(e.pick.scaling_range),  # with the sequence term
        "goodput": e.goodput,
        "goodput_range": lohi(e.goodput_range),
        "total_flops": e.flops.total,
        "compute_hours": e.compute_hours,
        "one_time_hours": e.one_time_hours,
        "wall_hours": r.wall_hours,  # with the spot interruption overhead when on spot
        "wall_hours_range": lohi((wall_lo, wall_hi)),
        "billed_pool_hours": r.billed_pool_hours,  # Capacity Block: the whole window
        "accelerator_hours": e.accelerator_hours,
        "min_nodes": e.min_nodes,
        "run_usd": r.run_usd,
        "run_usd_range": lohi(r.run_usd_range),
        # the workload pool's instance rate as factors: its estimate's span (price_ranges.yaml)
        "price_factor_range": lohi(r.price_factors),
        "data_transfer_usd": r.extra_usd,
        "pool_run_usd": r.pool_run_usd,
        "usd_per_million_tokens": r.usd_per_million_tokens,
        "warnings": list(e.warnings),
    }


def verdict_dict(v: Verdict) -> dict[str, Any]:
    """JSON-ready form of a verdict (for `accelstack price --json` and tools)."""
    c = v.cost
    return {
        "stack": v.stack,
        "workload_pool": v.pool,
        "region": c.region,
        "hourly_usd": round(c.hourly_usd, 6),
        # every estimated rate at its span's low and high (price_ranges.yaml)
        "hourly_usd_range": lohi(c.hourly_usd_range),
        "monthly_usd": round(c.monthly_usd, 4),
        "estimate": c.estimate,
        "items": [_item_dict(i) for i in c.items],
        "options": {pool: [_quote_dict(q) for q in quotes] for pool, quotes in c.options.items()},
        "training": {
            **_training_dict(v.estimate, v.run),
            "spot_overhead_factor": v.spot_factor,
            "capacity_blocks": list(v.blocks),
            "reservations": [
                {"id": rid, "nodes": n, "zone_id": zone} for rid, n, zone in v.reservations
            ],
        },
        "depends_on_estimate": v.depends_on,
        "budget": [
            {"field": k.field, "limit": k.limit, "actual": k.actual, "ok": k.ok} for k in v.checks
        ],
        "unbounded": v.unbounded,
        "ok": v.ok,
        "verdict": v.one_line(),
    }


def verdict_json(v: Verdict) -> str:
    return dumps(verdict_dict(v))
