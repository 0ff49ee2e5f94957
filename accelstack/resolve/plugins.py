"""Which device plugins a stack installs: the catalog's `charts:` rows (instances.yaml: pinned
version, source, values keys) each pool's devices need, with the pools each one serves. The
components turn each into a Helm release whose values restrict it to those pools' nodes; the
deploy rules check the planned releases against it."""

from __future__ import annotations

from dataclasses import dataclass

from accelstack.catalog import HelmChart
from accelstack.resolve.stack import ResolvedPool, Stack

#: The chart rows by what they serve: Neuron devices, NVIDIA GPUs, EFA interfaces.
NEURON, NVIDIA, EFA = "neuron", "nvidia", "efa"


@dataclass(frozen=True)
class DevicePlugin:
    """One device-plugin chart and the pools whose nodes it serves."""

    role: str  # NEURON | NVIDIA | EFA: the chart row's key
    chart: HelmChart
    pools: tuple[ResolvedPool, ...]


def _serves(role: str, pool: ResolvedPool) -> bool:
    device = pool.device
    if role == NEURON:
        return device.compile_cache  # the Neuron device kind (it has the compile cache)
    if role == NVIDIA:
        return bool(device.device_resource) and not device.compile_cache
    return pool.efa


def device_plugins(stack: Stack) -> tuple[DevicePlugin, ...]:
    """The device plugins the stack's pools need, in install order (Neuron, NVIDIA, EFA), each
    with the pools it serves; a chart no pool needs is not installed, so a catalog row added for
    another type changes no deployed stack."""
    out = []
    for role in (NEURON, NVIDIA, EFA):
        pools = tuple(p for p in stack.pools if _serves(role, p))
        if pools:
            out.append(DevicePlugin(role, stack.catalog.charts[role], pools))
    return tuple(out)
