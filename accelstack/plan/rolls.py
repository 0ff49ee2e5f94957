"""Which changes roll nodes, read from two plan documents (`Plan.to_dict()`), never from the spec.

A node group (or a standalone instance) rolls when it is replaced, when one of its roll keys
changes (a new launch-template version, an AMI release, a Kubernetes version), or when the
launch template it boots from changes in anything that makes a new template version (AMI,
user data with the Neuron LNC setting, instance type, volumes, ...; the template's own tags
do not). Inputs the program marks `ignoreChanges` never count. The table is
`catalog/replacements.yaml` (`node_rolls`), with its sources.

Each roll says how many nodes of which instance type, whether they carry accelerators (a
running training job is interrupted), and the before -> after values that caused it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from accelstack.catalog import catalog_file
from accelstack.catalog.overlay import overlay_dir
from accelstack.plan.diff_inputs import value_change

_TABLE = Path(__file__).resolve().parent.parent / "catalog" / "replacements.yaml"
_FILE = _TABLE.name  # a catalog file: the overlay may change it (catalog/sections.py)


@dataclass(frozen=True)
class NodeSource:
    count: str
    instance_type: str
    keys: tuple[str, ...]
    shrink: str | None = None
    #: input -> "<type>.<input>" of the resource whose value the provider stores for it when
    #: the program leaves it out (a node group's `version`: the cluster's)
    computed: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class RollTable:
    sources: dict[str, NodeSource]
    template_type: str
    no_new_version: frozenset[str]


def roll_table(path: Path | None = None) -> RollTable:
    """The table in `path`; default: the bundled one with the catalog overlay's on top."""
    return _roll_table(path, None if path else overlay_dir())


@cache
def _roll_table(path: Path | None, overlay: Path | None) -> RollTable:
    text = path.read_text(encoding="utf-8") if path else None
    data = (yaml.safe_load(text) if text else catalog_file(_FILE, overlay))["node_rolls"]
    sources = {
        t: NodeSource(
            str(r["count"]),
            r["instance_type"],
            tuple(r["keys"]),
            r.get("shrink"),
            tuple(sorted((r.get("computed") or {}).items())),
        )
        for t, r in data["node_sources"].items()
    }
    lt = data["launch_template"]
    return RollTable(sources, lt["type"], frozenset(lt["no_new_version"]))


def nested(inputs: dict[str, Any], dotted: str) -> Any:
    value: Any = inputs
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _ignored(r: dict[str, Any]) -> set[str]:
    return set((r.get("options") or {}).get("ignoreChanges") or [])


def _template_changes(
    old: dict[str, Any], new: dict[str, Any], t: RollTable
) -> list[dict[str, Any]]:
    """The launch-template inputs whose change creates a new template version."""
    a, b = old.get("inputs") or {}, new.get("inputs") or {}
    skip = t.no_new_version | _ignored(new)
    keys = sorted(k for k in a.keys() | b.keys() if k not in skip and a.get(k) != b.get(k))
    return [value_change(k, a.get(k), b.get(k)) for k in keys]


def _own_changes(
    old: dict[str, Any], new: dict[str, Any], src: NodeSource, stored: dict[str, Any]
) -> list[dict[str, Any]]:
    """The node source's roll keys that change; `stored`: the value the provider stored for
    each computed key the base left out (the same value newly set changes nothing)."""
    a, b = old.get("inputs") or {}, new.get("inputs") or {}
    keys = [
        k
        for k in src.keys
        if k not in _ignored(new)
        and nested(a, k) != nested(b, k)
        and not (nested(a, k) is None and k in stored and stored[k] == nested(b, k))
    ]
    return [value_change(k, nested(a, k), nested(b, k)) for k in keys]


def stored_defaults(base: dict[str, Any] | None, src: NodeSource) -> dict[str, Any]:
    """input -> the value the provider stored for a computed input of `src` (from the base
    plan: the resource whose value it takes)."""
    out: dict[str, Any] = {}
    for key, where in src.computed:
        rtype, _, field = where.rpartition(".")
        found = [r for r in (base or {}).get("resources", []) if r["type"] == rtype]
        if len(found) == 1:
            out[key] = nested(found[0].get("inputs") or {}, field)
    return out


def _templates(plan: dict[str, Any], t: RollTable) -> dict[str, dict[str, Any]]:
    """Launch templates by logical name."""
    return {r["name"]: r for r in plan.get("resources", []) if r["type"] == t.template_type}


def _template_of(r: dict[str, Any], lts: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The launch template a node source boots from: the one template it depends on (the
    plan records the template's id as a mock value, the dependency by name)."""
    found = [lts[d] for d in r.get("dependsOn") or [] if d in lts]
    return found[0] if len(found) == 1 else None


def _count(r: dict[str, Any], src: NodeSource) -> int:
    if src.count.isdigit():
        return int(src.count)
    value = nested(r.get("inputs") or {}, src.count)
    return int(value) if isinstance(value, int | float) else 0


def _instance_type(r: dict[str, Any], src: NodeSource, lt: dict[str, Any] | None) -> str:
    value = nested(r.get("inputs") or {}, src.instance_type)
    if isinstance(value, list):
        value = value[0] if value else None
    if not value and lt is not None:
        value = (lt.get("inputs") or {}).get("instanceType")
    return str(value) if value else "?"


def nodes_of(
    plan: dict[str, Any] | None, r: dict[str, Any]
) -> tuple[int, str, dict[str, Any] | None] | None:
    """(node count, instance type, launch template) of a node source of `plan`; None for a
    resource that runs no nodes."""
    t = roll_table()
    src = t.sources.get(r["type"])
    if src is None:
        return None
    lt = _template_of(r, _templates(plan or {}, t))
    return _count(r, src), _instance_type(r, src, lt), lt


def _by_key(plan: dict[str, Any] | None) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["type"], r["name"]): r for r in (plan or {}).get("resources", [])}


def _causes(
    key: tuple[str, str],
    old: dict[str, Any],
    new: dict[str, Any],
    ctx: tuple[
        dict[str, Any],
        dict[str, Any],
        NodeSource,
        RollTable,
        dict[tuple[str, str], str],
        dict[str, Any],
    ],
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Why one node source rolls (empty: it does not) and the launch template it boots from."""
    old_lts, new_lts, src, t, replaced, stored = ctx
    causes = _own_changes(old, new, src, stored)
    if key in replaced:
        causes.insert(0, {"key": "(replaced)", "before": None, "after": replaced[key] or None})
    lt_new, lt_old = _template_of(new, new_lts), _template_of(old, old_lts)
    if lt_new is not None and lt_old is not None:
        for c in _template_changes(lt_old, lt_new, t):
            causes.append({**c, "key": f"{lt_new['name']}.{c['key']}"})
    return causes, lt_new


def _row(key: tuple[str, str], count: int, itype: str, accelerated: Any) -> dict[str, Any]:
    return {
        "type": key[0],
        "name": key[1],
        "action": "rolls",
        "count": count,
        "instance_type": itype,
        "accelerated": bool(accelerated(itype)) if accelerated else False,
        "causes": [],
    }


def _scale_in(old: dict[str, Any], new: dict[str, Any], src: NodeSource) -> int:
    """How many nodes a smaller maximum removes (the desired size may be ignored by the
    program, but a lower maxSize still terminates nodes)."""
    if not src.shrink:
        return 0
    a = nested(old.get("inputs") or {}, src.shrink)
    b = nested(new.get("inputs") or {}, src.shrink)
    ok = isinstance(a, int | float) and isinstance(b, int | float)
    return int(a - b) if ok and b < a else 0


def node_rolls(
    base: dict[str, Any] | None,
    head: dict[str, Any] | None,
    replaced: set[tuple[str, str]] | dict[tuple[str, str], str] | None = None,
    accelerated: Any = None,
) -> list[dict[str, Any]]:
    """Every node source of either plan that rolls or loses nodes (replaced, rolled, shrunk,
    removed or renamed): {type, name, action ('rolls' | 'removes'), count, instance_type,
    accelerated, causes: [{key, before, after}]};
    accelerated nodes first, then by name. `accelerated(instance_type) -> bool` says which
    types carry accelerators. `replaced`: the replaced resources, each with why (the inputs
    that force it, and the replacement it was carried from), shown as the roll's cause."""
    why = replaced if isinstance(replaced, dict) else dict.fromkeys(replaced or (), "")
    t = roll_table()
    old, new = _by_key(base), _by_key(head)
    old_lts, new_lts = _templates(base or {}, t), _templates(head or {}, t)
    rows = []
    for key in sorted(old.keys() & new.keys()):
        src = t.sources.get(key[0])
        if src is None:
            continue
        ctx = (old_lts, new_lts, src, t, why, stored_defaults(base, src))
        causes, lt = _causes(key, old[key], new[key], ctx)
        itype = _instance_type(new[key], src, lt)
        if causes:
            row = _row(key, _count(new[key], src), itype, accelerated)
            rows.append({**row, "causes": causes})
        elif src.shrink and _scale_in(old[key], new[key], src):
            removed = _scale_in(old[key], new[key], src)
            before, after = (
                nested(x.get("inputs") or {}, src.shrink) for x in (old[key], new[key])
            )
            row = _row(key, removed, itype, accelerated)
            rows.append(
                {**row, "action": "removes", "causes": [value_change(src.shrink, before, after)]}
            )
    rows += _gone(old, new, (old_lts, new_lts), t, accelerated)
    return sorted(rows, key=lambda r: (not r["accelerated"], r["name"]))


def _gone(
    old: dict[tuple[str, str], dict[str, Any]],
    new: dict[tuple[str, str], dict[str, Any]],
    lts: tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]],
    t: RollTable,
    accelerated: Any,
) -> list[dict[str, Any]]:
    """The node sources of the base that the head no longer has: every node is terminated.
    One the head adds under another name with the same instance type is a rename (a pool
    renamed, or the stack pointed at another spec): its nodes are destroyed and new ones
    created, never moved."""
    added: dict[str, list[str]] = {}
    for key in sorted(new.keys() - old.keys()):
        src = t.sources.get(key[0])
        if src is not None:
            itype = _instance_type(new[key], src, _template_of(new[key], lts[1]))
            added.setdefault(f"{key[0]}|{itype}", []).append(key[1])
    rows = []
    for key in sorted(old.keys() - new.keys()):
        src = t.sources.get(key[0])
        if src is None:
            continue
        itype = _instance_type(old[key], src, _template_of(old[key], lts[0]))
        peers = added.get(f"{key[0]}|{itype}") or []
        cause = (
            {"key": "(renamed)", "before": key[1], "after": peers.pop(0)}
            if peers
            else {"key": "(removed)", "before": None, "after": None}
        )
        row = _row(key, _count(old[key], src), itype, accelerated)
        rows.append({**row, "action": "removes", "causes": [cause]})
    return rows


def _cause(c: dict[str, Any]) -> str:
    if c["key"] == "(replaced)" and c.get("after"):
        return f"(replaced: {c['after']})"
    if c["key"] in ("(replaced)", "(removed)"):
        return str(c["key"])
    if c["key"] == "(renamed)":
        return f"(renamed to {c['after']}: new nodes are created, these are terminated)"
    return f"{c['key']}: {c['before']} -> {c['after']}"


def roll_line(r: dict[str, Any]) -> str:
    """`rolls 16 x p5.48xlarge (llama-p5-ng): a running job is interrupted; ami: a -> b`"""
    what = "a running job is interrupted" if r["accelerated"] else "nodes are replaced"
    if r.get("action") == "removes":
        what = "a job running on them is interrupted" if r["accelerated"] else "nodes removed"
    causes = "; ".join(_cause(c) for c in r["causes"][:4])
    more = f" (+{len(r['causes']) - 4} more)" if len(r["causes"]) > 4 else ""
    verb = r.get("action", "rolls")
    return f"{verb} {r['count']} x {r['instance_type']} ({r['name']}): {what}; {causes}{more}"
