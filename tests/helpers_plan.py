"""The plan engine with the real program wired in, as the CLI does."""

from __future__ import annotations

from typing import Any

from accelstack.cli.planning import program
from accelstack.plan import Plan, run_plan
from accelstack.resolve import Stack

#: The program as `accelstack plan` runs it (render's node launch scripts for standalone pools)
build = program()


def plan_stack(stack: Stack, **kwargs: Any) -> Plan:
    return run_plan(stack, build, **kwargs)
