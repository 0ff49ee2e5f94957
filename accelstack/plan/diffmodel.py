"""The typed diff document (`accelstack diff`, `plan --against`): what `plan/diff.py` produces and
the formatters (`plan/diff_report.py`: text, markdown; JSON through `to_dict`) render.

`to_dict()` is the published JSON form (`diff --format json`, document version 2): its keys and
values are the contract, so every class here writes the keys the document has always had; the
keys added since (a resource's `billed` line items, a stack's `usage`) are written only when
there is something in them. The input, one stack planned on one side, is the typed side row
(`plan/diffside.SideRow`); its `cost` is a `SideCost`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from accelstack.plan.create_before_delete import Finding
from accelstack.plan.diffprice import Billed, UsageChange
from accelstack.programinputs import ProgramChange

Action = Literal["added", "changed", "replaced", "removed"]
StackStatus = Literal["added", "removed", "changed", "unchanged", "error"]
#: A before -> after value (`diff_inputs.value_change`): {key, before, after[, removed, added]}
ValueChange = dict[str, Any]
COST_KEYS = ("hourly_usd", "monthly_usd", "run_usd")


def _maybe_tuple(v: Any) -> tuple[Any, ...] | None:
    return None if v is None else tuple(v)


@dataclass(frozen=True)
class SideCost:
    """One side's priced verdict of one stack (its budget verdict and deploy-rule lines)."""

    hourly_usd: float
    monthly_usd: float
    run_usd: float
    estimate: bool
    ok: bool
    verdict: str
    violations: tuple[str, ...]
    items: Mapping[str, float]  # resource name -> monthly USD

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SideCost:
        """A side row's `cost` (`cli/planning.side_row` writes every key; a figure left out
        reads as 0, a verdict as ok)."""
        return cls(
            hourly_usd=d.get("hourly_usd", 0.0),
            monthly_usd=d.get("monthly_usd", 0.0),
            run_usd=d.get("run_usd", 0.0),
            estimate=bool(d.get("estimate", False)),
            ok=bool(d.get("ok", True)),
            verdict=str(d.get("verdict", "")),
            violations=tuple(d.get("violations") or ()),
            items=dict(d.get("items") or {}),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "hourly_usd": self.hourly_usd,
            "monthly_usd": self.monthly_usd,
            "run_usd": self.run_usd,
            "estimate": self.estimate,
            "ok": self.ok,
            "verdict": self.verdict,
            "violations": list(self.violations),
            "items": dict(self.items),
        }

    def get(self, key: str, default: float = 0.0) -> float:
        """One of the cost figures (`COST_KEYS`) by name."""
        return float(getattr(self, key)) if key in COST_KEYS else default


@dataclass(frozen=True)
class CostPair:
    """A resource's monthly USD before and after (None: not priced on that side)."""

    base: float | None = None
    head: float | None = None

    def to_dict(self) -> dict[str, float | None]:
        return {"base": self.base, "head": self.head}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> CostPair:
        d = d or {}
        return cls(d.get("base"), d.get("head"))


@dataclass(frozen=True)
class ResourceChange:
    """One resource added, changed, replaced or removed. `keys` (the changed inputs),
    `replace_keys` (those that force a replacement) and `changes` (before -> after values)
    exist for a changed or replaced resource only."""

    type: str
    name: str
    stateful: bool
    protect: bool
    keys: tuple[str, ...] | None = None
    replace_keys: tuple[str, ...] | None = None
    changes: tuple[ValueChange, ...] | None = None
    monthly_usd: CostPair = field(default_factory=CostPair)
    #: the replaced resources whose new outputs reach it (a replacement carried to it)
    via: tuple[str, ...] = ()
    #: its priced line items before and after: quantity, unit and unit price
    billed: tuple[Billed, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "name": self.name,
            "stateful": self.stateful,
            "protect": self.protect,
        }
        if self.keys is not None:
            out["keys"] = list(self.keys)
            out["replace_keys"] = list(self.replace_keys or ())
            out["changes"] = list(self.changes or ())
        out["monthly_usd"] = self.monthly_usd.to_dict()
        if self.via:
            out["via"] = list(self.via)
        if self.billed:
            out["billed"] = [b.to_dict() for b in self.billed]
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ResourceChange:
        return cls(
            type=d["type"],
            name=d["name"],
            stateful=bool(d.get("stateful")),
            protect=bool(d.get("protect")),
            keys=_maybe_tuple(d.get("keys")),
            replace_keys=_maybe_tuple(d.get("replace_keys")),
            changes=_maybe_tuple(d.get("changes")),
            monthly_usd=CostPair.from_dict(d.get("monthly_usd")),
            via=tuple(d.get("via") or ()),
            billed=tuple(Billed.from_dict(b) for b in d.get("billed") or ()),
        )


@dataclass(frozen=True)
class ResourceChanges:
    added: tuple[ResourceChange, ...] = ()
    changed: tuple[ResourceChange, ...] = ()
    replaced: tuple[ResourceChange, ...] = ()
    removed: tuple[ResourceChange, ...] = ()

    def of(self, action: Action) -> tuple[ResourceChange, ...]:
        rows: tuple[ResourceChange, ...] = getattr(self, action)
        return rows

    def any(self) -> bool:
        return bool(self.added or self.changed or self.replaced or self.removed)

    def to_dict(self) -> dict[str, list[dict[str, Any]]]:
        return {
            a: [r.to_dict() for r in self.of(a)]
            for a in ("added", "changed", "replaced", "removed")
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ResourceChanges:
        def rows(action: str) -> tuple[ResourceChange, ...]:
            return tuple(ResourceChange.from_dict(r) for r in d.get(action) or ())

        return cls(rows("added"), rows("changed"), rows("replaced"), rows("removed"))


@dataclass(frozen=True)
class NodeRoll:
    """A node source whose nodes roll (replaced) or are removed (scale-in, gone), and why."""

    type: str
    name: str
    action: Literal["rolls", "removes"]
    count: int
    instance_type: str
    accelerated: bool  # a running job on these nodes is interrupted
    causes: tuple[ValueChange, ...]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> NodeRoll:
        return cls(
            d["type"],
            d["name"],
            d["action"],
            d["count"],
            d["instance_type"],
            d["accelerated"],
            tuple(d["causes"]),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "name": self.name,
            "action": self.action,
            "count": self.count,
            "instance_type": self.instance_type,
            "accelerated": self.accelerated,
            "causes": list(self.causes),
        }


@dataclass(frozen=True)
class CostDelta:
    """head minus base, per cost figure."""

    hourly_usd: float
    monthly_usd: float
    run_usd: float

    def to_dict(self) -> dict[str, float]:
        return {k: getattr(self, k) for k in COST_KEYS}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], prefix: str = "") -> CostDelta:
        return cls(*(d[f"{prefix}{k}"] for k in COST_KEYS))

    def any(self) -> bool:
        return any(getattr(self, k) for k in COST_KEYS)


@dataclass(frozen=True)
class StackCost:
    base: SideCost | None
    head: SideCost | None
    delta: CostDelta

    def to_dict(self) -> dict[str, Any]:
        return {
            "base": self.base.to_dict() if self.base else None,
            "head": self.head.to_dict() if self.head else None,
            "delta": self.delta.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StackCost:
        base, head = d.get("base"), d.get("head")
        return cls(
            SideCost.from_dict(base) if base is not None else None,
            SideCost.from_dict(head) if head is not None else None,
            CostDelta.from_dict(d["delta"]),
        )


@dataclass(frozen=True)
class StackDiff:
    """One stack's row: its status, errors per side, edited inputs, node rolls, resources
    and cost (base, head, delta)."""

    stack: str
    status: StackStatus
    file: str | None
    errors: tuple[str, ...]
    base_errors: tuple[str, ...]
    inputs: tuple[ValueChange, ...]
    rolls: tuple[NodeRoll, ...]
    resources: ResourceChanges
    cost: StackCost
    #: One line when the head does not plan: `cannot plan: file:line: reason`
    headline: str = ""
    #: what create-before-delete does to the change (plan/create_before_delete.py)
    checks: tuple[Finding, ...] = ()
    #: the usage-priced items of each side's usage file (None: neither side has one)
    usage: UsageChange | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "stack": self.stack,
            "status": self.status,
            "file": self.file,
            "headline": self.headline,
            "errors": list(self.errors),
            "base_errors": list(self.base_errors),
            "inputs": list(self.inputs),
            "rolls": [r.to_dict() for r in self.rolls],
            "resources": self.resources.to_dict(),
            "cost": self.cost.to_dict(),
        }
        if self.checks:
            out["create_before_delete"] = [c.to_dict() for c in self.checks]
        if self.usage is not None:
            out["usage"] = self.usage.to_dict()
        return out

    def refused(self) -> tuple[Finding, ...]:
        return tuple(c for c in self.checks if c.kind == "refused")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StackDiff:
        """The JSON form read back (`diff --format json`); lists left out read as empty."""
        return cls(
            stack=d["stack"],
            status=d["status"],
            file=d.get("file"),
            errors=tuple(d.get("errors") or ()),
            base_errors=tuple(d.get("base_errors") or ()),
            inputs=tuple(d.get("inputs") or ()),
            rolls=tuple(NodeRoll.from_dict(r) for r in d.get("rolls") or ()),
            resources=ResourceChanges.from_dict(d["resources"]),
            cost=StackCost.from_dict(d["cost"]),
            headline=str(d.get("headline") or ""),
            checks=tuple(Finding.from_dict(c) for c in d.get("create_before_delete") or ()),
            usage=UsageChange.from_dict(d["usage"]) if d.get("usage") else None,
        )


@dataclass(frozen=True)
class StackRoll:
    """A node roll with the stack it belongs to (the document's roll list, all stacks)."""

    stack: str
    roll: NodeRoll

    def to_dict(self) -> dict[str, Any]:
        return {"stack": self.stack, **self.roll.to_dict()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StackRoll:
        return cls(d["stack"], NodeRoll.from_dict(d))


@dataclass(frozen=True)
class StatefulChange:
    """A resource that holds state, replaced or removed: its data is lost unless moved."""

    stack: str
    action: Literal["replaced", "removed"]
    resource: ResourceChange

    def to_dict(self) -> dict[str, Any]:
        return {"stack": self.stack, "action": self.action, **self.resource.to_dict()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StatefulChange:
        return cls(d["stack"], d["action"], ResourceChange.from_dict(d))


@dataclass(frozen=True)
class OrphanedStack:
    """A stack gone from the head: not destroyed, it keeps billing; how to destroy it."""

    stack: str
    file: str | None
    monthly_usd: float
    destroy: tuple[str, str]
    deleted: str | None = None  # the file whose deletion removed it: stack file, else spec

    def to_dict(self) -> dict[str, Any]:
        return {
            "stack": self.stack,
            "file": self.file,
            "deleted": self.deleted,
            "monthly_usd": self.monthly_usd,
            "destroy": list(self.destroy),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> OrphanedStack:
        first, then = d["destroy"]
        return cls(d["stack"], d.get("file"), d["monthly_usd"], (first, then), d.get("deleted"))


@dataclass(frozen=True)
class Totals:
    """Cost over the stacks compared (the unchanged ones are not planned, not counted)."""

    base: CostDelta
    head: CostDelta
    delta: CostDelta
    delta_monthly_percent: float | None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for side in ("base", "head", "delta"):
            out |= {f"{side}_{k}": v for k, v in getattr(self, side).to_dict().items()}
        out["delta_monthly_percent"] = self.delta_monthly_percent
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Totals:
        base, head, delta = (CostDelta.from_dict(d, f"{s}_") for s in ("base", "head", "delta"))
        return cls(base, head, delta, d.get("delta_monthly_percent"))


@dataclass(frozen=True)
class PlannedWith:
    """Which accelstack version planned each side: `base_wheel` is the base's kept wheel when
    the base was planned by it (the pull request replaces the wheel), else None (both sides
    planned by the running accelstack). `head_keeps`: the version of the head's kept wheel
    when it is not the running one (the head deploys with that one, not with what planned it)."""

    base: str
    head: str
    base_wheel: str | None = None
    head_keeps: str | None = None

    def line(self) -> str:
        if self.base_wheel is None:
            out = f"both sides planned with accelstack {self.head}"
        else:
            out = (
                f"base planned with accelstack {self.base} ({self.base_wheel}, the base's kept "
                f"wheel), head with {self.head}: a change no input explains comes from the "
                "upgrade"
            )
        if self.head_keeps is not None:
            out += (
                f" (the head keeps accelstack {self.head_keeps}, which `pulumi up` runs: plan "
                "with that version to see what it deploys)"
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "head": self.head,
            "base_wheel": self.base_wheel,
            "head_keeps": self.head_keeps,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PlannedWith:
        return cls(str(d["base"]), str(d["head"]), d.get("base_wheel"), d.get("head_keeps"))


@dataclass(frozen=True)
class DiffDocument:
    """The whole diff: what cannot be planned or interrupts or loses something first (errors,
    gate and program changes, node rolls, orphaned stacks, stateful changes), then the stacks,
    the unchanged ones and the totals. `ok`: every stack planned on both sides."""

    base: str
    head: str
    rolls: tuple[StackRoll, ...]
    orphaned: tuple[OrphanedStack, ...]
    stateful: tuple[StatefulChange, ...]
    stacks: tuple[StackDiff, ...]
    unchanged: tuple[str, ...]
    totals: Totals
    ok: bool
    gate_changes: tuple[str, ...] = ()
    version: int = 2
    planned_with: PlannedWith | None = None
    #: The program inputs the change adds, edits or deletes (the gate cannot plan them), and
    #: whether the head's acceptance file names them (None: nothing to accept)
    program_changes: tuple[ProgramChange, ...] = ()
    program_accepted: bool | None = None
    #: What stopped the stacks being listed at all (a broken project file): the document
    #: then holds no stack, and says so first
    errors: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "base": self.base,
            "head": self.head,
            "rolls": [r.to_dict() for r in self.rolls],
            "orphaned": [o.to_dict() for o in self.orphaned],
            "stateful": [s.to_dict() for s in self.stateful],
            "stacks": [s.to_dict() for s in self.stacks],
            "unchanged": list(self.unchanged),
            "totals": self.totals.to_dict(),
            "ok": self.ok,
            "gate_changes": list(self.gate_changes),
            "program_changes": [c.to_dict() for c in self.program_changes],
            "program_accepted": self.program_accepted,
            "errors": list(self.errors),
        } | ({"planned_with": self.planned_with.to_dict()} if self.planned_with else {})

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DiffDocument:
        """The JSON form read back (`diff --format json`); lists left out read as empty."""
        return cls(
            base=d["base"],
            head=d["head"],
            rolls=tuple(StackRoll.from_dict(r) for r in d.get("rolls") or ()),
            orphaned=tuple(OrphanedStack.from_dict(o) for o in d.get("orphaned") or ()),
            stateful=tuple(StatefulChange.from_dict(s) for s in d.get("stateful") or ()),
            stacks=tuple(StackDiff.from_dict(s) for s in d.get("stacks") or ()),
            unchanged=tuple(d.get("unchanged") or ()),
            totals=Totals.from_dict(d["totals"]),
            ok=bool(d.get("ok", True)),
            gate_changes=tuple(d.get("gate_changes") or ()),
            version=int(d.get("version", 2)),
            planned_with=PlannedWith.from_dict(d["planned_with"])
            if d.get("planned_with")
            else None,
            program_changes=tuple(
                ProgramChange.from_dict(c) for c in d.get("program_changes") or ()
            ),
            program_accepted=d.get("program_accepted"),
            errors=tuple(d.get("errors") or ()),
        )
