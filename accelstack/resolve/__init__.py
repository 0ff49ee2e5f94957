"""Resolve a validated spec against the catalog (`stack`): every default filled, every fact
attached. `from accelstack.resolve import X` keeps working for every public name."""

from accelstack.resolve.stack import (
    MIN_CLUSTER_ZONES,
    CheckpointPlan,
    ResolvedPool,
    Stack,
    ami_parameter,
    check_region,
    checkpoint_plan,
    deployment_name,
    resolve,
    with_node_groups,
)

__all__ = [
    "MIN_CLUSTER_ZONES",
    "CheckpointPlan",
    "ResolvedPool",
    "Stack",
    "ami_parameter",
    "check_region",
    "checkpoint_plan",
    "deployment_name",
    "resolve",
    "with_node_groups",
]
