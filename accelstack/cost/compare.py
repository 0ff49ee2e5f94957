"""Price one workload on every candidate instance type, on equal work: `accelstack compare`.

Sizing (say which in every output): candidates get the same **chip budget** (`chips`: the
spec's workload-pool chips unless given; nodes = chips // chips per node, so 256 chips are 16
trn2.48xlarge or 32 p5.48xlarge) or the same **deadline** (`deadline_hours` without `chips`:
the fewest nodes whose estimated wall hours meet it). Either way the memory fit
(accelstack.catalog.sizing) is checked per candidate: a chip budget too small to hold the
model makes the candidate unavailable, a deadline sizing never goes below the fit.

Purchase options (`options`, default on-demand and capacity-block where priced): spot wall
hours carry the catalog's interruption overhead (`defaults.spot_interruption`, an estimate);
savings plans are commitments, shown as their total over the term and never ranked. A type not
offered or not priced in the region is "not available: <reason>", never $0. The cheapest and
the fastest ranked (type, option) within budget and deadline are marked with their
assumptions (MFU source, price sources, sizing) and whether the pick rests on an estimate.

Each candidate is the spec with its workload pool retargeted (`retarget_stack`: the spec edit
`new` makes, then `resolve`), priced with the same rules as `accelstack price`, so the other pools, the control plane, NAT and storage count too.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from accelstack.catalog import Catalog, load_catalog
from accelstack.catalog.purchase import OptionLists
from accelstack.catalog.sizing import MemoryFit, experts_overflow_note
from accelstack.cost.breakeven import BreakEven, Side, break_even
from accelstack.cost.guard import check_budget, estimate_for
from accelstack.errors import CatalogError, Problem, VerdictError
from accelstack.resolve import Stack, check_stack, resolve, resolve_unchecked
from accelstack.resolve.retarget import retarget_spec
from accelstack.spec import Spec

# The options `--options` accepts (purchase_options `comparable`; "reservation" is billed at the
# on-demand rate, so it adds nothing), those compared unless asked otherwise (`compare_default`:
# spot, interruptions, and savings plans, commitments, are opt-in) and each savings plan's term
# come from the stack's catalog, a user's overlay included: `Stack.option_lists`.
HOURS_PER_YEAR = 8760


@dataclass(frozen=True)
class Sizing:
    """How candidates are made equal: the same chip budget or the same deadline."""

    basis: str  # "chips" | "deadline"
    chips: int | None = None
    deadline_hours: float | None = None
    from_spec: bool = False  # the chip budget is the spec's workload pool

    def describe(self) -> str:
        if self.basis == "chips":
            whose = " (the spec's workload pool)" if self.from_spec else ""
            return (
                f"same chip budget: {self.chips} chips per candidate{whose} "
                "(nodes = chips // chips per node, at least the memory fit)"
            )
        return (
            f"same deadline: the fewest nodes that finish within {self.deadline_hours:g} h "
            "(at least the memory fit)"
        )


@dataclass(frozen=True)
class OptionRun:
    option: str
    hourly_usd: float  # whole stack
    monthly_usd: float
    pool_hourly_usd: float
    run_usd: float
    usd_per_million_tokens: float
    estimate: bool  # any price behind it is an estimate
    over: tuple[str, ...]  # budget reasons, empty when within budget
    wall_hours: float = 0.0  # spot: with the interruption overhead
    overhead_factor: float = 1.0  # spot interruption overhead (1.0 otherwise)
    commitment_usd: float | None = None  # savings plans: pool rate x term hours
    term_years: int | None = None
    price_source: str = ""  # the workload pool's instance rate: source (as_of)
    wall_hours_range: tuple[float, float] = (0.0, 0.0)
    run_usd_range: tuple[float, float] = (0.0, 0.0)
    billed_pool_hours: float | None = None  # Capacity Block: the whole window
    instance_rate_usd: float = 0.0  # the workload pool's rate per instance-hour
    other_hourly_usd: float = 0.0  # the rest of the stack per hour
    capacity_blocks: tuple[int, ...] = ()  # Capacity Block: the blocks the pool needs
    instance_rate_range: tuple[float, float] = (0.0, 0.0)  # an estimate's span, else (r, r)

    @property
    def blocks(self) -> int:
        """How many Capacity Blocks the row assumes (0 for other options)."""
        return len(self.capacity_blocks)

    @property
    def fits_budget(self) -> bool:
        return not self.over

    @property
    def ranked(self) -> bool:
        """Savings plans are commitments over their term, not a run price: never picked."""
        return self.commitment_usd is None


@dataclass(frozen=True)
class Candidate:
    instance_type: str
    reason: str | None  # "not available: ..." when set
    nodes: int = 0
    min_nodes: int = 0
    chips: int = 0
    wall_hours: float = 0.0
    mfu: float = 0.0
    options: tuple[OptionRun, ...] = ()
    unpriced: tuple[str, ...] = ()  # options without a price here
    mfu_origin: str = ""
    mfu_estimate: bool = False
    sizing_note: str = ""
    mfu_warning: str | None = None  # a measurement taken on another SDK
    mfu_range: tuple[float, float] = (0.0, 0.0)
    mfu_basis: str = ""
    compute_hours: float = 0.0  # steady steps only
    goodput: float = 1.0
    one_time_hours: float = 0.0
    refused: tuple[str, ...] = ()  # "option: why" for options this size cannot buy
    warnings: tuple[str, ...] = ()  # the batch layout, nodes that no longer pay

    @property
    def available(self) -> bool:
        return self.reason is None


@dataclass(frozen=True)
class Pick:
    instance_type: str
    nodes: int
    option: str
    run_usd: float
    wall_hours: float
    estimates: tuple[str, ...] = ()  # what the pick rests on that is an estimate
    assumptions: tuple[str, ...] = ()  # MFU source, price source, sizing basis
    run_usd_range: tuple[float, float] = (0.0, 0.0)
    wall_hours_range: tuple[float, float] = (0.0, 0.0)
    within_budget: bool = True
    break_even: BreakEven | None = None  # the cheapest pick against its runner-up

    @property
    def depends_on_estimate(self) -> bool:
        return bool(self.estimates)

    @property
    def too_close(self) -> bool:
        return self.break_even is not None and self.break_even.too_close


@dataclass(frozen=True)
class Comparison:
    stack: str
    region: str
    candidates: tuple[Candidate, ...]
    deadline_hours: float | None
    cheapest: Pick | None
    fastest: Pick | None  # fastest of all rows, budget or not
    sizing: Sizing = Sizing("chips")
    options: tuple[str, ...] = ()
    spot_assumption: str = ""
    fastest_within_budget: Pick | None = None
    commitments: tuple[str, ...] = ()  # the options that are savings plans (not ranked)


def retarget_stack(stack: Stack, instance_type: str, nodes: int, option: str) -> Stack:
    """`stack` with its workload pool moved to `nodes` x `instance_type` under `option`: the
    spec edit `new` makes (`retarget_spec`), resolved like any spec, so every fact of the
    candidate (EFA interfaces, processes per node, logical cores, AMI, framework, node groups,
    addresses) is the one `resolve` gives the type. Unchecked: a candidate is priced, not
    deployed (sizing and availability are judged here)."""
    spec = retarget_spec(
        stack.spec, stack.catalog, instance_type=instance_type, nodes=nodes, option=option
    )
    return resolve_unchecked(spec, stack.catalog, name=stack.name)


def _memory_fit(stack: Stack, instance_type: str) -> MemoryFit:
    """The workload's memory fit on `instance_type`, as `resolve` gives it to the candidate
    (it does not depend on the node count or the option)."""
    reference = stack.option_lists.reference  # on-demand terms: the option does not matter
    candidate = retarget_stack(stack, instance_type, stack.workload_pool.nodes, reference)
    fit = candidate.workload_memory_fit
    if fit is None:  # the spec rules refuse a precision without a bytes-per-parameter figure
        raise CatalogError(f"no bytes-per-parameter figure for {stack.workload.precision}")
    return fit


def _availability(stack: Stack, instance_type: str) -> str | None:
    cat = stack.catalog
    if instance_type not in cat.instances or not cat.instances[instance_type].accelerated:
        return "not a known accelerated instance type"
    offered = cat.zones_offering(stack.region, instance_type)
    if not offered:
        return f"not offered in {stack.region} per the catalog"
    zone = stack.workload_zone
    zid = cat.zone_id(stack.region, zone) if zone else None
    if zid and zid not in offered:
        return f"not offered in the spec's zone {zone} ({zid}); zones that do: {', '.join(offered)}"
    if cat.instances[instance_type].preview and not stack.preview:
        return "preview type; the spec does not set preview: true"
    fam = cat.family_of(instance_type)
    if stack.workload.precision not in fam.peak_tflops:
        return f"no {stack.workload.precision} peak figure for {fam.accelerator}"
    if not any(cat.has_rate(stack.region, instance_type, o) for o in stack.option_lists.comparable):
        return f"no price for {instance_type} in {stack.region} in the catalog"
    return None


def sizing_for(stack: Stack, chips: int | None, deadline_hours: float | None) -> Sizing:
    """Chip budget when `chips` is given or no deadline is; else the deadline."""
    if chips is None and deadline_hours is not None:
        return Sizing("deadline", deadline_hours=deadline_hours)
    pool = stack.workload_pool
    if chips is None:
        return Sizing("chips", chips=pool.nodes * pool.instance.chips, from_spec=True)
    return Sizing("chips", chips=chips)


def _size(stack: Stack, instance_type: str, min_nodes: int, sizing: Sizing) -> tuple[int, str]:
    """(nodes, note) for one candidate, or (0, reason) when the sizing cannot be met."""
    per_node = stack.catalog.instance(instance_type).chips
    max_nodes = stack.catalog.scale.max_pool_nodes  # EKS node-group limits (scale.yaml)
    if sizing.basis == "chips":
        assert sizing.chips is not None
        nodes = sizing.chips // per_node
        if nodes < min_nodes:
            return 0, (
                f"a {sizing.chips}-chip budget gives {nodes} node(s) of {per_node} chips; "
                f"memory fit needs at least {min_nodes}"
            )
        if nodes > max_nodes:
            return 0, f"a {sizing.chips}-chip budget needs {nodes} nodes; a pool allows {max_nodes}"
        return nodes, f"{sizing.chips} chips // {per_node} per node = {nodes} node(s)"
    assert sizing.deadline_hours is not None
    return _deadline_nodes(stack, instance_type, min_nodes, sizing.deadline_hours)


def _wall(stack: Stack, instance_type: str, nodes: int) -> float:
    reference = stack.option_lists.reference
    return estimate_for(retarget_stack(stack, instance_type, nodes, reference)).wall_hours


#: Deadline sizing adds nodes while the extra nodes deliver at least this share of their
#: ideal speed-up (a step from n to m nodes: (hours_n / hours_m - 1) / (m / n - 1)).
MIN_MARGINAL_EFFICIENCY = 0.5
#: A deadline sizing whose node-hours exceed the memory-fit minimum's by more than this share
#: carries a warning: the deadline, not the work, is what the extra nodes buy.
MAX_EXTRA_NODE_HOURS = 0.25


def marginal_efficiency(n: int, hours_n: float, m: int, hours_m: float) -> float:
    """Share of the ideal speed-up that going from n to m nodes delivers."""
    return (hours_n / hours_m - 1.0) / (m / n - 1.0) if m > n else 0.0


def data_parallel_cap(global_batch: int | None, min_nodes: int) -> int | None:
    """The most nodes the global batch can feed: one sequence per data-parallel rank, a rank
    spanning at most one node (tensor parallelism within the node, where the records' layouts
    keep it); more nodes need pipeline parallelism across nodes, which neither the MFU curves
    nor the scaling model price. Never below the memory fit; None without a global batch."""
    if not global_batch:
        return None
    return max(min_nodes, global_batch)


def model_parallel_layout(chips: int, global_batch: int | None, chips_per_node: int) -> str | None:
    """The tensor/pipeline parallelism each data-parallel rank needs when the global batch
    gives fewer than one sequence per chip (None when it gives at least one)."""
    if not global_batch or global_batch >= chips:
        return None
    span = 2 ** math.ceil(math.log2(chips / global_batch))  # parallel degrees: powers of two
    tp = min(span, chips_per_node)
    pp = math.ceil(span / chips_per_node)
    layout = f"tensor parallelism {tp}" + (f" x pipeline parallelism {pp}" if pp > 1 else "")
    return (
        f"a global batch of {global_batch:,} sequences on {chips:,} chips is "
        f"{global_batch / chips:.2f} sequence per chip: each data-parallel rank must span "
        f"{span} chips ({layout}) or workload.global_batch_size rise to >= {chips:,}"
    )


def _deadline_nodes(
    stack: Stack, instance_type: str, min_nodes: int, deadline: float
) -> tuple[int, str]:
    """The fewest nodes (from the memory fit up) whose wall hours meet `deadline`; adding
    nodes stops where it no longer shortens the run (scaling efficiency and goodput fall
    with node count) and where the global batch no longer gives every chip a sequence; the
    candidate is unavailable when that is still too slow."""
    pool_max = stack.catalog.scale.max_pool_nodes  # EKS node-group limits (scale.yaml)
    per_node = stack.catalog.instance(instance_type).chips
    gbs = stack.workload.global_batch_size
    cap = data_parallel_cap(gbs, min_nodes)
    max_nodes = pool_max if cap is None else min(pool_max, cap)
    prev_n, best_n, best_h = min_nodes, min_nodes, _wall(stack, instance_type, min_nodes)
    while best_h > deadline + 1e-9 and best_n < max_nodes:
        n = min(max_nodes, best_n + max(1, best_n // 8))  # about 12% more nodes a step
        hours = _wall(stack, instance_type, n)
        if marginal_efficiency(best_n, best_h, n, hours) < MIN_MARGINAL_EFFICIENCY:
            return 0, (
                f"cannot finish in {deadline:g} h: {best_h:,.1f} h on {best_n} node(s), and "
                f"more nodes no longer pay ({n} nodes: {hours:,.1f} h; scaling efficiency and "
                f"goodput fall with node count)"
            )
        prev_n, best_n, best_h = best_n, n, hours
    if best_h > deadline + 1e-9 and max_nodes < pool_max:
        assert gbs is not None
        beyond = model_parallel_layout((max_nodes + 1) * per_node, gbs, per_node)
        return 0, (
            f"cannot finish in {deadline:g} h within the global batch: {best_h:,.1f} h on "
            f"{max_nodes} node(s), the most that workload.global_batch_size {gbs:,} can feed "
            f"(one sequence per data-parallel rank, a rank at most one node); more nodes: "
            f"{beyond}, and pipeline parallelism across nodes is not priced. Raise "
            "workload.global_batch_size or relax the deadline"
        )
    if best_h > deadline + 1e-9:
        return 0, (
            f"needs more than {max_nodes} nodes to finish in {deadline:g} h "
            f"({best_h:,.1f} h on {max_nodes}); a pool allows at most {max_nodes}"
        )
    # the fewest nodes inside the last step that still meet the deadline
    best_n = next(
        (k for k in range(prev_n + 1, best_n) if _wall(stack, instance_type, k) <= deadline + 1e-9),
        best_n,
    )
    floor = f"; memory fit sets {min_nodes}" if best_n == min_nodes and min_nodes > 1 else ""
    return best_n, (
        f"{_wall(stack, instance_type, best_n):,.1f} h on {best_n} node(s) meets the "
        f"{deadline:g} h deadline (fewest nodes, scaling and goodput included){floor}"
    )


def no_longer_pays(stack: Stack, instance_type: str, nodes: int, min_nodes: int) -> str | None:
    """A warning when `nodes` spend more than MAX_EXTRA_NODE_HOURS more node-hours than the
    memory-fit minimum for the same work (the deadline buys speed, not work)."""
    if nodes <= min_nodes:
        return None
    base = min_nodes * _wall(stack, instance_type, min_nodes)
    extra = nodes * _wall(stack, instance_type, nodes) / base - 1.0
    if extra <= MAX_EXTRA_NODE_HOURS:
        return None
    return (
        f"more nodes no longer pay: {nodes} node(s) spend {extra:+.0%} node-hours against "
        f"{min_nodes} node(s) for the same work (scaling efficiency and goodput fall with node "
        f"count; above {MAX_EXTRA_NODE_HOURS:.0%} this warns)"
    )


def capacity_block_refusal(stack: Stack, nodes: int) -> str | None:
    """Why `nodes` instances cannot be bought as Capacity Blocks (capacity_blocks.yaml: per
    block and per account), or None."""
    return stack.catalog.capacity_blocks.over_limit(nodes)


def _option_run(stack: Stack, instance_type: str, nodes: int, opt: str) -> OptionRun:
    """One purchase option priced through the same rules as `price` (spot: with the
    interruption overhead that check_budget applies)."""
    v = check_budget(retarget_stack(stack, instance_type, nodes, opt))
    rate = stack.catalog.instance_rate(stack.region, instance_type, opt)
    years = stack.option_lists.commitment_years.get(opt)
    return OptionRun(
        option=opt,
        hourly_usd=v.cost.hourly_usd,
        monthly_usd=v.cost.monthly_usd,
        pool_hourly_usd=v.run.pool_hourly_usd,
        run_usd=v.run.run_usd,
        usd_per_million_tokens=v.run.usd_per_million_tokens,
        estimate=v.run.estimate,
        over=tuple(v.reasons),
        wall_hours=v.run.wall_hours,
        overhead_factor=v.spot_factor,
        commitment_usd=v.run.pool_hourly_usd * HOURS_PER_YEAR * years if years else None,
        term_years=years,
        price_source=f"{rate.source} ({rate.as_of})" + (" [estimate]" if rate.estimate else ""),
        wall_hours_range=v.run.wall_hours_range or (v.run.wall_hours, v.run.wall_hours),
        run_usd_range=v.run.run_usd_range,
        billed_pool_hours=v.run.billed_pool_hours,
        instance_rate_usd=rate.usd,
        other_hourly_usd=v.cost.hourly_usd - v.run.pool_hourly_usd,
        capacity_blocks=v.blocks,
        instance_rate_range=(rate.usd * v.run.price_factors[0], rate.usd * v.run.price_factors[1]),
    )


def _rule_refusal(problems: Sequence[Problem]) -> str:
    """A stack rule's refusal of a candidate: its YAML path and message (the spec's file is not
    the candidate's), and how many more there are."""
    first = problems[0]
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"stack rule: {first.path}: {first.message}{more}"


def _buyable(
    stack: Stack, instance_type: str, nodes: int, priced: Sequence[str]
) -> tuple[list[str], tuple[str, ...]]:
    """The priced options a candidate of this size can buy, and "option: why" for the others:
    a Capacity Block over its limits, or a candidate the stack rules refuse (`resolve` would
    refuse the spec `new` writes for it)."""
    blocks = [o for o in priced if o in stack.option_lists.capacity_block]
    cb_why = capacity_block_refusal(stack, nodes) if blocks else None
    refused = [f"{o}: {cb_why}" for o in blocks] if cb_why else []
    buyable = []
    for o in priced:
        if cb_why and o in blocks:
            continue
        problems = check_stack(retarget_stack(stack, instance_type, nodes, o))
        if problems:
            refused.append(f"{o}: {_rule_refusal(problems)}")
        else:
            buyable.append(o)
    return buyable, tuple(refused)


def evaluate(
    stack: Stack,
    instance_type: str,
    options: Sequence[str] | None = None,
    sizing: Sizing | None = None,
) -> Candidate:
    """Every priced option of one candidate type (`options`, else the catalog's defaults),
    sized per `sizing`."""
    if options is None:
        options = stack.option_lists.compare_default
    reason = _availability(stack, instance_type)
    if reason is not None:
        return Candidate(instance_type, f"not available: {reason}")
    sizing = sizing or sizing_for(stack, None, None)
    fit = _memory_fit(stack, instance_type)
    if fit.experts_overflow:
        return Candidate(instance_type, f"not available: {experts_overflow_note(fit)}")
    nodes, note = _size(stack, instance_type, fit.min_nodes, sizing)
    if nodes == 0:
        return Candidate(instance_type, f"not available: {note}", min_nodes=fit.min_nodes)
    priced = [o for o in options if stack.catalog.has_rate(stack.region, instance_type, o)]
    buyable, refused = _buyable(stack, instance_type, nodes, priced)
    if not buyable:
        why = f"; {'; '.join(refused)}" if refused else ""
        return Candidate(
            instance_type,
            f"not available: no price for {instance_type} in "
            f"{stack.region} under {', '.join(options)}{why}",
            min_nodes=fit.min_nodes,
        )
    runs = tuple(_option_run(stack, instance_type, nodes, o) for o in buyable)
    est = estimate_for(retarget_stack(stack, instance_type, nodes, buyable[0]))
    per_node = stack.catalog.instance(instance_type).chips
    layout = model_parallel_layout(est.chips, stack.workload.global_batch_size, per_node)
    pays = no_longer_pays(stack, instance_type, nodes, fit.min_nodes)
    warnings = tuple(w for w in (layout, pays if sizing.basis == "deadline" else None) if w)
    return Candidate(
        instance_type=instance_type,
        reason=None,
        nodes=nodes,
        min_nodes=fit.min_nodes,
        chips=est.chips,
        wall_hours=est.wall_hours,
        mfu=est.mfu,
        options=runs,
        unpriced=tuple(o for o in options if o not in priced),
        mfu_origin=est.mfu_origin,
        mfu_estimate=est.mfu_is_estimate,
        sizing_note=note,
        mfu_warning=est.mfu_warning,
        mfu_range=est.mfu_range,
        mfu_basis=est.mfu_basis,
        compute_hours=est.compute_hours,
        goodput=est.goodput,
        one_time_hours=est.one_time_hours,
        refused=refused,
        warnings=warnings,
    )


def _pick_of(c: Candidate, o: OptionRun, sizing: Sizing, spot_source: str) -> Pick:
    estimates = []
    if o.price_source.endswith("[estimate]"):
        estimates.append(f"the {c.instance_type} {o.option} price is an estimate")
    if c.mfu_estimate:
        estimates.append(f"the MFU is an estimate ({c.mfu_origin})")
    if c.mfu_warning:
        estimates.append(f"the measured MFU may be stale ({c.mfu_warning})")
    if o.overhead_factor > 1.0 and o.estimate:
        estimates.append(f"the spot interruption overhead x{o.overhead_factor:.3f} is an estimate")
    assumptions = [
        f"sizing: {sizing.describe()}; {c.sizing_note}",
        c.mfu_origin,
        f"price: {o.price_source}",
    ]
    if o.overhead_factor > 1.0:
        assumptions.append(f"spot overhead x{o.overhead_factor:.4f}: {spot_source}")
    return Pick(
        c.instance_type,
        c.nodes,
        o.option,
        o.run_usd,
        o.wall_hours,
        tuple(estimates),
        tuple(assumptions),
        o.run_usd_range,
        o.wall_hours_range,
        o.fits_budget,
    )


def _rows(candidates: Sequence[Candidate]) -> list[tuple[Candidate, OptionRun]]:
    """Every ranked (type, option) row of the available candidates."""
    return [(c, o) for c in candidates if c.available for o in c.options if o.ranked]


def _fits(o: OptionRun, deadline_hours: float | None) -> bool:
    late = deadline_hours is not None and o.wall_hours > deadline_hours + 1e-9
    return o.fits_budget and not late


Row = tuple[Candidate, OptionRun]
Key = tuple[float, float, str, int]


def _cost_key(lists: OptionLists) -> Callable[[Row], Key]:
    """Lowest run cost; ties by wall hours, type name, then the option's table order."""
    return lambda r: (r[1].run_usd, r[1].wall_hours, r[0].instance_type, lists.order(r[1].option))


def _time_key(lists: OptionLists) -> Callable[[Row], Key]:
    """Lowest wall hours; ties by run cost, type name, then the option's table order."""
    return lambda r: (r[1].wall_hours, r[1].run_usd, r[0].instance_type, lists.order(r[1].option))


def side(c: Candidate, o: OptionRun) -> Side:
    return Side(
        c.instance_type,
        o.option,
        c.nodes,
        o.run_usd,
        o.run_usd_range,
        o.wall_hours,
        o.hourly_usd,
        o.other_hourly_usd,
        o.instance_rate_usd,
        o.billed_pool_hours,
        o.overhead_factor,
        c.mfu,
        c.compute_hours,
        c.goodput,
        c.one_time_hours,
        o.instance_rate_range,
    )


def _runner_up(
    candidates: Sequence[Candidate],
    pick_type: str,
    deadline_hours: float | None,
    lists: OptionLists,
) -> tuple[Candidate, OptionRun] | None:
    """The cheapest row of another type that meets the deadline: within budget when one is,
    else the cheapest over budget (the break-even still says how far ahead the pick is)."""
    rows = [
        r
        for r in _rows(candidates)
        if r[0].instance_type != pick_type
        and (deadline_hours is None or r[1].wall_hours <= deadline_hours + 1e-9)
    ]
    cost = _cost_key(lists)
    return min(rows, key=lambda r: (not r[1].fits_budget, *cost(r))) if rows else None


def pick(
    candidates: Sequence[Candidate],
    deadline_hours: float | None,
    sizing: Sizing | None = None,
    spot_source: str = "",
    *,
    lists: OptionLists,
) -> tuple[Pick | None, Pick | None]:
    """(cheapest, fastest within budget) among ranked options within budget and deadline.

    Cheapest: lowest run cost; ties by wall hours, then type name, then option order; it
    carries its break-even against the runner-up (the cheapest row of another type).
    Fastest: lowest wall hours; ties by run cost, then type name, then option order.
    Savings plans are not ranked (commitments); spot is judged on its overhead wall hours.
    """
    sizing = sizing or Sizing("chips")
    fits = [r for r in _rows(candidates) if _fits(r[1], deadline_hours)]
    if not fits:
        return None, None
    best = min(fits, key=_cost_key(lists))
    cheapest = _pick_of(*best, sizing, spot_source)
    runner = _runner_up(candidates, best[0].instance_type, deadline_hours, lists)
    if runner is not None:
        pair = break_even(side(*best), side(*runner), runner[1].fits_budget)
        cheapest = dataclasses.replace(cheapest, break_even=pair)
    fastest = min(fits, key=_time_key(lists))
    return cheapest, _pick_of(*fastest, sizing, spot_source)


def fastest_of_all(
    candidates: Sequence[Candidate],
    sizing: Sizing | None = None,
    spot_source: str = "",
    *,
    lists: OptionLists,
) -> Pick | None:
    """The fastest ranked row, whether or not it fits the budget or the deadline."""
    rows = _rows(candidates)
    if not rows:
        return None
    return _pick_of(*min(rows, key=_time_key(lists)), sizing or Sizing("chips"), spot_source)


def check_options(options: Sequence[str], lists: OptionLists) -> tuple[str, ...]:
    """The options, each one `compare` knows (the catalog's `comparable` rows); CatalogError
    (exit 2) naming the allowed ones."""
    for opt in options:
        if opt not in lists.comparable:
            raise CatalogError(
                f"unknown purchase option '{opt}' (allowed: {', '.join(lists.comparable)})"
            )
    return tuple(dict.fromkeys(options))


def compare(
    stack: Stack,
    instance_types: Sequence[str] | None = None,
    deadline_hours: float | None = None,
    options: Sequence[str] | None = None,
    chips: int | None = None,
) -> Comparison:
    """Every candidate on equal work (chip budget or deadline), its options (`options`, else
    the catalog's `compare_default` rows), the two picks."""
    types = tuple(instance_types) if instance_types else stack.catalog.compare_candidates()
    lists = stack.option_lists
    opts = check_options(lists.compare_default if options is None else options, lists)
    sizing = sizing_for(stack, chips, deadline_hours)
    cands = tuple(evaluate(stack, t, opts, sizing) for t in types)
    spot = stack.defaults.spot_interruption.source
    cheapest, within = pick(cands, deadline_hours, sizing, spot, lists=lists)
    return Comparison(
        stack.name,
        stack.region,
        cands,
        deadline_hours,
        cheapest,
        fastest_of_all(cands, sizing, spot, lists=lists),
        sizing,
        opts,
        spot if any(o in lists.interruptible for o in opts) else "",
        within,
        tuple(o for o in opts if o in lists.commitment_years),
    )


def cheapest_target(
    spec: Spec,
    catalog: Catalog | None = None,
    instance_types: Sequence[str] | None = None,
    deadline_hours: float | None = None,
    options: Sequence[str] | None = None,
    chips: int | None = None,
) -> tuple[str, int, str]:
    """(instance_type, nodes, option) of the cheapest run within budget and deadline.

    For `accelstack new NAME --from PRESET --cheapest`. Raises VerdictError when nothing fits.
    """
    cat = catalog or load_catalog()
    stack = resolve(spec, cat)
    result = compare(stack, instance_types, deadline_hours, options, chips)
    if result.cheapest is None:
        why = f" and a {deadline_hours:g} h deadline" if deadline_hours is not None else ""
        raise VerdictError(
            f"{spec.name}: no candidate instance type fits the budget{why} "
            "(run `accelstack compare` for the figures)"
        )
    c = result.cheapest
    return c.instance_type, c.nodes, c.option


def header_lines(cmp: Comparison) -> list[str]:
    """Sizing basis, options and the spot assumption: printed above every table."""
    lines = [f"sizing: {cmp.sizing.describe()}", f"options: {', '.join(cmp.options)}"]
    if cmp.spot_assumption:
        lines.append(f"spot: wall hours x interruption overhead; {cmp.spot_assumption}")
    if cmp.commitments:
        lines.append(
            "savings plans: commitments (workload-pool rate x 8,760 h x term), "
            "not the run's price; never ranked"
        )
    return lines


def _usd_range(r: tuple[float, float]) -> str:
    return f"${r[0]:,.0f}-${r[1]:,.0f}"


def pick_lines(label: str, p: Pick | None, deadline: bool, none: str = "") -> list[str]:
    """The pick with its ranges, break-even, whether it rests on an estimate, assumptions."""
    if p is None:
        return [none or f"{label}: nothing fits the budget" + (" and deadline" if deadline else "")]
    lo, hi = p.wall_hours_range
    head = (
        f"{label}: {p.nodes} x {p.instance_type} ({p.option}), {p.wall_hours:,.1f} h "
        f"({lo:,.1f}-{hi:,.1f}), ${p.run_usd:,.0f} ({_usd_range(p.run_usd_range)})"
    )
    out = [head + ("" if p.within_budget else ", over budget")]
    if p.break_even is not None:
        out.append(f"  {p.break_even.line()}")
        if p.break_even.too_close:
            out.append(
                f"  too close to call: run `accelstack trial` on both ({p.instance_type} and "
                f"{p.break_even.runner_up}): their run-cost ranges overlap"
            )
    if p.depends_on_estimate:
        out.append(f"  this pick depends on an estimate: {'; '.join(p.estimates)}")
    out += [f"  assumption: {a}" for a in p.assumptions]
    return out


def _same(p: Pick | None, c: Candidate, o: OptionRun) -> bool:
    return p is not None and p.instance_type == c.instance_type and p.option == o.option


def _row_notes(cmp: Comparison, c: Candidate, o: OptionRun) -> list[str]:
    notes = []
    if _same(cmp.cheapest, c, o):
        notes.append("CHEAPEST" + (" (too close to call)" if cmp.cheapest.too_close else ""))  # type: ignore[union-attr]
    if _same(cmp.fastest, c, o):
        notes.append("FASTEST")
    if _same(cmp.fastest_within_budget, c, o) and not _same(cmp.fastest, c, o):
        notes.append("fastest within budget")
    if cmp.deadline_hours is not None and o.wall_hours > cmp.deadline_hours + 1e-9:
        notes.append("misses deadline")
    if o.commitment_usd is not None:
        notes.append(f"commitment ${o.commitment_usd:,.0f} over {o.term_years}y (pool), not ranked")
    if o.overhead_factor > 1.0:
        notes.append(f"spot overhead x{o.overhead_factor:.4f}")
    if o.billed_pool_hours is not None:
        notes.append(f"billed {o.billed_pool_hours / 24:g}-day window")
    if o.capacity_blocks:
        sizes = ", ".join(map(str, o.capacity_blocks))
        notes.append(f"{o.blocks} Capacity Block(s) ({sizes})")
    if o.over:
        notes.append("over budget: " + "; ".join(o.over))
    return notes


def _row(cmp: Comparison, c: Candidate, o: OptionRun) -> str:
    star = "*" if o.estimate else " "
    lo, hi = o.wall_hours_range
    wall = f"{o.wall_hours:,.0f} ({lo:,.0f}-{hi:,.0f})"
    run = f"{o.run_usd:,.0f} ({o.run_usd_range[0]:,.0f}-{o.run_usd_range[1]:,.0f})"
    run = f"{run:>31}{star}" if o.ranked else f"{'-':>31} "
    per_m = f"{o.usd_per_million_tokens:>8.3f}{star}" if o.ranked else f"{'-':>8} "
    return (
        f"  {c.instance_type:<15} {c.nodes:>5} {c.chips:>5} {wall:>20} "
        f"{o.option:<16} {o.hourly_usd:>10,.2f}{star} {run} {per_m} "
        f"{', '.join(_row_notes(cmp, c, o))}"
    )


def render(cmp: Comparison) -> str:
    """Text table: one row per (type, option); marks cheapest and fastest."""
    lines = [
        f"compare: {cmp.stack} ({cmp.region})"
        + (f", deadline {cmp.deadline_hours:g} h" if cmp.deadline_hours is not None else ""),
        *header_lines(cmp),
        "* = uses an estimated price or assumption; run cost = whole stack x wall hours "
        "(a Capacity Block pool: its whole window); (low-high) = the range",
        "FASTEST = fastest of all rows; CHEAPEST = cheapest within budget and deadline",
        "",
        f"  {'type':<15} {'nodes':>5} {'chips':>5} {'wall h (range)':>20} {'option':<16} "
        f"{'stack $/h':>11} {'run $ (range)':>32} {'$/M tok':>9}  notes",
    ]
    for c in cmp.candidates:
        if not c.available:
            lines.append(f"  {c.instance_type:<15} {c.reason}")
            continue
        lines += [_row(cmp, c, o) for o in c.options]
        if c.unpriced:
            lines.append(f"  {'':<15} not priced here: {', '.join(c.unpriced)}")
        lines += [f"  {'':<15} not buyable at this size: {r}" for r in c.refused]
        lines += [f"  {'':<15} WARNING: {w}" for w in c.warnings]
        lines.append(
            f"  {'':<15} {c.sizing_note}; memory fit: at least {c.min_nodes} node(s); "
            f"MFU {c.mfu:.2f} ({c.mfu_range[0]:.2f}-{c.mfu_range[1]:.2f}; {c.mfu_origin})"
        )
    lines.append("")
    deadline = cmp.deadline_hours is not None
    lines += pick_lines("cheapest", cmp.cheapest, deadline)
    lines += pick_lines("fastest (of all rows)", cmp.fastest, deadline, "fastest: no priced row")
    if not _same_pick(cmp.fastest, cmp.fastest_within_budget):
        lines += pick_lines("fastest within budget", cmp.fastest_within_budget, deadline)
    return "\n".join(lines) + "\n"


def _same_pick(a: Pick | None, b: Pick | None) -> bool:
    return (a is None and b is None) or (
        a is not None
        and b is not None
        and (a.instance_type, a.option) == (b.instance_type, b.option)
    )
