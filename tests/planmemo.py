"""The suite's plans, remembered: `accelstack.plan.run_plan` answers a stack this test process
planned before, with the same program and guard on the same date, from a copy of that plan
instead of running the program again (tests/conftest.py installs it before any test module
imports run_plan).

A plan is a function of those four: the program reads no environment variable and no file but
the package's templates, the stack carries its catalog, AMI pins and settings, and the guard
prices Kubernetes support by the clock's date. Hundreds of tests plan the presets: the `plan`
tests' processes planned a stack they had planned before about 290 times in 640 plans (the CLI
tests plan both sides of a gate, day-2 rows share their bases), about 100 s of CPU.
Failures are never kept, so a test that expects a refusal still runs the program. A test that
changes the program itself (monkeypatch on a component) empties the store: the suite's
`monkeypatch` fixture calls `forget` on every patch (tests/conftest.py);
tests/test_planmemo.py holds the rest.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from accelstack.clock import today

if TYPE_CHECKING:
    from accelstack.plan import Plan, Program
    from accelstack.resolve import Stack

_KEEP = 64
_PLANS: list[tuple[tuple[Any, bool, str], Stack, Plan]] = []


def forget() -> None:
    """Empty the store (the program may have changed)."""
    _PLANS.clear()


def remembering(run_plan: Callable[..., Plan]) -> Callable[..., Plan]:
    """`run_plan` that answers an equal (program, guard, date, stack) from the store."""

    @functools.wraps(run_plan)
    def remembered(stack: Stack, build: Program, guard: bool = True) -> Plan:
        key = (build, guard, today().isoformat())
        kept = next((p for k, s, p in reversed(_PLANS) if k == key and s == stack), None)
        if kept is None:
            kept = run_plan(stack, build, guard)
            _PLANS.append((key, stack, kept))
            del _PLANS[:-_KEEP]
        return copy.deepcopy(kept)

    return remembered


def install() -> None:
    """Put the remembering run_plan where every caller finds it (once per process)."""
    import accelstack.plan
    import accelstack.plan.engine as engine

    if not hasattr(engine.run_plan, "__wrapped__"):
        engine.run_plan = accelstack.plan.run_plan = remembering(engine.run_plan)
