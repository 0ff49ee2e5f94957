"""CheckpointStore and TrainingIdentity: where training state survives faults, and how every
workload pod reaches it.

CheckpointStore: the stack's checkpoint bucket `<stack>-ckpt-<account>` (or an existing one)
hardened like the compile cache (protected, retained, private, encrypted, versioned, TLS-only),
whose lifecycle keeps current checkpoints and expires only overwritten versions; with FSx for
Lustre, a data repository association links the file system's checkpoint path to the prefix
(new, changed and deleted files exported automatically, and imported back after the file
system is recreated), so a checkpoint outlives the file system.

TrainingIdentity: the one EKS Pod Identity role of the training service account (a service
account has one association), with one inline policy per grant: the checkpoint prefix for
every stack, the compile-cache prefix where a Neuron pool has one. GPU pools get it too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from accelstack import naming
from accelstack.components.common import pod_identity_trust_output, policy_json, stable_tags
from accelstack.components.compile_cache import bucket_arn, pod_identity_policy, secure_bucket
from accelstack.resolve import Stack

#: File events a data repository association exports to S3 and imports back (FSx DRA docs).
DRA_EVENTS = ["NEW", "CHANGED", "DELETED"]
#: Multipart uploads of large shards: abort and list parts (PutObject covers the upload).
MULTIPART_ACTIONS = ["s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"]


def checkpoint_url(bucket: str, prefix: str) -> str:
    return f"s3://{bucket}/{prefix}"


def checkpoint_lifecycle(prefix: str, noncurrent_days: int) -> list[Any]:
    """Current checkpoints never expire; overwritten versions do, and stalled multipart
    uploads are aborted."""
    return [
        {
            "id": "expire-overwritten-checkpoints",
            "status": "Enabled",
            "filter": {"prefix": prefix},
            "noncurrent_version_expiration": {"noncurrent_days": noncurrent_days},
            "abort_incomplete_multipart_upload": {"days_after_initiation": 7},
        }
    ]


def checkpoint_policy(arn: str, prefix: str) -> dict[str, Any]:
    """Read, write and delete under the checkpoint prefix (multipart included), nothing else."""
    doc: dict[str, Any] = pod_identity_policy(arn, prefix)
    doc["Statement"][1]["Action"] = [*doc["Statement"][1]["Action"], *MULTIPART_ACTIONS]
    return doc


@dataclass(frozen=True)
class CheckpointStoreArgs:
    stack_name: str
    prefix: str
    noncurrent_days: int
    account_id: pulumi.Input[str]
    partition: pulumi.Input[str]
    existing_bucket: str | None = None
    fsx_file_system_id: pulumi.Input[str] | None = None
    fsx_path: str | None = None
    tags: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_stack(
        cls,
        stack: Stack,
        account_id: pulumi.Input[str],
        partition: pulumi.Input[str],
        fsx_file_system_id: pulumi.Input[str] | None = None,
    ) -> CheckpointStoreArgs:
        plan = stack.checkpoint
        assert plan is not None  # EKS stacks only
        return cls(
            stack_name=stack.name,
            prefix=plan.prefix,
            noncurrent_days=plan.noncurrent_expire_days,
            account_id=account_id,
            partition=partition,
            existing_bucket=plan.bucket,
            fsx_file_system_id=fsx_file_system_id,
            fsx_path=plan.fsx_path if fsx_file_system_id is not None else None,
            tags=stable_tags(stack.tags),
        )


class CheckpointStore(pulumi.ComponentResource):
    bucket_name: pulumi.Output[str]
    bucket_arn: pulumi.Output[str]
    url: pulumi.Output[str]

    def __init__(
        self, name: str, args: CheckpointStoreArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("accelstack:checkpoints:CheckpointStore", name, None, opts)
        if args.existing_bucket:
            self.bucket_name = pulumi.Output.from_input(args.existing_bucket)
        else:
            self.bucket_name = secure_bucket(
                name,
                self,
                stack_name=args.stack_name,
                account_id=args.account_id,
                key_prefix=args.prefix,
                expire_days=args.noncurrent_days,
                tags=args.tags,
                name_of=naming.checkpoint_bucket,
                rules=checkpoint_lifecycle(args.prefix, args.noncurrent_days),
            )
        self.bucket_arn = pulumi.Output.all(args.partition, self.bucket_name).apply(
            lambda a: bucket_arn(a[0], a[1])
        )
        self.url = self.bucket_name.apply(lambda b: checkpoint_url(b, args.prefix))
        if args.fsx_file_system_id is not None and args.fsx_path:
            aws.fsx.DataRepositoryAssociation(
                f"{name}-fsx-link",
                file_system_id=args.fsx_file_system_id,
                file_system_path=args.fsx_path,
                data_repository_path=self.url,
                # after the file system is recreated, the checkpoints' metadata comes back
                batch_import_meta_data_on_create=True,
                delete_data_in_filesystem=False,
                s3={
                    "auto_export_policy": {"events": DRA_EVENTS},
                    "auto_import_policy": {"events": DRA_EVENTS},
                },
                tags=args.tags,
                # A new prefix or bucket replaces the association (dataRepositoryPath forces
                # it: catalog/provider_replacements.json), and the new one cannot be created
                # while the old one holds the same file-system path ("Two data repository
                # associations cannot have overlapping file system paths": botocore fsx
                # 2018-03-01 CreateDataRepositoryAssociationRequest.FileSystemPath): the old
                # one goes first.
                opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True),
            )
        self.register_outputs({"bucketName": self.bucket_name, "url": self.url})


@dataclass(frozen=True)
class Grant:
    """One prefix of one bucket the training pods may read, write and delete under."""

    label: str  # the inline policy's name suffix
    bucket_arn: pulumi.Input[str]
    prefix: str
    multipart: bool = False  # large objects: abort and list multipart uploads too


@dataclass(frozen=True)
class TrainingIdentityArgs:
    cluster_name: pulumi.Input[str]
    cluster_arn: pulumi.Input[str]
    account_id: pulumi.Input[str]
    namespace: str
    service_account: str
    grants: list[Grant]
    tags: dict[str, str] = field(default_factory=dict)


def _grant_policy(grant: Grant) -> pulumi.Output[str]:
    build = checkpoint_policy if grant.multipart else pod_identity_policy
    return pulumi.Output.from_input(grant.bucket_arn).apply(
        lambda a: policy_json(build(a, grant.prefix))
    )


class TrainingIdentity(pulumi.ComponentResource):
    role_arn: pulumi.Output[str]

    def __init__(
        self, name: str, args: TrainingIdentityArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("accelstack:checkpoints:TrainingIdentity", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        role = aws.iam.Role(
            f"{name}-role",
            assume_role_policy=pod_identity_trust_output(
                args.account_id, args.cluster_arn, args.namespace, args.service_account
            ),
            tags=args.tags,
            opts=child,
        )
        for grant in args.grants:
            aws.iam.RolePolicy(
                f"{name}-{grant.label}",
                role=role.id,
                policy=_grant_policy(grant),
                opts=child,
            )
        aws.eks.PodIdentityAssociation(
            f"{name}-pod-identity",
            cluster_name=args.cluster_name,
            namespace=args.namespace,
            service_account=args.service_account,
            role_arn=role.arn,
            tags=args.tags,
            opts=child,
        )
        self.role_arn = role.arn
        self.register_outputs({"roleArn": self.role_arn})


def checkpoint_config_map(
    name: str,
    namespace: str,
    url: pulumi.Input[str],
    provider: k8s.Provider,
    depends_on: list[pulumi.Resource],
    parent: pulumi.Resource | None = None,
) -> k8s.core.v1.ConfigMap:
    """The checkpoint URL as the pods read it (ACCELSTACK_CHECKPOINT_URL): the bucket name
    holds the account id, known only at deploy time, so the rendered jobs read it here."""
    return k8s.core.v1.ConfigMap(
        f"{name}-config",
        metadata={"name": name, "namespace": namespace},
        data={"url": url},
        opts=pulumi.ResourceOptions(provider=provider, depends_on=depends_on, parent=parent),
    )
