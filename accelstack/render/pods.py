"""What a rendered training pod or Slurm job asks for, computed from catalog facts
(accelstack/catalog/launch.yaml, sources there): CPU and memory requests from node allocatable,
EFA huge pages and capabilities, restart budgets, the DLAMI Python environment, and warnings
about the image reference."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

from accelstack.catalog import InstanceType, PodFacts, PythonEnv
from accelstack.errors import AccelstackError
from accelstack.render.registry import upstream_image
from accelstack.resolve import ResolvedPool, Stack

#: A digest reference (`repo@sha256:...`): immutable, never warned about.
_DIGEST_RE = re.compile(r"@[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[0-9a-fA-F]{32,}$")


class LaunchFactError(AccelstackError):
    """The catalog's launch facts do not fit a pool (one line, exit 2)."""


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


def node_allocatable(pods: PodFacts, inst: InstanceType, hugepages_mib: int) -> tuple[int, int]:
    """(CPU millicores, memory MiB) the kubelet of an EKS node of type `inst` reports as
    allocatable: its vCPUs less the EKS AMI's kube-reserved CPU; its memory less the
    hypervisor's share, kube-reserved memory, the hard eviction threshold and the
    `hugepages_mib` of 2 MiB huge pages the node pre-allocates (catalog launch.yaml `pods`,
    sources there)."""
    cpu = inst.vcpus * 1000 - kube_reserved_millicores(inst.vcpus, pods.kube_reserved_cpu_tiers)
    small = inst.vcpus <= pods.max_pods_small_up_to_vcpus
    max_pods = pods.max_pods_small if small else pods.max_pods_large
    kube_mem = pods.kube_reserved_memory_mib_per_pod * max_pods + pods.kube_reserved_memory_mib_base
    mem = int(inst.memory_gib * 1024 * (1 - pods.vm_memory_overhead_fraction))
    mem -= kube_mem + pods.eviction_hard_memory_mib + hugepages_mib
    return cpu, mem


def pod_resources(stack: Stack, pool: ResolvedPool) -> PodResources:
    """Requests that fit the node's allocatable CPU and memory with the DaemonSets beside it
    (the catalog's DaemonSet reserve, which the deploy rule pods-schedulable holds to the
    DaemonSets the stack's add-ons and charts create)."""
    f = stack.launch.pods
    inst = pool.instance
    cpu, mem = node_allocatable(f, inst, f.efa_node_hugepages_mib if pool.efa else 0)
    cpu -= f.daemonset_reserve_millicores
    mem -= f.daemonset_reserve_mib
    if cpu < 1000 or mem < 1024:
        raise LaunchFactError(
            f"pool '{pool.name}' ({inst.name}): {inst.vcpus} vCPUs and {inst.memory_gib} GiB "
            "leave no room for a training pod after the kubelet and DaemonSet reserve"
        )
    return PodResources(
        cpu_millicores=cpu,
        memory_mib=mem,
        hugepages_mib=f.efa_hugepages_2mi_mib if pool.efa else 0,
        add_capabilities=f.efa_add_capabilities if pool.efa else (),
    )


def node_hugepages_2mi(stack: Stack, pool: ResolvedPool) -> int:
    """2 MiB huge pages an EFA node allocates in its user data (0 without EFA): the catalog's
    node allocation, which covers what the training pod requests."""
    if not pool.efa:
        return 0
    return stack.launch.pods.efa_node_hugepages_mib // 2


def precompile_key(stack: Stack, pool: ResolvedPool) -> str:
    """What the compiled graphs depend on, hashed: the pre-compile marker carries it, so a
    changed model, argument, image, precision, batch or process layout compiles again while a
    restart of the same job does not (the node count is added at run time)."""
    wl = stack.workload
    facts = {
        "entrypoint": wl.entrypoint,
        "args": list(wl.args),
        "precompile_args": list(wl.precompile_args),
        "precompile_steps": wl.precompile_steps,
        "env": dict(sorted(wl.env.items())),
        "image": upstream_image(stack, stack.image),  # the same through the pull-through cache
        # the active parameters of a mixture of experts count FLOPs only: no graph changes
        "model": wl.model.model_dump(exclude={"active_params_billion"}),
        "sequence_length": wl.sequence_length,
        "global_batch_size": wl.global_batch_size,
        "precision": wl.precision,
        "framework": pool.framework.name if pool.framework else None,
        "procs_per_node": pool.procs_per_node,
        "logical_cores": pool.logical_cores,
    }
    text = json.dumps(facts, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def backoff_limit(stack: Stack, pool: ResolvedPool) -> int:
    """PyTorchJob runPolicy.backoffLimit: the operator sums container restarts over every pod,
    and one node fault can restart all of them, so the budget scales with the node count."""
    return pool.nodes * stack.launch.fault_tolerance.job_restarts


def torchrun_max_restarts(stack: Stack) -> int:
    """Worker-group restarts each torchrun agent performs in place (PET_MAX_RESTARTS)."""
    return stack.launch.fault_tolerance.torchrun_max_restarts


def python_env(stack: Stack, pool: ResolvedPool, path: str | None = None) -> PythonEnv:
    """The DLAMI Python environment for the pool: the one named `path` for its device kind
    (default: the pool's training path, e.g. `xla` on a trn2 pool that runs the legacy path),
    else its family's default (the catalog guarantees exactly one)."""
    envs = stack.launch.dlami_python_envs
    if path is None and pool.framework is not None:
        named = [
            e for e in envs if e.device_kind == pool.device.name and e.path == pool.framework.name
        ]
        if named:
            return named[0]
    for env in envs:
        if env.device_kind == pool.device.name and (
            env.path == path if path else pool.family.name in env.families
        ):
            return env
    known = ", ".join(e.path for e in envs if e.device_kind == pool.device.name)
    raise LaunchFactError(
        f"pool '{pool.name}': no DLAMI Python environment '{path or pool.family.name}' "
        f"(known for {pool.device.name}: {known or 'none'})"
    )


def image_warnings(image: str) -> list[str]:
    """A warning when the image reference can change under a running job (`:latest` or no
    tag): a restarted pod could pull a different build than its peers. Digests are fine."""
    if not image or _DIGEST_RE.search(image):
        return []
    last = image.rsplit("/", 1)[-1]
    tag = last.split(":", 1)[1] if ":" in last else None
    if tag is None or tag == "latest":
        what = "no tag (it means :latest)" if tag is None else "the tag ':latest'"
        return [
            f"image {image} has {what}, which moves: pods restarted later may pull a "
            "different build than their peers; pin a version tag or a digest (@sha256:...)"
        ]
    return []
