"""Typed rows of `resilience.yaml`: durable checkpoints, node repair and node-group updates.

Pure data and arithmetic over it (no I/O besides the loader in `accelstack.catalog`); the
sources of every figure are in the YAML file.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field

from accelstack.catalog.facts import Frozen


class CheckpointFacts(Frozen):
    prefix: str = Field(min_length=1)
    write_minutes: float = Field(gt=0)
    keep: int = Field(ge=1)
    noncurrent_expire_days: int = Field(ge=1)
    fsx_file_system_path: str = Field(pattern=r"^/.*/$")
    fsx_throughput_tiers: tuple[int, ...] = Field(min_length=1)
    fsx_source: str = Field(min_length=1)


class NodeRepairFacts(Frozen):
    enabled: bool
    monitoring_addon: str = Field(min_length=1)
    #: share of a node group unhealthy at once above which auto repair stops (a fault of the
    #: zone, the driver or the AMI, which replacing nodes does not fix)
    max_unhealthy_fraction: float = Field(gt=0, le=1)
    source: str = Field(min_length=1)

    def max_unhealthy(self, nodes: int) -> int:
        """NodeRepairConfig.maxUnhealthyNodeThresholdCount of a `nodes`-node group: at least 1
        (a count, not the API's percentage: a share of a one-node group would stop repair at
        its first unhealthy node)."""
        return max(1, math.ceil(nodes * self.max_unhealthy_fraction))


class FsxTimeoutFacts(Frozen):
    """How long `pulumi up` waits for the FSx for Lustre file system (resilience.yaml)."""

    create_minutes: int = Field(ge=1)
    update_minutes: int = Field(ge=1)
    estimate: bool
    source: str = Field(min_length=1)


class NodeGroupUpdateFacts(Frozen):
    max_unavailable_fraction: float = Field(gt=0, le=1)
    max_unavailable_cap: int = Field(ge=1, le=100)
    minutes_per_batch: int = Field(ge=1)
    minutes_per_batch_estimate: bool
    provider_default_minutes: int = Field(ge=1)
    reserved_capacity_strategy: Literal["MINIMAL", "DEFAULT"]
    source: str = Field(min_length=1)

    def max_unavailable(self, nodes: int) -> int:
        """Nodes replaced in parallel during a version update of a `nodes`-node group."""
        return max(
            1, min(self.max_unavailable_cap, math.ceil(nodes * self.max_unavailable_fraction))
        )

    def update_minutes(self, nodes: int) -> int:
        """The update timeout: one batch per max_unavailable nodes, never below the default."""
        batches = math.ceil(nodes / self.max_unavailable(nodes))
        return max(self.provider_default_minutes, batches * self.minutes_per_batch)


class ResilienceFacts(Frozen):
    checkpoint: CheckpointFacts
    node_repair: NodeRepairFacts
    node_group_update: NodeGroupUpdateFacts
    fsx_timeouts: FsxTimeoutFacts
