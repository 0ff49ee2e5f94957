"""DevicePlugins: a Kubernetes provider built from the cluster's kubeconfig, the device-plugin
Helm releases the pools need (Neuron, AWS EFA, NVIDIA; pinned chart versions), and the training
namespace and service account (bound to the compile-cache role through EKS Pod Identity)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from accelstack.catalog import HelmChart
from accelstack.naming import (
    EFA_LABEL,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    NEURON_ALLOCATION_LABEL,
    STACK_LABEL,
)
from accelstack.resolve import ResolvedPool, Stack
from accelstack.resolve.plugins import EFA, NEURON, NVIDIA, DevicePlugin, device_plugins


def tolerations(pools: list[ResolvedPool]) -> list[dict[str, str]]:
    """One toleration per distinct taint of the given pools (sorted, stable)."""
    seen: dict[tuple[str, str, str], dict[str, str]] = {}
    for p in pools:
        t = p.device.taint
        if t is not None:
            seen[(t.key, t.value, t.effect)] = {
                "key": t.key,
                "operator": "Equal",
                "value": t.value,
                "effect": t.effect,
            }
    return [seen[k] for k in sorted(seen)]


def instance_types(pools: list[ResolvedPool]) -> list[str]:
    """The distinct instance types of the given pools, sorted (a chart's instance list)."""
    return sorted({p.instance_type for p in pools})


def node_selector_for(pools: list[ResolvedPool]) -> dict[str, str]:
    """The device kind's node label, shared by the given pools (all of one device kind)."""
    labels = {(p.device.node_label.key, p.device.node_label.value) for p in pools}
    if len(labels) != 1:
        raise ValueError("node_selector_for wants pools of one device kind")
    ((key, value),) = labels
    return {key: value}


def neuron_values(neuron: list[ResolvedPool]) -> dict[str, Any]:
    """The Neuron chart's values. With UltraServer pools, their nodes get devices through the
    Neuron DRA driver, and the UltraServer Operator runs where the catalog says it serves the
    family (scale.yaml `placement.operator`, chart keys draDriver.* /
    ultraserverOperator.enabled); the device plugin then serves only the other Neuron pools
    (the two never share a node), or is off."""
    values: dict[str, Any] = {
        "neuronInstances": instance_types(neuron),
        # the chart's node problem detector: Neuron hardware errors (SRAM/HBM/NC
        # uncorrectable, DMA) become a NeuronHealth node condition; in kube-system,
        # which exists (its default namespace is not created by this release)
        "npd": {"enabled": True, "namespaceOverride": "kube-system"},
        "devicePlugin": {
            "nodeSelector": node_selector_for(neuron),
            "tolerations": tolerations(neuron),
        },
    }
    ultra = [p for p in neuron if p.ultraserver is not None]
    if not ultra:
        return values
    others = [p for p in neuron if p.ultraserver is None]
    values["draDriver"] = {
        "enabled": True,
        "nodeSelector": {**node_selector_for(ultra), NEURON_ALLOCATION_LABEL: "dra"},
        "tolerations": tolerations(ultra),
    }
    # the operator only where the catalog says it serves the family (scale.yaml placement.operator)
    operator = any(p.ultraserver and p.ultraserver.placement.operator for p in ultra)
    values["ultraserverOperator"] = {"enabled": operator}
    if others:
        values["devicePlugin"] = {
            "nodeSelector": {**node_selector_for(others), NEURON_ALLOCATION_LABEL: "device-plugin"},
            "tolerations": tolerations(others),
        }
    else:
        values["devicePlugin"] = {"enabled": False}
    return values


def plugin_values(plugin: DevicePlugin) -> dict[str, Any]:
    """The chart's values: restricted to the nodes of the pools it serves (resolve's
    `device_plugins`) and tolerating exactly those nodes' taints, with only the keys the
    catalog records for the chart; instance lists name the stack's own pool types."""
    pools = list(plugin.pools)
    if plugin.role == NEURON:
        return neuron_values(pools)
    if plugin.role == NVIDIA:
        return {"nodeSelector": node_selector_for(pools), "tolerations": tolerations(pools)}
    assert plugin.role == EFA, plugin.role
    return {
        "supportedInstanceLabels": {
            "keys": ["node.kubernetes.io/instance-type"],
            "values": instance_types(pools),
        },
        "nodeSelector": {EFA_LABEL: "true"},
        "tolerations": tolerations(pools),
    }


def plugin_releases(
    plugins: tuple[DevicePlugin, ...],
) -> dict[str, tuple[HelmChart, dict[str, Any]]]:
    """role -> (chart, values) of every device plugin the stack installs."""
    return {p.role: (p.chart, plugin_values(p)) for p in plugins}


@dataclass(frozen=True)
class DevicePluginsArgs:
    kubeconfig: pulumi.Input[str]
    plugins: tuple[DevicePlugin, ...]  # resolve's `device_plugins`
    namespace: str
    service_account: str
    depends_on: list[pulumi.Resource] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    #: the admins' access entries: no Kubernetes call before the deployer may make it
    access: list[pulumi.Resource] = field(default_factory=list)

    @classmethod
    def from_stack(
        cls,
        stack: Stack,
        kubeconfig: pulumi.Input[str],
        depends_on: list[pulumi.Resource],
        access: Sequence[pulumi.Resource] | None = None,
    ) -> DevicePluginsArgs:
        return cls(
            kubeconfig=kubeconfig,
            plugins=device_plugins(stack),
            namespace=stack.training_namespace,
            service_account=stack.training_service_account,
            depends_on=depends_on,
            access=list(access or []),
            labels={
                MANAGED_BY_LABEL: MANAGED_BY,
                STACK_LABEL: stack.name,
            },
        )


class DevicePlugins(pulumi.ComponentResource):
    releases: dict[str, k8s.helm.v3.Release]

    def __init__(
        self, name: str, args: DevicePluginsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("accelstack:deviceplugins:DevicePlugins", name, None, opts)
        provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=args.kubeconfig,
            enable_server_side_apply=True,
            opts=pulumi.ResourceOptions(parent=self, depends_on=args.access),
        )
        kopts = pulumi.ResourceOptions(
            parent=self, provider=provider, depends_on=[*args.depends_on, *args.access]
        )
        ns = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata={"name": args.namespace, "labels": args.labels},
            opts=kopts,
        )
        k8s.core.v1.ServiceAccount(
            f"{name}-service-account",
            metadata={
                "name": args.service_account,
                "namespace": args.namespace,
                "labels": args.labels,
            },
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[ns]),
        )
        self.provider = provider
        self.namespace = ns
        self.releases = {}
        for role, (chart, values) in plugin_releases(args.plugins).items():
            self.releases[role] = k8s.helm.v3.Release(
                f"{name}-{role}",
                name=f"{role}-device-plugin",
                chart=chart.chart,
                version=chart.version,
                repository_opts={"repo": chart.repo} if chart.repo else None,
                namespace=chart.namespace,
                values=values,
                skip_await=True,
                opts=kopts,
            )
        self.register_outputs({"releases": sorted(self.releases)})
