"""Machine-readable and Markdown forms of the cost reports (`price`, `compare`).

The text forms live next to the data (guard.render_report, compare.render); these are for
tools (`--format json`, through accelstack.jsonout) and pull-request comments
(`--format markdown`). `*` marks a figure that uses an estimated price, as in the text.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from accelstack.cost.compare import Candidate, Comparison, OptionRun, Pick, header_lines
from accelstack.cost.guard import Verdict


def _usd(x: float, est: bool = False, digits: int = 2) -> str:
    return f"${x:,.{digits}f}" + ("\\*" if est else "")


def _cell(text: str) -> str:
    """Markdown table cell: pipes escaped, one line."""
    return text.replace("|", "\\|").replace("\n", " ")


def verdict_markdown(v: Verdict) -> str:
    """The cost report as a Markdown section: totals, budget, line items, verdict."""
    c, est = v.cost, v.cost.estimate
    lines = [
        f"### Cost: `{v.stack}` ({c.region})",
        "",
        "| | cost | limit | |",
        "|---|---:|---:|---|",
    ]
    for chk in v.checks:
        digits = 0 if chk.label == "training run" else 2
        limit = _usd(chk.limit, digits=digits) if chk.limit is not None else "none"
        state = "ok" if chk.ok else "**over**"
        lines.append(f"| {chk.label} | {_usd(chk.actual, est, digits)} | {limit} | {state} |")
    lines += ["", "| pool / category | what | USD per hour |", "|---|---|---:|"]
    for it in c.items:
        where = it.pool or it.category
        lines.append(f"| {_cell(where)} | {_cell(it.what)} | {_usd(it.hourly_usd, it.estimate)} |")
    verdict = "within budget" if v.ok else "over budget: " + "; ".join(v.reasons)
    lines += ["", f"**Verdict:** {_cell(verdict)}"]
    if v.depends_on:
        lines.append(f"\n**Depends on an estimate:** {_cell('; '.join(v.depends_on))}")
    if est:
        lines.append("\n\\* uses an estimated price or usage assumption")
    return "\n".join(lines) + "\n"


def comparison_dict(cmp: Comparison) -> dict[str, Any]:
    """JSON-ready form of a comparison (docs/cost.md, "JSON contract"): every candidate and
    option row with its `cheapest`, `fastest` and `within_budget` flags, the picks, and the
    cheapest pick's `break_even`."""
    return {
        "stack": cmp.stack,
        "region": cmp.region,
        "deadline_hours": cmp.deadline_hours,
        "sizing": {**asdict(cmp.sizing), "describe": cmp.sizing.describe()},
        "options": list(cmp.options),
        "spot_assumption": cmp.spot_assumption or None,
        "candidates": [
            {
                **asdict(c),
                "available": c.available,
                "mfu_range": _lohi(c.mfu_range),
                "options": [_option(cmp, c.instance_type, o) for o in c.options],
            }
            for c in cmp.candidates
        ],
        "cheapest": _pick(cmp.cheapest),
        "fastest": _pick(cmp.fastest),
        "fastest_within_budget": _pick(cmp.fastest_within_budget),
        "break_even": _break_even(cmp.cheapest),
    }


def _lohi(pair: tuple[float, float]) -> dict[str, float]:
    return {"low": pair[0], "high": pair[1]}


def _break_even(p: Pick | None) -> dict[str, Any] | None:
    if p is None or p.break_even is None:
        return None
    return {**asdict(p.break_even), "line": p.break_even.line()}


def _pick(p: Pick | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {
        **asdict(p),
        "run_usd_range": _lohi(p.run_usd_range),
        "wall_hours_range": _lohi(p.wall_hours_range),
        "depends_on_estimate": p.depends_on_estimate,
        "too_close_to_call": p.too_close,
        "break_even": _break_even(p),
    }


def _same_row(a: Pick | None, b: Pick | None) -> bool:
    if a is None or b is None:
        return a is b
    return (a.instance_type, a.option) == (b.instance_type, b.option)


def _is(p: Pick | None, instance_type: str, option: str) -> bool:
    return p is not None and (p.instance_type, p.option) == (instance_type, option)


def _option(cmp: Comparison, instance_type: str, o: Any) -> dict[str, Any]:
    return {
        **asdict(o),
        "over": list(o.over),
        "fits_budget": o.fits_budget,
        "within_budget": o.fits_budget,
        "ranked": o.ranked,
        "cheapest": _is(cmp.cheapest, instance_type, o.option),
        "fastest": _is(cmp.fastest, instance_type, o.option),
        "fastest_within_budget": _is(cmp.fastest_within_budget, instance_type, o.option),
        "wall_hours_range": _lohi(o.wall_hours_range),
        "run_usd_range": _lohi(o.run_usd_range),
        "blocks": o.blocks,  # Capacity Blocks the row assumes (capacity_blocks: their sizes)
    }


def _marks(cmp: Comparison, instance_type: str, option: str) -> list[str]:
    marks = [
        label
        for label, p in (("cheapest", cmp.cheapest), ("fastest", cmp.fastest))
        if _is(p, instance_type, option)
    ]
    within = cmp.fastest_within_budget
    if _is(within, instance_type, option) and not _is(cmp.fastest, instance_type, option):
        marks.append("fastest within budget")
    return marks


def comparison_markdown(cmp: Comparison) -> str:
    """One table row per (type, option), marks for the cheapest and fastest."""
    deadline = f", deadline {cmp.deadline_hours:g} h" if cmp.deadline_hours is not None else ""
    lines = [
        f"### Compare: `{cmp.stack}` ({cmp.region}{deadline})",
        "",
        *(f"- {_cell(line)}" for line in header_lines(cmp)),
        "",
        "| type | nodes | wall h (range) | option | stack $/h | run $ (range) | notes |",
        "|---|---:|---:|---|---:|---:|---|",
    ]
    for c in cmp.candidates:
        if not c.available:
            lines.append(f"| {c.instance_type} | | | | | | {_cell(c.reason or '')} |")
            continue
        lines += [_markdown_row(cmp, c, o) for o in c.options]
        lines += [f"| {c.instance_type} | | | | | | {_cell(r)} |" for r in c.refused]
        lines += [
            f"| {c.instance_type} | | | | | | capacity: {o.option}: {_cell(o.capacity)} |"
            for o in c.options
            if o.capacity
        ]
        lines += [f"| {c.instance_type} | | | | | | warning: {_cell(w)} |" for w in c.warnings]
        lines.append(f"| {c.instance_type} | | | | | | {_cell(c.layout)} |")
    lines += ["", *comparison_chart(cmp), *_markdown_picks(cmp)]
    return "\n".join(lines) + "\n"


def _markdown_row(cmp: Comparison, c: Candidate, o: OptionRun) -> str:
    """One (type, option) row of the comparison table, its notes last."""
    notes = _marks(cmp, c.instance_type, o.option)
    if o.commitment_usd is not None:
        notes.append(f"commitment {_usd(o.commitment_usd, digits=0)} over {o.term_years}y")
    if o.capacity_blocks:
        sizes = ", ".join(map(str, o.capacity_blocks))
        notes.append(f"{o.blocks} Capacity Block(s) ({sizes})")
    if o.capacity:
        notes.append("above the on-demand capacity threshold")
    if o.over:
        notes.append("over budget: " + "; ".join(o.over))
    lo, hi = o.run_usd_range
    run = (
        f"{_usd(o.run_usd, o.estimate, 0)} ({_usd(lo, digits=0)}-{_usd(hi, digits=0)})"
        if o.ranked
        else "not ranked"
    )
    w_lo, w_hi = o.wall_hours_range
    return (
        f"| {c.instance_type} | {c.nodes} | {o.wall_hours:,.1f} ({w_lo:,.0f}-{w_hi:,.0f}) "
        f"| {o.option} "
        f"| {_usd(o.hourly_usd, o.estimate)} | {run} "
        f"| {_cell(', '.join(notes))} |"
    )


def _markdown_picks(cmp: Comparison) -> list[str]:
    """The cheapest and fastest picks under the table, each with its break-even and caveats."""
    lines: list[str] = []
    picks = [("Cheapest", cmp.cheapest), ("Fastest (of all rows)", cmp.fastest)]
    if not _same_row(cmp.fastest, cmp.fastest_within_budget):
        picks.append(("Fastest within budget", cmp.fastest_within_budget))
    for label, p in picks:
        if p is None:
            lines.append(f"**{label}:** nothing fits the budget")
            continue
        lo, hi = p.run_usd_range
        lines.append(
            f"**{label}:** {p.nodes} x {p.instance_type} ({p.option}), "
            f"{p.wall_hours:,.1f} h, {_usd(p.run_usd, digits=0)} "
            f"({_usd(lo, digits=0)}-{_usd(hi, digits=0)})"
        )
        if p.break_even is not None:
            lines.append(f"  - {_cell(p.break_even.line())}")
            if p.too_close:
                lines.append("  - **too close to call**: run `accelstack trial` on both")
        if p.depends_on_estimate:
            lines.append(f"  - depends on an estimate: {_cell('; '.join(p.estimates))}")
        lines += [f"  - {_cell(a)}" for a in p.assumptions]
    return lines


#: Bars in the chart at most (the cheapest runs first), so it stays readable in a PR.
CHART_BARS = 12


def comparison_chart(cmp: Comparison) -> list[str]:
    """A Mermaid bar chart of the ranked runs' cost (GitHub renders ```mermaid blocks in
    markdown: https://docs.github.com/en/get-started/writing-on-github/working-with-advanced-formatting/creating-diagrams),
    cheapest first; empty when nothing is ranked."""
    runs = sorted(
        (o.run_usd, f"{c.instance_type} {o.option}", o.wall_hours)
        for c in cmp.candidates
        if c.available
        for o in c.options
        if o.ranked
    )[:CHART_BARS]
    if not runs:
        return []
    labels = ", ".join(f'"{label}"' for _, label, _ in runs)
    top = max(cost for cost, _, _ in runs)
    return [
        "```mermaid",
        "xychart-beta",
        f'    title "Training run cost, USD ({cmp.stack})"',
        f"    x-axis [{labels}]",
        f'    y-axis "USD" 0 --> {int(top * 1.1) + 1}',
        f"    bar [{', '.join(str(round(cost)) for cost, _, _ in runs)}]",
        "```",
        "",
    ]
