"""Today's date, for facts that change with time (EKS support windows).

`ACCELSTACK_TODAY=YYYY-MM-DD` pins it, so golden files and CI runs are reproducible; the
test suite pins it in tests/conftest.py.
"""

from __future__ import annotations

import os
from datetime import date

from accelstack.errors import AccelstackError, shown


def today() -> date:
    pinned = os.environ.get("ACCELSTACK_TODAY")
    if not pinned:
        return date.today()
    try:
        return date.fromisoformat(pinned)
    except ValueError:
        raise AccelstackError(
            f"ACCELSTACK_TODAY: {shown(pinned)} is not a YYYY-MM-DD date"
        ) from None
