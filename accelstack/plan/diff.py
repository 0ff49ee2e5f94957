"""What a change to the specs does: two sets of planned stacks compared (`accelstack diff`).

Pure: the input is, per side, a mapping of stack name to a *side row* (`{"file", "plan",
"cost"}` with `plan` the plan document of `Plan.to_dict()` and `cost` the priced verdict, or
`{"file", "errors"}` when the spec did not plan). Resources are matched by (type, logical name):
one that appears is *added*, one that disappears *removed*, one whose inputs differ *changed*,
or *replaced* when a differing input is one the provider cannot update in place
(`catalog/replacements.yaml`). A replaced or removed resource that holds state (a stateful
type, or one the program protects) is listed first, in `stateful`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from accelstack.catalog import catalog_file
from accelstack.catalog.overlay import overlay_dir
from accelstack.plan.diff_inputs import changed_values, flatten
from accelstack.plan.rolls import node_rolls
from accelstack.plan.updates import sent_inputs

#: The hidden marker of the pull-request comment, so CI can find and update its own comment.
COMMENT_MARKER = "<!-- accelstack-diff -->"
#: The second line of a comment body that says the earlier comment no longer applies (the
#: change is below every threshold): CI updates its earlier comment with it, or posts nothing.
QUIET_MARKER = "<!-- accelstack-diff:quiet -->"
_TABLE = Path(__file__).resolve().parent.parent / "catalog" / "replacements.yaml"
_FILE = _TABLE.name  # a catalog file: the overlay may change it (catalog/sections.py)
_COST_KEYS = ("hourly_usd", "monthly_usd", "run_usd")
_CHANGES_SHOWN = 12  # before -> after values kept per resource (the rest: see the plan JSON)


@dataclass(frozen=True)
class ReplaceTable:
    keys: dict[str, tuple[str, ...]]  # resource type -> inputs whose change forces replacement
    stateful: frozenset[str]  # resource types whose replacement or removal loses state


def replace_table(path: Path | None = None) -> ReplaceTable:
    """The table in `path`; default: the bundled one with the catalog overlay's on top."""
    return _replace_table(path, None if path else overlay_dir())


@cache
def _replace_table(path: Path | None, overlay: Path | None) -> ReplaceTable:
    data = (
        yaml.safe_load(path.read_text(encoding="utf-8")) if path else catalog_file(_FILE, overlay)
    )
    keys = {t: tuple(row["keys"]) for t, row in data["replace_on_change"].items()}
    return ReplaceTable(keys, frozenset(data["stateful_types"]))


def _nested(inputs: dict[str, Any], dotted: str) -> Any:
    value: Any = inputs
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _by_key(plan: dict[str, Any] | None) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["type"], r["name"]): r for r in (plan or {}).get("resources", [])}


def _row(r: dict[str, Any], table: ReplaceTable, **extra: Any) -> dict[str, Any]:
    protect = bool((r.get("options") or {}).get("protect"))
    return {
        "type": r["type"],
        "name": r["name"],
        "stateful": r["type"] in table.stateful or protect,
        "protect": protect,
        **extra,
    }


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
    forcing = [k for k in table.keys.get(new["type"], ()) if _nested(a, k) != _nested(b, k)]
    changes = changed_values(
        flatten({k: a.get(k) for k in keys}), flatten({k: b.get(k) for k in keys})
    )
    return {"keys": keys, "replace_keys": forcing, "changes": changes[:_CHANGES_SHOWN]}


def diff_resources(
    base: dict[str, Any] | None, head: dict[str, Any] | None, table: ReplaceTable | None = None
) -> dict[str, list[dict[str, Any]]]:
    """added / changed / replaced / removed between two plan documents (either may be None)."""
    table = table or replace_table()
    old, new = _by_key(base), _by_key(head)
    out: dict[str, list[dict[str, Any]]] = {"added": [], "changed": [], "replaced": []}
    out["removed"] = [_row(old[k], table) for k in sorted(old.keys() - new.keys())]
    out["added"] = [_row(new[k], table) for k in sorted(new.keys() - old.keys())]
    for key in sorted(old.keys() & new.keys()):
        delta = _compare(old[key], new[key], table)
        if delta["keys"]:
            kind = "replaced" if delta["replace_keys"] else "changed"
            # protect on either side counts: unprotecting in the same change is still a loss
            row = _row(new[key], table, **delta)
            row["stateful"] = row["stateful"] or _row(old[key], table)["stateful"]
            out[kind].append(row)
    return out


def _cost_of(side: dict[str, Any] | None) -> dict[str, Any] | None:
    return (side or {}).get("cost")


def _delta(base: dict[str, Any] | None, head: dict[str, Any] | None) -> dict[str, float]:
    return {k: round((head or {}).get(k, 0.0) - (base or {}).get(k, 0.0), 4) for k in _COST_KEYS}


def _status(base: dict[str, Any] | None, head: dict[str, Any] | None, res: dict[str, Any]) -> str:
    if (head or {}).get("errors") or (base or {}).get("errors"):
        return "error"
    if base is None:
        return "added"
    if head is None:
        return "removed"
    moved = any(_delta(_cost_of(base), _cost_of(head)).values())
    return "changed" if moved or any(res.values()) else "unchanged"


def _resource_costs(res: dict[str, list[dict[str, Any]]], cb: Any, ch: Any) -> None:
    """Each listed resource gains its monthly cost before and after (None: not priced)."""
    old, new = (cb or {}).get("items") or {}, (ch or {}).get("items") or {}
    for rows in res.values():
        for r in rows:
            r["monthly_usd"] = {"base": old.get(r["name"]), "head": new.get(r["name"])}


def diff_stack(
    name: str,
    base: dict[str, Any] | None,
    head: dict[str, Any] | None,
    accelerated: Any = None,
) -> dict[str, Any]:
    """One stack's diff: resources, node rolls, the edited inputs (before -> after), cost. A
    side that does not plan (its errors) compares nothing: its resources are unknown, not
    removed. A stack gone from the head is not destroyed: its resources stay (none is listed
    removed) and it keeps its base cost (`orphaned` in the document)."""
    old_plan, new_plan = (base or {}).get("plan"), (head or {}).get("plan")
    broken = bool((head or {}).get("errors") or (base or {}).get("errors"))
    kept = head is None and base is not None
    res = diff_resources(None, None) if broken or kept else diff_resources(old_plan, new_plan)
    cb, ch = _cost_of(base), _cost_of(head)
    if head is None and base is not None:
        ch = cb  # nothing destroys it: it keeps billing
    _resource_costs(res, cb, ch)
    replaced = {(r["type"], r["name"]) for r in res["replaced"]}
    both = old_plan and new_plan and not broken
    rolls = node_rolls(old_plan, new_plan, replaced, accelerated) if both else []
    inputs = changed_values((base or {}).get("inputs") or {}, (head or {}).get("inputs") or {})
    return {
        "stack": name,
        "status": _status(base, head, res),
        "file": (head or base or {}).get("file"),
        "errors": (head or {}).get("errors") or [],
        "base_errors": (base or {}).get("errors") or [],
        "inputs": inputs if base and head else [],
        "rolls": rolls,
        "resources": res,
        "cost": {"base": cb, "head": ch, "delta": _delta(cb, ch)},
    }


def _rolls(stacks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = [{"stack": s["stack"], **r} for s in stacks for r in s.get("rolls", [])]
    return sorted(found, key=lambda r: (not r["accelerated"], r["stack"], r["name"]))


def _orphaned(stacks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The stacks gone from the head (their stack file or spec removed): nothing destroys them,
    so they keep billing outside the repository until someone runs `pulumi destroy`."""
    return [
        {
            "stack": s["stack"],
            "file": s["file"],
            "monthly_usd": float((s["cost"]["base"] or {}).get("monthly_usd", 0.0)),
            "destroy": [f"pulumi destroy -s {s['stack']}", f"pulumi stack rm {s['stack']}"],
        }
        for s in stacks
        if s["status"] == "removed"
    ]


def _stateful(stacks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = []
    for s in stacks:
        for action in ("replaced", "removed"):
            for r in s["resources"][action]:
                if r["stateful"]:
                    found.append({"stack": s["stack"], "action": action, **r})
    return found


def _totals(stacks: list[dict[str, Any]]) -> dict[str, Any]:
    def total(side: str, key: str) -> float:
        return round(sum(float((s["cost"][side] or {}).get(key, 0.0)) for s in stacks), 4)

    base_m, head_m = total("base", "monthly_usd"), total("head", "monthly_usd")
    out: dict[str, Any] = {f"base_{k}": total("base", k) for k in _COST_KEYS}
    out |= {f"head_{k}": total("head", k) for k in _COST_KEYS}
    out |= {f"delta_{k}": round(out[f"head_{k}"] - out[f"base_{k}"], 4) for k in _COST_KEYS}
    out["delta_monthly_percent"] = (
        round(100 * (head_m - base_m) / base_m, 2) if base_m else (0.0 if not head_m else None)
    )
    return out


def diff_sides(
    base: dict[str, dict[str, Any]],
    head: dict[str, dict[str, Any]],
    labels: tuple[str, str],
    unchanged: list[str] | None = None,
    accelerated: Any = None,
) -> dict[str, Any]:
    """The whole diff document (see module doc); stacks sorted by name. `unchanged`: the
    stacks whose spec and stack config are identical on both sides (not planned; not in the
    totals). `accelerated(instance_type) -> bool` marks the node rolls that interrupt jobs."""
    names = sorted(base.keys() | head.keys())
    stacks = [diff_stack(n, base.get(n), head.get(n), accelerated) for n in names]
    return {
        "version": 2,
        "base": labels[0],
        "head": labels[1],
        "rolls": _rolls(stacks),
        "orphaned": _orphaned(stacks),
        "stateful": _stateful(stacks),
        "stacks": stacks,
        "unchanged": sorted(unchanged or []),
        "totals": _totals(stacks),
        "ok": not any(s["status"] == "error" or s["base_errors"] for s in stacks),
    }


def _stack_percent(s: dict[str, Any]) -> float | None:
    base = float((s["cost"]["base"] or {}).get("monthly_usd", 0.0))
    delta = float(s["cost"]["delta"]["monthly_usd"])
    return 100 * abs(delta) / base if base else (None if delta else 0.0)


def stack_over(s: dict[str, Any], usd: float | None, percent: float | None) -> bool:
    """One stack's monthly cost moves (up or down) by at least a threshold given."""
    if usd is not None and abs(float(s["cost"]["delta"]["monthly_usd"])) >= usd:
        return True
    pct = _stack_percent(s)
    return percent is not None and (pct is None or pct >= percent)


def below_threshold(
    doc: dict[str, Any],
    usd: float | None,
    percent: float | None,
    per_stack: dict[str, float] | None = None,
) -> bool:
    """True when the change is not worth a comment: nothing stateful replaced or removed, no
    node of an accelerated pool rolls, no stack fails, and no stack's monthly cost moves by
    its threshold (`per_stack` overrides the USD threshold per stack name), and no stack file
    is removed (the stack keeps billing). Thresholds are per stack, never netted across
    stacks: +$300k on one and -$300k on another posts."""
    per_stack = per_stack or {}
    if doc.get("gate_changes"):  # a ceiling or overlay edit always posts
        return False
    if doc["stateful"] or not doc["ok"] or doc.get("orphaned"):
        return False
    if any(r["accelerated"] for r in doc.get("rolls", [])):
        return False
    if usd is None and percent is None and not per_stack:
        return False
    return not any(stack_over(s, per_stack.get(s["stack"], usd), percent) for s in doc["stacks"])
