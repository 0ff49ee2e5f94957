"""What a Kubernetes upgrade or an add-on update does to a change (`accelstack diff`), read from
two plan documents (`Plan.to_dict()`).

- **One minor version per step.** EKS moves a control plane one Kubernetes minor version up at
  a time and never down (UpdateClusterVersion: "Unsupported Kubernetes minor version update from
  1.22 to 1.25", terraform-aws-modules/terraform-aws-eks#2607; eksctl's upgrade guide: "Control
  plane version upgrades must be done for one minor version at a time"): a change of the
  cluster's `version` by more than one minor, or down, is refused in one line naming
  `cluster.kubernetes_version` with the steps to take (plan/updates.py models the request).
- **DaemonSet rolls.** An add-on update (its `addonVersion` or `configurationValues`) rolls the
  DaemonSets that add-on runs: a new pod replaces the old one on every node the DaemonSet runs on
  (catalog launch.yaml `daemonsets`: which DaemonSets each add-on creates and, for a device-kind
  one, on which nodes). Each is said with how many nodes of which types, from the head plan's node
  groups, beside the node rolls.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from accelstack import tokens
from accelstack.catalog import Catalog, load_catalog
from accelstack.plan.create_before_delete import Finding
from accelstack.plan.rolls import nodes_of
from accelstack.plan.updates import minor_version, version_step_problem

Plan = Mapping[str, Any]
#: The add-on inputs whose change makes EKS update the add-on's workloads in place.
ADDON_ROLL_KEYS = ("addonVersion", "configurationValues")


def _resources(plan: Plan | None) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["type"], r["name"]): r for r in (plan or {}).get("resources", [])}


def _inputs(r: Mapping[str, Any] | None) -> dict[str, Any]:
    return dict((r or {}).get("inputs") or {})


def _how(current: Any, wanted: Any) -> str:
    """The way to reach `wanted` from `current`: one minor version per `pulumi up`, or (down)
    a new stack."""
    a, b = minor_version(current), minor_version(wanted)
    if a is not None and b is not None and b > a:
        return (
            f"set cluster.kubernetes_version to {a[0]}.{a[1] + 1}, `pulumi up` (the control plane, "
            "then the add-ons, then the node groups), and repeat one minor version at a time up "
            f"to {wanted}"
        )
    return (
        f"EKS cannot downgrade a cluster: keep {current}, or create a new stack at {wanted} and "
        "move the work there"
    )


def version_steps(base: Plan | None, head: Plan | None) -> list[Finding]:
    """A cluster whose Kubernetes version moves by more than one minor, or down: refused."""
    old = _resources(base)
    out = []
    for key, r in sorted(_resources(head).items()):
        if key[0] != tokens.CLUSTER or key not in old:
            continue
        a, b = _inputs(old[key]).get("version"), _inputs(r).get("version")
        problem = version_step_problem(a, b)
        if problem is None:
            continue
        out.append(
            Finding(
                "refused",
                key[0],
                key[1],
                "version",
                f"cluster.kubernetes_version {a} -> {b}: EKS updates a control plane one minor "
                f"version at a time (UpdateClusterVersion: {problem}); {_how(a, b)}",
            )
        )
    return out


def _device_of(labels: Mapping[str, Any], catalog: Catalog) -> str | None:
    """The device kind whose node label a node group's labels carry (None: a CPU group)."""
    for name, kind in catalog.device_kinds.items():
        if labels.get(kind.node_label.key) == kind.node_label.value:
            return name
    return None


def _nodes(head: Plan | None, device_kind: str | None, catalog: Catalog) -> Counter[str]:
    """instance type -> nodes of the head's node groups (of one device kind, or all)."""
    out: Counter[str] = Counter()
    for r in (head or {}).get("resources", []):
        if r["type"] != tokens.NODE_GROUP:
            continue
        found = nodes_of(dict(head or {}), r)
        if found is None or not found[0]:
            continue
        kind = _device_of(_inputs(r).get("labels") or {}, catalog)
        if device_kind is None or kind == device_kind:
            out[found[1]] += found[0]
    return out


def _changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    a, b = _inputs(old), _inputs(new)
    return [k for k in ADDON_ROLL_KEYS if a.get(k) != b.get(k)]


def daemonset_rolls(
    base: Plan | None, head: Plan | None, catalog: Catalog | None = None
) -> list[Finding]:
    """Every DaemonSet an add-on update rolls, with the nodes it rolls across."""
    cat = catalog or load_catalog()
    old = _resources(base)
    out = []
    for key, r in sorted(_resources(head).items()):
        if key[0] != tokens.ADDON or key not in old:
            continue
        changed = _changed(old[key], r)
        name = str(_inputs(r).get("addonName"))
        if not changed:
            continue
        for ds in (d for d in cat.launch.daemonsets if d.addon == name):
            nodes = _nodes(head, ds.device_kind, cat)
            total = sum(nodes.values())
            if not total:
                continue
            what = (
                f"{_inputs(old[key]).get('addonVersion')} -> {_inputs(r).get('addonVersion')}"
                if "addonVersion" in changed
                else "new configuration values"
            )
            spread = ", ".join(f"{n} x {t}" for t, n in sorted(nodes.items()))
            out.append(
                Finding(
                    "daemonset",
                    key[0],
                    key[1],
                    changed[0],
                    f"add-on {name} {what} rolls DaemonSet {ds.name} on every node it runs on: "
                    f"{total} node{'s' if total != 1 else ''} ({spread}); each node's "
                    f"{ds.name} pod is replaced",
                    instances=total,
                    instance_type=None,
                )
            )
    return out
