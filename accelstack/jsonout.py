"""One JSON writer for every machine-readable output: valid JSON only (RFC 8259).

Python's json writes NaN and Infinity by default, which JSON parsers reject. Every report
goes through `dumps`: non-finite floats become null, then `allow_nan=False` guarantees that
nothing non-finite slipped through.
"""

from __future__ import annotations

import json
import math
from typing import Any


def finite(value: Any) -> Any:
    """`value` with every NaN/Infinity float (in dicts, lists, tuples) replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def dumps(value: Any) -> str:
    """Stable document: sorted keys, 2-space indent, trailing newline, finite numbers only."""
    return json.dumps(finite(value), indent=2, sort_keys=True, allow_nan=False) + "\n"
