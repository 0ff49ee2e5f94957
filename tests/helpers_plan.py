"""The plan engine with the real program wired in, as the CLI does."""

from __future__ import annotations

from typing import Any

from accelstack.components.program import build
from accelstack.plan import Plan, run_plan
from accelstack.resolve import Stack


def plan_stack(stack: Stack, **kwargs: Any) -> Plan:
    return run_plan(stack, build, **kwargs)
