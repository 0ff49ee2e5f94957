"""CompileCache: the S3 bucket for NEURON_COMPILE_CACHE_URL (or an existing bucket); the
training pods read and write its prefix only, through the stack's Pod Identity role
(`TrainingIdentity` in checkpoints.py, which also grants the checkpoint prefix).

The bucket is stateful: `protect=True`, `retain_on_delete=True`, and its logical and physical
names depend only on the stack name and account, never on node counts, budget or tags.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from accelstack.components.common import (
    pod_identity_trust_policy,
    policy_json,
    stable_tags,
)

__all__ = ["pod_identity_trust_policy"]  # re-exported: tests and docs name it here
from accelstack import naming
from accelstack.resolve import Stack


def bucket_name(stack_name: str, account_id: str) -> str:
    """The bucket accelstack creates for the stack (naming.cache_bucket)."""
    return naming.cache_bucket(stack_name, account_id)


def bucket_arn(partition: str, bucket: str) -> str:
    return f"arn:{partition}:s3:::{bucket}"


def bucket_policy_document(arn: str) -> dict[str, Any]:
    """Deny every request that does not use TLS."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "DenyInsecureTransport",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "s3:*",
                "Resource": [arn, f"{arn}/*"],
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            }
        ],
    }


def pod_identity_policy(arn: str, prefix: str) -> dict[str, Any]:
    """List the bucket under the cache prefix; read, write and delete objects under it only."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "ListCachePrefix",
                "Effect": "Allow",
                "Action": "s3:ListBucket",
                "Resource": arn,
                "Condition": {"StringLike": {"s3:prefix": [prefix, f"{prefix}*"]}},
            },
            {
                "Sid": "ReadWriteCacheObjects",
                "Effect": "Allow",
                "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
                "Resource": f"{arn}/{prefix}*",
            },
        ],
    }


def lifecycle_rules(prefix: str, expire_days: int) -> list[Any]:
    return [
        {
            "id": "expire-stale-cache",
            "status": "Enabled",
            "filter": {"prefix": prefix},
            "expiration": {"days": expire_days},
            "noncurrent_version_expiration": {"noncurrent_days": expire_days},
            "abort_incomplete_multipart_upload": {"days_after_initiation": 7},
        }
    ]


@dataclass(frozen=True)
class CompileCacheArgs:
    stack_name: str
    prefix: str
    expire_days: int
    account_id: pulumi.Input[str]
    partition: pulumi.Input[str]
    existing_bucket: str | None = None
    tags: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_stack(
        cls, stack: Stack, account_id: pulumi.Input[str], partition: pulumi.Input[str]
    ) -> CompileCacheArgs:
        return cls(
            stack_name=stack.name,
            prefix=stack.compile_cache_prefix,
            expire_days=stack.compile_cache_expire_days,
            account_id=account_id,
            partition=partition,
            existing_bucket=stack.compile_cache_bucket,
            tags=stable_tags(stack.tags),
        )


class CompileCache(pulumi.ComponentResource):
    """The cache bucket (or the existing one). The training pods reach its prefix through the
    stack's one Pod Identity role (`TrainingIdentity`, checkpoints.py): a service account has
    one association, so every grant the pods need is a policy of that role."""

    bucket_name: pulumi.Output[str]
    bucket_arn: pulumi.Output[str]

    def __init__(
        self, name: str, args: CompileCacheArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("accelstack:compilecache:CompileCache", name, None, opts)
        if args.existing_bucket:
            self.bucket_name = pulumi.Output.from_input(args.existing_bucket)
        else:
            self.bucket_name = secure_bucket(
                name,
                self,
                stack_name=args.stack_name,
                account_id=args.account_id,
                key_prefix=args.prefix,
                expire_days=args.expire_days,
                tags=args.tags,
            )
        self.bucket_arn = pulumi.Output.all(args.partition, self.bucket_name).apply(
            lambda a: bucket_arn(a[0], a[1])
        )
        self.register_outputs({"bucketName": self.bucket_name})


def secure_bucket(
    prefix: str,
    parent: pulumi.Resource,
    *,
    stack_name: str,
    account_id: pulumi.Input[str],
    key_prefix: str,
    expire_days: int,
    tags: dict[str, str],
    name_of: Callable[[str, str], str] = naming.cache_bucket,
    rules: list[Any] | None = None,
) -> pulumi.Output[str]:
    """The bucket `name_of(stack, account)` (default: the compile cache's) and its hardening,
    children of `parent` named `{prefix}-<role>`: protected and retained on delete, public
    access blocked, owner-enforced, encrypted, versioned, lifecycle `rules` (default: stale
    cache objects expired), TLS-only. Used by the EKS CompileCache, the checkpoint store and
    the standalone cluster alike."""
    stateful = pulumi.ResourceOptions(parent=parent, protect=True, retain_on_delete=True)
    child = pulumi.ResourceOptions(parent=parent)
    bucket = aws.s3.Bucket(
        naming.bucket_resource(prefix),  # as the inventory names it (the cost guard prices it)
        bucket=pulumi.Output.from_input(account_id).apply(lambda acct: name_of(stack_name, acct)),
        force_destroy=False,
        tags=tags,
        opts=stateful,
    )
    _lock_down_access(prefix, bucket, child)
    lifecycle = rules if rules is not None else lifecycle_rules(key_prefix, expire_days)
    _keep_objects_safe(prefix, bucket, lifecycle, child)
    aws.s3.BucketPolicy(
        f"{prefix}-tls-only",
        bucket=bucket.id,
        policy=bucket.arn.apply(lambda a: policy_json(bucket_policy_document(a))),
        opts=child,
    )
    return bucket.bucket


def _lock_down_access(prefix: str, bucket: aws.s3.Bucket, child: pulumi.ResourceOptions) -> None:
    """Block every form of public access and enforce bucket-owner object ownership."""
    aws.s3.BucketPublicAccessBlock(
        f"{prefix}-public-access-block",
        bucket=bucket.id,
        block_public_acls=True,
        block_public_policy=True,
        ignore_public_acls=True,
        restrict_public_buckets=True,
        opts=child,
    )
    aws.s3.BucketOwnershipControls(
        f"{prefix}-ownership",
        bucket=bucket.id,
        rule={"object_ownership": "BucketOwnerEnforced"},
        opts=child,
    )


def _keep_objects_safe(
    prefix: str,
    bucket: aws.s3.Bucket,
    rules: list[Any],
    child: pulumi.ResourceOptions,
) -> None:
    """Encrypt and version the objects, and apply the lifecycle `rules`."""
    aws.s3.BucketServerSideEncryptionConfiguration(
        f"{prefix}-encryption",
        bucket=bucket.id,
        rules=[
            {
                "apply_server_side_encryption_by_default": {"sse_algorithm": "AES256"},
                "bucket_key_enabled": True,
            }
        ],
        opts=child,
    )
    aws.s3.BucketVersioning(
        f"{prefix}-versioning",
        bucket=bucket.id,
        versioning_configuration={"status": "Enabled"},
        opts=child,
    )
    aws.s3.BucketLifecycleConfiguration(
        f"{prefix}-lifecycle",
        bucket=bucket.id,
        rules=rules,
        opts=child,
    )
