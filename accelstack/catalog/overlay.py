"""The user's catalog overlay: a directory of catalog files (`--catalog DIR` or
`ACCELSTACK_CATALOG_DIR`) read on top of the bundled catalog, then validated as one catalog.

A file of the overlay has the bundled file's shape and holds only what differs:
- mappings merge key by key, recursively (a new instance row, one changed default);
- lists of rows (prices, records) merge by identity (`id`, or region/type/option/item):
  an overlay row replaces the bundled row with the same identity, a new one is appended;
- anything else (a scalar, a list of zones) in the overlay replaces the bundled value.
Errors name the overlay's file when it provides that file. `accelstack prices refresh` writes
its prices here, never into the installed package."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from accelstack.errors import CatalogError

ENV = "ACCELSTACK_CATALOG_DIR"
#: The files a catalog directory may hold (the bundled catalog's own).
FILES = (
    "instances.yaml",
    "offerings.yaml",
    "offerings_extra.yaml",
    "prices.yaml",
    "records.yaml",
    "launch.yaml",
    "purchase_options.yaml",
    "scale.yaml",
)
#: The fields that identify a row of a list section.
ROW_KEYS = ("id", "region", "type", "option", "item")


class _Active:
    """The overlay chosen on the command line (`--catalog`); None: the environment's."""

    path: Path | None = None


ACTIVE = _Active()


def set_overlay(path: Path | None) -> None:
    ACTIVE.path = path


def overlay_dir() -> Path | None:
    """The overlay directory in effect (`--catalog`, else ACCELSTACK_CATALOG_DIR), checked."""
    path = ACTIVE.path
    if path is None:
        env = os.environ.get(ENV, "").strip()
        path = Path(env).expanduser() if env else None
    if path is None:
        return None
    return check_dir(path)


def check_dir(path: Path) -> Path:
    """An overlay must be a directory holding only catalog files (a typo is an error)."""
    if not path.is_dir():
        raise CatalogError(f"{path}: the catalog overlay is not a directory ({ENV} / --catalog)")
    for f in sorted(path.glob("*.y*ml")):
        if f.name not in FILES:
            raise CatalogError(
                f"{f}: not a catalog file (a catalog overlay holds {', '.join(FILES)})"
            )
    return path.resolve()


def _identity(row: object) -> tuple[Any, ...] | None:
    if not isinstance(row, dict):
        return None
    key = tuple(row.get(k) for k in ROW_KEYS)
    return key if any(v is not None for v in key) else None


def _merge_rows(base: list[Any], top: list[Any]) -> list[Any]:
    out = list(base)
    where = {_identity(r): i for i, r in enumerate(out) if _identity(r) is not None}
    for row in top:
        key = _identity(row)
        if key is not None and key in where:
            out[where[key]] = row
        else:
            out.append(row)
    return out


def merge(base: Any, top: Any) -> Any:
    """`top` (the overlay's file) over `base` (the bundled one)."""
    if isinstance(base, dict) and isinstance(top, dict):
        out = dict(base)
        for k, v in top.items():
            out[k] = merge(out[k], v) if k in out else v
        return out
    rows = isinstance(base, list) and isinstance(top, list)
    if rows and all(_identity(r) is not None for r in (*base, *top)):
        return _merge_rows(base, top)
    return top
