"""The plan engine runs a plan on one thread (accelstack/plan/engine.py `_InlineLoop`): every
call Pulumi makes to the mock monitor runs on the plan's event loop, no worker thread per
resource; and with the garbage collector off (`accelstack/collector.py`)."""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from typing import Any

import pytest

from accelstack.plan import PlanError, run_plan
from accelstack.resolve import Stack

from ..helpers_plan import counting_program
from ..helpers_render import preset_stack

pytestmark = pytest.mark.plan


def test_a_plan_starts_no_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every call to the mock monitor runs on the plan's own thread (`_InlineLoop`): no worker
    thread hand-off per resource, no event loop per worker thread."""
    started: list[str] = []
    start = threading.Thread.start

    def record(self: threading.Thread) -> None:
        started.append(self.name)
        start(self)

    monkeypatch.setattr(threading.Thread, "start", record)
    program, calls = counting_program()
    plan = run_plan(preset_stack("llama3-70b-trn2"), program, guard=False)
    assert calls == ["llama3-70b-trn2"] and len(plan.resources) > 50
    assert started == []


def _collections_during(action: Callable[[], object]) -> list[int]:
    """The generation of every garbage collection that ran during `action`."""
    seen: list[int] = []

    def record(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(record)
    try:
        action()
    finally:
        gc.callbacks.remove(record)
    return seen


def test_no_garbage_collection_runs_while_a_plan_runs() -> None:
    """A plan's objects live until it ends: the collector is off for the plan (engine
    `collector_off`), so none of its allocations start a collection (about 60 for this preset
    with it on), and it is on again after: at most the one young-generation collection that
    frees the plan's garbage, once the collector is back."""
    program, calls = counting_program()
    stack = preset_stack("llama3-70b-trn2")
    assert gc.isenabled()
    seen = _collections_during(lambda: run_plan(stack, program, guard=False))
    assert calls == ["llama3-70b-trn2"]
    assert seen in ([], [0])
    assert gc.isenabled()


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_left_as_it_was_found_after_a_failed_plan(enabled: bool) -> None:
    def broken(stack: Stack) -> dict[str, Any]:
        raise RuntimeError("boom")

    (gc.enable if enabled else gc.disable)()
    try:
        with pytest.raises(PlanError, match="boom"):
            run_plan(preset_stack("trn1-finetune"), broken, guard=False)
        assert gc.isenabled() is enabled
    finally:
        gc.enable()
