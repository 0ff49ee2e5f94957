"""The stack's one explicit AWS provider and the partition/account lookups both programs use."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from accelstack import naming
from accelstack.resolve import Stack


def aws_context(
    stack: Stack,
) -> tuple[pulumi.ResourceOptions, pulumi.Output[str], pulumi.Output[str]]:
    """(options with the stack's AWS provider, partition, account id) for either program.

    One explicit provider: the spec decides the region, and user tags reach every AWS resource
    through default_tags (so changing them never touches stateful resource inputs)."""
    provider = aws.Provider(
        naming.provider(stack.name),
        region=stack.region,
        default_tags={"tags": dict(sorted(stack.tags.items()))},
    )
    invoke = pulumi.InvokeOutputOptions(provider=provider)
    partition = aws.get_partition_output(opts=invoke).partition
    account_id = aws.get_caller_identity_output(opts=invoke).account_id
    return pulumi.ResourceOptions(providers={"aws": provider}), partition, account_id
