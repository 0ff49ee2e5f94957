"""`compare` builds each candidate as a spec edit resolved by `resolve`: every fact of the
candidate's workload pool is the one `resolve` gives its type, none carried over from the
preset's pool."""

from __future__ import annotations

from typing import Any

import pytest

from accelstack.catalog import load_catalog
from accelstack.cost.compare import compare, retarget_stack
from accelstack.resolve import Stack, ami_parameter, resolve
from accelstack.spec import parse_spec

from .. import factories


def stack_of(preset: str, **pool: Any) -> Stack:
    data = factories.preset(preset)
    data["pools"][0].update(pool)
    return resolve(parse_spec(data, f"{preset}.yaml"))


def test_p5_retargeted_to_trn2_has_trn2s_facts() -> None:
    cat = load_catalog()
    stack = stack_of("llama3-70b-p5")
    p5 = stack.workload_pool
    moved = retarget_stack(stack, "trn2.48xlarge", 4, "on-demand").workload_pool
    inst = cat.instance("trn2.48xlarge")
    fam = cat.families[inst.family]
    dev = cat.device_kinds[fam.device_kind]
    assert moved.instance_type == "trn2.48xlarge" and moved.nodes == 4
    assert moved.efa_interfaces == inst.efa_interfaces != p5.efa_interfaces
    assert moved.logical_cores == fam.default_logical_cores != p5.logical_cores
    assert moved.procs_per_node == cat.neuron_cores("trn2.48xlarge") != p5.procs_per_node
    expected_ami = ami_parameter(stack.spec, cat, dev, stack.kubernetes_version)
    assert moved.ami_parameter == expected_ami != p5.ami_parameter
    assert moved.framework is not None and p5.framework is not None
    assert moved.framework.name == cat.default_framework(fam) != p5.framework.name
    assert moved.compile_cache and not p5.compile_cache


def test_candidate_equals_the_resolved_spec_edit() -> None:
    """The candidate is what resolving the edited spec gives: the same pool, field by field
    (unchecked, as a candidate is: this one has no image for the TorchNeuron path, which the
    spec rules would ask of a file to deploy)."""
    from accelstack.resolve import resolve_unchecked
    from accelstack.resolve.retarget import retarget_spec

    stack = stack_of("llama3-70b-p5")
    moved = retarget_stack(stack, "trn2.48xlarge", 4, "spot")
    edit = retarget_spec(
        stack.spec, stack.catalog, instance_type="trn2.48xlarge", nodes=4, option="spot"
    )
    assert moved == resolve_unchecked(edit, stack.catalog, name=stack.name)
    assert moved.workload_pool.purchase_option == "spot"


def test_reserved_candidate_prices_its_own_nodes() -> None:
    """A candidate on a Capacity Block runs (and is billed for) its own node count, not the
    node count of the reservation the spec's pool holds."""
    stack = stack_of(
        "llama3-70b-p5",
        nodes=8,
        purchase={"option": "capacity-block", "reservation_id": "cr-0123456789abcdef0"},
    )
    moved = retarget_stack(stack, "trn2.48xlarge", 4, "capacity-block")
    pool = moved.workload_pool
    assert pool.reservations == (("cr-0123456789abcdef0", 4),)
    assert sum(g.nodes for g in pool.node_groups) == 4
    cand = compare(stack, ["trn2.48xlarge"], options=["on-demand", "capacity-block"])
    od, cb = cand.candidates[0].options
    # the pool's other costs (root volumes) are the same 4 nodes' under either option
    extra = od.pool_hourly_usd - 4 * od.instance_rate_usd
    assert 0 <= extra < od.instance_rate_usd
    assert cb.pool_hourly_usd == pytest.approx(4 * cb.instance_rate_usd + extra)
