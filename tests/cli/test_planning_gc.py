"""The plan's program is imported with the garbage collector held off, then frozen
(accelstack/cli/planning.py, with accelstack/cli/gcheld.py `collector_held`): the Pulumi SDK's
objects are never walked by a collection, the collector is on again afterwards, and only the
first import freezes (later plans in the same process, as `check` and `diff` run them, keep
their garbage collectable)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ..conftest import ROOT

_CHILD = """
import gc, json, sys
from accelstack.cli import planning
before = gc.get_freeze_count()
seen = []
real_disable = gc.disable
gc.disable = lambda: (seen.append(gc.isenabled()), real_disable())[1]
planning.program()
first = gc.get_freeze_count()
planning.program()
print(json.dumps({
    "before": before, "first": first, "again": gc.get_freeze_count(),
    "enabled": gc.isenabled(), "held": seen, "sdk": "pulumi_aws" in sys.modules,
}))
"""


@pytest.mark.slow  # imports the Pulumi SDK in a fresh process
def test_the_sdk_is_imported_with_the_collector_held_then_frozen_once() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True
    )
    found = json.loads(out.stdout.splitlines()[-1])
    assert found["sdk"] and found["held"] == [True]  # held once, while it was on
    assert found["first"] > found["before"] + 50_000  # the SDK's objects frozen (about 84,000)
    assert found["again"] == found["first"] and found["enabled"]  # a second plan freezes nothing
