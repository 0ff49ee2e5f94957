"""Imports of long-lived modules with the garbage collector held off, then frozen.

A module's objects (its classes, functions, constants) live as long as the process, so a
collection while it is imported only walks them, and every later collection walks them again
unless `gc.freeze` moves them out of its reach. The CLI imports typer this way (about a tenth
of `--help`) and `plan` the Pulumi SDK (nearly half of what `plan` spent beyond its SDK import
floor: 1.50x -> 1.27x, bench/startup.py). Garbage made afterwards is collected as usual.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

from accelstack.collector import collector_off


@contextlib.contextmanager
def collector_held() -> Iterator[None]:
    """The collector off for the block (`collector_off`), then what exists frozen before it is
    on again (when it was on)."""
    with collector_off():
        try:
            yield
        finally:
            gc.freeze()  # what exists now lives as long as the process
