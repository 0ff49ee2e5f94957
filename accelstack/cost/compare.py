"""Price one workload on every candidate instance type: `accelstack compare`.

For each candidate type (default: trn1/trn1n/trn2/trn3/p5/p5e/p5en .48xlarge-class) in the
spec's region: nodes needed (memory fit, at least the spec's workload-pool count), wall hours,
and under every purchase option that has a price there: the whole stack's hourly cost, run cost
and USD per million tokens, each checked against the spec's budget and an optional deadline.
A type not offered or not priced in the region is listed as "not available: <reason>", never
priced at $0. The cheapest and the fastest (type, option) that fit budget and deadline are
marked; `cheapest_target` returns the cheapest for `accelstack new --cheapest`.

The workload pool is swapped in the resolved stack (`retarget_stack`) and priced with the same
rules as `accelstack price`, so the other pools, the control plane, NAT and storage count too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from accelstack.catalog import Catalog, load_catalog
from accelstack.cost.guard import Verdict, check_budget
from accelstack.errors import CatalogError, VerdictError
from accelstack.resolve import Stack, resolve
from accelstack.spec import Spec

DEFAULT_TYPES: tuple[str, ...] = (
    "trn1.32xlarge",
    "trn1n.32xlarge",
    "trn2.48xlarge",
    "trn3.48xlarge",
    "p5.48xlarge",
    "p5e.48xlarge",
    "p5en.48xlarge",
)
#: Options compared; "reservation" is billed at the on-demand rate, so it adds nothing.
COMPARE_OPTIONS: tuple[str, ...] = (
    "on-demand",
    "spot",
    "savings-plan-1y",
    "savings-plan-3y",
    "capacity-block",
)


@dataclass(frozen=True)
class OptionRun:
    option: str
    hourly_usd: float  # whole stack
    monthly_usd: float
    pool_hourly_usd: float
    run_usd: float
    usd_per_million_tokens: float
    estimate: bool
    over: tuple[str, ...]  # budget reasons, empty when within budget

    @property
    def fits_budget(self) -> bool:
        return not self.over


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


@dataclass(frozen=True)
class Comparison:
    stack: str
    region: str
    candidates: tuple[Candidate, ...]
    deadline_hours: float | None
    cheapest: Pick | None
    fastest: Pick | None


def retarget_stack(stack: Stack, instance_type: str, nodes: int, option: str) -> Stack:
    """`stack` with its workload pool moved to `nodes` x `instance_type` under `option`."""
    cat = stack.catalog
    inst = cat.instance(instance_type)
    fam = cat.families[inst.family]
    dev = cat.device_kinds[fam.device_kind]
    old = stack.workload_pool
    spec_pool = old.spec
    new = dataclasses.replace(
        old,
        instance=inst,
        family=fam,
        device=dev,
        nodes=nodes,
        purchase_option=option,
        reservation_id=old.reservation_id if option in ("capacity-block", "reservation") else None,
        root_volume_gib=spec_pool.root_volume_gib or fam.default_root_volume_gib,
        compile_cache=dev.compile_cache and spec_pool.compile_cache is not False,
        efa=inst.efa_supported if spec_pool.efa is None else (spec_pool.efa and inst.efa_supported),
    )
    pools = tuple(new if p.name == old.name else p for p in stack.pools)
    return dataclasses.replace(
        stack, pools=pools, compile_cache_enabled=any(p.compile_cache for p in pools)
    )


def _availability(stack: Stack, instance_type: str) -> str | None:
    cat = stack.catalog
    if instance_type not in cat.instances or not cat.instances[instance_type].accelerated:
        return "not a known accelerated instance type"
    offered = cat.zones_offering(stack.region, instance_type)
    if not offered:
        return f"not offered in {stack.region} per the catalog"
    zone = stack.spec.workload_pool.availability_zone or stack.spec.availability_zone
    zid = cat.zone_id(stack.region, zone) if zone else None
    if zid and zid not in offered:
        return f"not offered in the spec's zone {zone} ({zid}); zones that do: {', '.join(offered)}"
    if cat.instances[instance_type].preview and not stack.spec.preview:
        return "preview type; the spec does not set preview: true"
    fam = cat.family_of(instance_type)
    if stack.spec.workload.precision not in fam.peak_tflops:
        return f"no {stack.spec.workload.precision} peak figure for {fam.accelerator}"
    if not any(cat.has_rate(stack.region, instance_type, o) for o in COMPARE_OPTIONS):
        return f"no price for {instance_type} in {stack.region} in the catalog"
    return None


def evaluate(
    stack: Stack,
    instance_type: str,
    options: Sequence[str] = COMPARE_OPTIONS,
) -> Candidate:
    """Every priced option of one candidate type."""
    reason = _availability(stack, instance_type)
    if reason is not None:
        return Candidate(instance_type, f"not available: {reason}")
    from accelstack.catalog.sizing import memory_fit

    wl = stack.spec.workload
    fit = memory_fit(stack.catalog, instance_type, wl.model.params_billion, wl.precision)
    nodes = max(fit.min_nodes, stack.workload_pool.nodes)
    runs: list[OptionRun] = []
    unpriced: list[str] = []
    verdict: Verdict | None = None
    for opt in options:
        if not stack.catalog.has_rate(stack.region, instance_type, opt):
            unpriced.append(opt)
            continue
        verdict = check_budget(retarget_stack(stack, instance_type, nodes, opt))
        runs.append(
            OptionRun(
                option=opt,
                hourly_usd=verdict.cost.hourly_usd,
                monthly_usd=verdict.cost.monthly_usd,
                pool_hourly_usd=verdict.run.pool_hourly_usd,
                run_usd=verdict.run.run_usd,
                usd_per_million_tokens=verdict.run.usd_per_million_tokens,
                estimate=verdict.cost.estimate,
                over=tuple(verdict.reasons),
            )
        )
    if verdict is None:
        return Candidate(
            instance_type,
            f"not available: no price for {instance_type} in "
            f"{stack.region} under {', '.join(options)}",
        )
    est = verdict.estimate
    return Candidate(
        instance_type=instance_type,
        reason=None,
        nodes=nodes,
        min_nodes=fit.min_nodes,
        chips=est.chips,
        wall_hours=est.wall_hours,
        mfu=est.mfu,
        options=tuple(runs),
        unpriced=tuple(unpriced),
    )


def _order(option: str) -> int:
    return COMPARE_OPTIONS.index(option) if option in COMPARE_OPTIONS else len(COMPARE_OPTIONS)


def pick(
    candidates: Sequence[Candidate], deadline_hours: float | None
) -> tuple[Pick | None, Pick | None]:
    """(cheapest, fastest) among options within budget and deadline.

    Cheapest: lowest run cost; ties by wall hours, then type name, then option order.
    Fastest: lowest wall hours; ties by run cost, then type name, then option order.
    """
    fits: list[Pick] = []
    for c in candidates:
        if not c.available:
            continue
        if deadline_hours is not None and c.wall_hours > deadline_hours:
            continue
        for o in c.options:
            if o.fits_budget:
                fits.append(Pick(c.instance_type, c.nodes, o.option, o.run_usd, c.wall_hours))
    if not fits:
        return None, None
    cheapest = min(fits, key=lambda p: (p.run_usd, p.wall_hours, p.instance_type, _order(p.option)))
    fastest = min(fits, key=lambda p: (p.wall_hours, p.run_usd, p.instance_type, _order(p.option)))
    return cheapest, fastest


def compare(
    stack: Stack,
    instance_types: Sequence[str] | None = None,
    deadline_hours: float | None = None,
    options: Sequence[str] = COMPARE_OPTIONS,
) -> Comparison:
    types = tuple(instance_types) if instance_types else DEFAULT_TYPES
    cands = tuple(evaluate(stack, t, options) for t in types)
    cheapest, fastest = pick(cands, deadline_hours)
    return Comparison(stack.name, stack.region, cands, deadline_hours, cheapest, fastest)


def cheapest_target(
    spec: Spec,
    catalog: Catalog | None = None,
    instance_types: Sequence[str] | None = None,
    deadline_hours: float | None = None,
    options: Sequence[str] = COMPARE_OPTIONS,
) -> tuple[str, int, str]:
    """(instance_type, nodes, option) of the cheapest run within budget and deadline.

    For `accelstack new NAME --from PRESET --cheapest`. Raises VerdictError when nothing fits.
    """
    cat = catalog or load_catalog()
    stack = resolve(spec, cat)
    for opt in options:
        if opt not in COMPARE_OPTIONS:
            raise CatalogError(
                f"unknown purchase option '{opt}' (allowed: {', '.join(COMPARE_OPTIONS)})"
            )
    result = compare(stack, instance_types, deadline_hours, options)
    if result.cheapest is None:
        why = f" and a {deadline_hours:g} h deadline" if deadline_hours is not None else ""
        raise VerdictError(
            f"{spec.name}: no candidate instance type fits the budget{why} "
            "(run `accelstack compare` for the figures)"
        )
    c = result.cheapest
    return c.instance_type, c.nodes, c.option


def render(cmp: Comparison) -> str:
    """Text table: one row per (type, option); marks cheapest and fastest."""
    lines = [
        f"compare: {cmp.stack} ({cmp.region})"
        + (f", deadline {cmp.deadline_hours:g} h" if cmp.deadline_hours is not None else ""),
        "* = uses an estimated price; run cost = whole stack x wall hours",
        "",
    ]
    head = (
        f"  {'type':<15} {'nodes':>5} {'chips':>5} {'wall h':>9} {'option':<16} "
        f"{'stack $/h':>11} {'run $':>15} {'$/M tok':>9}  notes"
    )
    lines.append(head)
    for c in cmp.candidates:
        if not c.available:
            lines.append(f"  {c.instance_type:<15} {c.reason}")
            continue
        late = cmp.deadline_hours is not None and c.wall_hours > cmp.deadline_hours
        for o in c.options:
            notes = []
            for label, p in (("CHEAPEST", cmp.cheapest), ("FASTEST", cmp.fastest)):
                if p and p.instance_type == c.instance_type and p.option == o.option:
                    notes.append(label)
            if late:
                notes.append("misses deadline")
            if o.over:
                notes.append("over budget: " + "; ".join(o.over))
            star = "*" if o.estimate else ""
            lines.append(
                f"  {c.instance_type:<15} {c.nodes:>5} {c.chips:>5} {c.wall_hours:>9,.1f} "
                f"{o.option:<16} {o.hourly_usd:>10,.2f}{star or ' '} {o.run_usd:>14,.0f}"
                f"{star or ' '} {o.usd_per_million_tokens:>8.3f}{star or ' '} {', '.join(notes)}"
            )
        if c.unpriced:
            lines.append(f"  {'':<15} not priced here: {', '.join(c.unpriced)}")
        lines.append(f"  {'':<15} memory fit: at least {c.min_nodes} node(s); MFU {c.mfu:.2f}")
    lines.append("")
    for label, p in (("cheapest", cmp.cheapest), ("fastest", cmp.fastest)):
        if p is None:
            lines.append(
                f"{label}: nothing fits the budget"
                + (" and deadline" if cmp.deadline_hours is not None else "")
            )
        else:
            lines.append(
                f"{label}: {p.nodes} x {p.instance_type} ({p.option}), "
                f"{p.wall_hours:,.1f} h, ${p.run_usd:,.0f}"
            )
    return "\n".join(lines) + "\n"
