"""The formatters of the diff document (`plan/diffmodel.DiffDocument`, which `plan/diff.py`
produces): JSON, text, and markdown for a pull-request comment (the `github-comment` form starts
with a hidden marker). Each also takes the document's JSON form (a mapping, e.g. read back from
`diff --format json`)."""

from __future__ import annotations

from typing import Any

from accelstack.jsonout import dumps
from accelstack.plan.diff import COMMENT_MARKER, QUIET_MARKER
from accelstack.plan.diffmodel import (
    Action,
    DiffDocument,
    ResourceChange,
    SideCost,
    StackDiff,
    StatefulChange,
)
from accelstack.plan.diffprice import Billed, PricedLine, UsageChange, UsageItem
from accelstack.plan.rolls import roll_line

_ACTIONS: tuple[Action, ...] = ("replaced", "removed", "changed", "added")
#: GitHub refuses a comment body over 65,536 characters; past this, the per-stack resource
#: lists are left out (the summary, the stateful list and the table stay).
COMMENT_LIMIT = 60_000


Doc = DiffDocument | dict[str, Any]


def as_dict(doc: Doc) -> dict[str, Any]:
    """The document's JSON form (what `render_json` writes)."""
    return doc.to_dict() if isinstance(doc, DiffDocument) else doc


def as_document(doc: Doc) -> DiffDocument:
    """The typed document (what the text and markdown formatters read)."""
    return doc if isinstance(doc, DiffDocument) else DiffDocument.from_dict(doc)


def render_json(doc: Doc, comment: bool) -> str:
    """`diff --format json`: the document, and whether it is worth a comment."""
    return dumps({**as_dict(doc), "comment": comment})


def _usd(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"${x:,.{digits}f}"


def _signed(x: float, digits: int = 2) -> str:
    return f"{'+' if x >= 0 else '-'}${abs(x):,.{digits}f}"


def _pct(p: float | None) -> str:
    return "new" if p is None else f"{p:+.1f}%"


def _cost_of(stack: StackDiff, side: str, key: str) -> float | None:
    c: SideCost | None = getattr(stack.cost, side)
    return None if c is None else c.get(key)


def _verdict(stack: StackDiff, side: str) -> str:
    c: SideCost | None = getattr(stack.cost, side)
    if c is None:
        return "error" if side == "head" and stack.errors else "-"
    return "within budget" if c.ok else "OVER BUDGET"


def _why(r: ResourceChange) -> str:
    keys = r.replace_keys or r.keys or ()
    tag = " [protected]" if r.protect else (" [stateful]" if r.stateful else "")
    via = f" <- {', '.join(r.via)} replaced" if r.via else ""
    return (f" ({', '.join(keys)}{via})" if keys else "") + tag


def _change(c: dict[str, Any]) -> str:
    return f"{c['key']}: {_value(c['before'])} -> {_value(c['after'])}"


def readable_change(c: dict[str, Any]) -> list[str]:
    """One change as comment lines: a mapping (tags) key by key, multi-line text (user
    data, a script) line by line (`- old` / `+ new`), anything else as `key: a -> b`."""
    before, after = c["before"], c["after"]
    if isinstance(before, dict) or isinstance(after, dict):
        a, b = before if isinstance(before, dict) else {}, after if isinstance(after, dict) else {}
        keys = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        return [f"{c['key']}.{k}: {_value(a.get(k))} -> {_value(b.get(k))}" for k in keys]
    if "removed" in c or "added" in c:
        gone = [f"{c['key']}: - {x}" for x in c.get("removed", [])]
        return gone + [f"{c['key']}: + {x}" for x in c.get("added", [])]
    return [_change(c)]


def _value(v: Any) -> str:
    return "(none)" if v is None else str(v)


def _res_cost(r: ResourceChange) -> str:
    """` ($a -> $b/month)` when the resource is priced on either side."""
    m = r.monthly_usd
    if m.base is None and m.head is None:
        return ""
    return f" ({_usd(m.base)} -> {_usd(m.head)}/month)"


def _number(x: float) -> str:
    """A quantity: whole numbers with thousands separators, else up to two decimals."""
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.2f}".rstrip("0").rstrip(".")


def _rate(usd: float) -> str:
    """A unit price: cents, or as many decimals as the rate has (up to six: $0.0045)."""
    cents = f"{usd:,.2f}"
    exact = f"{usd:,.6f}".rstrip("0")
    return f"${cents if len(exact.split('.')[1]) <= 2 else exact}"


def _price(line: PricedLine) -> str:
    """`$45.00` (`*`: an estimated rate)."""
    return f"{_rate(line.unit_usd)}{'*' if line.estimate else ''}"


def _per(line: PricedLine) -> str:
    """What the unit price is per: `h` for an hourly unit, else the unit (`GiB-month`)."""
    return "h" if line.unit.endswith("-hour") else line.unit


def _what(line: PricedLine, quantity: str) -> str:
    """`16 x trn2.48xlarge` (hourly units), `1,600 GiB-month of ebs-gp3` (others); the cost
    report's description when the rate's subject is not known (an older accelstack's plan)."""
    if not line.rate_of:
        return line.what
    if line.unit.endswith("-hour"):
        return f"{quantity} x {line.rate_of}"
    return f"{quantity} {line.unit} of {line.rate_of}"


def priced_line(line: PricedLine) -> str:
    """One side's line item: `16 x trn2.48xlarge at $45.00/h`."""
    return f"{_what(line, _number(line.quantity))} at {_price(line)}/{_per(line)}"


def billed_line(b: Billed) -> str:
    """A line item before and after: `16 -> 24 x trn2.48xlarge at $45.00/h` (the same rate
    subject; `at $A -> $B/h` when its price moved), `16 x trn2.48xlarge at $A/h -> 16 x
    p5.48xlarge at $B/h` (another subject), `(none) -> ...` / `... -> (none)` when one side
    has no such item."""
    old, new = b.base, b.head
    if new is None:
        return f"{priced_line(old)} -> (none)" if old else ""
    if old is None:
        return f"(none) -> {priced_line(new)}"
    if not old.rate_of or (old.rate_of, old.unit) != (new.rate_of, new.unit):
        return f"{priced_line(old)} -> {priced_line(new)}"
    count = _number(old.quantity)
    if old.quantity != new.quantity:
        count = f"{count} -> {_number(new.quantity)}"
    price = _price(new)
    if _price(old) != price:
        price = f"{_price(old)} -> {price}"
    return f"{_what(new, count)} at {price}/{_per(new)}"


def _billed_lines(r: ResourceChange, action: Action) -> list[str]:
    """A listed resource's priced line items; an added or removed one's from its own side."""
    if action in ("added", "removed"):
        return [priced_line(line) for b in r.billed for line in (b.head or b.base,) if line]
    return [billed_line(b) for b in r.billed]


#: How the usage block names what it shows: estimates, outside every verdict and total.
USAGE_NOTE = "usage estimates at the catalog's rates; not in the budget verdict or the totals"


def _moved(a: str, b: str, arrow: str) -> str:
    return a if a == b else f"{a} {arrow} {b}"


def _amount(item: UsageItem | None) -> str:
    """`2,000`, `100 x 2` when each amount is billed twice (inter-AZ: both sides)."""
    if item is None:
        return "(none)"
    times = f" x {item.billed_times:g}" if item.billed_times != 1 else ""
    return f"{_number(item.amount)}{times}"


def _usage_usd(item: UsageItem | None) -> str:
    if item is None:
        return "(none)"
    if item.monthly_usd is None:
        return f"not priced (the stack has no {item.group.replace('_', ' ')})"
    return f"{_usd(item.monthly_usd)}{'*' if item.estimate else ''}"


def _usage_rate(old: UsageItem | None, new: UsageItem | None, arrow: str) -> str:
    """`$0.045 per gb`, the two when they differ."""

    def rate(i: UsageItem | None) -> str:
        return "(none)" if i is None else f"{_rate(i.rate_usd)} per {i.unit}"

    return _moved(rate(old or new), rate(new or old), arrow)


def _label(old: UsageItem | None, new: UsageItem | None) -> str:
    one = new or old
    return one.label if one else ""


def usage_item_line(old: UsageItem | None, new: UsageItem | None, arrow: str = "->") -> str:
    """`NAT gateway data processed (GB): 500 -> 2,000 at $0.045 per gb = $22.50 -> $90.00/month`
    (as `price --usage` words one side)."""
    amount = _moved(_amount(old), _amount(new), arrow)
    usd = _moved(_usage_usd(old), _usage_usd(new), arrow)
    return f"{_label(old, new)}: {amount} at {_usage_rate(old, new, arrow)} = {usd}/month"


def _usage_head(u: UsageChange) -> str:
    """`usage (from FILE; NOTE): $a -> $b/month (+$d)`."""
    old, new = (x.source if x else "(no usage file)" for x in (u.base, u.head))
    source = _moved(old, new, "->")
    base, head = (_usd(x.monthly_usd) if x else "-" for x in (u.base, u.head))
    return (
        f"usage (from {source}; {USAGE_NOTE}): {base} -> {head}/month "
        f"({_signed(u.delta_monthly_usd)})"
    )


def _usage_text(s: StackDiff) -> list[str]:
    if s.usage is None:
        return []
    rows = [usage_item_line(a, b) for a, b in s.usage.pairs()]
    return [f"  {_usage_head(s.usage)}", *(f"    {row}" for row in rows)]


def _md_usage(doc: DiffDocument) -> list[str]:
    """The usage-priced items per stack, before and after: estimates, outside every verdict."""
    rows = [(s.stack, s.usage) for s in doc.stacks if s.usage is not None]
    if not rows:
        return []
    lines = [
        f"**Usage-priced items** (monthly, from each side's usage file; {USAGE_NOTE})",
        "",
        "| stack | item | monthly amount | rate | USD/month |",
        "|---|---|---|---|---|",
    ]
    for stack, usage in rows:
        for a, b in usage.pairs():
            lines.append(
                f"| `{stack}` | {_label(a, b)} | {_moved(_amount(a), _amount(b), '→')} | "
                f"{_usage_rate(a, b, '→')} | {_moved(_usage_usd(a), _usage_usd(b), '→')} |"
            )
    return [*lines, ""]


def _roll_lines(doc: DiffDocument) -> list[str]:
    return [f"{r.stack}: {roll_line(r.roll.to_dict())}" for r in doc.rolls]


def _check_lines(doc: DiffDocument, kinds: tuple[str, ...]) -> list[str]:
    """The create-before-delete findings of every stack of these kinds, one line each."""
    return [f"{s.stack}: {c.line}" for s in doc.stacks for c in s.checks if c.kind in kinds]


#: (title, kinds, markdown alert) of the create-before-delete sections, in the order shown:
#: refusals before everything, the rest after the node rolls.
_REFUSED = ("REFUSED (AWS or Pulumi stops this change; do it as the line says)", ("refused",))
_OVERLAP = (
    "CREATED BEFORE THE OLD ONES ARE DELETED (both run during the update) OR DELETED FIRST",
    ("overlap", "delete-first"),
)


def _orphan_lines(doc: DiffDocument) -> list[str]:
    """A stack gone from the head: the file whose deletion removed it, not destroyed, still
    billing, and how to destroy it."""
    return [
        f"{o.stack}: {o.deleted or o.file} is deleted, but the stack is NOT destroyed and keeps "
        f"billing ({_usd(o.monthly_usd)}/month); to destroy it: `{o.destroy[0]}`, then "
        f"`{o.destroy[1]}`"
        for o in doc.orphaned
    ]


#: What the gate-input section lists: the files the gate reads itself, besides the stacks.
_GATE_NOTE = "the ceiling or catalog overlay the gate judges by, the usage file it prices"

#: What the reader must do about program changes, by acceptance.
_ACCEPT_HOW = {
    False: "NOT ACCEPTED: `accelstack check --strict` fails until a reviewer runs `accelstack "
    "accept` and commits accelstack-accept.yaml",
    True: "accepted by this change's accelstack-accept.yaml (it names exactly these inputs)",
}


def error_lines(doc: DiffDocument) -> list[str]:
    """What cannot be planned, first: the listing's own errors, then each stack whose head
    does not plan (`cannot plan: file:line: reason`) and each base that did not."""
    lines = [f"cannot list the stacks: {e}" for e in doc.errors]
    for s in doc.stacks:
        if s.errors:
            lines.append(f"{s.stack}: {s.headline or f'cannot plan: {s.errors[0]}'}")
        elif s.base_errors:
            lines.append(f"{s.stack}: the base did not plan: {s.base_errors[0]}")
    return lines


def program_lines(doc: DiffDocument) -> list[str]:
    """Each program input the change adds, edits or deletes, with its diff stat."""
    return [c.line() for c in doc.program_changes]


def _program_title(doc: DiffDocument) -> str:
    how = _ACCEPT_HOW[bool(doc.program_accepted)]
    return f"the gate cannot plan them, `pulumi up` runs them; {how}"


def _stateful_line(s: StatefulChange) -> str:
    r = s.resource
    return f"{s.stack}: {r.type} {r.name} is {s.action.upper()}{_why(r)}"


def _summary_line(doc: DiffDocument) -> str:
    t = doc.totals
    broken = sum(1 for s in doc.stacks if s.status == "error")
    left_out = f" ({broken} stack(s) that cannot be planned left out)" if broken else ""
    return (
        f"monthly {_usd(t.base.monthly_usd)} -> {_usd(t.head.monthly_usd)} "
        f"({_signed(t.delta.monthly_usd)}, {_pct(t.delta_monthly_percent)}); "
        f"hourly {_signed(t.delta.hourly_usd)}; training run {_signed(t.delta.run_usd, 0)}"
        f"{left_out}"
    )


def _counts(stack: StackDiff) -> str:
    res = stack.resources
    return (
        ", ".join(f"{len(res.of(a))} {a}" for a in _ACTIONS if res.of(a)) or "no resource changes"
    )


def _resource_lines(s: StackDiff) -> list[str]:
    lines = []
    for action in _ACTIONS:
        for r in s.resources.of(action):
            lines.append(f"  {action:<8} {r.type}  {r.name}{_why(r)}{_res_cost(r)}")
            lines += [
                f"             {line}" for c in r.changes or () for line in readable_change(c)
            ]
            lines += [f"             billed: {line}" for line in _billed_lines(r, action)]
    return lines


def _text_stack(s: StackDiff) -> list[str]:
    lines = [f"stack {s.stack} ({s.status}): {_counts(s)}"]
    lines += [f"  error: {line}" for line in s.errors]
    lines += [f"  base error: {line}" for line in s.base_errors]
    d = s.cost.delta
    for key, label, digits in (("hourly_usd", "hourly", 2), ("monthly_usd", "monthly", 2)):
        old, new = _cost_of(s, "base", key), _cost_of(s, "head", key)
        lines.append(f"  {label}: {_usd(old)} -> {_usd(new)} ({_signed(getattr(d, key), digits)})")
    old, new = _cost_of(s, "base", "run_usd"), _cost_of(s, "head", "run_usd")
    lines.append(f"  training run: {_usd(old, 0)} -> {_usd(new, 0)} ({_signed(d.run_usd, 0)})")
    lines.append(f"  verdict: base {_verdict(s, 'base')}; head {_verdict(s, 'head')}")
    lines += _usage_text(s)
    lines += [f"  input    {_change(c)}" for c in s.inputs]
    if s.status in ("changed", "error"):
        lines += _resource_lines(s)
    return lines


def render_text(document: Doc) -> str:
    doc = as_document(document)
    lines = [f"accelstack diff {doc.base} -> {doc.head}"]
    if error_lines(doc):
        lines.append("CANNOT PLAN (not priced, counted in no total):")
        lines += [f"  ! {line}" for line in error_lines(doc)]
    lines += _versions(doc, top=True)
    if doc.program_changes:
        lines.append(f"PROGRAM INPUTS CHANGED ({_program_title(doc)}):")
        lines += [f"  ! {line}" for line in program_lines(doc)]
    if doc.gate_changes:
        lines.append(f"GATE INPUTS CHANGED ({_GATE_NOTE}):")
        lines += [f"  ! {line}" for line in doc.gate_changes]
    lines += _text_section(_REFUSED[0], _check_lines(doc, _REFUSED[1]))
    if doc.rolls:
        lines.append("NODES ROLL OR ARE REMOVED (a running job on them is interrupted):")
        lines += [f"  ! {line}" for line in _roll_lines(doc)]
    lines += _text_section(_OVERLAP[0], _check_lines(doc, _OVERLAP[1]))
    if doc.orphaned:
        lines.append("STACKS REMOVED FROM THE REPOSITORY (not destroyed: they keep billing):")
        lines += [f"  ! {line}" for line in _orphan_lines(doc)]
    if doc.stateful:
        lines.append("STATEFUL RESOURCES REPLACED OR REMOVED (data is lost unless moved first):")
        lines += [f"  ! {_stateful_line(r)}" for r in doc.stateful]
    for s in doc.stacks:
        lines += _text_stack(s)
    if doc.unchanged:
        lines.append(f"unchanged specs: {', '.join(doc.unchanged)}")
    lines.append(f"total: {_summary_line(doc)}" if doc.stacks else "no stack changed")
    return "\n".join(lines + _versions(doc, top=False)) + "\n"


def _text_section(title: str, rows: list[str]) -> list[str]:
    return [f"{title}:", *(f"  ! {line}" for line in rows)] if rows else []


def _md_section(alert: str, title: str, note: str, rows: list[str]) -> list[str]:
    if not rows:
        return []
    return [f"> [!{alert}]", f"> **{title}** ({note}):", *(f"> - {line}" for line in rows), ""]


def check_verdict(stack: StackDiff) -> str:
    """What `accelstack check` says of the head side: pass, FAIL (budget or rules), error."""
    head = stack.cost.head
    if head is None:
        return "error" if stack.errors else "removed"
    rules = len(head.violations)
    if head.ok and not rules:
        return "pass"
    why = ([] if head.ok else ["over budget"]) + ([f"{rules} rule(s)"] if rules else [])
    return f"FAIL ({', '.join(why)})"


def _md_table(doc: DiffDocument) -> list[str]:
    lines = [
        "| stack | status | hourly | monthly | training run | verdict (base → head) | check |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in doc.stacks:
        d = s.cost.delta
        hourly = f"{_usd(_cost_of(s, 'head', 'hourly_usd'))} ({_signed(d.hourly_usd)})"
        monthly = f"{_usd(_cost_of(s, 'head', 'monthly_usd'))} ({_signed(d.monthly_usd)})"
        run = _signed(d.run_usd, 0)
        if s.status == "error":  # unknown: never a saving
            hourly = monthly = run = "cannot plan"
        lines.append(
            f"| `{s.stack}` | {s.status} | {hourly} | {monthly} | "
            f"{run} | {_verdict(s, 'base')} → {_verdict(s, 'head')} | "
            f"{check_verdict(s)} |"
        )
    return lines


def _md_code_line(line: str) -> str:
    """A line of a caution block: kept on one line, nothing read as markup."""
    return line.replace("\n", " ").replace("<", "&lt;").replace(">", "&gt;")


def _md_details(s: StackDiff) -> list[str]:
    rows = [(a, r) for a in _ACTIONS for r in s.resources.of(a)]
    if not rows and not s.errors and not s.base_errors:
        return []
    lines = [f"<details><summary><code>{s.stack}</code>: {_counts(s)}</summary>", ""]
    lines += [f"- error: {e}" for e in s.errors]
    lines += [f"- base error: {e}" for e in s.base_errors]
    for a, r in rows[:200]:
        lines.append(f"- **{a}** `{r.type}` `{r.name}`{_why(r)}{_res_cost(r)}")
        lines += [f"  - `{line}`" for c in r.changes or () for line in readable_change(c)]
        lines += [f"  - billed: `{line}`" for line in _billed_lines(r, a)]
    if len(rows) > 200:
        lines.append(f"- ... and {len(rows) - 200} more (see `accelstack diff --format json`)")
    return [*lines, "", "</details>"]


def _md_inputs(doc: DiffDocument) -> list[str]:
    """The edited inputs (spec values and stack config), before -> after, per stack."""
    rows = [(s.stack, c) for s in doc.stacks for c in s.inputs]
    if not rows:
        return []
    lines = ["| stack | input | before | after |", "|---|---|---|---|"]
    for stack, c in rows[:100]:
        lines.append(f"| `{stack}` | `{c['key']}` | {_cell(c['before'])} | {_cell(c['after'])} |")
    return [*lines, ""]


def _cell(v: Any) -> str:
    if v is None:
        return "_(none)_"
    text = str(v).replace("|", "\\|").replace("`", "'")
    return f"`{text}`"


def render_quiet(document: Doc) -> str:
    """The body that replaces an earlier comment once the change is below every threshold."""
    doc = as_document(document)
    return (
        f"{COMMENT_MARKER}\n{QUIET_MARKER}\n"
        f"accelstack diff `{doc.base}` → `{doc.head}`: below every cost threshold, nothing "
        f"stateful replaced, no accelerated node rolls, no node rolled by a replacement and "
        f"nothing created before the old one is deleted "
        f"(monthly {_signed(doc.totals.delta.monthly_usd)})."
        " An earlier cost comment on this pull request no longer applies.\n"
        + (f"{_planned_line(doc)}\n" if doc.planned_with else "")
    )


def _planned_line(doc: DiffDocument) -> str:
    return f"_{doc.planned_with.line()}_" if doc.planned_with else ""


def _versions(doc: DiffDocument, top: bool, markdown: bool = False) -> list[str]:
    """The line naming the versions that planned each side: first when the base was planned
    by another version (it explains the changes below), else last."""
    cross = doc.planned_with is not None and doc.planned_with.base_wheel is not None
    if doc.planned_with is None or cross != top:
        return []
    if not markdown:
        return [doc.planned_with.line()]
    return [_planned_line(doc), ""] if top else ["", _planned_line(doc)]


def render_markdown(document: Doc, comment: bool = False) -> str:
    """Markdown; `comment`: with the hidden marker CI uses to update its own PR comment."""
    doc = as_document(document)
    lines = [COMMENT_MARKER] if comment else []
    lines.append(f"### accelstack diff `{doc.base}` → `{doc.head}`")
    lines.append("")
    errors = [_md_code_line(line) for line in error_lines(doc)]
    lines += _md_section("CAUTION", "Cannot plan", "not priced, counted in no total", errors)
    lines += _versions(doc, top=True, markdown=True)
    programs = [_md_code_line(line) for line in program_lines(doc)] if doc.program_changes else []
    lines += _md_section("CAUTION", "Program inputs changed", _program_title(doc), programs)
    lines += _md_section(
        "CAUTION",
        "Gate inputs changed",
        _GATE_NOTE,
        list(doc.gate_changes),
    )
    lines += _md_section(
        "CAUTION",
        "Refused",
        "AWS or Pulumi stops this change; do it as the line says",
        _check_lines(doc, _REFUSED[1]),
    )
    rolls = _roll_lines(doc) if doc.rolls else []
    lines += _md_section(
        "WARNING", "Nodes roll or are removed", "a running job on them is interrupted", rolls
    )
    lines += _md_section(
        "WARNING",
        "Created before the old ones are deleted, or deleted first",
        "both run during the update, or one is missing for a while",
        _check_lines(doc, _OVERLAP[1]),
    )
    lines += _md_section(
        "CAUTION",
        "Stacks removed from the repository",
        "not destroyed: they keep billing",
        _orphan_lines(doc) if doc.orphaned else [],
    )
    lines += _md_section(
        "CAUTION",
        "Stateful resources are replaced or removed",
        "their data is lost",
        [_stateful_line(r) for r in doc.stateful],
    )
    if not doc.stacks:
        lines.append("No stack could be listed." if doc.errors else "No stack changed.")
    else:
        lines.append(f"**Cost:** {_summary_line(doc)}")
        lines += ["", *_md_table(doc), ""]
        lines += _md_inputs(doc)
        lines += _md_usage(doc)
        details = [line for s in doc.stacks for line in _md_details(s)]
        if sum(len(line) + 1 for line in lines + details) > COMMENT_LIMIT:
            details = ["Resource lists left out (too long for a comment): see the CI log."]
        lines += details
    if doc.unchanged:
        lines += ["", f"Unchanged specs: {', '.join(f'`{n}`' for n in doc.unchanged)}"]
    return "\n".join(lines + _versions(doc, top=False, markdown=True)) + "\n"


def change_lines(stack: StackDiff | dict[str, Any], base: str | None = None) -> list[str]:
    """One stack's changes (a `stack_diff`, or its JSON form) against `base`, for `plan
    --against`: node rolls first, then stateful replacements and removals, the edited
    inputs, and the resource counts."""
    if not isinstance(stack, StackDiff):
        base = base or stack.get("base", "the base")
        stack = StackDiff.from_dict(stack)
    s = stack
    lines = [f"changes against {base or 'the base'}: {_counts(s)}"]
    lines += [f"  ! refused: {c.line}" for c in s.refused()]
    lines += [f"  ! {roll_line(r.to_dict())}" for r in s.rolls]
    lines += [f"  ! {c.line}" for c in s.checks if c.kind != "refused"]
    for action in ("replaced", "removed"):
        for r in s.resources.of(action):
            if r.stateful:
                lines.append(f"  ! {r.type} {r.name} is {action.upper()}{_why(r)}")
    lines += [f"  input {_change(c)}" for c in s.inputs]
    d = s.cost.delta
    lines.append(f"  monthly {_signed(d.monthly_usd)}; training run {_signed(d.run_usd, 0)}")
    return lines
