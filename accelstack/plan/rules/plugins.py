"""Deploy rules: device-plugin Helm releases. The catalog's `charts:`
table (accelstack/catalog/instances.yaml) records each chart's pinned version, the values keys
accelstack may set and the node labels its default affinity needs, each with its source."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from accelstack.naming import POOL_LABEL
from accelstack.plan.document import Plan, PlannedResource
from accelstack.plan.rules.registry import DeployRule, deploy_rule, ref
from accelstack.tokens import HELM_RELEASE as RELEASE
from accelstack.tokens import NODE_GROUP

if TYPE_CHECKING:
    from accelstack.catalog import HelmChart
    from accelstack.resolve import Stack

CHARTS_DOC = "accelstack/catalog/instances.yaml charts (sources per chart)"


def releases(plan: Plan, stack: Stack) -> Iterator[tuple[PlannedResource, HelmChart]]:
    """Every Helm release of a catalog chart, with its catalog row."""
    by_chart = {c.chart: c for c in stack.catalog.charts.values()}
    for r in plan.of_type(RELEASE):
        chart = by_chart.get(str(r.inputs.get("chart")))
        if chart is not None:
            yield r, chart


def leaf_paths(values: Any, prefix: str = "") -> Iterator[str]:
    """Dotted paths of a values tree down to non-mapping leaves (lists are leaves)."""
    if isinstance(values, dict) and values:
        for k, v in values.items():
            yield from leaf_paths(v, f"{prefix}{k}.")
    else:
        yield prefix.rstrip(".")


def lookup(values: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        values = values.get(part) if isinstance(values, dict) else None
    return values


@deploy_rule(
    "device-plugin-chart-pinned",
    CHARTS_DOC,
    "each device-plugin release uses the chart version pinned (and verified to exist) in the "
    "catalog",
)
def _pinned(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    for r, chart in releases(plan, stack):
        if r.inputs.get("version") != chart.version:
            yield (
                ref(r),
                f"chart {chart.chart} version {r.inputs.get('version')!r} is not the catalog's "
                f"{chart.version} ({chart.source})",
            )


@deploy_rule(
    "device-plugin-values-keys",
    CHARTS_DOC,
    "each device-plugin release sets only values keys the chart has (recorded in the catalog)",
)
def _values_keys(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    for r, chart in releases(plan, stack):
        allowed = chart.values_keys
        unknown = sorted(
            p
            for p in leaf_paths(r.inputs.get("values") or {})
            if p and not any(p == k or p.startswith(k + ".") for k in allowed)
        )
        if unknown:
            yield (
                ref(r),
                f"values {', '.join(unknown)} are not keys of {chart.name} chart "
                f"{chart.version} (keys: {', '.join(allowed)}; {chart.values_source})",
            )


def _pools_of(stack: Stack, chart: HelmChart) -> list[Any]:
    if chart.device_kind is None:
        return [p for p in stack.pools if p.efa]
    return [p for p in stack.pools if p.device.name == chart.device_kind]


def _effective(values: Any, chart: HelmChart, key: str) -> bool:
    """A boolean value as the chart reads it: the release's, else the chart's default."""
    v = lookup(values, key)
    return bool(chart.value_defaults.get(key, False) if v is None else v)


@deploy_rule(
    "chart-config-checks",
    CHARTS_DOC + " config_checks",
    "each device-plugin release passes the chart's own config checks (the Neuron chart "
    "refuses the DRA driver beside the device plugin in one release)",
)
def _config_checks(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    for r, chart in releases(plan, stack):
        values = r.inputs.get("values") or {}
        for check in chart.config_checks:
            if not _effective(values, chart, check.key):
                continue
            wrong = [k for k in check.excludes if _effective(values, chart, k)]
            wrong += [f"not {k}" for k in check.requires if not _effective(values, chart, k)]
            if wrong:
                yield (
                    ref(r),
                    f"values set {check.key} with {', '.join(wrong)}, which chart {chart.chart} "
                    f"{chart.version} refuses to install ({chart.config_checks_source})",
                )


@deploy_rule(
    "device-plugin-serves-every-pool",
    CHARTS_DOC,
    "each device plugin's instance list covers every pool it serves, and the pools' node groups "
    "carry the labels the chart's default affinity requires",
)
def _serves(plan: Plan, stack: Stack) -> Iterator[tuple[str, str]]:
    for r, chart in releases(plan, stack):
        values = r.inputs.get("values") or {}
        pools = _pools_of(stack, chart)
        if chart.instance_list_key:
            listed = set(lookup(values, chart.instance_list_key) or [])
            missing = sorted({p.instance_type for p in pools} - listed)
            if missing:
                yield (
                    ref(r),
                    f"{chart.instance_list_key} misses {', '.join(missing)}: the plugin will not "
                    f"schedule there; list every pool type it serves ({chart.values_source})",
                )
        if chart.node_labels and "affinity" not in values:
            yield from _labelled(plan, chart, {p.name for p in pools})


def _labelled(plan: Plan, chart: HelmChart, pools: set[str]) -> Iterator[tuple[str, str]]:
    for ng in plan.of_type(NODE_GROUP):
        labels = ng.inputs.get("labels") or {}
        if labels.get(POOL_LABEL) not in pools:
            continue
        lacking = {k: v for k, v in chart.node_labels.items() if labels.get(k) != v}
        if lacking:
            yield (
                ref(ng),
                f"lacks labels {lacking} that the {chart.name} chart's default node affinity "
                f"requires: no device plugin pod, no device resource ({chart.values_source})",
            )


#: This module's rules, in report order (the kind's RuleSet lists this tuple).
MODULE_RULES: tuple[DeployRule, ...] = (
    _pinned,
    _values_keys,
    _config_checks,
    _serves,
)
