"""Small helpers the deploy rule modules share (pure: plan documents in, values out)."""

from __future__ import annotations

from typing import Any

from accelstack.plan.document import PlannedResource


def rid(r: PlannedResource) -> str:
    """How a violation names a resource: `type 'name'`."""
    return f"{r.type} '{r.name}'"


def get_in(value: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value
