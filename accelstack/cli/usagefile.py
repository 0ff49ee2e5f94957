"""The usage file a side of `diff` prices its usage-priced items from (cost/usage.py: NAT GB, S3
requests, inter-AZ GB), read from that side as data, as the ceiling and overlay are
(cli/trust.py): the base ref's own file for the base, the change's for the head.

Which file: what `price` reads in the project, at each side. `ACCELSTACK_USAGE` naming a file
inside the project (the current folder) is that path under each side's project folder; naming
one outside it, the same file for both sides; else `accelstack-usage.yaml` at each side's
project root. A side without the file has no usage items. The file is data the gate reads
itself, not a program input (`pulumi up` never reads it: programside.gate_data), and a change
to it is listed with the gate inputs (`usage_changes`), so it always posts.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from accelstack.cost.usage import UsageFile


def _inside(path: Path, root: Path) -> Path | None:
    try:
        return path.resolve().relative_to(root.resolve())
    except ValueError:
        return None


def usage_path(root: Path, here: Path | None = None) -> Path:
    """The usage file of the side whose project folder is `root` (`here`: the project the
    command runs in, which an `ACCELSTACK_USAGE` path is relative to; default the current
    folder)."""
    from accelstack.cost.usage import USAGE_ENV, USAGE_FILE

    named = os.environ.get(USAGE_ENV)
    if not named:
        return root / USAGE_FILE
    path = Path(named)
    rel = _inside(path, here or Path.cwd())
    return root / rel if rel is not None else path


def usage_data(root: Path) -> list[str]:
    """The usage files of the project at `root`, relative to it, as data the gate reads (left
    out of the program inputs): `accelstack-usage.yaml`, and the `ACCELSTACK_USAGE` file when
    it lies in the project."""
    from accelstack.cost.usage import USAGE_FILE

    named = _inside(usage_path(root, root), root)
    return sorted({USAGE_FILE, *([named.as_posix()] if named is not None else [])})


def shown_path(path: Path, root: Path) -> str:
    """The usage file as the document names it: relative to the side's project folder."""
    rel = _inside(path, root)
    return rel.as_posix() if rel is not None else str(path)


def usage_at(root: Path) -> tuple[UsageFile, str] | None:
    """The side's usage file, read (a bad one raises its one-line error), and its name as
    shown; None when the side has none."""
    from accelstack.cost.usage import load_usage

    path = usage_path(root)
    return (load_usage(path), shown_path(path, root)) if path.is_file() else None


def usage_bytes(root: Path) -> bytes | None:
    """The side's usage file as committed (None: it has none), to compare the two sides."""
    path = usage_path(root)
    return path.read_bytes() if path.is_file() else None


def usage_changes(base: Path, head: Path) -> list[str]:
    """One gate-input line when the usage file differs between the side folders."""
    old, new = usage_bytes(base), usage_bytes(head)
    if old == new:
        return []
    how = "added" if old is None else "removed" if new is None else "changed"
    name = (
        shown_path(usage_path(head), head)
        if new is not None
        else shown_path(usage_path(base), base)
    )
    return [
        f"the usage file {name} is {how} by this change; each side's usage-priced items are "
        "priced from its own copy (usage estimates, outside the budget verdict and the totals)"
    ]
