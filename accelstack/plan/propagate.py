"""Replacements carried to the resources that depend on them.

A replaced resource's computed outputs (its id, ARN, endpoint, ...) are unknown until the new one
is created, so every input of another resource that carries one of them changes: where that
input forces a replacement (the provider table, plan/replacements.py), the dependent is replaced
too, and so on down the graph (a VPC CIDR change replaces the VPC, its subnets (`vpcId`), the node
groups on them (`subnetIds`), ...); where it does not, the dependent is updated in place. A
resource replaced delete-before-replace (the option, or the provider's own rule for a resource
named explicitly) also carries the values it keeps (its name): Pulumi replaces every dependent
whose replace-forcing input depends on it (https://www.pulumi.com/docs/iac/concepts/options/
deletebeforereplace/: "it can cascade to dependent resources"). A replaced Kubernetes provider
(its kubeconfig is computed from the cluster's outputs: pulumi/pulumi-kubernetes@94977969
provider/pkg/provider/provider.go:506 replaces it) replaces every Kubernetes object it manages.

Which input carries which resource's output is read from the plan document: `dependsOn` names
the resources an input depends on, and the offline plan's outputs of each (its mock ids and ARNs,
`lookups.planned_outputs`, recomputed from the document) are matched against the dependent's
input values, path by path.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from accelstack import tokens
from accelstack.plan.diff_inputs import flatten
from accelstack.plan.lookups import planned_outputs
from accelstack.plan.replacements import ProviderTable

Key = tuple[str, str]  # (type, logical name)
#: Inputs that hold labels, never another resource's output.
_NOT_REFERENCES = ("tags", "tagsAll", "labels")
#: Output values shorter than this are not matched (status words, small numbers).
_MIN_LEN = 6
K8S_PROVIDER = "pulumi:providers:kubernetes"


@dataclass(frozen=True)
class Carried:
    """A dependent changed by a replacement it depends on."""

    key: Key
    inputs: tuple[str, ...]  # its inputs that carry a replaced resource's output
    forcing: tuple[str, ...]  # those of them that replace it (empty: updated in place)
    sources: tuple[Key, ...]  # the replaced resources it depends on


def _resources(plan: Mapping[str, Any] | None) -> dict[Key, dict[str, Any]]:
    return {(r["type"], r["name"]): r for r in (plan or {}).get("resources", [])}


def _leaves(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Input path (list indices dropped) -> leaf value, labels left out."""
    out: dict[str, list[Any]] = {}
    for path, value in flatten(dict(inputs)).items():
        if isinstance(value, str) and not path.startswith(_NOT_REFERENCES):
            out.setdefault(re.sub(r"\[\d+\]", "", path), []).append(value)
    return out


def outputs_of(r: Mapping[str, Any], region: str, stack: str) -> tuple[set[str], set[str]]:
    """(computed, kept): the output values a replacement makes unknown (ids, ARNs, endpoints:
    not an input) and the ones it keeps (an explicit name the outputs echo)."""
    inputs = r.get("inputs") or {}
    _, outs = planned_outputs(r["type"], r["name"], dict(inputs), region, stack)
    given = {v for vs in _leaves(inputs).values() for v in vs}
    values = {v for vs in _leaves(outs).values() for v in vs if len(v) >= _MIN_LEN}
    return values - given, values & given & {outs.get("id"), outs.get("name"), outs.get("bucket")}


def references(
    dependent: Mapping[str, Any], target: Mapping[str, Any], region: str, stack: str
) -> tuple[list[str], list[str]]:
    """(inputs carrying the target's computed outputs, inputs carrying its kept name)."""
    return _references(dependent, outputs_of(target, region, stack))


def _references(
    dependent: Mapping[str, Any], outputs: tuple[set[str], set[str]]
) -> tuple[list[str], list[str]]:
    computed, kept = outputs
    hits: tuple[list[str], list[str]] = ([], [])
    for path, values in _leaves(dependent.get("inputs") or {}).items():
        if any(v in computed or any(c in v for c in computed if len(c) >= 12) for v in values):
            hits[0].append(path)
        elif any(v in kept for v in values):
            hits[1].append(path)
    return hits


def _forcing(rtype: str, paths: list[str], table: ProviderTable) -> list[str]:
    keys = table.keys(rtype)
    return sorted({k for k in keys for p in paths if p == k or p.startswith(f"{k}.")})


def carried(
    base: Mapping[str, Any] | None,
    head: Mapping[str, Any] | None,
    replaced: set[Key],
    table: ProviderTable,
    delete_first: Callable[[Key], bool],
) -> dict[Key, Carried]:
    """Every resource on both sides that a replacement reaches, to a fixed point.
    `delete_first(key)`: that replacement deletes the old resource before creating the new."""
    old, new = _resources(base), _resources(head)
    region, stack = str((head or {}).get("region", "")), str((head or {}).get("stack", ""))
    both = old.keys() & new.keys()
    dependents = _dependents(new, both)
    done, queue = set(replaced), sorted(replaced)
    out: dict[Key, Carried] = {}
    while queue:
        x = queue.pop(0)
        outputs = outputs_of(new[x], region, stack)
        for key in dependents.get(x, ()):
            row = _carry(key, new[key], outputs, x, table, delete_first(x))
            if row is None:
                continue
            out[key] = _merge(out.get(key), row)
            if row.forcing and key not in done:
                done.add(key)
                queue.append(key)
    return _with_kubernetes(out, done, new, both)


def _dependents(plan: dict[Key, dict[str, Any]], both: set[Key]) -> dict[Key, list[Key]]:
    """Resource -> the resources on both sides that name it in `dependsOn` (sorted)."""
    by_name: dict[str, list[Key]] = {}
    for key in plan:
        by_name.setdefault(key[1], []).append(key)
    out: dict[Key, list[Key]] = {}
    for key in sorted(both):
        for name in plan[key].get("dependsOn") or ():
            for target in by_name.get(name, ()):
                out.setdefault(target, []).append(key)
    return out


def _carry(
    key: Key,
    dep: Mapping[str, Any],
    outputs: tuple[set[str], set[str]],
    x: Key,
    table: ProviderTable,
    dbr: bool,
) -> Carried | None:
    computed, kept = _references(dep, outputs)
    paths = computed + (kept if dbr else [])
    if key[0].startswith("pulumi:providers:"):
        # the Kubernetes provider's kubeconfig is computed from the cluster it reaches
        if x[0] != tokens.CLUSTER:
            return None
        return Carried(key, ("(config)",), ("(config)",), (x,))
    if not paths:
        return None
    forcing = _forcing(key[0], paths, table)
    return Carried(key, tuple(sorted(paths)), tuple(forcing), (x,))


def _merge(a: Carried | None, b: Carried) -> Carried:
    if a is None:
        return b
    return Carried(
        a.key,
        tuple(sorted(set(a.inputs) | set(b.inputs))),
        tuple(sorted(set(a.forcing) | set(b.forcing))),
        tuple(sorted(set(a.sources) | set(b.sources))),
    )


def _with_kubernetes(
    out: dict[Key, Carried], done: set[Key], new: dict[Key, dict[str, Any]], both: set[Key]
) -> dict[Key, Carried]:
    """A replaced Kubernetes provider replaces every Kubernetes object of the stack."""
    providers = tuple(k for k in done if k[0] == K8S_PROVIDER)
    if not providers:
        return out
    for key in sorted(both):
        if key[0].startswith("kubernetes:") and key not in done:
            out[key] = _merge(
                out.get(key), Carried(key, ("(provider)",), ("(provider)",), providers)
            )
    return out
