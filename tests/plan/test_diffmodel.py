"""The typed diff document: the core produces `DiffDocument` (stack rows, resource changes, node
rolls, cost deltas, verdicts, gate changes, orphaned stacks); the formatters render it, and its
JSON form is the published document (the keys `diff --format json` has always written)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from accelstack.plan.diff import below_threshold, diff_document, diff_sides, stack_diff
from accelstack.plan.diff_report import (
    change_lines,
    render_json,
    render_markdown,
    render_quiet,
    render_text,
)
from accelstack.plan.diffmodel import (
    CostDelta,
    DiffDocument,
    NodeRoll,
    OrphanedStack,
    ResourceChange,
    SideCost,
    StackDiff,
    StackRoll,
    StatefulChange,
)
from accelstack.plan.diffside import SideRow

from .test_diff_report import BUCKET, accelerated, pool

PRICED = {"estimate": False, "ok": True, "verdict": "ok", "violations": [], "items": {}}


def _row(resources: list[dict[str, Any]], monthly: float, **cost: Any) -> SideRow:
    figures = {"hourly_usd": round(monthly / 730, 4), "monthly_usd": monthly, "run_usd": 5.0}
    plan = {"resources": resources}
    return SideRow.from_dict({"file": "f", "plan": plan, "cost": {**PRICED, **figures, **cost}})


def _sides() -> tuple[dict[str, SideRow], dict[str, SideRow]]:
    """big: 16 -> 8 accelerated nodes and its cache bucket replaced; gone: its stack removed."""
    cache = {"type": BUCKET, "name": "cache", "inputs": {"bucket": "a"}}
    moved = {**cache, "inputs": {"bucket": "b"}}
    base = {
        "big": _row([*pool("big", "ng", 16), cache], 1000.0, items={"cache": 3.0}),
        "gone": _row(pool("gone", "ng", 2), 400.0),
    }
    return base, {"big": _row([*pool("big", "ng", 8), moved], 600.0, items={"cache": 4.0})}


def _document() -> DiffDocument:
    return diff_document(*_sides(), ("main", "pr"), ["same"], accelerated, ["ceiling: 1 -> 2"])


def test_the_core_produces_typed_rows() -> None:
    doc = _document()
    big, gone = doc.stacks
    assert isinstance(big, StackDiff) and (big.status, gone.status) == ("changed", "removed")
    (roll,) = big.rolls
    assert isinstance(roll, NodeRoll)
    assert (roll.action, roll.count, roll.accelerated) == ("removes", 8, True)
    (bucket,) = big.resources.replaced
    assert isinstance(bucket, ResourceChange) and bucket.replace_keys == ("bucket",)
    assert (bucket.monthly_usd.base, bucket.monthly_usd.head) == (3.0, 4.0)
    assert isinstance(big.cost.head, SideCost) and big.cost.head.ok
    assert big.cost.delta == CostDelta(-0.548, -400.0, 0.0)  # 0.8219 - 1.3699 $/h
    assert doc.stateful == (StatefulChange("big", "replaced", bucket),)
    destroy = ("pulumi destroy -s gone", "pulumi stack rm gone")
    assert doc.orphaned == (OrphanedStack("gone", "f", 400.0, destroy, deleted="f"),)
    assert gone.cost.head == gone.cost.base  # not destroyed: it keeps billing
    assert doc.totals.delta.monthly_usd == -400.0 and doc.totals.delta_monthly_percent == -28.57
    assert doc.gate_changes == ("ceiling: 1 -> 2",) and doc.unchanged == ("same",)
    assert doc.ok


def test_the_json_form_is_the_published_document() -> None:
    doc = _document()
    data = doc.to_dict()
    assert list(data) == [
        *("version", "base", "head", "rolls", "orphaned", "stateful", "stacks"),
        *("unchanged", "totals", "ok", "gate_changes"),
        *("program_changes", "program_accepted", "errors"),
    ]
    assert set(data["stacks"][0]) == {
        *("stack", "status", "file", "headline", "errors", "base_errors", "inputs", "rolls"),
        *("resources", "cost"),
        "create_before_delete",  # only when it finds something: the bucket is deleted first
    }
    assert "create_before_delete" not in data["stacks"][1]
    replaced = data["stacks"][0]["resources"]["replaced"][0]
    assert set(replaced) == {
        *("type", "name", "stateful", "protect", "keys", "replace_keys", "changes"),
        "monthly_usd",
    }
    added = stack_diff("s", None, _row([{"type": BUCKET, "name": "b"}], 1.0)).to_dict()
    assert set(added["resources"]["added"][0]) == {
        *("type", "name", "stateful", "protect", "monthly_usd"),
    }
    assert set(data["totals"]) == {
        f"{side}_{k}" for side in ("base", "head", "delta") for k in CostDelta.__annotations__
    } | {"delta_monthly_percent"}
    assert data["rolls"][0]["stack"] == "big" and data["stateful"][0]["action"] == "replaced"
    assert json.loads(render_json(doc, comment=True)) == {**data, "comment": True}
    legacy = diff_sides(*_sides(), ("main", "pr"), ["same"], accelerated)
    assert {**legacy, "gate_changes": ["ceiling: 1 -> 2"]} == data


def test_formatters_render_the_typed_document_as_its_json_form() -> None:
    doc = _document()
    data = json.loads(json.dumps(doc.to_dict()))
    assert render_text(doc) == render_text(data)
    assert render_markdown(doc, comment=True) == render_markdown(data, comment=True)
    assert "GATE INPUTS CHANGED" in render_text(doc)
    assert not below_threshold(doc, 1e9, None)  # gate change, rolls, stateful, orphaned


def test_the_json_form_reads_back_into_the_same_typed_document() -> None:
    doc = _document()
    data = json.loads(json.dumps(doc.to_dict()))
    assert DiffDocument.from_dict(data) == doc
    assert DiffDocument.from_dict(data).to_dict() == data


def test_text_and_markdown_read_the_dataclasses_not_the_json_form(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The formatters read the typed model; only `render_json` writes the JSON form."""
    doc = _document()
    text, md = render_text(doc), render_markdown(doc, comment=True)
    quiet, lines = render_quiet(doc), change_lines(doc.stacks[0])

    def refused(self: object) -> dict[str, Any]:
        raise AssertionError(f"{type(self).__name__}.to_dict called by a text formatter")

    for cls in (DiffDocument, StackDiff, ResourceChange, StatefulChange, StackRoll):
        monkeypatch.setattr(cls, "to_dict", refused)
    assert render_text(doc) == text and render_markdown(doc, comment=True) == md
    assert render_quiet(doc) == quiet and change_lines(doc.stacks[0]) == lines
    assert "GATE INPUTS CHANGED" in text and lines[0].startswith("changes against the base: ")
