"""Stable addressing (resolve's Stack.control_plane_zone_ids, network_zone_ids, subnet_slots):
each zone's subnets at its zone id's place (network.subnet_numbering: zone-id), or, for stacks
created before, the order of the zones in use (unchanged: every preset's subnets stay where they
are); the control plane kept in its zones (cluster.zones) while pools move."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from accelstack.errors import SpecError
from accelstack.plan.diff import diff_stack
from accelstack.plan.diffside import SideRow
from accelstack.resolve import Stack, resolve
from accelstack.spec import parse_spec, read_yaml
from accelstack.tokens import SUBNET
from tests.conftest import STACKS
from tests.helpers_plan import plan_stack

OPEN = {"max_hourly_usd": 1e9, "max_monthly_usd": 1e12, "max_run_usd": 1e12}


def _data(stem: str = "p5e-capacity-block", **network: Any) -> dict[str, Any]:
    data: dict[str, Any] = copy.deepcopy(read_yaml(STACKS / f"{stem}.yaml"))
    data["budget"] = dict(OPEN)
    if network:
        data.setdefault("network", {}).update(network)
    return data


def _stack(data: dict[str, Any]) -> Stack:
    return resolve(parse_spec(data, f"{data['name']}.yaml"))


def test_the_zones_in_use_keep_the_order_every_existing_stack_has() -> None:
    """p5e-capacity-block's pool is in use2-az2, topped up with use2-az1: az2 takes the first
    subnet range (what stacks created before zone-id numbering run)."""
    stack = _stack(_data())
    assert stack.control_plane_zone_ids == ("use2-az2", "use2-az1")
    assert stack.network_zone_ids == ("use2-az2", "use2-az1")
    assert stack.subnet_slots == {"use2-az2": 0, "use2-az1": 1}


def test_zone_id_numbering_gives_each_zone_its_place_in_the_region() -> None:
    stack = _stack(_data(subnet_numbering="zone-id"))
    assert stack.subnet_slots == {"use2-az2": 1, "use2-az1": 0}  # use2-az1, -az2, -az3


def test_cluster_zones_keep_the_control_plane_while_a_pool_moves() -> None:
    """llama3-70b-p5 runs its pool in use2-az3 beside use2-az1; with those two written into
    cluster.zones, the pool moves to use2-az2 and gets a third zone's subnets, the first two
    keep their ranges and the control plane stays."""
    data = _data("llama3-70b-p5")
    data["cluster"]["zones"] = ["use2-az3", "use2-az1"]
    data["availability_zone"] = "use2-az2"
    stack = _stack(data)
    assert stack.control_plane_zone_ids == ("use2-az3", "use2-az1")
    assert stack.network_zone_ids == ("use2-az3", "use2-az1", "use2-az2")
    assert stack.subnet_slots == {"use2-az3": 0, "use2-az1": 1, "use2-az2": 2}


@pytest.mark.parametrize(
    ("zones", "path", "piece"),
    [
        (["use2-az1"], "cluster.zones", "at least 2 different zones"),
        (["use2-az1", "use2-az1"], "cluster.zones", "at least 2 different zones"),
        (["use2-az1", "use2-az9"], "cluster.zones[1]", "'use2-az9' is not a zone of us-east-2"),
    ],
)
def test_cluster_zones_are_refused_naming_the_field(
    zones: list[str], path: str, piece: str
) -> None:
    data = _data()
    data["cluster"]["zones"] = zones
    with pytest.raises(SpecError) as err:
        _stack(data)
    assert any(p.path == path and piece in p.message for p in err.value.problems), err.value


def _subnets(stack: Stack) -> dict[str, str]:
    plan = plan_stack(stack, guard=False)
    return {r.name: str(r.inputs["cidrBlock"]) for r in plan.of_type(SUBNET)}


def _plan_doc(stack: Stack) -> SideRow:
    return SideRow("f", plan=plan_stack(stack, guard=False).to_dict())


@pytest.mark.plan
def test_adding_a_pool_in_another_zone_renumbers_nothing_under_zone_id() -> None:
    """The stack numbered by zone id, its control plane in cluster.zones: a pool added in
    use2-az3 gets that zone's subnets and moves none (the diff replaces no subnet and refuses
    nothing). Without the zone-id slots (`subnet_cidrs` by the order of the zones in use and
    the control plane following the pools) the old zones' ranges shift."""
    data = _data("llama3-70b-p5", subnet_numbering="zone-id")
    data["cluster"]["zones"] = ["use2-az1", "use2-az2"]
    data["availability_zone"] = "use2-az2"
    base = _stack(data)
    grown = copy.deepcopy(data)
    extra = copy.deepcopy(grown["pools"][0])
    extra.update(name="extra", nodes=1, availability_zone="use2-az3")
    grown["pools"].append(extra)
    grown["workload"]["pool"] = data["pools"][0]["name"]
    head = _stack(grown)
    before, after = _subnets(base), _subnets(head)
    assert all(after[name] == cidr for name, cidr in before.items())
    assert sorted(set(after) - set(before)) == [
        "llama3-70b-p5-network-private-use2-az3",
        "llama3-70b-p5-network-public-use2-az3",
    ]
    doc = diff_stack("s", _plan_doc(base), _plan_doc(head))
    assert not [r for r in doc["resources"]["replaced"] if r["type"] == SUBNET]
    assert not [c for c in doc.get("create_before_delete", []) if c["kind"] == "refused"]


@pytest.mark.plan
def test_without_them_the_same_edit_renumbers_and_is_refused() -> None:
    """The counterpart under the order of the zones in use and no cluster.zones (what every
    stack created before has): the control plane follows the pools (use2-az1 drops out) and
    use2-az3 takes use2-az1's range while the old subnet still holds it: refused."""
    data = _data("llama3-70b-p5")
    data["availability_zone"] = "use2-az2"
    base = _stack(data)
    grown = copy.deepcopy(data)
    extra = copy.deepcopy(grown["pools"][0])
    extra.update(name="extra", nodes=1, availability_zone="use2-az3")
    grown["pools"].append(extra)
    grown["workload"]["pool"] = data["pools"][0]["name"]
    doc = diff_stack("s", _plan_doc(base), _plan_doc(_stack(grown)))
    refused = [c["line"] for c in doc["create_before_delete"] if c["kind"] == "refused"]
    assert any("moves the control plane" in line for line in refused), refused
    assert any("cluster.zones" in line for line in refused)
