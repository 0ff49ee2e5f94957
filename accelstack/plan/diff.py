"""What a change to the specs does: two sets of planned stacks compared (`accelstack diff`).

Pure: the input is, per side, a mapping of stack name to its side row (`plan/diffside.SideRow`:
the plan document of `Plan.to_dict()`, the priced verdict, each priced line item and the
usage-priced items, or the errors when the spec did not plan). Resources are matched by (type,
logical name): one that appears is *added*, one that disappears *removed*, one whose inputs
differ *changed*, or *replaced* when a differing input is one the pinned provider cannot update
in place (`catalog/provider_replacements.json`, generated from the provider source:
plan/replacements.py).
A replacement is carried to every dependent whose input holds one of its outputs
(plan/propagate.py): replaced too where that input forces it, else updated. A replaced or
removed resource that holds state (a stateful type, or one the program protects) is listed first,
in `stateful`; what create-before-delete does to the change (collisions, refusals, nodes that run
twice) is each stack's `create_before_delete` (plan/create_before_delete.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from accelstack.catalog import catalog_file
from accelstack.catalog.overlay import overlay_dir
from accelstack.plan import create_before_delete as cbd
from accelstack.plan.diff_inputs import changed_values, flatten
from accelstack.plan.diffmodel import (
    COST_KEYS,
    CostDelta,
    CostPair,
    DiffDocument,
    NodeRoll,
    OrphanedStack,
    ResourceChange,
    ResourceChanges,
    SideCost,
    StackCost,
    StackDiff,
    StackRoll,
    StackStatus,
    StatefulChange,
    Totals,
)
from accelstack.plan.diffprice import Billed, UsageChange, billed_pairs
from accelstack.plan.diffside import SideRow
from accelstack.plan.propagate import carried
from accelstack.plan.replacements import ProviderTable, provider_table
from accelstack.plan.rolls import node_rolls
from accelstack.plan.updates import sent_inputs

#: The hidden marker of the pull-request comment, so CI can find and update its own comment.
COMMENT_MARKER = "<!-- accelstack-diff -->"
#: The second line of a comment body that says the earlier comment no longer applies (the
#: change is below every threshold): CI updates its earlier comment with it, or posts nothing.
QUIET_MARKER = "<!-- accelstack-diff:quiet -->"
_TABLE = Path(__file__).resolve().parent.parent / "catalog" / "replacements.yaml"
_FILE = _TABLE.name  # a catalog file: the overlay may change it (catalog/sections.py)
_CHANGES_SHOWN = 12  # before -> after values kept per resource (the rest: see the plan JSON)


@dataclass(frozen=True)
class ReplaceTable:
    keys: dict[str, tuple[str, ...]]  # resource type -> inputs whose change always replaces it
    stateful: frozenset[str]  # resource types whose replacement or removal loses state
    provider: ProviderTable  # the generated table (conditional replacements included)


def replace_table(path: Path | None = None) -> ReplaceTable:
    """The stateful types of `path` (default: the bundled replacements.yaml with the catalog
    overlay's on top) with the pinned providers' generated replacement table."""
    return _replace_table(path, None if path else overlay_dir())


@cache
def _replace_table(path: Path | None, overlay: Path | None) -> ReplaceTable:
    data = (
        yaml.safe_load(path.read_text(encoding="utf-8")) if path else catalog_file(_FILE, overlay)
    )
    provider = provider_table()
    keys = {t: tuple(row.replace) for t, row in provider.rows.items()}
    return ReplaceTable(keys, frozenset(data["stateful_types"]), provider)


def _by_key(plan: dict[str, Any] | None) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["type"], r["name"]): r for r in (plan or {}).get("resources", [])}


def _row(r: dict[str, Any], table: ReplaceTable) -> ResourceChange:
    protect = bool((r.get("options") or {}).get("protect"))
    return ResourceChange(r["type"], r["name"], r["type"] in table.stateful or protect, protect)


def _compare(old: dict[str, Any], new: dict[str, Any], table: ReplaceTable) -> dict[str, Any]:
    """The changed input keys of one resource (with before -> after values of the changed
    leaves) and those of them that force a replacement. The head side is what Pulumi sends:
    an input the program lists in `ignoreChanges` keeps its base value (plan/updates.py)."""
    a = old.get("inputs") or {}
    b = sent_inputs(
        a, new.get("inputs") or {}, (new.get("options") or {}).get("ignoreChanges") or []
    )
    keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    if (old.get("options") or {}) != (new.get("options") or {}):
        keys.append("(options)")
    forcing = table.provider.forcing(new["type"], a, b)
    changes = changed_values(
        flatten({k: a.get(k) for k in keys}), flatten({k: b.get(k) for k in keys})
    )
    return {"keys": keys, "replace_keys": forcing, "changes": changes[:_CHANGES_SHOWN]}


def resource_changes(
    base: dict[str, Any] | None, head: dict[str, Any] | None, table: ReplaceTable | None = None
) -> ResourceChanges:
    """added / changed / replaced / removed between two plan documents (either may be None);
    a replacement carried to a dependent replaces it (or updates it) too, `via` naming whence."""
    table = table or replace_table()
    old, new = _by_key(base), _by_key(head)
    deltas = {key: _compare(old[key], new[key], table) for key in old.keys() & new.keys()}
    direct = {k for k, d in deltas.items() if d["replace_keys"]}
    reach = carried(base, head, direct, table.provider, lambda k: cbd.deletes_first(new[k]))
    out: dict[str, list[ResourceChange]] = {"changed": [], "replaced": []}
    for key in sorted(deltas):
        d, c = deltas[key], reach.get(key)
        keys = d["keys"] + [i for i in (c.inputs if c else ()) if i not in d["keys"]]
        forcing = d["replace_keys"] + [
            i for i in (c.forcing if c else ()) if i not in d["replace_keys"]
        ]
        if not keys:
            continue
        # protect on either side counts: unprotecting in the same change is still a loss
        row = _row(new[key], table)
        out["replaced" if forcing else "changed"].append(
            replace(
                row,
                stateful=row.stateful or _row(old[key], table).stateful,
                keys=tuple(keys),
                replace_keys=tuple(forcing),
                changes=tuple(d["changes"]),
                via=tuple(f"{t.split(':')[-1]} {n}" for t, n in (c.sources if c else ())),
            )
        )
    return ResourceChanges(
        added=tuple(_row(new[k], table) for k in sorted(new.keys() - old.keys())),
        changed=tuple(out["changed"]),
        replaced=tuple(out["replaced"]),
        removed=tuple(_row(old[k], table) for k in sorted(old.keys() - new.keys())),
    )


def diff_resources(
    base: dict[str, Any] | None, head: dict[str, Any] | None, table: ReplaceTable | None = None
) -> dict[str, list[dict[str, Any]]]:
    """`resource_changes` as its JSON form."""
    return resource_changes(base, head, table).to_dict()


def _cost_of(side: SideRow | None) -> SideCost | None:
    return None if side is None else side.cost


def _delta(base: SideCost | None, head: SideCost | None) -> CostDelta:
    def d(k: str) -> float:
        return round((head.get(k) if head else 0.0) - (base.get(k) if base else 0.0), 4)

    return CostDelta(*(d(k) for k in COST_KEYS))


def _status(base: SideRow | None, head: SideRow | None, res: ResourceChanges) -> StackStatus:
    if (head is not None and head.broken) or (base is not None and base.broken):
        return "error"
    if base is None:
        return "added"
    if head is None:
        return "removed"
    moved = _delta(_cost_of(base), _cost_of(head)).any()
    return "changed" if moved or res.any() else "unchanged"


def _priced(res: ResourceChanges, sides: tuple[SideRow | None, SideRow | None]) -> ResourceChanges:
    """Each listed resource with its monthly cost before and after (None: not priced), and
    its priced line items (quantity, unit price) on the two sides."""
    base, head = sides
    cb, ch = _cost_of(base), _cost_of(head)
    old, new = (cb.items if cb else {}), (ch.items if ch else {})

    def billed(name: str) -> tuple[Billed, ...]:
        return billed_pairs(
            base.lines_of(name) if base else (), head.lines_of(name) if head else ()
        )

    def each(rows: tuple[ResourceChange, ...]) -> tuple[ResourceChange, ...]:
        return tuple(
            replace(
                r, monthly_usd=CostPair(old.get(r.name), new.get(r.name)), billed=billed(r.name)
            )
            for r in rows
        )

    return ResourceChanges(*(each(res.of(a)) for a in ("added", "changed", "replaced", "removed")))


def stack_diff(
    name: str,
    base: SideRow | None,
    head: SideRow | None,
    accelerated: Callable[[str], bool] | None = None,
    vcpus: Callable[[str], int | None] | None = None,
) -> StackDiff:
    """One stack's diff: resources, node rolls, the edited inputs (before -> after), cost, and
    what create-before-delete does to the change. A side that does not plan (its errors)
    compares nothing: its resources are unknown, not removed. A stack gone from the head is not
    destroyed: its resources stay (none is listed removed) and it keeps its base cost and usage
    (`orphaned` in the document)."""
    old_plan = base.plan if base else None
    new_plan = head.plan if head else None
    broken = bool((head and head.broken) or (base and base.broken))
    kept = head is None and base is not None
    res = resource_changes(None, None) if broken or kept else resource_changes(old_plan, new_plan)
    cb, ch = _cost_of(base), _cost_of(head)
    if kept:
        ch = cb  # nothing destroys it: it keeps billing
    delta = _delta(None, None) if broken else _delta(cb, ch)  # unknown, never a saving
    both = old_plan and new_plan and not broken
    why = {(r.type, r.name): _why_replaced(r) for r in res.replaced}
    rolls = node_rolls(old_plan, new_plan, why, accelerated) if both else []
    before = dict(base.inputs) if base else {}
    after = dict(head.inputs) if head else {}
    if broken:  # what a side that does not read lacks is unknown, not removed
        kept_keys = before.keys() & after.keys()
        before, after = {k: before[k] for k in kept_keys}, {k: after[k] for k in kept_keys}
    inputs = changed_values(before, after)
    edited = inputs if base and head else []
    checks = _checks(old_plan, new_plan, res, edited, (ch, vcpus)) if both else ()
    shown = head or base
    return StackDiff(
        stack=name,
        status=_status(base, head, res),
        file=shown.file if shown else None,
        errors=head.errors if head else (),
        base_errors=base.errors if base else (),
        inputs=tuple(edited),
        rolls=tuple(NodeRoll.from_dict(r) for r in rolls),
        resources=_priced(res, (base, head)),
        cost=StackCost(cb, ch, delta),
        headline=head.headline if head else "",
        checks=checks,
        usage=None if broken else _usage(base, base if kept else head),
    )


def _usage(base: SideRow | None, head: SideRow | None) -> UsageChange | None:
    """The usage-priced items of the two sides (None: neither has a usage file)."""
    old, new = (base.usage if base else None), (head.usage if head else None)
    return None if old is None and new is None else UsageChange(old, new)


def _why_replaced(r: ResourceChange) -> str:
    keys = ", ".join(r.replace_keys or ())
    return f"{keys}; carried from {', '.join(r.via)}" if r.via else keys


def _checks(
    old_plan: dict[str, Any] | None,
    new_plan: dict[str, Any] | None,
    res: ResourceChanges,
    edited: list[dict[str, Any]],
    priced: tuple[SideCost | None, Callable[[str], int | None] | None],
) -> tuple[cbd.Finding, ...]:
    head, vcpus = priced
    provider = replace_table().provider

    def why(key: tuple[str, str], field: str) -> str:
        row = provider.rows.get(key[0])
        cond = row.conditional.get(field) if row else None
        return cond.why if cond else "the provider cannot change it in place"

    def hourly(name: str) -> float | None:
        if head is None or name not in head.items or not head.monthly_usd:
            return None
        return float(head.items[name]) * head.hourly_usd / head.monthly_usd

    replaced = {(r.type, r.name): tuple(r.replace_keys or ()) for r in res.replaced}
    nf = cbd.NodeFacts(vcpus or (lambda _t: None), hourly)
    return cbd.check(old_plan, new_plan, replaced, edited, why, nf)


def diff_stack(
    name: str,
    base: SideRow | None,
    head: SideRow | None,
    accelerated: Callable[[str], bool] | None = None,
    vcpus: Callable[[str], int | None] | None = None,
) -> dict[str, Any]:
    """`stack_diff` as its JSON form."""
    return stack_diff(name, base, head, accelerated, vcpus).to_dict()


def _rolls(stacks: list[StackDiff]) -> tuple[StackRoll, ...]:
    found = [StackRoll(s.stack, r) for s in stacks for r in s.rolls]
    return tuple(sorted(found, key=lambda r: (not r.roll.accelerated, r.stack, r.roll.name)))


def _orphaned(stacks: list[StackDiff], base: Mapping[str, SideRow]) -> tuple[OrphanedStack, ...]:
    """The stacks gone from the head (their stack file or spec deleted): nothing destroys them,
    so they keep billing outside the repository until someone runs `pulumi destroy`. The file
    named deleted is the one that made the stack: its stack file, else its spec."""
    return tuple(
        OrphanedStack(
            s.stack,
            s.file,
            float(s.cost.base.monthly_usd if s.cost.base else 0.0),
            (f"pulumi destroy -s {s.stack}", f"pulumi stack rm {s.stack}"),
            _stack_file(base.get(s.stack)) or _spec_of(s.file),
        )
        for s in stacks
        if s.status == "removed"
    )


def _stack_file(row: SideRow | None) -> str | None:
    return row.stack_file if row else None


def _spec_of(label: str | None) -> str | None:
    """The spec path of a side row's file label (`<side>:<path>`, or the path alone)."""
    return label.rsplit(":", 1)[-1] if label else None


def _stateful(stacks: list[StackDiff]) -> tuple[StatefulChange, ...]:
    return tuple(
        StatefulChange(s.stack, action, r)
        for s in stacks
        for action in ("replaced", "removed")
        for r in s.resources.of(action)
        if r.stateful
    )


def _totals(stacks: list[StackDiff]) -> Totals:
    """Cost over the stacks planned on both sides: one that cannot be planned is in no total
    (its cost is unknown, never a saving)."""
    stacks = [s for s in stacks if s.status != "error"]

    def total(side: str, key: str) -> float:
        costs = [getattr(s.cost, side) for s in stacks]
        return round(sum(float(c.get(key) if c else 0.0) for c in costs), 4)

    base = CostDelta(*(total("base", k) for k in COST_KEYS))
    head = CostDelta(*(total("head", k) for k in COST_KEYS))
    delta = CostDelta(*(round(getattr(head, k) - getattr(base, k), 4) for k in COST_KEYS))
    base_m, head_m = base.monthly_usd, head.monthly_usd
    percent = (
        round(100 * (head_m - base_m) / base_m, 2) if base_m else (0.0 if not head_m else None)
    )
    return Totals(base, head, delta, percent)


def diff_document(
    base: Mapping[str, SideRow],
    head: Mapping[str, SideRow],
    labels: tuple[str, str],
    unchanged: list[str] | None = None,
    accelerated: Callable[[str], bool] | None = None,
    gate_changes: list[str] | None = None,
    vcpus: Callable[[str], int | None] | None = None,
) -> DiffDocument:
    """The whole diff document (see module doc); stacks sorted by name. `unchanged`: the
    stacks whose spec and stack config are identical on both sides (not planned; not in the
    totals). `accelerated(instance_type) -> bool` marks the node rolls that interrupt jobs.
    `gate_changes`: the edits to the ceiling or overlay the gate judges by, and to the usage
    file."""
    names = sorted(base.keys() | head.keys())
    stacks = [stack_diff(n, base.get(n), head.get(n), accelerated, vcpus) for n in names]
    return DiffDocument(
        base=labels[0],
        head=labels[1],
        rolls=_rolls(stacks),
        orphaned=_orphaned(stacks, base),
        stateful=_stateful(stacks),
        stacks=tuple(stacks),
        unchanged=tuple(sorted(unchanged or [])),
        totals=_totals(stacks),
        ok=not any(s.status == "error" or s.base_errors for s in stacks),
        gate_changes=tuple(gate_changes or ()),
    )


def diff_sides(
    base: Mapping[str, SideRow],
    head: Mapping[str, SideRow],
    labels: tuple[str, str],
    unchanged: list[str] | None = None,
    accelerated: Callable[[str], bool] | None = None,
) -> dict[str, Any]:
    """`diff_document` as its JSON form (without the gate changes only the CLI knows)."""
    doc = diff_document(base, head, labels, unchanged, accelerated).to_dict()
    del doc["gate_changes"]
    return doc


def _stack_percent(s: StackDiff) -> float | None:
    base = float(s.cost.base.monthly_usd if s.cost.base else 0.0)
    delta = float(s.cost.delta.monthly_usd)
    return 100 * abs(delta) / base if base else (None if delta else 0.0)


def stack_over(s: StackDiff, usd: float | None, percent: float | None) -> bool:
    """One stack's monthly cost moves (up or down) by at least a threshold given."""
    if usd is not None and abs(float(s.cost.delta.monthly_usd)) >= usd:
        return True
    pct = _stack_percent(s)
    return percent is not None and (pct is None or pct >= percent)


def _by_replacement(roll: StackRoll) -> bool:
    return any(c.get("key") == "(replaced)" for c in roll.roll.causes)


def below_threshold(
    document: DiffDocument | Mapping[str, Any],
    usd: float | None,
    percent: float | None,
    per_stack: dict[str, float] | None = None,
) -> bool:
    """True when the change is not worth a comment: no program input changed (the gate cannot
    plan those), no gate input changed (the ceiling, the overlay, the usage file), nothing
    stateful replaced or removed, no node of an accelerated pool rolls and no node rolls
    because of a replacement, nothing create-before-delete refuses, deletes first or runs
    twice, no stack fails, and no stack's monthly cost moves by its threshold (`per_stack`
    overrides the USD threshold per stack name), and no stack file is removed (the stack keeps
    billing). Thresholds are per stack, never netted across stacks: +$300k on one and -$300k
    on another posts. The usage-priced items are estimates outside every threshold. A JSON
    form (`diff --format json`) is read back into the typed document first."""
    doc = document if isinstance(document, DiffDocument) else DiffDocument.from_dict(document)
    per_stack = per_stack or {}
    if doc.gate_changes:  # a ceiling, overlay or usage file edit always posts
        return False
    if doc.program_changes or doc.errors:  # what cannot be planned always posts
        return False
    if doc.stateful or not doc.ok or doc.orphaned:
        return False
    if any(r.roll.accelerated or _by_replacement(r) for r in doc.rolls):
        return False  # a replacement that rolls nodes is never quiet
    if any(s.checks for s in doc.stacks):
        return False  # a refusal, a delete-first gap or nodes that run twice
    if usd is None and percent is None and not per_stack:
        return False
    return not any(stack_over(s, per_stack.get(s.stack, usd), percent) for s in doc.stacks)
