"""The user's catalog overlay: a directory of catalog files (`--catalog DIR` or
`ACCELSTACK_CATALOG_DIR`) read on top of the bundled catalog, then validated as one catalog.

Any bundled catalog file may be overlaid (the table of files: sections.py). A file of the
overlay has the bundled file's shape and holds only what differs:
- mappings merge key by key, recursively (a new instance row, one changed default);
- the lists of rows a section declares (`Section.rows`: prices, records, curves) merge by
  the row's identity: an overlay row replaces the bundled row with the same identity, a new
  one is appended;
- anything else (a scalar, a list of zones) in the overlay replaces the bundled value.
Errors name the overlay's file when it provides that file. A top-level key the bundled file of
that name does not have is refused (`check_keys`: one line naming the file and the key, with a
"did you mean"), so a misspelt section never leaves a negotiated price silently unread.
`price` and `check` say which overlay is in effect and how many rows it holds (`overlay_note`).
`accelstack prices refresh` writes its prices here, never into the installed package."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from accelstack.catalog.sections import FILES as FILES
from accelstack.errors import AccelstackError, CatalogError, allowed, did_you_mean, shown

ENV = "ACCELSTACK_CATALOG_DIR"
#: The fields that identify a row of a list when no section says (`merge` without `rows`).
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


def overlay_file(name: str, command: str, alternative: str = "") -> Path:
    """The overlay's `name` file, which `command` writes; without an overlay, an error naming
    the ways to set one (and `alternative`, a command's own way)."""
    overlay = overlay_dir()
    if overlay is None:
        raise AccelstackError(
            f"{command} writes into a catalog overlay, never into the installed package: "
            f"pass --catalog DIR (before the command) or set {ENV}{alternative}"
        )
    return overlay / name


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


def check_keys(top: Mapping[str, Any], bundled: Mapping[str, Any], where: Path) -> None:
    """Every top-level key of an overlay file must be one its bundled file has (a key nothing
    reads would be merged and then ignored); one line naming the file and the key."""
    for key in top:
        if key not in bundled:
            raise CatalogError(
                f"{where}: {shown(key)}: is not a section of {where.name}"
                f"{did_you_mean(str(key), map(str, bundled))}; allowed: "
                f"{allowed(map(str, bundled))}"
            )


def overlay_rows(path: Path) -> int:
    """How many rows the overlay at `path` holds: the entries of each section of each file
    (a price, an instance type, a region, a record); a section that is a plain value is one."""
    import yaml

    count = 0
    for f in sorted(path.glob("*.y*ml")):
        data = yaml.safe_load(f.read_text(encoding="utf-8")) if f.is_file() else None
        for value in (data or {}).values() if isinstance(data, dict) else ():
            count += len(value) if isinstance(value, list | dict) else 1
    return count


def overlay_note(path: Path | None, label: str | None = None) -> str | None:
    """`overlay in effect: N rows from DIR` (None: no overlay), what `price` and `check` print
    so a run never uses an overlay unknowingly (`label`: how to name DIR, e.g. the base ref's)."""
    if path is None or not path.is_dir():
        return None
    return f"overlay in effect: {overlay_rows(path)} rows from {label or path}"


def _hashable(value: Any) -> Any:
    return tuple(_hashable(v) for v in value) if isinstance(value, list | tuple) else value


def identity(row: object, keys: tuple[str, ...] = ROW_KEYS) -> tuple[Any, ...] | None:
    """The values that identify a row (None: not a row, or none of them set)."""
    if not isinstance(row, dict):
        return None
    key = tuple(_hashable(row.get(k)) for k in keys)
    return key if any(v is not None for v in key) else None


def _merge_rows(base: list[Any], top: list[Any], keys: tuple[str, ...]) -> list[Any]:
    out = list(base)
    where = {identity(r, keys): i for i, r in enumerate(out) if identity(r, keys) is not None}
    for row in top:
        key = identity(row, keys)
        if key is not None and key in where:
            out[where[key]] = row
        else:
            out.append(row)
    return out


def merge(
    base: Any, top: Any, rows: Mapping[str, tuple[str, ...]] | None = None, at: str = ""
) -> Any:
    """`top` (the overlay's file) over `base` (the bundled one). `rows`: the lists merged row
    by row (dotted YAML path -> the identity fields, a section's `rows`); without it, any list
    whose rows all have an identity (`ROW_KEYS`) merges row by row."""
    if isinstance(base, dict) and isinstance(top, dict):
        out = dict(base)
        for k, v in top.items():
            path = f"{at}.{k}" if at else str(k)
            out[k] = merge(out[k], v, rows, path) if k in out else v
        return out
    if not (isinstance(base, list) and isinstance(top, list)):
        return top
    if rows is not None:
        return _merge_rows(base, top, rows[at]) if at in rows else top
    if all(identity(r) is not None for r in (*base, *top)):
        return _merge_rows(base, top, ROW_KEYS)
    return top
