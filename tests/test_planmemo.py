"""The suite's store of plans (tests/planmemo.py): an equal stack planned again by the same
program, guard and date is the first plan (a copy for each caller); anything else runs the
program, a failure is never kept, and the suite's monkeypatch empties the store."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import pytest

from accelstack.errors import AccelstackError
from accelstack.plan import run_plan
from accelstack.resolve import Stack

from .helpers_plan import counting_program
from .helpers_render import preset_stack

pytestmark = pytest.mark.plan


def test_an_equal_stack_runs_the_program_once_and_each_caller_gets_a_copy() -> None:
    program, calls = counting_program()
    first = run_plan(preset_stack("trn1-finetune"), program, guard=False)
    again = run_plan(preset_stack("trn1-finetune"), program, guard=False)  # equal, not the same
    assert calls == ["trn1-finetune"]
    assert again.to_json() == first.to_json() and again is not first
    again.resources[0].inputs["changedByTheCaller"] = True  # a caller's copy is its own
    third = run_plan(preset_stack("trn1-finetune"), program, guard=False)
    assert third.to_json() == first.to_json() and calls == ["trn1-finetune"]


def test_another_stack_guard_program_or_date_runs_the_program_again() -> None:
    program, calls = counting_program()
    stack = preset_stack("trn1-finetune")
    run_plan(stack, program, guard=False)
    pool = dataclasses.replace(stack.pools[0], nodes=stack.pools[0].nodes + 1)
    bigger = dataclasses.replace(stack, pools=(pool, *stack.pools[1:]))
    run_plan(bigger, program, guard=False)
    run_plan(stack, program, guard=True)
    other, other_calls = counting_program()
    run_plan(stack, other, guard=False)
    assert len(calls) == 3 and len(other_calls) == 1
    # another day (the guard may price support differently): set directly, since the suite's
    # monkeypatch would empty the store and prove nothing
    pinned = os.environ["ACCELSTACK_TODAY"]
    os.environ["ACCELSTACK_TODAY"] = "2027-01-05"
    try:
        run_plan(stack, program, guard=True)
    finally:
        os.environ["ACCELSTACK_TODAY"] = pinned
    assert len(calls) == 4


def test_a_failed_plan_is_not_kept() -> None:
    program, calls = counting_program()
    failures = [AccelstackError("the first run fails")]

    def flaky(stack: Stack) -> dict[str, Any]:
        if failures:
            raise failures.pop()
        return program(stack)

    with pytest.raises(AccelstackError, match="the first run fails"):
        run_plan(preset_stack("trn1-finetune"), flaky, guard=False)
    run_plan(preset_stack("trn1-finetune"), flaky, guard=False)
    assert calls == ["trn1-finetune"]


def test_the_suites_monkeypatch_empties_the_store(monkeypatch: pytest.MonkeyPatch) -> None:
    program, calls = counting_program()
    run_plan(preset_stack("trn1-finetune"), program, guard=False)
    monkeypatch.setattr("tests.planmemo._KEEP", 64)  # any patch: the program may have changed
    run_plan(preset_stack("trn1-finetune"), program, guard=False)
    assert calls == ["trn1-finetune", "trn1-finetune"]
