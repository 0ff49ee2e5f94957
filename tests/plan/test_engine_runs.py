"""The plan engine runs a plan on one thread (accelstack/plan/engine.py `_InlineLoop`): every
call Pulumi makes to the mock monitor runs on the plan's event loop, no worker thread per
resource."""

from __future__ import annotations

import threading

import pytest

from accelstack.plan import run_plan

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
