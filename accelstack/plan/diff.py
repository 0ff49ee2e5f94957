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

#: The hidden marker of the pull-request comment, so CI can find and update its own comment.
COMMENT_MARKER = "<!-- accelstack-diff -->"
_TABLE = Path(__file__).resolve().parent.parent / "catalog" / "replacements.yaml"
_COST_KEYS = ("hourly_usd", "monthly_usd", "run_usd")


@dataclass(frozen=True)
class ReplaceTable:
    keys: dict[str, tuple[str, ...]]  # resource type -> inputs whose change forces replacement
    stateful: frozenset[str]  # resource types whose replacement or removal loses state


@cache
def replace_table(path: Path = _TABLE) -> ReplaceTable:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
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
    """The changed input keys of one resource and those of them that force a replacement."""
    a, b = old.get("inputs") or {}, new.get("inputs") or {}
    keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    if (old.get("options") or {}) != (new.get("options") or {}):
        keys.append("(options)")
    forcing = [k for k in table.keys.get(new["type"], ()) if _nested(a, k) != _nested(b, k)]
    return {"keys": keys, "replace_keys": forcing}


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
    if head is not None and head.get("errors"):
        return "error"
    if base is None:
        return "added"
    if head is None:
        return "removed"
    moved = any(_delta(_cost_of(base), _cost_of(head)).values())
    return "changed" if moved or any(res.values()) else "unchanged"


def diff_stack(
    name: str, base: dict[str, Any] | None, head: dict[str, Any] | None
) -> dict[str, Any]:
    res = diff_resources((base or {}).get("plan"), (head or {}).get("plan"))
    cb, ch = _cost_of(base), _cost_of(head)
    return {
        "stack": name,
        "status": _status(base, head, res),
        "file": (head or base or {}).get("file"),
        "errors": (head or {}).get("errors") or [],
        "base_errors": (base or {}).get("errors") or [],
        "resources": res,
        "cost": {"base": cb, "head": ch, "delta": _delta(cb, ch)},
    }


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
) -> dict[str, Any]:
    """The whole diff document (see module doc); stacks sorted by name. `unchanged`: the
    stacks whose spec is byte-identical on both sides (not planned; not in the totals)."""
    stacks = [diff_stack(n, base.get(n), head.get(n)) for n in sorted(base.keys() | head.keys())]
    return {
        "version": 1,
        "base": labels[0],
        "head": labels[1],
        "stateful": _stateful(stacks),
        "stacks": stacks,
        "unchanged": sorted(unchanged or []),
        "totals": _totals(stacks),
        "ok": not any(s["status"] == "error" for s in stacks),
    }


def below_threshold(doc: dict[str, Any], usd: float | None, percent: float | None) -> bool:
    """True when the change is not worth a comment: nothing stateful replaced or removed, no
    stack fails, and the monthly cost rises less than every threshold given."""
    if doc["stateful"] or not doc["ok"] or (usd is None and percent is None):
        return False
    t = doc["totals"]
    if usd is not None and t["delta_monthly_usd"] >= usd:
        return False
    pct = t["delta_monthly_percent"]
    return percent is None or (pct is not None and pct < percent)
