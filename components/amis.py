"""Where a pool's AMI comes from: the id pinned in the stack config, never a moving alias.

`pulumi up` must not roll every accelerator node (EKS) or recreate every instance (standalone)
because AWS moved `.../recommended/image_id` or a DLAMI's `latest`: the program boots pools
from the AMI id pinned in `Pulumi.<stack>.yaml` (`accelstack:amis`, written by `accelstack amis
pin`; upgraded only by `accelstack amis upgrade --yes`, which shows what rolls). An unpinned
pool is refused unless `accelstack:allowUnpinnedAmis` is true (then the alias is resolved on
every run, the old behaviour). See docs/amis.md.
"""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from accelstack.resolve import ResolvedPool


class UnpinnedAmiError(ValueError):
    """A pool's AMI is not pinned in the stack config and unpinned AMIs are not allowed."""


def image_id(parent: pulumi.Resource, pool: ResolvedPool) -> pulumi.Input[str]:
    """The pool's AMI: the pinned id, else (only when allowed) the alias resolved now."""
    parameter = pool.ami_parameter
    if pool.image_id:
        return pool.image_id
    if not pool.allow_unpinned_ami or not parameter:
        raise UnpinnedAmiError(
            f"pool '{pool.name}': no AMI pinned for {parameter} in the stack config "
            "(accelstack:amis); run `accelstack amis pin SPEC`, or set "
            "accelstack:allowUnpinnedAmis to true to follow the moving alias on every run"
        )
    pulumi.log.warn(
        f"pool '{pool.name}' boots from the moving alias {parameter} "
        "(accelstack:allowUnpinnedAmis): a later `pulumi up` rolls its nodes when AWS moves it",
        resource=parent,
    )
    return aws.ssm.get_parameter_output(
        name=parameter, opts=pulumi.InvokeOutputOptions(parent=parent)
    ).insecure_value
