"""The program: one resolved `Stack` in, every component out. `__main__.py` (pulumi up) and
`accelstack.plan` (offline, under mocks) both call `build`, so the plan shows exactly what the
program would create."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pulumi

from accelstack import naming
from accelstack.components.checkpoints import (
    CheckpointStore,
    CheckpointStoreArgs,
    Grant,
    TrainingIdentity,
    TrainingIdentityArgs,
    checkpoint_config_map,
)
from accelstack.components.cluster import Cluster, ClusterArgs
from accelstack.components.common import stable_tags
from accelstack.components.compile_cache import CompileCache, CompileCacheArgs
from accelstack.components.device_plugins import DevicePlugins, DevicePluginsArgs
from accelstack.components.filesystem import FileSystem, FileSystemArgs, FsxClaim, FsxClaimArgs
from accelstack.components.job_controller import JobLayer, JobLayerArgs
from accelstack.components.metrics import Metrics, MetricsArgs
from accelstack.components.network import Network, NetworkArgs
from accelstack.components.nodegroup import (
    AcceleratorNodeGroup,
    AcceleratorNodeGroupArgs,
    ClusterRef,
    SystemNodeGroup,
    SystemNodeGroupArgs,
)
from accelstack.components.provider import aws_context
from accelstack.components.standalone import NodeScript, build_standalone
from accelstack.errors import AccelstackError
from accelstack.inventory import registry_cache_actions, registry_cache_rules
from accelstack.resolve import Stack


def _cache_url(stack: Stack, pool: str) -> Callable[[str], str]:
    def url(bucket: str) -> str:
        return stack.compile_cache_url(pool, bucket)

    return url


def _compile_cache(
    stack: Stack,
    account_id: pulumi.Output[str],
    partition: pulumi.Output[str],
    top: pulumi.ResourceOptions,
) -> tuple[dict[str, Any], list[Grant]]:
    """The Neuron compile cache bucket, its per-pool URLs and the pods' grant to its prefix."""
    if not stack.compile_cache_enabled:
        return {}, []
    cache = CompileCache(
        naming.compile_cache(stack.name),
        CompileCacheArgs.from_stack(stack, account_id, partition),
        opts=top,
    )
    outputs = {
        "compileCacheBucket": cache.bucket_name,
        "compileCacheUrls": {
            p.name: cache.bucket_name.apply(_cache_url(stack, p.name))
            for p in stack.pools
            if p.compile_cache
        },
    }
    return outputs, [Grant("compile-cache", cache.bucket_arn, stack.compile_cache_prefix)]


def _checkpoints(
    stack: Stack,
    cluster: Cluster,
    plugins: DevicePlugins,
    fsx_id: pulumi.Output[str] | None,
    context: tuple[pulumi.Output[str], pulumi.Output[str], pulumi.ResourceOptions],
    grants: list[Grant],
) -> dict[str, Any]:
    """The checkpoint bucket (linked into FSx when there is one), the training pods' one Pod
    Identity role with every grant, and the ConfigMap the rendered jobs read the URL from."""
    account_id, partition, top = context
    store = CheckpointStore(
        naming.checkpoints(stack.name),
        CheckpointStoreArgs.from_stack(stack, account_id, partition, fsx_id),
        opts=top,
    )
    assert stack.checkpoint is not None  # EKS stacks only
    ckpt = Grant("checkpoints", store.bucket_arn, stack.checkpoint.prefix, multipart=True)
    TrainingIdentity(
        naming.training_identity(stack.name),
        TrainingIdentityArgs(
            cluster_name=cluster.cluster_name,
            cluster_arn=cluster.cluster.arn,
            account_id=account_id,
            namespace=stack.training_namespace,
            service_account=stack.training_service_account,
            grants=[ckpt, *grants],
            tags=stable_tags(stack.tags),
        ),
        opts=top,
    )
    checkpoint_config_map(
        stack.checkpoint_config_name,
        stack.training_namespace,
        store.url,
        plugins.provider,
        depends_on=[plugins.namespace, *cluster.access],
    )
    return {"checkpointBucket": store.bucket_name, "checkpointUrl": store.url}


def _file_system(
    stack: Stack,
    network: Network,
    cluster: Cluster,
    plugins: DevicePlugins,
    system: SystemNodeGroup,
    top: pulumi.ResourceOptions,
) -> tuple[dict[str, Any], pulumi.Output[str] | None]:
    """FSx for Lustre in the workload pool's zone plus the claim the jobs mount, when asked;
    also the file system id (for the checkpoint link)."""
    name = stack.name
    wl = stack.workload_pool
    fs_args = FileSystemArgs.from_stack(
        stack,
        subnet_id=network.private_subnet_ids[wl.zone_id],
        vpc_id=network.vpc_id,
        client_security_group_ids=[cluster.cluster_security_group_id],
    )
    if fs_args is None:
        return {}, None
    fs = FileSystem(naming.fsx(name), fs_args, opts=top)
    claim = stack.fsx_claim_name
    assert claim is not None  # fs_args exists only when storage.fsx_lustre_gib is set
    FsxClaim(
        naming.fsx_claim_component(name),
        FsxClaimArgs(
            cluster_name=cluster.cluster_name,
            provider=plugins.provider,
            namespace=stack.training_namespace,
            claim_name=claim,
            storage_gib=fs_args.storage_gib,
            file_system_id=fs.file_system_id,
            dns_name=fs.dns_name,
            mount_name=fs.mount_name,
            depends_on=[plugins.namespace, system.node_group],
            tags=fs_args.tags,
            kubernetes_version=stack.kubernetes_version,
            addon_versions=stack.addon_versions,
        ),
        opts=top,
    )
    outputs = {
        "fsxFileSystemId": fs.file_system_id,
        "fsxDnsName": fs.dns_name,
        "fsxMountName": fs.mount_name,
        "fsxClaim": claim,
    }
    return outputs, fs.file_system_id


def _device_plugins(
    stack: Stack, cluster: Cluster, system: SystemNodeGroup, top: pulumi.ResourceOptions
) -> DevicePlugins:
    """Device plugins, namespace and service account: after the system nodes (they run the
    charts' controllers) and the admins' access (the deployer makes these API calls)."""
    return DevicePlugins(
        naming.device_plugins(stack.name),
        DevicePluginsArgs.from_stack(
            stack, cluster.kubeconfig, depends_on=[system.node_group], access=cluster.access
        ),
        opts=top,
    )


def _job_layer(
    stack: Stack, plugins: DevicePlugins, system: SystemNodeGroup, top: pulumi.ResourceOptions
) -> dict[str, Any]:
    """The job controller (and Kueue with its queues): after the system nodes that run their
    controllers and the training namespace the queue lives in."""
    JobLayer(
        naming.job_layer(stack.name),
        JobLayerArgs.from_stack(
            stack, plugins.provider, depends_on=[system.node_group, plugins.namespace]
        ),
        opts=top,
    )
    out: dict[str, Any] = {"jobController": stack.job_controller}
    if stack.queue_name:
        out["queueName"] = stack.queue_name
    return out


def _metrics(
    stack: Stack,
    cluster: Cluster,
    system: SystemNodeGroup,
    account_id: pulumi.Output[str],
    partition: pulumi.Output[str],
    top: pulumi.ResourceOptions,
) -> None:
    """The accelerator-metrics add-on, after the Pod Identity agent and the system nodes."""
    args = MetricsArgs.from_stack(
        stack,
        cluster.cluster_name,
        cluster.cluster.arn,
        account_id,
        partition,
        depends_on=[*cluster.early_addons, system.node_group],
    )
    if args is not None:
        Metrics(naming.metrics(stack.name), args, opts=top)


def _access_outputs(stack: Stack, cluster: Cluster) -> dict[str, Any]:
    """How to reach the cluster: its name, region, kubeconfig and the command that writes one."""
    return {
        "clusterName": cluster.cluster_name,
        "kubeconfig": cluster.kubeconfig,  # already a secret
        "region": stack.region,
        "kubeconfigCommand": cluster.cluster_name.apply(
            lambda n: kubeconfig_command(stack.region, n)
        ),
    }


def kubeconfig_command(region: str, cluster_name: str) -> str:
    """The exact command that writes a kubeconfig entry for the cluster (AWS CLI reference,
    `aws eks update-kubeconfig --region REGION --name NAME`)."""
    return f"aws eks update-kubeconfig --region {region} --name {cluster_name}"


def _node_group_outputs(pools: dict[str, AcceleratorNodeGroup]) -> dict[str, Any]:
    """`nodeGroups`: each pool's first node group; `poolNodeGroups` (only when a pool spans
    several EKS managed node groups): every group's name, in order."""
    out: dict[str, Any] = {"nodeGroups": {p: ng.node_group_name for p, ng in sorted(pools.items())}}
    if any(len(ng.node_groups) > 1 for ng in pools.values()):
        out["poolNodeGroups"] = {
            p: [g.node_group_name for g in ng.node_groups] for p, ng in sorted(pools.items())
        }
    return out


def _cache_repositories(
    stack: Stack, account_id: pulumi.Output[str], partition: pulumi.Output[str]
) -> list[pulumi.Input[str]]:
    """The ARNs of the repositories the stack's pull-through cache rules create: `<prefix>/*`."""
    return [
        pulumi.Output.concat(
            "arn:",
            partition,
            ":ecr:",
            stack.region,
            ":",
            account_id,
            ":repository/",
            r.prefix,
            "/*",
        )
        for r in registry_cache_rules(stack)
    ]


def _image_cache_outputs(stack: Stack, account_id: pulumi.Output[str]) -> dict[str, Any]:
    """Where each cached upstream registry's images are pulled from inside the VPC: a job
    image `public.ecr.aws/<repo>:<tag>` is `<imageCache[public.ecr.aws]>/<repo>:<tag>`."""
    rules = registry_cache_rules(stack)
    if not rules:
        return {}
    host = f".dkr.ecr.{stack.region}.amazonaws.com/"
    return {
        "imageCache": {
            r.upstream_url: pulumi.Output.concat(account_id, host, r.prefix) for r in rules
        }
    }


def _cluster_ref(
    cluster: Cluster,
    network: Network,
    context: tuple[Stack, pulumi.Output[str], pulumi.Output[str]],
) -> ClusterRef:
    """What the node groups need from the cluster (they wait for the early add-ons), and the
    stack's pull-through cache repositories their role may import into."""
    stack, account_id, partition = context
    return ClusterRef(
        name=cluster.cluster_name,
        endpoint=cluster.endpoint,
        certificate_authority=cluster.certificate_authority,
        service_cidr=cluster.cluster.kubernetes_network_config.apply(
            lambda k: k.service_ipv4_cidr or ""
        ),
        security_group_id=cluster.cluster_security_group_id,
        vpc_id=network.vpc_id,
        partition=partition,
        depends_on=list(cluster.early_addons),
        cache_repositories=_cache_repositories(stack, account_id, partition),
        cache_actions=registry_cache_actions(stack),
    )


def _accelerator_pools(
    stack: Stack, ref: ClusterRef, network: Network, top: pulumi.ResourceOptions
) -> dict[str, AcceleratorNodeGroup]:
    """Each pool's node groups, in creation steps: a group of step k waits for every group of
    step k-1 (resolve's ClusterProfile staging)."""
    pools: dict[str, AcceleratorNodeGroup] = {}
    by_step: dict[int, list[pulumi.Resource]] = {}
    for pool in stack.pools:
        pools[pool.name] = AcceleratorNodeGroup(
            naming.pool_prefix(stack.name, pool.name),
            AcceleratorNodeGroupArgs.from_stack(
                stack,
                pool,
                ref,
                network.private_subnet_ids[pool.zone_id],
                network.secondary_subnet_ids.get(pool.zone_id),
                earlier_steps=by_step,
            ),
            opts=top,
        )
        for part, group in zip(pool.node_groups, pools[pool.name].node_groups, strict=True):
            by_step.setdefault(part.step, []).append(group)
    return pools


def _needed(stack: Stack, node_script: NodeScript | None) -> NodeScript:
    """A standalone stack's program cannot run without its node launch scripts."""
    if node_script is None:
        raise AccelstackError(
            f"{stack.name}: a standalone stack's program needs the node launch scripts: "
            "build(stack, node_script=accelstack.render.node_script)"
        )
    return node_script


def build(stack: Stack, node_script: NodeScript | None = None) -> dict[str, Any]:
    """Create every resource of the stack; returns the outputs to export (name -> Output).
    `node_script`: how a standalone (orchestration ec2) pool's launch script is rendered
    (`accelstack.render.node_script`), handed in by whoever wires the program (the CLI's
    `program()`, the Pulumi program's entry): the components import nothing of render."""
    if stack.orchestration == "ec2":
        return build_standalone(stack, _needed(stack, node_script))
    name = stack.name
    top, partition, account_id = aws_context(stack)

    network = Network(naming.network(name), NetworkArgs.from_stack(stack), opts=top)
    # the control plane and the system nodes stay in the control-plane zones (EKS keeps a
    # cluster where it was created; a node group's subnets are replace-forcing): a pool in
    # another zone adds that zone's subnets and changes neither
    plane: list[pulumi.Input[str]] = [
        network.private_subnet_ids[z] for z in sorted(stack.control_plane_zone_ids)
    ]
    cluster = Cluster(
        naming.cluster(name),
        ClusterArgs.from_stack(stack, plane, partition, account_id),
        opts=top,
    )
    network.finish(cluster.cluster_security_group_id)  # its last child, then its outputs
    ref = _cluster_ref(cluster, network, (stack, account_id, partition))
    system = SystemNodeGroup(
        naming.system_nodes(name), SystemNodeGroupArgs.from_stack(stack, ref, plane), opts=top
    )
    pools = _accelerator_pools(stack, ref, network, top)

    outputs: dict[str, Any] = {
        **_access_outputs(stack, cluster),
        "vpcId": network.vpc_id,
        "systemNodeGroup": system.node_group_name,
        **_node_group_outputs(pools),
        **_image_cache_outputs(stack, account_id),
    }

    cache_outputs, grants = _compile_cache(stack, account_id, partition, top)
    outputs.update(cache_outputs)

    plugins = _device_plugins(stack, cluster, system, top)
    outputs.update(_job_layer(stack, plugins, system, top))
    _metrics(stack, cluster, system, account_id, partition, top)

    fs_outputs, fsx_id = _file_system(stack, network, cluster, plugins, system, top)
    outputs.update(fs_outputs)
    outputs.update(
        _checkpoints(stack, cluster, plugins, fsx_id, (account_id, partition, top), grants)
    )
    return outputs
