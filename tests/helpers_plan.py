"""The plan engine with the real program wired in, as the CLI does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from accelstack.cli.planning import program
from accelstack.plan import Plan, run_plan
from accelstack.resolve import Stack

#: The program as `accelstack plan` runs it (render's node launch scripts for standalone pools)
build = program()


def plan_stack(stack: Stack, **kwargs: Any) -> Plan:
    return run_plan(stack, build, **kwargs)


def counting_program() -> tuple[Callable[[Stack], dict[str, Any]], list[str]]:
    """The suite's program and the names of the stacks it ran for: a new object each call, so
    nothing is planned by it yet (tests/planmemo.py keys its store on the program)."""
    calls: list[str] = []

    def program(stack: Stack) -> dict[str, Any]:
        calls.append(stack.name)
        return build(stack)

    return program, calls
