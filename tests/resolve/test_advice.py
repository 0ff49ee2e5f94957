from __future__ import annotations

import dataclasses

from accelstack.resolve import resolve
from accelstack.resolve.advice import stack_warnings
from accelstack.spec import load_spec

from ..conftest import STACKS


def test_the_batch_warning_counts_the_resolved_workload_pools_chips() -> None:
    """The chips come from the resolved stack's workload pool, not from the spec again."""
    spec = load_spec(STACKS / "trn1-multinode.yaml")
    stack = resolve(spec)
    pool = stack.workload_pool
    assert not any("global_batch_size" in w for w in stack_warnings(stack))
    more = dataclasses.replace(pool, nodes=128)  # 128 nodes x 16 chips > a batch of 1,024
    wider = dataclasses.replace(
        stack, pools=tuple(more if p.name == pool.name else p for p in stack.pools)
    )
    chips = 128 * pool.accelerators_per_node
    batch = [w for w in stack_warnings(wider) if "global_batch_size" in w]
    assert len(batch) == 1 and batch[0].startswith(
        f"workload.global_batch_size: global batch of 1,024 sequences on {chips:,} chips"
    )
