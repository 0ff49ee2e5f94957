"""The gate's own inputs, trusted from outside the change under review.

The cost ceiling and the catalog overlay decide what the gate passes, so a pull request must
not set them for itself. The gate reads each from a CI setting (`--ceiling`,
ACCELSTACK_CEILING, `--catalog`, ACCELSTACK_CATALOG_DIR naming a file outside the checkout),
and when that setting names a file inside the checkout, or when the ceiling is the project's
own `accelstack-ceiling.yaml`, from the BASE ref: the version already reviewed and merged.
A change to either in the change under review is listed first (`gate_changes`), and it makes
every stack's deploy-input fingerprint change (`GateFiles.digest`), so it is never quiet.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from accelstack.cost.ceiling import Ceiling


@dataclass(frozen=True)
class GateFiles:
    """The ceiling file and the catalog overlay folder one side is judged with."""

    ceiling: Path | None
    overlay: Path | None
    named: bool = False  # the ceiling was named (--ceiling, ACCELSTACK_CEILING): it must exist

    def files(self) -> dict[str, bytes]:
        """Name -> contents of every file of the two (missing: absent)."""
        out: dict[str, bytes] = {}
        if self.ceiling is not None and self.ceiling.is_file():
            out["ceiling"] = self.ceiling.read_bytes()
        if self.overlay is not None and self.overlay.is_dir():
            for f in sorted(self.overlay.glob("*.y*ml")):
                out[f"overlay/{f.name}"] = f.read_bytes() if f.is_file() else b"<not a file>"
        return out

    def digest(self) -> str:
        h = hashlib.sha256()
        for name, data in self.files().items():
            h.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
        return h.hexdigest()


def _named_ceiling(flag: Path | None) -> Path | None:
    from accelstack.cost.ceiling import CEILING_ENV

    env = os.environ.get(CEILING_ENV)
    return flag or (Path(env) if env else None)


def head_files(flag: Path | None, root: Path) -> GateFiles:
    """The checkout's own: the named ceiling or the project's file, and the overlay in effect."""
    from accelstack.catalog.overlay import overlay_dir
    from accelstack.cost.ceiling import CEILING_FILE

    named = _named_ceiling(flag)
    ceiling = named if named is not None else root / CEILING_FILE
    return GateFiles(ceiling, overlay_dir(), named is not None)


def _toplevel(cwd: Path) -> Path | None:
    done = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, cwd=cwd
    )
    return Path(done.stdout.strip()).resolve() if done.returncode == 0 else None


def _at_base(path: Path, base: str, top: Path, into: Path) -> Path:
    """`path` (inside the checkout at `top`) as committed at `base`, written under `into`;
    a path absent at `base` comes back as a path that does not exist."""
    from accelstack.cli.gittree import blobs, tree

    rel = path.resolve().relative_to(top)
    target = into / rel
    for mode, sha, name in tree(base, str(rel), top):
        if mode not in ("100644", "100755"):
            continue  # a link is no ceiling or overlay file
        out = into / name
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(blobs([sha], top)[0])
    return target


def base_files(head: GateFiles, base: str, cwd: Path, into: Path) -> GateFiles:
    """The files the gate enforces: each of `head`'s as committed at `base` when it lies in
    the checkout, else (a CI setting outside it) the same file."""
    top = _toplevel(cwd)

    def trusted(path: Path | None) -> Path | None:
        if path is None or top is None or not path.resolve().is_relative_to(top):
            return path
        return _at_base(path, base, top, into)

    return GateFiles(trusted(head.ceiling), trusted(head.overlay), head.named)


def gate_changes(base: GateFiles, head: GateFiles) -> list[str]:
    """One line per gate input the change edits: listed first, enforced from the base."""
    old, new = base.files(), head.files()
    lines = []
    for name in sorted(old.keys() | new.keys()):
        if old.get(name) == new.get(name):
            continue
        what = "the cost ceiling" if name == "ceiling" else f"catalog overlay file {name[8:]}"
        how = "added" if name not in old else "removed" if name not in new else "changed"
        lines.append(
            f"{what} is {how} by this change; the gate enforces the base ref's version (a "
            "ceiling or overlay change needs its own reviewed merge before it applies)"
        )
    return lines


@contextlib.contextmanager
def overlay_in_force(files: GateFiles) -> Iterator[None]:
    """Plan with `files.overlay` as the catalog overlay (restored afterwards)."""
    from accelstack.catalog.overlay import ACTIVE, set_overlay

    before = ACTIVE.path
    if files.overlay is not None and not files.overlay.is_dir():
        files = GateFiles(
            files.ceiling, None, files.named
        )  # the base has no overlay: the bundled catalog
        empty = True
    else:
        empty = False
    set_overlay(files.overlay)
    env = os.environ.pop("ACCELSTACK_CATALOG_DIR", None) if empty else None
    try:
        yield
    finally:
        set_overlay(before)
        if env is not None:
            os.environ["ACCELSTACK_CATALOG_DIR"] = env


def ceiling_of(files: GateFiles) -> Ceiling | None:
    """The Ceiling the gate enforces (None: no ceiling file at the trusted source; a named
    file that does not exist there is refused, never skipped)."""
    from accelstack.cost.ceiling import find_ceiling, load_ceiling

    if files.ceiling is None:
        return None
    if files.named or files.ceiling.is_file():
        return find_ceiling(files.ceiling) if files.named else load_ceiling(files.ceiling)
    return None
