"""What create-before-delete does to a change: collisions, refusals and overlaps (`accelstack diff`).

Pulumi creates a replacement before it deletes the old resource, and creates what a change adds
before it deletes what it removes. While both exist, AWS keeps some keys unique (a subnet's CIDR
in its VPC, an FSx data-repository association's file-system path, a fixed name): a new resource
that holds what an old one still holds is refused by AWS, so the change is refused here, in one
line naming the input (a component that needs the old one gone first sets `deleteBeforeReplace`,
and the provider does so itself for a resource named explicitly). Some edits AWS refuses outright
(a control-plane subnet in a zone the EKS cluster was not created with), and a protected resource
that the provider would replace stops `pulumi up`. Node groups created before the old ones go
(a replacement, a pool rename) run both sets of nodes for the length of the update: the overlap
is said with its instances, vCPUs of quota, hours and cost, and refused where the capacity is a
reservation or a Capacity Block sized for one group. The facts and their sources are the
`create_before_delete` section of `catalog/replacements.yaml`.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any, Literal

from accelstack import tokens
from accelstack.catalog import catalog_file
from accelstack.catalog.overlay import overlay_dir
from accelstack.plan.lookups import planned_outputs
from accelstack.plan.propagate import outputs_of
from accelstack.plan.replacements import get_path
from accelstack.plan.rolls import nodes_of

Key = tuple[str, str]
Plan = Mapping[str, Any]
#: refused: AWS or Pulumi stops the change; delete-first: missing until its replacement exists;
#: overlap: nodes run twice; daemonset: an add-on update rolls a DaemonSet (plan/upgrades.py)
Kind = Literal["refused", "delete-first", "overlap", "daemonset"]
_FILE = "replacements.yaml"
_HOURS_PER_MONTH = 730.0


@dataclass(frozen=True)
class Finding:
    """One line of the create-before-delete check: a refusal, a delete-first replacement, or
    nodes that run twice during the update."""

    kind: Kind
    type: str
    name: str
    field: str  # the input it is about
    line: str
    instances: int = 0
    instance_type: str | None = None
    vcpus: int | None = None
    hours: float = 0.0
    usd: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "type": self.type,
            "name": self.name,
            "field": self.field,
            "line": self.line,
            "instances": self.instances,
            "instance_type": self.instance_type,
            "vcpus": self.vcpus,
            "hours": self.hours,
            "usd": self.usd,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Finding:
        return cls(
            d["kind"],
            d["type"],
            d["name"],
            d["field"],
            d["line"],
            int(d.get("instances") or 0),
            d.get("instance_type"),
            d.get("vcpus"),
            float(d.get("hours") or 0.0),
            d.get("usd"),
        )


@dataclass(frozen=True)
class Unique:
    within: tuple[str, ...]
    key: str
    overlap: str  # "" (equal values) | "cidr" | "path"


@dataclass(frozen=True)
class Facts:
    named: dict[str, str]  # type -> the name field whose explicit value makes it delete first
    kubernetes_name: str
    unique: dict[str, Unique]
    create_minutes: int
    delete_minutes: int


def facts() -> Facts:
    return _facts(overlay_dir())


@cache
def _facts(overlay: Path | None) -> Facts:
    data = catalog_file(_FILE, overlay)["create_before_delete"]
    named = data["delete_first_named"]
    unique = {
        t: Unique(tuple(r.get("within") or ()), r["key"], str(r.get("overlap") or ""))
        for t, r in data["unique"].items()
    }
    lap = data["node_overlap"]
    return Facts(
        dict(named["fields"]),
        str(named["kubernetes"]),
        unique,
        int(lap["default_create_minutes"]),
        int(lap["default_delete_minutes"]),
    )


def _resources(plan: Plan | None) -> dict[Key, dict[str, Any]]:
    return {(r["type"], r["name"]): r for r in (plan or {}).get("resources", [])}


def _inputs(r: Mapping[str, Any] | None) -> dict[str, Any]:
    return dict((r or {}).get("inputs") or {})


def _option(r: Mapping[str, Any] | None, name: str) -> Any:
    return ((r or {}).get("options") or {}).get(name)


def deletes_first(r: Mapping[str, Any], f: Facts | None = None) -> bool:
    """This resource's replacement deletes the old one before creating the new: the option,
    or the provider's own rule for a resource named explicitly."""
    f = f or facts()
    if _option(r, "deleteBeforeReplace"):
        return True
    if r["type"].startswith("kubernetes:"):
        return get_path(_inputs(r), f.kubernetes_name) is not None
    field = f.named.get(r["type"])
    return field is not None and bool(_inputs(r).get(field))


# ------------------------------------------------------------------------------------------
# Unique keys while both exist
# ------------------------------------------------------------------------------------------


def _overlaps(u: Unique, a: Any, b: Any) -> bool:
    if a is None or b is None:
        return False
    if u.overlap == "cidr":
        try:
            return ipaddress.ip_network(str(a)).overlaps(ipaddress.ip_network(str(b)))
        except ValueError:
            return bool(a == b)
    if u.overlap == "path":
        x, y = str(a).rstrip("/") + "/", str(b).rstrip("/") + "/"
        return x.startswith(y) or y.startswith(x)
    return bool(a == b)


@dataclass(frozen=True)
class _Held:
    key: Key
    scope: tuple[Any, ...]
    value: Any


def _held(r: Mapping[str, Any], u: Unique) -> _Held:
    i = _inputs(r)
    return _Held(
        (r["type"], r["name"]), tuple(get_path(i, s) for s in u.within), get_path(i, u.key)
    )


def collisions(
    base: Plan | None, head: Plan | None, replaced: set[Key], gone_ids: set[str]
) -> list[Finding]:
    """A resource created while an old one still holds the same unique key: refused. A scope
    value that belongs to a replaced resource (a subnet's VPC) names a new scope: no collision."""
    f = facts()
    old, new = _resources(base), _resources(head)
    added = sorted(new.keys() - old.keys())
    removed = sorted(old.keys() - new.keys())
    out: list[Finding] = []
    for t, u in sorted(f.unique.items()):
        cbd = [
            k for k in sorted(replaced) if k[0] == t and k in new and not deletes_first(new[k], f)
        ]
        held = [_held(old[k], u) for k in removed + cbd if k[0] == t]
        created = [_held(new[k], u) for k in added + cbd if k[0] == t]
        for c in created:
            if any(s in gone_ids for s in c.scope if isinstance(s, str)):
                continue
            for h in held:
                if h.scope == c.scope and _overlaps(u, c.value, h.value):
                    out.append(_collision(t, u, c, h))
    return out


def _collision(t: str, u: Unique, c: _Held, h: _Held) -> Finding:
    short = t.split(":")[-1]
    if c.key == h.key:
        line = (
            f"{short} {c.key[1]} is replaced create-before-delete but keeps {u.key} "
            f"{c.value}, which the old one still holds: set deleteBeforeReplace on it"
        )
    else:
        line = (
            f"{short} {c.key[1]} is created with {u.key} {c.value} while {h.key[1]} still holds "
            f"{h.value} (Pulumi deletes the old one last): make the change in two steps, "
            "remove first, then add"
        )
    if t == tokens.SUBNET:  # the zones in use renumbered (network.subnet_numbering unset)
        line += (
            "; or keep every zone's subnets where they are: list the zones the stack uses now, "
            'in their order, in cluster.zones (docs/day2.md, "Stable addressing")'
        )
    return Finding("refused", t, c.key[1], u.key, line)


# ------------------------------------------------------------------------------------------
# Refused outright: control-plane zones, protected replacements
# ------------------------------------------------------------------------------------------


def _subnets(plan: Plan | None, subnet_ids: list[str]) -> list[dict[str, Any]]:
    """The subnet resources of `plan` whose offline ids are `subnet_ids`."""
    region, stack = str((plan or {}).get("region", "")), str((plan or {}).get("stack", ""))
    out = []
    for r in (plan or {}).get("resources", []):
        if r["type"] == tokens.SUBNET:
            rid, _ = planned_outputs(r["type"], r["name"], _inputs(r), region, stack)
            if rid in subnet_ids:
                out.append(_inputs(r))
    return out


def _zones(subnets: list[dict[str, Any]]) -> list[str]:
    return sorted({str(s.get("availabilityZoneId") or s.get("availabilityZone")) for s in subnets})


def control_plane_zones(base: Plan | None, head: Plan | None, gone: set[str]) -> list[Finding]:
    """EKS keeps a cluster's control plane in the VPC and the zones it was created with."""
    out = []
    old = _resources(base)
    for key, r in sorted(_resources(head).items()):
        if key[0] != tokens.CLUSTER or key not in old:
            continue
        was = _subnets(base, get_path(_inputs(old[key]), "vpcConfig.subnetIds") or [])
        now = _subnets(head, get_path(_inputs(r), "vpcConfig.subnetIds") or [])
        moved = sorted(set(_zones(now)) - set(_zones(was)))
        created = ", ".join(_zones(was))
        if any(s.get("vpcId") in gone for s in now):
            where = "a new VPC (the change replaces the cluster's VPC)"
            how = "keep the VPC as it is"
        elif was and moved:
            where = ", ".join(moved)
            how = (
                f"keep them: set cluster.zones: [{created}] and move only the pools (a pool's "
                "new zone gets subnets of its own)"
            )
        else:
            continue
        out.append(
            Finding(
                "refused",
                key[0],
                key[1],
                "vpcConfig.subnetIds",
                f"Cluster {key[1]} vpcConfig.subnetIds moves the control plane to {where}: EKS "
                f"keeps it in the VPC and the zones it was created with ({created}); {how}, or "
                "create a new stack and move the work there",
            )
        )
    return out


def protected(
    base: Plan | None,
    head: Plan | None,
    replaced: Mapping[Key, tuple[str, ...]],
    why: Callable[[Key, str], str],
) -> list[Finding]:
    """A protected resource the provider would replace, or the change removes: `pulumi up`
    stops at it (a replacement and a removal both delete it)."""
    old, new = _resources(base), _resources(head)
    out = []
    for key, forcing in sorted(replaced.items()):
        if not (_option(old.get(key), "protect") or _option(new.get(key), "protect")):
            continue
        field = forcing[0] if forcing else "(replaced)"
        a, b = get_path(_inputs(old.get(key)), field), get_path(_inputs(new.get(key)), field)
        change = (
            f" {a} -> {b}" if a != b else " takes the new id of a resource this change replaces and"
        )
        out.append(
            Finding(
                "refused",
                key[0],
                key[1],
                field,
                f"{key[0].split(':')[-1]} {key[1]} {field}{change} replaces it "
                f"({why(key, field)}), but it is protected: `pulumi up` stops; keep the "
                "value, or move its data to a new resource first",
            )
        )
    for key in sorted(old.keys() - new.keys()):
        if _option(old[key], "protect"):
            kept = (
                " (retainOnDelete keeps it in AWS)" if _option(old[key], "retainOnDelete") else ""
            )
            out.append(
                Finding(
                    "refused",
                    key[0],
                    key[1],
                    "(removed)",
                    f"{key[0].split(':')[-1]} {key[1]} is removed but protected: `pulumi up` "
                    f"stops; to let it go on purpose, `pulumi state unprotect` it first{kept}",
                )
            )
    return out


# ------------------------------------------------------------------------------------------
# Node groups that run twice
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeFacts:
    """What the overlap line needs from outside the plan: vCPUs per instance type and each
    resource's hourly price (None: not priced)."""

    vcpus: Callable[[str], int | None]
    hourly: Callable[[str], float | None]


def _minutes(r: Mapping[str, Any] | None, which: str, default: int) -> int:
    text = str((_option(r, "customTimeouts") or {}).get(which) or "")
    if text.endswith("m") and text[:-1].isdigit():
        return int(text[:-1])
    if text.endswith("h") and text[:-1].isdigit():
        return 60 * int(text[:-1])
    return default


def _bound(r: Mapping[str, Any], lt: Mapping[str, Any] | None) -> str | None:
    """`Capacity Block` or `reservation` when the group's capacity is held for it alone."""
    if _inputs(r).get("capacityType") == "CAPACITY_BLOCK":
        return "Capacity Block"
    spec = _inputs(lt).get("capacityReservationSpecification") or {}
    target = spec.get("capacityReservationTarget") or {}
    return "reservation" if target.get("capacityReservationId") else None


def overlap(
    pair: tuple[Mapping[str, Any] | None, Mapping[str, Any]],
    count: int,
    itype: str,
    lt: Mapping[str, Any] | None,
    nf: NodeFacts,
) -> Finding:
    """The line for a new node group created while the old one (`pair[0]`) still runs."""
    f = facts()
    old, new = pair
    minutes = _minutes(new, "create", f.create_minutes) + _minutes(old, "delete", f.delete_minutes)
    hours = round(minutes / 60, 2)
    per = nf.vcpus(itype)
    vcpus = per * count if per else None
    hourly = nf.hourly(new["name"])
    usd = round(hourly * hours, 2) if hourly is not None else None
    gone = old["name"] if old is not None and old["name"] != new["name"] else "the old group"
    quota = f" ({vcpus:,} vCPUs of quota)" if vcpus else ""
    cost = f", about ${usd:,.0f}" if usd is not None else ""
    line = (
        f"NodeGroup {new['name']} is created before {gone} is deleted: {count} more x {itype}"
        f"{quota} run for up to {hours:g} h{cost}"
    )
    bound = _bound(new, lt)
    if bound:
        line += (
            f"; its capacity is a {bound} sized for one group, so the new nodes cannot launch: "
            "scale the pool to 0 first, then make the change"
        )
    kind: Kind = "refused" if bound else "overlap"
    return Finding(
        kind,
        new["type"],
        new["name"],
        "(create before delete)",
        line,
        count,
        itype,
        vcpus,
        hours,
        usd,
    )


def node_overlaps(
    base: Plan | None, head: Plan | None, replaced: set[Key], nf: NodeFacts
) -> list[Finding]:
    """Node groups replaced create-before-delete, and new groups beside removed ones of the
    same instance type (a rename): both run until the update deletes the old ones."""
    old, new = _resources(base), _resources(head)
    pairs: list[tuple[Mapping[str, Any] | None, Mapping[str, Any]]] = [
        (old[k], new[k])
        for k in sorted(replaced)
        if k in old
        and k in new
        and nodes_of(dict(head or {}), new[k])
        and not deletes_first(new[k])
    ]
    gone: dict[str, list[Mapping[str, Any]]] = {}
    for k in sorted(old.keys() - new.keys()):
        found = nodes_of(dict(base or {}), old[k])
        if found is not None:
            gone.setdefault(f"{k[0]}|{found[1]}", []).append(old[k])
    for k in sorted(new.keys() - old.keys()):
        found = nodes_of(dict(head or {}), new[k])
        peers = gone.get(f"{k[0]}|{found[1]}") if found else None
        if peers:
            pairs.append((peers.pop(0), new[k]))
    out = []
    for before, after in pairs:
        count, itype, lt = nodes_of(dict(head or {}), dict(after)) or (0, "?", None)
        if count:
            out.append(overlap((before, after), count, itype, lt, nf))
    return out


def deleted_first(base: Plan | None, head: Plan | None, replaced: set[Key]) -> list[Finding]:
    """AWS resources replaced delete-before-replace: missing until the new one is created."""
    new = _resources(head)
    out = []
    for key in sorted(replaced):
        r = new.get(key)
        if r is None or key[0].startswith("kubernetes:") or not deletes_first(r):
            continue
        how = (
            "deleteBeforeReplace"
            if _option(r, "deleteBeforeReplace")
            else "named explicitly: the provider deletes first"
        )
        line = f"{key[0].split(':')[-1]} {key[1]} is deleted before its replacement is created ({how}): it is missing until the new one exists"
        out.append(Finding("delete-first", key[0], key[1], "(replaced)", line))
    return out


def _edit(edited: Sequence[Mapping[str, Any]]) -> str:
    """` (edit: spec.x: a -> b)`: the spec values a person changed, for a refusal's line."""
    spec = [c for c in edited if str(c.get("key", "")).startswith("spec.")][:2]
    text = "; ".join(
        f"{c['key'].removeprefix('spec.')}: {c['before']} -> {c['after']}" for c in spec
    )
    return f" (edit: {text})" if text else ""


def check(
    base: Plan | None,
    head: Plan | None,
    replaced: Mapping[Key, tuple[str, ...]],
    edited: Sequence[Mapping[str, Any]],
    why: Callable[[Key, str], str],
    nf: NodeFacts | None = None,
) -> tuple[Finding, ...]:
    """Every finding of one stack's change: refusals first, then delete-first replacements,
    then node groups that run twice."""
    region, stack = str((head or {}).get("region", "")), str((head or {}).get("stack", ""))
    new = _resources(head)
    gone: set[str] = set()
    for key in replaced:
        if key in new:
            gone |= outputs_of(new[key], region, stack)[0]
    nf = nf or NodeFacts(lambda _t: None, lambda _n: None)
    edit = _edit(edited)
    refused = (
        control_plane_zones(base, head, gone)
        + protected(base, head, replaced, why)
        + collisions(base, head, set(replaced), gone)
    )
    refused = [replace(f, line=f.line + edit) for f in refused]
    lapped = node_overlaps(base, head, set(replaced), nf)
    rest = deleted_first(base, head, set(replaced)) + [f for f in lapped if f.kind == "overlap"]
    return (*refused, *(f for f in lapped if f.kind == "refused"), *rest)
