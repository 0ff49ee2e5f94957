"""JobLayer: what runs the rendered jobs on an EKS stack. The job controller the spec's
`jobs.controller` names (Kubeflow Trainer v2 with JobSet by default, or the legacy Training
Operator v1 for PyTorchJob), and with `jobs.kueue` the Kueue release plus one ResourceFlavor per
pool, a ClusterQueue sized to the pools and the LocalQueue the job manifests name. Versions and
sources are the catalog's `charts:` rows (role job-controller / queue)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from accelstack import naming
from accelstack.catalog import HelmChart
from accelstack.naming import MANAGED_BY, MANAGED_BY_LABEL, POOL_LABEL, STACK_LABEL
from accelstack.resolve import ResolvedPool, Stack
from accelstack.resolve.queue import kueue_values

EFA_RESOURCE = "vpc.amazonaws.com/efa"
HUGEPAGES = "hugepages-2Mi"


def pool_quota(stack: Stack, pool: ResolvedPool) -> dict[str, str]:
    """What the pool's nodes give training pods, as Kueue quantities: one training pod per
    node (resolve sizes its requests: `ResolvedPool.pod`), times the pool's nodes."""
    pod, n = pool.pod, pool.nodes
    out = {"cpu": f"{pod.cpu_millicores * n}m", "memory": f"{pod.memory_mib * n}Mi"}
    dra = pool.ultraserver.dra if pool.ultraserver else None
    if dra is not None:
        # one claimed UltraServer node device per pod (the ResourceClaimTemplate's count 1),
        # under the name the Kueue configuration maps the DeviceClass to
        out[dra.kueue_resource] = str(n)
    elif pool.device.device_resource:
        out[pool.device.device_resource] = str(pool.accelerators_per_node * n)
    if pool.efa_interfaces:
        out[EFA_RESOURCE] = str(pool.efa_interfaces * n)
        out[HUGEPAGES] = f"{pod.hugepages_mib * n}Mi"
    return out


def cluster_queue_spec(stack: Stack, namespace: str) -> dict[str, Any]:
    """One resource group covering every resource any pool's pods request; one flavor per pool
    (quota 0 for what the pool lacks), so a job is admitted whole or not at all."""
    quotas = {p.name: pool_quota(stack, p) for p in stack.pools}
    covered = sorted({r for q in quotas.values() for r in q})
    flavors = [
        {
            "name": flavor_name(stack, name),
            "resources": [{"name": r, "nominalQuota": q.get(r, "0")} for r in covered],
        }
        for name, q in quotas.items()
    ]
    return {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        "resourceGroups": [{"coveredResources": covered, "flavors": flavors}],
    }


def flavor_name(stack: Stack, pool: str) -> str:
    return naming.resource_flavor(stack.name, pool)


@dataclass(frozen=True)
class JobLayerArgs:
    provider: k8s.Provider
    stack: Stack
    controller: HelmChart | None
    queue: HelmChart | None
    namespace: str
    depends_on: list[pulumi.Resource] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_stack(
        cls,
        stack: Stack,
        provider: k8s.Provider,
        depends_on: list[pulumi.Resource],
    ) -> JobLayerArgs:
        return cls(
            provider=provider,
            stack=stack,
            controller=stack.job_controller_chart,
            queue=stack.queue_chart,
            namespace=stack.training_namespace,
            depends_on=depends_on,
            labels={MANAGED_BY_LABEL: MANAGED_BY, STACK_LABEL: stack.name},
        )


def _release(
    name: str, chart: HelmChart, values: dict[str, Any], opts: pulumi.ResourceOptions
) -> k8s.helm.v3.Release:
    return k8s.helm.v3.Release(
        name,
        name=chart.chart.rsplit("/", 1)[-1],
        chart=chart.chart,
        version=chart.version,
        repository_opts={"repo": chart.repo} if chart.repo else None,
        namespace=chart.namespace,
        create_namespace=True,
        values=values,
        skip_await=False,
        opts=opts,
    )


class JobLayer(pulumi.ComponentResource):
    def __init__(
        self, name: str, args: JobLayerArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("accelstack:jobs:JobLayer", name, None, opts)
        kopts = pulumi.ResourceOptions(
            parent=self, provider=args.provider, depends_on=args.depends_on
        )
        self.controller: pulumi.Resource | None = None
        c = args.controller
        if c is not None and c.kind == "kustomize":
            self.controller = k8s.kustomize.v2.Directory(
                f"{name}-controller", directory=c.chart, opts=kopts
            )
        elif c is not None:
            # JobSet is the chart's pinned dependency (catalog `bundles`), installed with it
            self.controller = _release(
                f"{name}-controller", c, {"jobset": {"install": True}}, kopts
            )
        if args.queue is not None:
            self._kueue(name, args, kopts)
        self.register_outputs({"controller": c.name if c else "none"})

    def _kueue(self, name: str, args: JobLayerArgs, kopts: pulumi.ResourceOptions) -> None:
        assert args.queue is not None
        # gang admission: waitForPodsReady in the manager Configuration (resolve/queue.py)
        values = kueue_values(args.stack, args.queue)
        release = _release(f"{name}-kueue", args.queue, values, kopts)
        copts = pulumi.ResourceOptions(
            parent=self, provider=args.provider, depends_on=[release, *args.depends_on]
        )
        api, stack = args.queue.api_version or "", args.stack  # the catalog row names it
        flavor_extra: dict[str, Any] = {}
        if stack.topology_levels:
            # topology-aware scheduling: the Topology the flavors name (levels from the catalog)
            topo = k8s.apiextensions.CustomResource(
                f"{name}-topology",
                api_version=api,
                kind="Topology",
                metadata={"name": naming.kueue_topology(stack.name), "labels": args.labels},
                spec={"levels": [{"nodeLabel": lv} for lv in stack.topology_levels]},
                opts=copts,
            )
            flavor_extra = {"topologyName": naming.kueue_topology(stack.name)}
            copts = pulumi.ResourceOptions.merge(copts, pulumi.ResourceOptions(depends_on=[topo]))
        for p in stack.pools:
            k8s.apiextensions.CustomResource(
                f"{name}-flavor-{p.name}",
                api_version=api,
                kind="ResourceFlavor",
                metadata={"name": flavor_name(stack, p.name), "labels": args.labels},
                spec={"nodeLabels": {POOL_LABEL: p.name}, **flavor_extra},
                opts=copts,
            )
        cq = k8s.apiextensions.CustomResource(
            f"{name}-cluster-queue",
            api_version=api,
            kind="ClusterQueue",
            metadata={"name": stack.name, "labels": args.labels},
            spec=cluster_queue_spec(stack, args.namespace),
            opts=copts,
        )
        k8s.apiextensions.CustomResource(
            f"{name}-local-queue",
            api_version=api,
            kind="LocalQueue",
            metadata={
                "name": stack.queue_name,
                "namespace": args.namespace,
                "labels": args.labels,
            },
            spec={"clusterQueue": stack.name},
            opts=pulumi.ResourceOptions(
                parent=self, provider=args.provider, depends_on=[cq, *args.depends_on]
            ),
        )
