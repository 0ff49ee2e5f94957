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
from accelstack.cost.estimate import TrainingEstimate
from accelstack.cost.guard import check_budget, estimate_for
from accelstack.cost.layout import LayoutFit, activation_span, batch_knees, search, span_of
from accelstack.cost.rates import default_layout
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
            f"same deadline: the fewest nodes that finish within {self.deadline_hours:g} h, "
            "each at the fastest TP x PP x CP x DP layout that fits it (at least the memory fit)"
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
    capacity: str | None = None  # launched on demand above the capacity threshold: why

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
    layout: str = ""  # the parallel layout the row is priced at and what limits it

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


@dataclass(frozen=True)
class Sized:
    """A candidate's node count (0: the sizing cannot be met), the note saying how, and the
    layout it is priced at (None: the default layout, as `price`)."""

    nodes: int
    note: str
    layout: LayoutFit | None = None
    warning: str | None = None  # more nodes than the work needs (deadline sizing)


def _size(stack: Stack, instance_type: str, fit: MemoryFit, sizing: Sizing) -> Sized:
    """The candidate's size under `sizing` (chips: the default layout; deadline: the
    searched layout at each node count)."""
    cat = stack.catalog
    per_node = cat.instance(instance_type).chips
    max_nodes = cat.scale.max_pool_nodes  # EKS node-group limits (scale.yaml)
    min_nodes = fit.min_nodes
    if sizing.basis == "deadline":
        assert sizing.deadline_hours is not None
        return DeadlineSizer(stack, instance_type, fit).size(sizing.deadline_hours)
    assert sizing.chips is not None
    nodes = sizing.chips // per_node
    if nodes < min_nodes:
        return Sized(
            0,
            f"a {sizing.chips}-chip budget gives {nodes} node(s) of {per_node} chips; "
            f"memory fit needs at least {min_nodes}",
        )
    if nodes > max_nodes:
        return Sized(
            0, f"a {sizing.chips}-chip budget needs {nodes} nodes; a pool allows {max_nodes}"
        )
    return Sized(nodes, f"{sizing.chips} chips // {per_node} per node = {nodes} node(s)")


#: Deadline sizing adds nodes while the extra nodes deliver at least this share of their
#: ideal speed-up (a step from n to m nodes: (hours_n / hours_m - 1) / (m / n - 1)).
MIN_MARGINAL_EFFICIENCY = 0.5
#: A deadline sizing whose node-hours exceed the memory-fit minimum's by more than this share
#: carries a warning: the deadline, not the work, is what the extra nodes buy.
MAX_EXTRA_NODE_HOURS = 0.25
#: Node counts deadline sizing tries are multiples of the largest power of two up to
#: nodes / NODE_GRAIN: every chip count it tries divides by the model-parallel spans large
#: runs need (at most 1/NODE_GRAIN more nodes than the exact count).
NODE_GRAIN = 64


def marginal_efficiency(n: int, hours_n: float, m: int, hours_m: float) -> float:
    """Share of the ideal speed-up that going from n to m nodes delivers."""
    return (hours_n / hours_m - 1.0) / (m / n - 1.0) if m > n else 0.0


def grained(n: int, unit: int = 1) -> int:
    """`n` rounded up to a node count deadline sizing tries: a multiple of `unit` (the nodes
    the smallest span whose activations fit takes) and of the largest power of two up to
    n / NODE_GRAIN."""
    grain = max(unit, 2 ** int(math.log2(max(1, n // NODE_GRAIN))))
    return int(math.ceil(n / grain) * grain)


@dataclass(frozen=True)
class _At:
    hours: float
    fit: LayoutFit


class DeadlineSizer:
    """Deadline sizing of one candidate type: the wall hours of each node count at the
    fastest layout that fits it (accelstack.cost.layout.search), each node count once."""

    def __init__(self, stack: Stack, instance_type: str, fit: MemoryFit) -> None:
        self.stack, self.instance_type, self.fit = stack, instance_type, fit
        self.catalog = cat = stack.catalog
        self.pool_max = cat.scale.max_pool_nodes  # EKS node-group limits
        self.per_node = cat.instance(instance_type).chips
        self.knees = batch_knees(cat, instance_type, stack.workload)
        self._seen: dict[int, _At | None] = {}

    def grained(self, n: int) -> int:
        """`n` rounded up to a count whose chips divide by the smallest span whose
        activations fit there (accelstack.cost.layout.activation_span)."""
        cat, wl = self.catalog, self.stack.workload
        span = activation_span(cat, self.instance_type, wl, self.fit, n * self.per_node)
        return grained(n, 2 ** math.ceil(math.log2(max(1, span / self.per_node))))

    def at(self, nodes: int) -> _At | None:
        """Wall hours at `nodes` and their layout; None when no layout fits."""
        if nodes not in self._seen:
            self._seen[nodes] = self._evaluate(nodes)
        return self._seen[nodes]

    def _evaluate(self, nodes: int) -> _At | None:
        wl = self.stack.workload
        found = search(self.catalog, self.instance_type, nodes, wl, self.fit, wl.stack)
        if found is None:
            return None
        reference = self.stack.option_lists.reference  # the option does not change the speed
        candidate = retarget_stack(self.stack, self.instance_type, nodes, reference)
        return _At(estimate_for(candidate, found.layout).wall_hours, found)

    def _step(self, n: int) -> int:
        """About 12% more nodes, or the next batch knee before that (where one node more
        would need a wider span)."""
        m = min(self.pool_max, self.grained(n + max(1, n // 8)))
        return next((k for k in self.knees if n < k < m), m)

    def _pays(self, n: int, at: _At, m: int, nxt: _At | None) -> bool:
        if nxt is None:
            return False
        return marginal_efficiency(n, at.hours, m, nxt.hours) >= MIN_MARGINAL_EFFICIENCY

    def _next(self, n: int, at: _At) -> tuple[int, _At | None]:
        """The next node count: the step's, else (where it does not pay because it holds no
        layout or needs a wider span than `n`'s) the next batch knee beyond it, where the
        wider span is fed a whole sequence per rank."""
        m = self._step(n)
        nxt = self.at(m)
        if self._pays(n, at, m, nxt):
            return m, nxt
        if nxt is not None and span_of(nxt.fit.layout) <= span_of(at.fit.layout):
            return m, nxt  # the same span stops paying: scaling and goodput, not the layout
        knee = next((k for k in self.knees if m < k <= self.pool_max), None)
        far = self.at(knee) if knee is not None else None
        if knee is not None and self._pays(n, at, knee, far):
            return knee, far
        return m, nxt

    def fewest(self, lo: int, hi: int, ok: Callable[[_At | None], bool]) -> int:
        """The fewest node count the search tries in (lo, hi] that is `ok` (bisection; `hi`
        is)."""
        tried = {self.grained(k) for k in range(lo + 1, hi + 1)}
        counts = [k for k in sorted(tried) if k <= hi]
        counts = counts or [hi]
        left, right = 0, len(counts) - 1
        while left < right:
            mid = (left + right) // 2
            if ok(self.at(counts[mid])):
                right = mid
            else:
                left = mid + 1
        return counts[left]

    def first_fitting(self) -> int | None:
        """The fewest nodes from the memory fit up whose chips hold a layout."""
        lo, n = self.fit.min_nodes - 1, self.grained(self.fit.min_nodes)
        while self.at(n) is None:
            if n >= self.pool_max:
                return None
            lo, n = n, self._step(n)
        return self.fewest(lo, n, lambda a: a is not None)

    def size(self, deadline: float) -> Sized:
        start = self.first_fitting()
        if start is None:
            return Sized(
                0,
                f"no layout fits the model's state and activations on up to {self.pool_max:,} nodes",
            )
        n, prev = start, start - 1
        at = self.at(n)
        assert at is not None
        while at.hours > deadline + 1e-9 and n < self.pool_max:
            step = self._next(n, at)
            if step[1] is None or not self._pays(n, at, *step):
                return Sized(0, self._no_longer_pays(deadline, n, at, *step))
            prev, (n, at) = n, (step[0], step[1])
        if at.hours > deadline + 1e-9:
            return Sized(
                0,
                f"needs more than {self.pool_max:,} nodes to finish in {deadline:g} h "
                f"({at.hours:,.1f} h on {self.pool_max:,}); a pool allows at most {self.pool_max:,}",
            )
        n = self.fewest(prev, n, lambda a: a is not None and a.hours <= deadline + 1e-9)
        best = self.at(n)
        assert best is not None
        floor = f"; memory fit sets {n}" if n == self.fit.min_nodes and n > 1 else ""
        return Sized(
            n,
            f"{best.hours:,.1f} h on {n:,} node(s) meets the {deadline:g} h deadline (fewest "
            f"nodes the layout search tries, scaling and goodput included){floor}",
            best.fit,
            self.extra_node_hours(n),
        )

    def _no_longer_pays(self, deadline: float, n: int, at: _At, m: int, nxt: _At | None) -> str:
        more = f"{m:,} nodes: {nxt.hours:,.1f} h" if nxt else f"{m:,} nodes hold no layout"
        return (
            f"cannot finish in {deadline:g} h: {at.hours:,.1f} h on {n:,} node(s) "
            f"({at.fit.label()}), and more nodes no longer pay ({more}; scaling efficiency, "
            "goodput and the pipeline bubble fall with node count)"
        )

    def extra_node_hours(self, nodes: int) -> str | None:
        """A warning when `nodes` spend more than MAX_EXTRA_NODE_HOURS more node-hours than
        the fewest nodes that hold a layout, for the same work."""
        start = self.first_fitting()
        base, here = (self.at(start) if start else None), self.at(nodes)
        if start is None or base is None or here is None or nodes <= start:
            return None
        extra = nodes * here.hours / (start * base.hours) - 1.0
        if extra <= MAX_EXTRA_NODE_HOURS:
            return None
        return (
            f"more nodes no longer pay: {nodes:,} node(s) spend {extra:+.0%} node-hours against "
            f"{start:,} node(s) for the same work (scaling efficiency, goodput and the pipeline "
            f"bubble fall with node count; above {MAX_EXTRA_NODE_HOURS:.0%} this warns)"
        )


def model_parallel_layout(chips: int, global_batch: int | None, chips_per_node: int) -> str | None:
    """The tensor/pipeline parallelism each data-parallel rank needs when the global batch
    gives fewer than one sequence per chip (None when it gives at least one): a chip-budget
    row is priced at the default layout (as `price`), which assumes one sequence per rank."""
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


def capacity_block_refusal(stack: Stack, nodes: int) -> str | None:
    """Why `nodes` instances cannot be bought as Capacity Blocks (capacity_blocks.yaml: per
    block and per account), or None."""
    return stack.catalog.capacity_blocks.over_limit(nodes)


def on_demand_flag(stack: Stack, instance_type: str, nodes: int, limit: int | None) -> str | None:
    """Why `nodes` on-demand instances need a capacity conversation: above `limit` (else
    scale.yaml on_demand_capacity), with the vCPU quota of the type's family they need."""
    cat = stack.catalog
    most = cat.scale.on_demand_capacity.max_instances if limit is None else limit
    if nodes <= most:
        return None
    inst = cat.instance(instance_type)
    code = cat.quotas[cat.device_kinds[cat.family_of(instance_type).device_kind].quota_family]
    code_on_demand = code.on_demand
    where = "--capacity-nodes" if limit is not None else "scale.yaml on_demand_capacity"
    return (
        f"{nodes:,} on-demand {instance_type} is above {most:,} instances ({where}): reserve "
        f"the capacity with AWS and raise the on-demand vCPU quota {code_on_demand} to "
        f"{nodes * inst.vcpus:,} (`accelstack preflight` reads yours)"
    )


def _option_run(
    stack: Stack,
    instance_type: str,
    nodes: int,
    opt: str,
    est: TrainingEstimate,
    on_demand_max: int | None = None,
) -> OptionRun:
    """One purchase option priced through the same rules as `price` (spot: with the
    interruption overhead that check_budget applies), with the candidate's run estimate `est`
    (the option does not change the speed: one estimate serves every option)."""
    v = check_budget(retarget_stack(stack, instance_type, nodes, opt), estimate=est)
    cat = stack.catalog
    rate = cat.instance_rate(stack.region, instance_type, opt)
    years = stack.option_lists.commitment_years.get(opt)
    launched_on_demand = cat.purchase(opt).unreserved_on_demand
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
        capacity=(
            on_demand_flag(stack, instance_type, nodes, on_demand_max)
            if launched_on_demand
            else None
        ),
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
    on_demand_max: int | None = None,
) -> Candidate:
    """Every priced option of one candidate type (`options`, else the catalog's defaults),
    sized per `sizing`; on-demand rows above `on_demand_max` nodes (else the catalog's
    threshold) flagged."""
    if options is None:
        options = stack.option_lists.compare_default
    reason = _availability(stack, instance_type)
    if reason is not None:
        return Candidate(instance_type, f"not available: {reason}")
    sizing = sizing or sizing_for(stack, None, None)
    fit = _memory_fit(stack, instance_type)
    if fit.experts_overflow:
        return Candidate(instance_type, f"not available: {experts_overflow_note(fit)}")
    sized = _size(stack, instance_type, fit, sizing)
    nodes = sized.nodes
    if nodes == 0:
        return Candidate(instance_type, f"not available: {sized.note}", min_nodes=fit.min_nodes)
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
    lay = sized.layout.layout if sized.layout else None
    est = estimate_for(retarget_stack(stack, instance_type, nodes, buyable[0]), lay)
    runs = tuple(_option_run(stack, instance_type, nodes, o, est, on_demand_max) for o in buyable)
    return _candidate(stack, instance_type, fit, sized, est, runs, options, priced, refused)


def _layout_note(stack: Stack, instance_type: str, sized: Sized, chips: int) -> str:
    """The layout the row is priced at, and what limits it."""
    if sized.layout is not None:
        return sized.layout.describe()
    lay = default_layout(stack.catalog, instance_type, stack.workload)
    dp = max(1, chips // (lay.tensor_parallel * lay.context_parallel))
    return (
        f"layout TP{lay.tensor_parallel} PP1 CP{lay.context_parallel} DP{dp} (the default, "
        "as `price`: tensor parallelism by the model's size, no pipeline)"
    )


def _candidate(
    stack: Stack,
    instance_type: str,
    fit: MemoryFit,
    sized: Sized,
    est: TrainingEstimate,
    runs: tuple[OptionRun, ...],
    options: Sequence[str],
    priced: Sequence[str],
    refused: tuple[str, ...],
) -> Candidate:
    per_node = est.chips // sized.nodes
    batch = (
        model_parallel_layout(est.chips, stack.workload.global_batch_size, per_node)
        if sized.layout is None
        else None
    )
    warnings = tuple(w for w in (batch, sized.warning) if w)
    return Candidate(
        instance_type=instance_type,
        reason=None,
        nodes=sized.nodes,
        min_nodes=fit.min_nodes,
        chips=est.chips,
        wall_hours=est.wall_hours,
        mfu=est.mfu,
        options=runs,
        unpriced=tuple(o for o in options if o not in priced),
        mfu_origin=est.mfu_origin,
        mfu_estimate=est.mfu_is_estimate,
        sizing_note=sized.note,
        mfu_warning=est.mfu_warning,
        mfu_range=est.mfu_range,
        mfu_basis=est.mfu_basis,
        compute_hours=est.compute_hours,
        goodput=est.goodput,
        one_time_hours=est.one_time_hours,
        refused=refused,
        warnings=warnings,
        layout=_layout_note(stack, instance_type, sized, est.chips),
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
        c.layout,
        c.mfu_origin,
        f"price: {o.price_source}",
    ]
    if o.capacity:
        assumptions.append(f"capacity: {o.capacity}")
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
    on_demand_max_nodes: int | None = None,
) -> Comparison:
    """Every candidate on equal work (chip budget or deadline), its options (`options`, else
    the catalog's `compare_default` rows), the two picks; on-demand rows above
    `on_demand_max_nodes` (else scale.yaml on_demand_capacity) flagged."""
    types = tuple(instance_types) if instance_types else stack.catalog.compare_candidates()
    lists = stack.option_lists
    opts = check_options(lists.compare_default if options is None else options, lists)
    sizing = sizing_for(stack, chips, deadline_hours)
    cands = tuple(evaluate(stack, t, opts, sizing, on_demand_max_nodes) for t in types)
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
    if o.capacity:
        notes.append("above the on-demand capacity threshold (see capacity:)")
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
        lines += [f"  {'':<15} capacity: {o.option}: {o.capacity}" for o in c.options if o.capacity]
        lines += [f"  {'':<15} WARNING: {w}" for w in c.warnings]
        lines.append(f"  {'':<15} {c.layout}")
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
