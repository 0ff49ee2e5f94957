from __future__ import annotations

import copy
import dataclasses
from typing import Any

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


def _preset_stack(stem: str, edit: Any) -> Any:
    from accelstack.spec import parse_spec, read_yaml

    data = copy.deepcopy(read_yaml(STACKS / f"{stem}.yaml"))
    data["budget"] = {"max_hourly_usd": 1e9, "max_monthly_usd": 1e12, "max_run_usd": 1e12}
    edit(data)
    return resolve(parse_spec(data, f"{stem}.yaml"))


def _pool(nodes: int, **more: Any) -> Any:
    return lambda d: d["pools"][0].update(nodes=nodes, **more)


def test_a_pool_beyond_one_launch_in_one_placement_group_is_warned() -> None:
    """2,048 on-demand p5 nodes in one cluster placement group: five node groups, the later
    ones launched in later steps into a group EC2 may have no room left in (scale.yaml
    placement); per-launch placement groups, or a pool within one launch, say nothing."""
    big = _preset_stack("llama3-405b-p5", _pool(2048))
    (line,) = [w for w in stack_warnings(big) if "placement" in w]
    assert line.startswith("pools[0].placement_groups: one cluster placement group holds all")
    assert "set placement_groups: per-launch (a placement group per 900 nodes" in line
    split = _preset_stack("llama3-405b-p5", _pool(2048, placement_groups="per-launch"))
    assert not [w for w in stack_warnings(split) if "placement" in w]
    assert not [
        w
        for w in stack_warnings(_preset_stack("llama3-405b-p5", _pool(900)))
        if "placement_groups" in w
    ]


EXISTING = {
    "mode": "existing",
    "vpc_id": "vpc-0123456789abcdef0",
    "private_subnet_ids": ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"],
}


def _existing(nodes: int, **network: Any) -> Any:
    def edit(d: dict[str, Any]) -> None:
        d["pools"][0]["nodes"] = nodes
        d["network"] = {**EXISTING, **network}

    return edit


def test_an_existing_vpc_at_scale_gets_the_compact_cni_settings_and_a_warning() -> None:
    """Fails on the old program: an existing VPC without free-address counts kept the VPC CNI
    defaults (a warm ENI, 50 addresses, per p5 node) at any size."""
    stack = _preset_stack("llama3-70b-p5", _existing(256))
    env = stack.address_plan.cni_env
    assert env == {"MINIMUM_IP_TARGET": "8", "WARM_IP_TARGET": "2"}
    (line,) = [w for w in stack_warnings(stack) if w.startswith("network.private_subnet_addresses")]
    assert "WARM_IP_TARGET=2" in line and "state each zone's free private addresses" in line
    small = _preset_stack("llama3-70b-p5", _existing(16))
    assert small.address_plan.cni_env == {}
    stated = _preset_stack(
        "llama3-70b-p5", _existing(256, private_subnet_addresses={"use2-az3": 60000})
    )
    assert stated.address_plan.cni_env == {}  # stated and enough: the defaults
    assert not [w for w in stack_warnings(stated) if "private_subnet_addresses" in w]
