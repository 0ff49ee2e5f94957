"""Container storage on the NVMe instance store is a pool setting (`pools[].container_storage`):
upgrading accelstack rolls no accelerator node of a spec written before it existed.

The release before the setting (a74ade9) planned every pool's launch template without nodeadm's
`localStorage`; `tests/fixtures/upgrade/<preset>.json` holds that release's spec of each preset
on an NVMe type and the launch templates and node groups its plan golden recorded
(`git show a74ade9:tests/golden/plan/<preset>.json`). A spec without the field must plan them
again, byte for byte; new stacks (`new`, `init`, the presets) write instance_store_raid0."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from accelstack.catalog import load_catalog
from accelstack.cli import main
from accelstack.plan.diff import diff_stack, replace_table
from accelstack.plan.diffside import SideRow
from accelstack.plan.rolls import node_rolls, roll_line
from accelstack.plan.updates import operation
from accelstack.resolve import resolve
from accelstack.resolve.retarget import retarget
from accelstack.spec import parse_spec, read_yaml
from accelstack.tokens import LAUNCH_TEMPLATE, NODE_GROUP

from ..conftest import STACKS, TESTS_DIR
from ..helpers_plan import plan_stack

FIXTURES = TESTS_DIR / "fixtures" / "upgrade"
RELEASED = sorted(p.stem for p in FIXTURES.glob("*.json"))
KEY = "container_storage"


def released(stem: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((FIXTURES / f"{stem}.json").read_text(encoding="utf-8"))
    return doc


def without_field(stem: str) -> dict[str, Any]:
    """The preset as a spec written for the release before the setting: no container_storage
    (nor labels_at_boot, newer still: tests/components/test_nodegroup_labels.py)."""
    data = copy.deepcopy(read_yaml(STACKS / f"{stem}.yaml"))
    for pool in data["pools"]:
        pool.pop(KEY, None)
        pool.pop("labels_at_boot", None)
    return data


def planned(data: dict[str, Any]) -> dict[str, Any]:
    doc: dict[str, Any] = plan_stack(
        resolve(parse_spec(data, f"{data['name']}.yaml")), guard=False
    ).to_dict()
    return doc


def node_config(user_data: str) -> str:
    text = base64.b64decode(user_data).decode()
    return text.split("Content-Type: application/node.eks.aws\n\n", 1)[1].split("\n\n--", 1)[0]


def templates(plan: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in plan["resources"] if r["type"] == LAUNCH_TEMPLATE}


def accelerated(instance_type: str) -> bool:
    return load_catalog().instances[instance_type].accelerated if instance_type != "?" else False


# ---- upgrading accelstack: a spec without the field --------------------------------------


@pytest.mark.parametrize("stem", ["llama3-70b-p5", "llama3-70b-trn2"])
def test_a_spec_without_the_field_plans_the_released_user_data(stem: str) -> None:
    """p5 and trn2 (8 and 4 NVMe disks): the preset without the field boots its nodes with the
    user data the release before the setting sent, byte for byte (no localStorage)."""
    old = templates({"resources": released(stem)["resources"]})
    new = templates(planned(without_field(stem)))
    accel = [n for n in old if "-system-" not in n]
    assert accel, "the fixture holds the accelerator pool's launch template"
    for name in accel:
        assert "localStorage" not in node_config(new[name]["inputs"]["userData"])
        assert new[name]["inputs"]["userData"] == old[name]["inputs"]["userData"], name


@pytest.mark.parametrize("stem", RELEASED)
def test_upgrading_accelstack_rolls_no_node_of_a_released_spec(stem: str) -> None:
    """The released spec file planned by this accelstack: every launch template and node group
    the release created gets no new input (Pulumi: same), and `diff`'s roll reader finds no
    node that rolls or goes."""
    fixture = released(stem)
    head = planned(yaml.safe_load(fixture["spec"]))
    new = {(r["type"], r["name"]): r for r in head["resources"]}
    keys = replace_table().keys
    for r in fixture["resources"]:
        now = new[(r["type"], r["name"])]
        ignore = (now.get("options") or {}).get("ignoreChanges") or []
        op = operation(r["inputs"], now["inputs"], ignore, keys.get(r["type"], ()))
        assert op == "same", (r["name"], op)
    assert {r["type"] for r in fixture["resources"]} == {LAUNCH_TEMPLATE, NODE_GROUP}
    assert node_rolls({"resources": fixture["resources"]}, head, accelerated=accelerated) == []


# ---- new stacks: instance store written explicitly ---------------------------------------


def _nvme(itype: str) -> bool:
    return load_catalog().scale.instance_store.strategy_for(itype) is not None


def test_every_preset_pool_on_an_nvme_type_says_instance_store_raid0() -> None:
    seen = 0
    for path in sorted(STACKS.glob("*.yaml")):
        data = read_yaml(path)
        eks = data.get("orchestration", "eks") == "eks"
        for pool in data["pools"]:
            want = "instance_store_raid0" if eks and _nvme(pool["instance_type"]) else None
            assert pool.get(KEY) == want, (path.name, pool["name"])
            seen += want is not None
    assert seen >= 7  # p5, p5e, trn2 and trn1.32xlarge pools


def test_new_from_a_spec_without_the_field_writes_it(tmp_path: Path, capsys: Any) -> None:
    src = tmp_path / "llama3-70b-p5.yaml"
    src.write_text(yaml.safe_dump(without_field("llama3-70b-p5")), encoding="utf-8")
    assert main(["new", "fresh", "--from", str(src), "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    written = read_yaml(tmp_path / "stacks" / "fresh.yaml")
    assert written["pools"][0][KEY] == "instance_store_raid0"
    assert "pools.h100.container_storage: instance_store_raid0" in out


def test_retarget_drops_the_setting_on_a_type_without_disks_and_adds_it_back() -> None:
    cat = load_catalog()
    data = read_yaml(STACKS / "llama3-70b-p5.yaml")
    small = retarget(data, cat, name="small-one", source="p5", instance_type="p5.4xlarge")
    assert KEY not in small.data["pools"][0]
    assert any("container_storage: dropped" in n for n in small.notes)
    assert small.spec.pools[0].container_storage is None
    big = retarget(small.data, cat, name="big-two", source="small-one", instance_type="p5.48xlarge")
    assert big.data["pools"][0][KEY] == "instance_store_raid0"


def test_a_standalone_preset_gets_no_setting() -> None:
    res = retarget(
        read_yaml(STACKS / "trn1-standalone.yaml"), load_catalog(), name="standalone", source="x"
    )
    assert KEY not in res.data["pools"][0]


# ---- validate: refusals and the large-pool warning ----------------------------------------


def _write(tmp_path: Path, data: dict[str, Any]) -> Path:
    f = tmp_path / f"{data['name']}.yaml"
    f.write_text(yaml.safe_dump(data), encoding="utf-8")
    return f


@pytest.mark.parametrize(
    ("stem", "message"),
    [
        (
            "trn1-finetune",
            "pools[0].container_storage: 'instance_store_raid0' needs at least 2 NVMe "
            "instance-store disks and trn1.2xlarge has 1 NVMe instance-store disk (catalog "
            "scale.yaml instance_store, EC2 DescribeInstanceTypes): allowed here: root_volume, "
            "or leave it unset",
        ),
        (
            "trn1-standalone",
            "pools[0].container_storage: 'instance_store_raid0' is an EKS node setting (nodeadm's "
            "localStorage); standalone nodes (orchestration ec2) boot the DLAMI without nodeadm "
            "and keep the root volume: allowed here: root_volume, or leave it unset",
        ),
    ],
)
def test_validate_refuses_raid0_where_it_cannot_be_had(
    stem: str, message: str, tmp_path: Path, capsys: Any
) -> None:
    data = read_yaml(STACKS / f"{stem}.yaml")
    data["pools"][0][KEY] = "instance_store_raid0"
    f = _write(tmp_path, data)
    assert main(["validate", str(f)]) == 2
    out, err = capsys.readouterr()
    assert err.strip() == f"error: {f}: {message}"
    data["pools"][0][KEY] = "root_volume"  # what is allowed is accepted
    assert main(["validate", str(_write(tmp_path, data))]) == 0


def test_an_unknown_value_names_the_allowed_ones(tmp_path: Path, capsys: Any) -> None:
    data = read_yaml(STACKS / "llama3-70b-p5.yaml")
    data["pools"][0][KEY] = "raid0"
    f = _write(tmp_path, data)
    assert main(["validate", str(f)]) == 2
    err = capsys.readouterr().err
    assert "pools[0].container_storage" in err
    assert "instance_store_raid0" in err and "root_volume" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("nodes", "value", "warned"),
    [
        (64, None, True),
        (16, None, False),
        (64, "root_volume", False),
        (64, "instance_store_raid0", False),
    ],
)
def test_a_large_pool_on_the_root_volume_is_warned(
    nodes: int, value: str | None, warned: bool, tmp_path: Path, capsys: Any
) -> None:
    """More running nodes than the private-registry threshold (scale.yaml image_delivery:
    nodes x 5 Gbps above the NAT gateway's 100 Gbps) with the field unset: a warning naming
    the setting and the roll; exit 0."""
    data = without_field("llama3-405b-p5")
    data["pools"][0]["nodes"] = nodes
    if value is not None:
        data["pools"][0][KEY] = value
    assert main(["validate", str(_write(tmp_path, data))]) == 0
    out = capsys.readouterr().out
    line = (
        "  warning: pools[0].container_storage: unset: 64 x p5.48xlarge keep container images "
        "on the gp3 root volume while their 8 NVMe instance-store disks go unused; set "
        "container_storage: instance_store_raid0 (nodeadm localStorage RAID0; docs/scale.md), "
        "which rolls the pool's nodes once, or root_volume to keep the root volume and silence "
        "this"
    )
    assert (line in out.splitlines()) is warned, out


# ---- diff: switching the setting is a node roll of that pool ------------------------------


@pytest.mark.parametrize(
    ("before", "after"), [(None, "instance_store_raid0"), ("instance_store_raid0", "root_volume")]
)
def test_switching_container_storage_rolls_that_pool(before: str | None, after: str) -> None:
    """mixed-trn2-p5: switching the h100 pool rolls its 2 nodes (a new launch-template
    version: the user data's localStorage lines); the trn2 pool does not roll."""
    base_data, head_data = without_field("mixed-trn2-p5"), without_field("mixed-trn2-p5")
    for data, value in ((base_data, before), (head_data, after)):
        if value is not None:
            data["pools"][1][KEY] = value
    base, head = planned(base_data), planned(head_data)
    rolls = node_rolls(base, head, accelerated=accelerated)
    assert [(r["name"], r["count"], r["instance_type"]) for r in rolls] == [
        ("mixed-trn2-p5-h100-ng", 2, "p5.48xlarge")
    ]
    cause = rolls[0]["causes"][0]
    assert cause["key"] == "mixed-trn2-p5-h100-lt.userData"
    lines = cause["added"] if after == "instance_store_raid0" else cause["removed"]
    assert '"strategy": "RAID0"' in lines
    assert roll_line(rolls[0]).startswith(
        "rolls 2 x p5.48xlarge (mixed-trn2-p5-h100-ng): a running job is interrupted; "
        "mixed-trn2-p5-h100-lt.userData:"
    )
    doc = diff_stack("mixed-trn2-p5", SideRow("b", plan=base), SideRow("h", plan=head), accelerated)
    assert [r["name"] for r in doc["rolls"]] == ["mixed-trn2-p5-h100-ng"]


def test_plan_prints_the_large_pool_warning(tmp_path: Path, capsys: Any) -> None:
    """`plan` (and `check`, through the same list) carries the warning of the resolved stack."""
    f = _write(tmp_path, without_field("llama3-405b-p5"))
    assert main(["plan", str(f), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [w for w in doc["warnings"] if w.startswith("pools[0].container_storage: unset: 64")]
