"""The organisation's cost ceiling: limits that apply to every stack on top of its own budget.

A YAML file (`accelstack-ceiling.yaml` beside `Pulumi.yaml`, or the file named by `--ceiling`
or ACCELSTACK_CEILING) with any of `max_hourly_usd`, `max_monthly_usd`, `max_run_usd`:

    # accelstack-ceiling.yaml: no stack of this organisation may exceed these
    max_hourly_usd: 2000
    max_monthly_usd: 1500000

`check`, `plan`, `price` and `diff` read it (the flag, else the variable, else the project's
file), and so do the policy pack and the program. A stack with `budget: {unlimited: true}` is
still held to the ceiling. A bad file is one line naming it, exit 2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from accelstack.errors import Problem, SpecError, did_you_mean, shown
from accelstack.files import file_in_force
from accelstack.spec.loader import read_yaml_file

CEILING_FILE = "accelstack-ceiling.yaml"
CEILING_ENV = "ACCELSTACK_CEILING"
LIMIT_KEYS = ("max_hourly_usd", "max_monthly_usd", "max_run_usd")


@dataclass(frozen=True)
class Ceiling:
    source: str  # the file it came from
    max_hourly_usd: float | None = None
    max_monthly_usd: float | None = None
    max_run_usd: float | None = None

    def limit(self, key: str) -> float | None:
        value: float | None = getattr(self, key)
        return value


def _number(value: object, file: str, key: str) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not math.isfinite(float(value)) or float(value) <= 0:  # type: ignore[arg-type]
        raise SpecError([Problem(file, key, f"is {shown(value)}; allowed: a number above 0")])
    return float(value)  # type: ignore[arg-type]


def load_ceiling(path: Path) -> Ceiling:
    """Read a ceiling file; every problem is one line naming the file and key."""
    file = str(path)
    data = read_yaml_file(path)
    if not isinstance(data, dict) or not data:
        raise SpecError([Problem(file, "", f"must map some of {', '.join(LIMIT_KEYS)} to USD")])
    for key in data:
        if key not in LIMIT_KEYS:
            hint = did_you_mean(key, LIMIT_KEYS) or f"; allowed: {', '.join(LIMIT_KEYS)}"
            raise SpecError([Problem(file, str(key), "is not a ceiling key" + hint)])
    values = {k: _number(v, file, k) for k, v in data.items()}
    return Ceiling(file, **values)


def find_ceiling(flag: Path | None = None, root: Path | None = None) -> Ceiling | None:
    """The ceiling in force: `flag`, else ACCELSTACK_CEILING, else <root>/accelstack-ceiling.yaml
    (None when none is set). A named file that does not exist is refused, never skipped."""
    default = (root or Path.cwd()) / CEILING_FILE
    found = file_in_force(flag, "--ceiling", CEILING_ENV, default, "cost ceiling")
    return None if found is None else load_ceiling(found)
