"""What one node of a pool gives a training pod, from the catalog's launch facts
(accelstack/catalog/launch.yaml, sources there): the requests that fit its allocatable CPU and
memory beside the kubelet and the DaemonSets, the 2 MiB huge pages an EFA node allocates, and
the DLAMI Python environment of its training path. `resolve` attaches them to each pool once;
the components (node groups, the Kueue quotas, standalone nodes) and the rendered pods read
them there."""

from __future__ import annotations

from dataclasses import dataclass

from accelstack.catalog import DeviceKind, Family, Framework, InstanceType, PodFacts, PythonEnv
from accelstack.errors import CatalogError


@dataclass(frozen=True)
class PodResources:
    """Requests of the training container; `hugepages_mib` is 0 on pods without EFA."""

    cpu_millicores: int
    memory_mib: int
    hugepages_mib: int
    add_capabilities: tuple[str, ...]

    @property
    def cpu(self) -> str:
        return f"{self.cpu_millicores}m"

    @property
    def memory(self) -> str:
        return f"{self.memory_mib}Mi"

    @property
    def hugepages(self) -> str:
        return f"{self.hugepages_mib}Mi"


def kube_reserved_millicores(vcpus: int, tiers: tuple[tuple[int, float], ...]) -> int:
    """CPU the EKS AMI reserves for the kubelet: a share of each tier of cores."""
    reserved, low = 0.0, 0
    for high, per_core in tiers:
        if vcpus <= low:
            break
        reserved += (min(vcpus, high) - low) * per_core
        low = high
    return round(reserved)


#: The least a training pod is given: below it the node has no room for one (`pool-pod-room`)
MIN_POD_MILLICORES, MIN_POD_MIB = 1000, 1024


def node_allocatable(f: PodFacts, inst: InstanceType, hugepages_mib: int) -> tuple[int, int]:
    """(CPU millicores, memory MiB) the kubelet of an EKS node of type `inst` reports as
    allocatable: its vCPUs less the EKS AMI's kube-reserved CPU; its memory less the
    hypervisor's share, kube-reserved memory, the hard eviction threshold and the
    `hugepages_mib` of 2 MiB huge pages the node pre-allocates."""
    cpu = inst.vcpus * 1000 - kube_reserved_millicores(inst.vcpus, f.kube_reserved_cpu_tiers)
    small = inst.vcpus <= f.max_pods_small_up_to_vcpus
    max_pods = f.max_pods_small if small else f.max_pods_large
    kube_mem = f.kube_reserved_memory_mib_per_pod * max_pods + f.kube_reserved_memory_mib_base
    mem = int(inst.memory_gib * 1024 * (1 - f.vm_memory_overhead_fraction))
    mem -= kube_mem + f.eviction_hard_memory_mib + hugepages_mib
    return cpu, mem


def pod_resources(f: PodFacts, inst: InstanceType, efa: bool) -> PodResources | None:
    """Requests that fit the node's allocatable CPU and memory with the DaemonSets beside it
    (the catalog's DaemonSet reserve, which the deploy rule pods-schedulable holds to the
    DaemonSets the stack's add-ons and charts create); None when the kubelet and DaemonSet
    reserve leave less than one small pod (`pool-pod-room` refuses the pool)."""
    cpu, mem = node_allocatable(f, inst, f.efa_node_hugepages_mib if efa else 0)
    cpu -= f.daemonset_reserve_millicores
    mem -= f.daemonset_reserve_mib
    if cpu < MIN_POD_MILLICORES or mem < MIN_POD_MIB:
        return None
    return PodResources(
        cpu_millicores=cpu,
        memory_mib=mem,
        hugepages_mib=f.efa_hugepages_2mi_mib if efa else 0,
        add_capabilities=f.efa_add_capabilities if efa else (),
    )


def node_hugepages_2mi(f: PodFacts, efa: bool) -> int:
    """2 MiB huge pages an EFA node allocates in its user data (0 without EFA): the catalog's
    node allocation, which covers what the training pod requests."""
    return f.efa_node_hugepages_mib // 2 if efa else 0


def python_env(
    envs: tuple[PythonEnv, ...], device: DeviceKind, family: Family, framework: Framework | None
) -> PythonEnv:
    """The DLAMI Python environment of a pool: its training path's for its device kind (e.g.
    `xla` on a trn2 pool that runs the legacy path), else its family's default, which the
    catalog guarantees exactly one of (checked when it loads)."""
    if framework is not None:
        named = [e for e in envs if e.device_kind == device.name and e.path == framework.name]
        if named:
            return named[0]
    for env in envs:
        if env.device_kind == device.name and family.name in env.families:
            return env
    known = ", ".join(e.path for e in envs if e.device_kind == device.name)
    raise CatalogError(
        f"family '{family.name}': no DLAMI Python environment (known for {device.name}: "
        f"{known or 'none'}); launch.yaml dlami_python_envs must give each family one"
    )
