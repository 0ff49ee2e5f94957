"""The cyclic garbage collector held off for a block of work whose objects outlive it.

A collection during such a block finds little to free and promotes what it walks towards the
oldest generation, whose collections walk every live object of the process. The plan engine
runs each plan this way (`accelstack/plan/engine.py`); the CLI imports its long-lived modules
this way and then freezes them (`accelstack/cli/gcheld.py`).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_off() -> Iterator[None]:
    """The collector off for the block, then on again when it was on."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
