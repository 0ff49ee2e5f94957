"""Writing rendered artifacts into a directory, safely (`accelstack render -o DIR`).

* A directory that holds files `render` did not write is refused unless `force`: `render` never
  overwrites a README or a script of someone else's by accident.
* `DIR/.accelstack-render.json` (the manifest) records each file `render` wrote with its sha256.
  A re-render removes the files of the previous manifest that it no longer writes (stale
  artifacts), but only those still as `render` wrote them (same sha256, a regular file); a file
  edited since is kept and reported. Names in a manifest are checked (relative, no `..`), so a
  hand-edited manifest cannot make `render` delete anything outside DIR.
* Every file is written atomically (`accelstack.files`); a symlink in DIR is refused (never
  followed, its target untouched, not chmod-ed). The manifest is written before the files
  (listing old and new names, so a killed render leaves nothing `render` does not own) and
  again, final, after them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from accelstack.files import WriteError, check_target, make_dirs, write_text_atomic
from accelstack.render.artifacts import Artifact

MANIFEST = ".accelstack-render.json"
MANIFEST_VERSION = 1


@dataclass
class Written:
    """What one render did to DIR."""

    files: list[str]
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # stale but edited since: left in place


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _safe_name(name: object) -> str | None:
    """A manifest or artifact name that stays inside DIR, else None."""
    if not isinstance(name, str) or not name or "\\" in name or "\x00" in name:
        return None
    parts = PurePosixPath(name).parts
    if PurePosixPath(name).is_absolute() or any(p in ("..", ".") for p in parts):
        return None
    return name


def read_manifest(directory: Path) -> dict[str, str] | None:
    """{name: sha256} of the last render into `directory`; None when there is none."""
    path = directory / MANIFEST
    if not path.exists() and not path.is_symlink():
        return None
    reason = "is not a manifest written by accelstack render"
    try:
        if path.is_symlink():
            raise ValueError
        data = json.loads(path.read_text(encoding="utf-8"))
        files = data["files"]
        out = {n: str(h) for n, h in files.items() if _safe_name(n) and isinstance(h, str)}
        if len(out) != len(files):
            reason = "lists a file name outside the directory"
            raise ValueError
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        raise WriteError(path, f"{reason}; remove it or pass --force") from None
    return out


def _entries(directory: Path) -> list[str]:
    """Top-level names in `directory` other than the manifest."""
    try:
        return sorted(n for n in os.listdir(directory) if n != MANIFEST)
    except OSError as exc:
        raise WriteError(directory, exc.strerror or type(exc).__name__) from None


def _previous(directory: Path, names: Sequence[str], force: bool) -> dict[str, str]:
    """The previous manifest, after refusing a directory (or files) `render` does not own."""
    try:
        previous = read_manifest(directory)
    except WriteError:
        if not force:
            raise
        previous = None
    entries = _entries(directory)
    if previous is None:
        if entries and not force:
            raise WriteError(
                directory,
                f"is not empty ({len(entries)} entries) and was not written by accelstack "
                "render; choose an empty directory or pass --force",
            )
        return {}
    foreign = [n for n in names if n not in previous and os.path.lexists(directory / n)]
    if foreign and not force:
        raise WriteError(
            directory / foreign[0],
            "exists and was not written by accelstack render; pass --force to overwrite it",
        )
    return previous


def _check_path(directory: Path, name: str) -> None:
    """Refuse a target, or a folder on the way to it, that is a symlink or not a plain file."""
    parts = PurePosixPath(name).parts
    for depth in range(1, len(parts)):
        folder = directory.joinpath(*parts[:depth])
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            raise WriteError(folder, "is a symbolic link or not a directory; refusing to write")
    check_target(directory / name)


def _write_manifest(directory: Path, files: dict[str, str]) -> None:
    body = {"version": MANIFEST_VERSION, "files": dict(sorted(files.items()))}
    write_text_atomic(directory / MANIFEST, json.dumps(body, indent=2) + "\n", mode=0o644)


def _remove_stale(directory: Path, stale: dict[str, str], done: Written) -> None:
    """Remove the previous render's files that this render no longer writes, if unchanged."""
    for name, digest in sorted(stale.items()):
        path = directory / name
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        except OSError:
            done.kept.append(name)
            continue
        if not stat.S_ISREG(st.st_mode) or sha256(_read(path)) != digest:
            done.kept.append(name)
            continue
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        done.removed.append(name)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def check_artifacts(directory: Path, artifacts: Sequence[Artifact], force: bool) -> dict[str, str]:
    """Refuse what cannot be written into `directory` before anything is created there; the
    previous manifest's {name: sha256} (empty when none, or DIR is new)."""
    names = [a.path for a in artifacts]
    for art in artifacts:
        if _safe_name(art.path) is None:
            raise WriteError(directory / art.path, "is not a name inside the output directory")
        if not art.content.isascii():
            try:
                art.content.encode("utf-8")
            except UnicodeEncodeError as exc:
                bad = art.content[exc.start : exc.end]
                raise WriteError(directory / art.path, f"holds {bad!r}, not valid UTF-8") from None
    if not directory.exists():
        return {}
    previous = _previous(directory, names, force)
    for name in names:  # refuse symlinks and directories before anything is written
        _check_path(directory, name)
    return previous


def _put_text(target: Path, art: Artifact) -> None:
    write_text_atomic(target, art.content, mode=0o755 if art.executable else 0o644)


def commit_artifacts(
    directory: Path,
    artifacts: Sequence[Artifact],
    previous: dict[str, str],
    put: Callable[[Path, Artifact], None] = _put_text,
) -> Written:
    """Put each artifact into `directory` with `put` (atomic per file), journaled: the manifest
    lists the old and new names first, the stale files go, then the final manifest."""
    make_dirs(directory)
    new = {a.path: sha256(a.content) for a in artifacts}
    _write_manifest(directory, {**previous, **new})
    for art in artifacts:
        target = directory / art.path
        if target.parent != directory:
            make_dirs(target.parent)
        put(target, art)
    done = Written(files=[a.path for a in artifacts])
    _remove_stale(directory, {n: h for n, h in previous.items() if n not in new}, done)
    _write_manifest(directory, new)  # kept (edited) files are the user's from now on
    return done


def write_artifacts(directory: Path, artifacts: Sequence[Artifact], force: bool) -> Written:
    """Write `artifacts` into `directory` (see the module docstring); raises WriteError."""
    previous = check_artifacts(directory, artifacts, force)
    return commit_artifacts(directory, artifacts, previous)
