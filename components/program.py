"""The program: one resolved `Stack` in, every component out. `__main__.py` (pulumi up) and
`accelstack.plan` (offline, under mocks) both call `build`, so the plan shows exactly what the
program would create."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pulumi
import pulumi_aws as aws

from accelstack.resolve import Stack
from components.cluster import Cluster, ClusterArgs
from components.compile_cache import CompileCache, CompileCacheArgs
from components.device_plugins import DevicePlugins, DevicePluginsArgs
from components.filesystem import FileSystem, FileSystemArgs, FsxClaim, FsxClaimArgs
from components.network import Network, NetworkArgs
from components.nodegroup import (
    AcceleratorNodeGroup,
    AcceleratorNodeGroupArgs,
    ClusterRef,
    SystemNodeGroup,
    SystemNodeGroupArgs,
)
from components.standalone import build_standalone


def _cache_url(stack: Stack, pool: str) -> Callable[[str], str]:
    def url(bucket: str) -> str:
        return stack.compile_cache_url(pool, bucket)

    return url


def aws_context(
    stack: Stack,
) -> tuple[pulumi.ResourceOptions, pulumi.Output[str], pulumi.Output[str]]:
    """(options with the stack's AWS provider, partition, account id) for either program.

    One explicit provider: the spec decides the region, and user tags reach every AWS resource
    through default_tags (so changing them never touches stateful resource inputs)."""
    provider = aws.Provider(
        f"{stack.name}-aws",
        region=stack.region,
        default_tags={"tags": dict(sorted(stack.tags.items()))},
    )
    invoke = pulumi.InvokeOutputOptions(provider=provider)
    partition = aws.get_partition_output(opts=invoke).partition
    account_id = aws.get_caller_identity_output(opts=invoke).account_id
    return pulumi.ResourceOptions(providers={"aws": provider}), partition, account_id


def build(stack: Stack) -> dict[str, Any]:
    """Create every resource of the stack; returns the outputs to export (name -> Output)."""
    if stack.spec.orchestration == "ec2":
        return build_standalone(stack)
    name = stack.name
    top, partition, account_id = aws_context(stack)

    network = Network(f"{name}-network", NetworkArgs.from_stack(stack), opts=top)
    all_private: list[pulumi.Input[str]] = [
        network.private_subnet_ids[z] for z in sorted(network.private_subnet_ids)
    ]
    cluster = Cluster(
        f"{name}-cluster", ClusterArgs.from_stack(stack, all_private, partition), opts=top
    )
    ref = ClusterRef(
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
    )
    system = SystemNodeGroup(
        f"{name}-system", SystemNodeGroupArgs.from_stack(stack, ref, all_private), opts=top
    )
    pools: dict[str, AcceleratorNodeGroup] = {}
    for pool in stack.pools:
        pools[pool.name] = AcceleratorNodeGroup(
            f"{name}-{pool.name}",
            AcceleratorNodeGroupArgs.from_stack(
                stack, pool, ref, network.private_subnet_ids[pool.zone_id]
            ),
            opts=top,
        )

    outputs: dict[str, Any] = {
        "clusterName": cluster.cluster_name,
        "kubeconfig": cluster.kubeconfig,  # already a secret
        "region": stack.region,
        "vpcId": network.vpc_id,
        "systemNodeGroup": system.node_group_name,
        "nodeGroups": {p: ng.node_group_name for p, ng in sorted(pools.items())},
    }

    if stack.compile_cache_enabled:
        cache = CompileCache(
            f"{name}-compile-cache",
            CompileCacheArgs.from_stack(stack, cluster.cluster_name, account_id, partition),
            opts=top,
        )
        outputs["compileCacheBucket"] = cache.bucket_name
        outputs["compileCacheUrls"] = {
            p.name: cache.bucket_name.apply(_cache_url(stack, p.name))
            for p in stack.pools
            if p.compile_cache
        }

    plugins = DevicePlugins(
        f"{name}-device-plugins",
        DevicePluginsArgs.from_stack(stack, cluster.kubeconfig, depends_on=[system.node_group]),
        opts=top,
    )

    wl = stack.workload_pool
    fs_args = FileSystemArgs.from_stack(
        stack,
        subnet_id=network.private_subnet_ids[wl.zone_id],
        vpc_id=network.vpc_id,
        client_security_group_ids=[cluster.cluster_security_group_id],
    )
    if fs_args is not None:
        fs = FileSystem(f"{name}-fsx", fs_args, opts=top)
        outputs["fsxFileSystemId"] = fs.file_system_id
        outputs["fsxDnsName"] = fs.dns_name
        outputs["fsxMountName"] = fs.mount_name
        claim = stack.fsx_claim_name
        assert claim is not None  # fs_args exists only when storage.fsx_lustre_gib is set
        FsxClaim(
            f"{name}-fsx-claim",
            FsxClaimArgs(
                cluster_name=cluster.cluster_name,
                provider=plugins.provider,
                namespace=stack.catalog.defaults.training_namespace,
                claim_name=claim,
                storage_gib=fs_args.storage_gib,
                file_system_id=fs.file_system_id,
                dns_name=fs.dns_name,
                mount_name=fs.mount_name,
                depends_on=[plugins.namespace, system.node_group],
                tags=fs_args.tags,
            ),
            opts=top,
        )
        outputs["fsxClaim"] = claim
    return outputs
