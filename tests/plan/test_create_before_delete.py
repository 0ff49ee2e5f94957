"""The create-before-delete check (plan/create_before_delete.py): unique keys two resources may
not hold at once, edits AWS refuses outright, protected resources a change would delete, and node
groups that run twice for the length of an update."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import pytest

from accelstack.plan.create_before_delete import NodeFacts, check, deletes_first
from accelstack.plan.diff import stack_diff
from accelstack.plan.diffside import SideRow
from accelstack.plan.lookups import planned_outputs
from accelstack.resolve import resolve
from accelstack.spec import parse_spec
from accelstack.tokens import CLUSTER, NODE_GROUP, SUBNET

from .. import factories
from ..conftest import planned_preset
from ..helpers_plan import plan_stack

DRA = "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"
Doc = dict[str, Any]


def _doc(*resources: Doc) -> Doc:
    return {"stack": "s", "region": "us-east-2", "resources": list(resources)}


def _r(type_: str, rname: str, options: Doc | None = None, /, **inputs: Any) -> Doc:
    out: Doc = {"type": type_, "name": rname, "inputs": inputs}
    return {**out, "options": options} if options else out


def _why(_key: tuple[str, str], _field: str) -> str:
    return "the provider cannot change it in place"


def test_a_new_subnet_on_a_cidr_an_old_one_still_holds_is_refused() -> None:
    base = _doc(_r(SUBNET, "a", vpcId="vpc-1", cidrBlock="10.42.0.0/19"))
    head = _doc(_r(SUBNET, "b", vpcId="vpc-1", cidrBlock="10.42.0.0/18"))  # overlaps a
    (found,) = check(base, head, {}, [], _why)
    assert (found.kind, found.field) == ("refused", "cidrBlock")
    assert "b is created with cidrBlock 10.42.0.0/18 while a still holds" in found.line
    moved = _doc(_r(SUBNET, "b", vpcId="vpc-1", cidrBlock="10.42.64.0/19"))
    assert check(base, moved, {}, [], _why) == ()  # no overlap: created, then a is deleted
    other_vpc = _doc(_r(SUBNET, "b", vpcId="vpc-2", cidrBlock="10.42.0.0/19"))
    assert check(base, other_vpc, {}, [], _why) == ()


def test_a_replacement_that_keeps_its_key_must_delete_first() -> None:
    old = _r(
        DRA, "link", fileSystemId="fs-1", fileSystemPath="/ckpt/", dataRepositoryPath="s3://a/"
    )
    new = {**old, "inputs": {**old["inputs"], "dataRepositoryPath": "s3://a/v2/"}}
    key = (DRA, "link")
    (found,) = check(_doc(old), _doc(new), {key: ("dataRepositoryPath",)}, [], _why)
    assert found.kind == "refused" and found.field == "fileSystemPath"
    assert "set deleteBeforeReplace" in found.line
    first = {**new, "options": {"deleteBeforeReplace": True}}
    (ok,) = check(_doc(old), _doc(first), {key: ("dataRepositoryPath",)}, [], _why)
    assert ok.kind == "delete-first" and "missing until the new one exists" in ok.line


def test_an_explicit_name_makes_the_provider_delete_first() -> None:
    assert deletes_first(_r(CLUSTER, "c", name="prod"))
    assert not deletes_first(_r(CLUSTER, "c"))  # auto-named: created before delete
    assert deletes_first(_r("kubernetes:core/v1:ConfigMap", "m", metadata={"name": "x"}))
    assert not deletes_first(_r(NODE_GROUP, "ng"))


def test_a_protected_replacement_or_removal_is_refused() -> None:
    fs = _r(
        "aws:fsx/lustreFileSystem:LustreFileSystem", "fs", {"protect": True}, storageCapacity=4800
    )
    small = {**fs, "inputs": {"storageCapacity": 2400}}
    (found,) = check(_doc(fs), _doc(small), {(fs["type"], "fs"): ("storageCapacity",)}, [], _why)
    assert found.kind == "refused" and "storageCapacity 4800 -> 2400" in found.line
    assert "protected: `pulumi up` stops" in found.line
    bucket = _r("aws:s3/bucket:Bucket", "b", {"protect": True, "retainOnDelete": True}, bucket="x")
    (gone,) = check(_doc(bucket), _doc(), {}, [], _why)
    assert gone.field == "(removed)" and "retainOnDelete keeps it" in gone.line


def test_the_control_plane_stays_in_its_zones() -> None:
    def plan(zone: str) -> Doc:
        subnet = _r(SUBNET, f"private-{zone}", vpcId="vpc-1", availabilityZoneId=zone)
        sid, _ = planned_outputs(SUBNET, subnet["name"], subnet["inputs"], "us-east-2", "s")
        return _doc(subnet, _r(CLUSTER, "eks", name="c", vpcConfig={"subnetIds": [sid]}))

    (found,) = check(
        plan("use2-az1"),
        plan("use2-az2"),
        {},
        [{"key": "spec.availability_zone", "before": "use2-az1", "after": "use2-az2"}],
        _why,
    )
    # the subnet itself is added and removed (another name): no CIDR in these documents
    assert found.field == "vpcConfig.subnetIds" and "use2-az2" in found.line
    assert "zones it was created with (use2-az1)" in found.line
    assert found.line.endswith("(edit: availability_zone: use2-az1 -> use2-az2)")


def _group(name: str, count: int, **extra: Any) -> Doc:
    inputs = {
        "instanceTypes": ["p5.48xlarge"],
        "scalingConfig": {"desiredSize": count, "minSize": count, "maxSize": count},
        **extra,
    }
    return _r(NODE_GROUP, name, {"customTimeouts": {"create": "60m", "delete": "30m"}}, **inputs)


def test_a_renamed_pool_runs_both_node_groups_for_the_update() -> None:
    nf = NodeFacts(lambda t: 192 if t == "p5.48xlarge" else None, lambda n: 880.64)
    (found,) = check(_doc(_group("h100-ng", 16)), _doc(_group("h100b-ng", 16)), {}, [], _why, nf)
    assert found.kind == "overlap"
    assert (found.instances, found.instance_type, found.vcpus) == (16, "p5.48xlarge", 16 * 192)
    assert found.hours == 1.5 and found.usd == round(880.64 * 1.5, 2)  # create 60 + delete 30 min
    assert (
        "created before h100-ng is deleted: 16 more x p5.48xlarge (3,072 vCPUs of quota)"
        in found.line
    )


def test_a_capacity_block_cannot_hold_both_groups() -> None:
    old, new = (
        _group("cb-ng", 8, capacityType="CAPACITY_BLOCK"),
        _group("cb2-ng", 8, capacityType="CAPACITY_BLOCK"),
    )
    (found,) = check(_doc(old), _doc(new), {}, [], _why)
    assert found.kind == "refused" and "Capacity Block sized for one group" in found.line
    assert "scale the pool to 0 first" in found.line


@cache
def _prefix_change() -> tuple[Doc, Doc]:
    base = planned_preset("llama3-70b-p5")[1].to_dict()
    data = factories.preset("llama3-70b-p5", {"checkpoint.prefix": "checkpoints-v2/"})
    head = plan_stack(resolve(parse_spec(data, "llama3-70b-p5.yaml")), guard=False).to_dict()
    return base, head


@pytest.mark.plan
@pytest.mark.slow
def test_a_new_checkpoint_prefix_replaces_the_association_delete_first() -> None:
    """Fails without the component's deleteBeforeReplace: the new association would be created
    on the file-system path the old one still holds, which FSx refuses."""
    base, head = _prefix_change()
    doc = stack_diff("s", SideRow("f", plan=base), SideRow("f", plan=head)).to_dict()
    replaced = {r["type"]: r for r in doc["resources"]["replaced"]}
    assert replaced[DRA]["replace_keys"] == ["dataRepositoryPath"]
    checks = doc.get("create_before_delete", [])
    assert [c["kind"] for c in checks if c["type"] == DRA] == ["delete-first"]
    assert not [c for c in checks if c["kind"] == "refused"]
    without = copy.deepcopy(head)
    for r in without["resources"]:
        if r["type"] == DRA:
            r.pop("options", None)
    doc = stack_diff("s", SideRow("f", plan=base), SideRow("f", plan=without)).to_dict()
    refused = [c for c in doc["create_before_delete"] if c["kind"] == "refused"]
    assert [c["field"] for c in refused] == ["fileSystemPath"]
