"""The day-2 matrix (docs/day2.md): every EKS preset x every edit a team makes after the first
`pulumi up`. For each: the Pulumi operation of every resource (stored state + new inputs +
ignoreChanges, the pinned provider's replacement table with its conditional rules, and every
replacement carried to its dependents: accelstack/plan/updates.py, replacements.py,
propagate.py), every modelled AWS (and Kubernetes) request checked against the botocore shape and
the documented EKS/FSx/Kubernetes rules, and what `diff` reports, or the one line that refuses
the edit (create-before-delete collisions, control-plane zones, protected replacements:
plan/create_before_delete.py). The three must agree; the table in docs/day2.md is what this test
computes (ACCELSTACK_UPDATE_GOLDEN=1 rewrites it)."""

from __future__ import annotations

import copy
import os
from collections import Counter
from collections.abc import Callable
from functools import cache
from typing import Any

import pytest

from accelstack.catalog import load_catalog
from accelstack.errors import AccelstackError
from accelstack.plan import Plan
from accelstack.plan.create_before_delete import deletes_first
from accelstack.plan.diff import diff_stack, replace_table
from accelstack.plan.diff_inputs import flatten
from accelstack.plan.diffside import SideRow
from accelstack.plan.propagate import carried
from accelstack.plan.updates import operation, problems, requests_for, sent_inputs
from accelstack.resolve import Stack, resolve
from accelstack.spec import parse_spec, read_yaml
from accelstack.tokens import LAUNCH_TEMPLATE, NODE_GROUP
from tests.conftest import ROOT, STACKS
from tests.helpers_plan import plan_stack

pytestmark = [pytest.mark.plan, pytest.mark.slow]

EKS_PRESETS = sorted(
    p.stem for p in STACKS.glob("*.yaml") if read_yaml(p).get("orchestration", "eks") == "eks"
)
OPEN_BUDGET = {"max_hourly_usd": 1e9, "max_monthly_usd": 1e12, "max_run_usd": 1e12}
DOC = ROOT / "docs" / "day2.md"
BEGIN, END = "<!-- day2-matrix:begin -->", "<!-- day2-matrix:end -->"
Data = dict[str, Any]


def accelerated(instance_type: str) -> bool:
    return instance_type.split(".")[0] not in ("m6i", "m7i", "c6i", "?")


def _pool(data: Data) -> Data:
    return data["pools"][0]  # type: ignore[no-any-return]


def _rename(data: Data) -> None:
    old = _pool(data)["name"]
    _pool(data)["name"] = f"{old}b"
    if (data.get("workload") or {}).get("pool") == old:
        data["workload"]["pool"] = f"{old}b"


def _add_pool(data: Data) -> None:
    extra = copy.deepcopy(_pool(data))
    extra.update(name="extra", nodes=1)
    extra.pop("reservations", None)
    data["pools"].append(extra)
    data.setdefault("workload", {}).setdefault("pool", _pool(data)["name"])


def _remove_pool(data: Data) -> None:
    if len(data["pools"]) < 2:
        raise NotApplicable("one pool only")
    kept = (data.get("workload") or {}).get("pool", _pool(data)["name"])
    data["pools"] = [p for p in data["pools"] if p["name"] == kept]


def _fsx_tier(data: Data) -> None:
    storage = data.get("storage") or {}
    if not storage.get("fsx_lustre_gib"):
        raise NotApplicable("no FSx file system")
    # the presets take the lowest tier that meets the checkpoint write target (1000 on the 70B
    # presets): a slower tier with a target it meets
    storage["fsx_throughput_per_tib"] = 125
    data.setdefault("checkpoint", {})["write_minutes"] = 120


def _reservation(data: Data) -> None:
    purchase = _pool(data).get("purchase") or {}
    if not purchase.get("reservation_id"):
        raise NotApplicable("no reservation")
    purchase["reservation_id"] = "cr-0fedcba9876543210"


def _purchase(data: Data) -> None:
    purchase = _pool(data).get("purchase") or {}
    _pool(data)["purchase"] = (
        {"option": "on-demand"}
        if purchase.get("option") not in (None, "on-demand")
        else {"option": "spot"}
    )


class NotApplicable(Exception):
    pass


def _container_storage(data: Data) -> None:
    """Move the pool's container storage between the NVMe RAID0 and the root volume."""
    pool = _pool(data)
    if "container_storage" not in pool:
        raise NotApplicable("no NVMe instance store")
    raid0 = pool["container_storage"] == "instance_store_raid0"
    pool["container_storage"] = "root_volume" if raid0 else "instance_store_raid0"


def _nodes(delta: int) -> Callable[[Data], None]:
    def edit(data: Data) -> None:
        if _pool(data)["nodes"] + delta < 1:
            raise NotApplicable("one node")
        _pool(data)["nodes"] += delta
        _pool(data).pop("reservations", None)

    return edit


def _vpc_cidr(data: Data) -> None:
    if (data.get("network") or {}).get("mode") == "existing":
        raise NotApplicable("an existing VPC")
    data.setdefault("network", {})["vpc_cidr"] = "10.43.0.0/16"


def _zone_move(data: Data) -> None:
    """The stack (and its first pool) to another zone the catalog offers the pool's type in."""
    itype = _pool(data)["instance_type"]
    here = _stack(copy.deepcopy(data)).pools[0].zone_id  # the zone it resolves to today
    others = [z for z in load_catalog().zones_offering(data["region"], itype) if z != here]
    if not others:
        raise NotApplicable("one zone offers the type")
    data["availability_zone"] = others[0]
    _pool(data).pop("availability_zone", None)


def _fsx(delta: int) -> Callable[[Data], None]:
    def edit(data: Data) -> None:
        storage = data.get("storage") or {}
        if not storage.get("fsx_lustre_gib"):
            raise NotApplicable("no FSx file system")
        if storage["fsx_lustre_gib"] + delta < 1200:
            raise NotApplicable("the smallest file system")
        storage["fsx_lustre_gib"] += delta

    return edit


def _checkpoint(**change: str) -> Callable[[Data], None]:
    def edit(data: Data) -> None:
        data.setdefault("checkpoint", {}).update(change)

    return edit


#: edit -> (base spec change, head spec change); None: a plan-document or stack-file edit
SPEC_EDITS: dict[str, tuple[Callable[[Data], None] | None, Callable[[Data], None]]] = {
    "pool +1": (None, _nodes(1)),
    "pool -1": (None, _nodes(-1)),
    "across 450": (lambda d: _pool(d).update(nodes=450), lambda d: _pool(d).update(nodes=451)),
    "rename a pool": (None, _rename),
    "add a pool": (None, _add_pool),
    "remove a pool": (None, _remove_pool),
    "tag edit": (None, lambda d: d.setdefault("tags", {}).update({"team": "day2"})),
    "Kubernetes minor bump": (
        lambda d: d["cluster"].update(kubernetes_version="1.34"),
        lambda d: d["cluster"].update(kubernetes_version="1.35"),
    ),
    "FSx tier change": (None, _fsx_tier),
    "reservation id change": (None, _reservation),
    "purchase option change": (None, _purchase),
    "container storage switch": (None, _container_storage),
    "VPC CIDR change": (None, _vpc_cidr),
    "zone move": (None, _zone_move),
    "FSx grow": (None, _fsx(2400)),
    # a slower checkpoint target on both sides, so the smaller file system still meets it
    "FSx shrink": (
        lambda d: d.setdefault("checkpoint", {}).update(write_minutes=120),
        _fsx(-2400),
    ),
    "checkpoint prefix change": (None, _checkpoint(prefix="checkpoints-v2/")),
    "checkpoint bucket change": (None, _checkpoint(bucket="team-checkpoints-123456789012")),
}
EDITS = [*SPEC_EDITS, "label edit", "AMI bump", "stack file removed"]


def _data(stem: str) -> Data:
    data = copy.deepcopy(read_yaml(STACKS / f"{stem}.yaml"))
    data["budget"] = dict(OPEN_BUDGET)
    return data


def _stack(data: Data) -> Stack:
    return resolve(parse_spec(data, f"{data['name']}.yaml"))


@cache
def base_plan(stem: str) -> Plan:
    return plan_stack(_stack(_data(stem)), guard=False)


def _plans(stem: str, edit: str) -> tuple[Plan, Plan | None]:
    """(base, head) plans of one edit; head None: the stack file is gone."""
    if edit == "stack file removed":
        return base_plan(stem), None
    if edit == "label edit":  # labels come from the catalog: the edit as the program sends it
        plan = base_plan(stem)
        ng = next(r for r in plan.of_type(NODE_GROUP) if "system" not in r.name)
        labels = {**ng.inputs.get("labels", {}), "example.com/team": "day2"}
        res = [
            r if r is not ng else type(r)(**{**vars(r), "inputs": {**r.inputs, "labels": labels}})
            for r in plan.resources
        ]
        return plan, type(plan)(**{**vars(plan), "resources": res})
    if edit == "AMI bump":
        stack = _stack(_data(stem))
        pins = {p: "ami-0123456789abcdef0" for p in stack.ami_parameters}
        return base_plan(stem), plan_stack(stack.with_ami_pins(pins, False, "day2"), guard=False)
    before, after = SPEC_EDITS[edit]
    base_data, head_data = _data(stem), _data(stem)
    if before is not None:
        before(base_data)
        before(head_data)
    after(head_data)
    base = base_plan(stem) if before is None else plan_stack(_stack(base_data), guard=False)
    return base, plan_stack(_stack(head_data), guard=False)


def _ops(base: Plan, head: Plan | None) -> dict[tuple[str, str], str]:
    table = replace_table()
    old = {(r.type, r.name): r for r in base.resources}
    new = {(r.type, r.name): r for r in (head.resources if head else [])}
    out = {}
    for key in old.keys() | new.keys():
        if head is None:  # nothing destroys a stack whose file is gone
            continue
        ignore = head.option(key[0], key[1], "ignoreChanges") or [] if key in new else []
        stored = old[key].inputs if key in old else None
        op = operation(stored, new[key].inputs if key in new else None, ignore, (), rtype=key[0])
        if op != "same":
            out[key] = op
    if head is not None:  # a replacement reaches what depends on it
        docs = (base.to_dict(), head.to_dict())
        by_key = {(r["type"], r["name"]): r for r in docs[1]["resources"]}
        direct = {k for k, op in out.items() if op == "replace"}
        reach = carried(*docs, direct, table.provider, lambda k: deletes_first(by_key[k]))
        for key, c in reach.items():
            out[key] = "replace" if c.forcing else out.get(key, "update")
    return out


def _requests(base: Plan, head: Plan) -> list[tuple[str, list[str]]]:
    """Every modelled AWS request of the edit with why AWS would refuse it (empty: accepted)."""
    old = {(r.type, r.name): r.inputs for r in base.resources}
    lts = {
        r.name
        for r in head.of_type(LAUNCH_TEMPLATE)
        if old.get((r.type, r.name)) not in (None, r.inputs)
    }
    out = []
    for r in head.resources:
        stored = old.get((r.type, r.name))
        sent = sent_inputs(stored, r.inputs, head.option(r.type, r.name, "ignoreChanges") or [])
        kept = _kept(sent, r.inputs) if stored is not None else ""
        if kept:  # an ignoreChanges path kept its stored value
            out.append((f"{r.type.split(':')[-1]} keeps {kept}", []))
        if stored is not None and r.type == NODE_GROUP and lts & set(r.depends_on):
            # a changed launch template is a new version, which the group is then sent (the
            # plan's mocks give every template version "1")
            sent["launchTemplate"] = {**(sent.get("launchTemplate") or {}), "version": "2"}
        for req in requests_for(r.type, stored, sent):
            out.append((req.operation, problems(req, 450, stored)))
    return out


def _kept(sent: Data, new: Data) -> str:
    """The inputs an update leaves as they are (ignoreChanges), for the AWS column."""
    a, b = flatten(sent), flatten(new)
    return ", ".join(sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k)))


def _side(plan: Plan | None, file: str) -> SideRow | None:
    return None if plan is None else SideRow(file, plan=plan.to_dict())


def _row(stem: str, edit: str) -> dict[str, str]:
    try:
        base, head = _plans(stem, edit)
    except NotApplicable as e:
        return {"ops": f"n/a ({e})", "aws": "-", "diff": "-"}
    except AccelstackError as e:  # refused before anything is sent, one line
        return {"ops": "refused by validate/plan", "aws": "-", "diff": str(e).splitlines()[0][:90]}
    ops = _ops(base, head)
    doc = diff_stack(stem, _side(base, "base"), _side(head, "head"), accelerated)
    _agree(ops, doc, head)
    said = [c for c in doc.get("create_before_delete", []) if c["kind"] == "refused"]
    if said:  # refused before anything is sent: the one line that says why and what to do
        return {"ops": _ops_text(ops), "aws": "-", "diff": f"refused: {said[0]['line']}"}
    reqs = _requests(base, head) if head is not None else []
    refused = [f"{op}: {'; '.join(p)}" for op, p in reqs if p]
    assert refused == [], (stem, edit, refused)
    return {"ops": _ops_text(ops), "aws": _aws_text(reqs), "diff": _diff_text(doc, head)}


def _agree(ops: dict[tuple[str, str], str], doc: Data, head: Plan | None) -> None:
    """The diff names exactly the simulator's operations, and every node group replaced or
    deleted is a node disruption it shows."""
    res = doc["resources"]
    said = {(r["type"], r["name"]): a for a in res for r in res[a]}
    kinds = {"added": "create", "removed": "delete", "replaced": "replace", "changed": "update"}
    assert {k: kinds[a] for k, a in said.items()} == ops
    disrupted = {(r["type"], r["name"]) for r in doc["rolls"]}
    for key, op in ops.items():
        if key[0] == NODE_GROUP and op in ("replace", "delete"):
            assert key in disrupted, key
    if head is None:
        assert doc["status"] == "removed" and not any(res.values())


def _ops_text(ops: dict[tuple[str, str], str]) -> str:
    if not ops:
        return "none (nothing destroyed: the stack keeps running)"
    count = Counter(op for op in ops.values())
    short = {k: v for k, v in ops.items() if v in ("replace", "delete")}
    where = sorted({k[0].split(":")[-1] for k in short})
    text = ", ".join(f"{n} {op}" for op, n in sorted(count.items()))
    return text + (f" ({', '.join(where)})" if where else "")


def _aws_text(reqs: list[tuple[str, list[str]]]) -> str:
    names = sorted(Counter(op for op, _ in reqs).items())
    return (
        ", ".join(f"{op}" + (f" x{n}" if n > 1 else "") for op, n in names) + " (accepted)"
        if names
        else "-"
    )


def _diff_text(doc: Data, head: Plan | None) -> str:
    if head is None:
        return "stack NOT destroyed, keeps billing; `pulumi destroy -s` then `pulumi stack rm`"
    rolls = doc["rolls"]
    parts = [f"{r['action']} {r['count']} x {r['instance_type']}" for r in rolls] or [
        "no node disruption"
    ]
    for c in doc.get("create_before_delete", []):
        if c["kind"] == "overlap":
            parts.append(
                f"{c['instances']} x {c['instance_type']} more for up to {c['hours']:g} h"
                " (created before the old group is deleted)"
            )
        elif c["kind"] == "delete-first":
            parts.append(f"{c['type'].split(':')[-1]} deleted before its replacement")
    return "; ".join(parts)


@cache
def matrix(stem: str) -> list[str]:
    return [
        f"| `{stem}` | {edit} | {r['ops']} | {r['aws']} | {r['diff']} |"
        for edit in EDITS
        for r in [_row(stem, edit)]
    ]


def _order(row: str) -> tuple[str, int]:
    """Rows by preset, then in the order of EDITS."""
    cells = [c.strip() for c in row.strip("|").split(" | ")]
    return cells[0], EDITS.index(cells[1])


@pytest.mark.parametrize("stem", EKS_PRESETS)
def test_day2_matrix_row_agrees_and_is_in_the_docs(stem: str) -> None:
    rows = matrix(stem)
    text = DOC.read_text(encoding="utf-8")
    table = text.split(BEGIN, 1)[1].split(END, 1)[0]
    if os.environ.get("ACCELSTACK_UPDATE_GOLDEN"):
        kept = [line for line in table.strip().splitlines() if f"| `{stem}` |" not in line]
        head, body = kept[:2], kept[2:]
        body = sorted([*body, *rows], key=_order)
        new = "\n" + "\n".join([*head, *body]) + "\n"
        DOC.write_text(text.replace(table, new), encoding="utf-8")
        return
    for row in rows:
        assert row in table, row
