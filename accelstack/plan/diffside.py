"""The side row: one stack planned on one side of a diff, the input of `plan/diff.py`.

Made where the stack is planned (`cli/planning.side_row` and `planned_row`; for a base planned
by the base's own accelstack, `cli/crossversion.old_row` from its `plan --format json`), read
by the diff core and carried into the document the formatters render. A row that planned holds
the plan document (`Plan.to_dict()`), the priced verdict (`SideCost`), each priced line item
(`PricedLine`: quantity, unit, unit price) and the usage-priced items of the side's usage file;
one that did not holds its error lines, the `cannot plan` headline and the exit code. The
inputs (spec values and stack config, flattened) are on both.

`to_dict`/`from_dict` is its JSON form (what a test or a tool writes; a key left out reads as
empty).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from accelstack.plan.diffmodel import SideCost
from accelstack.plan.diffprice import PricedLine, SideUsage


@dataclass(frozen=True)
class SideRow:
    """One stack on one side: planned (`plan`, `cost`) or not (`errors`)."""

    file: str  # `<side>:<spec path>` (or the spec path)
    stack_file: str | None = None  # its Pulumi.<stack>.yaml, relative to the project
    inputs: Mapping[str, Any] = field(default_factory=dict)  # `diff_inputs.inputs_of`
    plan: dict[str, Any] | None = None  # the plan document
    cost: SideCost | None = None
    lines: tuple[PricedLine, ...] = ()
    usage: SideUsage | None = None
    errors: tuple[str, ...] = ()
    headline: str = ""  # `cannot plan: file:line: reason` when it did not plan
    exit_code: int = 0  # the exit code of the failure when it did not plan

    @property
    def broken(self) -> bool:
        """The stack did not plan on this side: what it declares is unknown."""
        return bool(self.errors)

    def lines_of(self, resource: str) -> tuple[PricedLine, ...]:
        """The priced line items of one resource (by name)."""
        return tuple(line for line in self.lines if line.resource == resource)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "file": self.file,
            "stack_file": self.stack_file,
            "inputs": dict(self.inputs),
        }
        if self.broken:
            return out | {
                "errors": list(self.errors),
                "headline": self.headline,
                "exit_code": self.exit_code,
            }
        out |= {"plan": self.plan, "cost": self.cost.to_dict() if self.cost else None}
        out["lines"] = [line.to_dict() for line in self.lines]
        return out | ({"usage": self.usage.to_dict()} if self.usage else {})

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SideRow:
        cost, usage = d.get("cost"), d.get("usage")
        return cls(
            file=str(d.get("file") or ""),
            stack_file=d.get("stack_file"),
            inputs=dict(d.get("inputs") or {}),
            plan=d.get("plan"),
            cost=SideCost.from_dict(cost) if cost is not None else None,
            lines=tuple(PricedLine.from_dict(x) for x in d.get("lines") or ()),
            usage=SideUsage.from_dict(usage) if usage else None,
            errors=tuple(d.get("errors") or ()),
            headline=str(d.get("headline") or ""),
            exit_code=int(d.get("exit_code") or 0),
        )
