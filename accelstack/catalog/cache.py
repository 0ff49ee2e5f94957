"""The parsed-catalog cache: the loaded `Catalog` of one set of catalog files, kept on disk so
the next command in a fresh process skips parsing the YAML and building the catalog's models.

An entry is named by a digest of everything the loaded catalog depends on: the bytes of every
catalog file read (bundled and overlay, with their paths), the catalog package's own source
files (a model or parser edit is a new key), and the Python, pydantic and PyYAML versions. A hit
is therefore the catalog those files load to; there is no expiry to tune.

An entry is a pickle, so it is read only from a directory owned by the user and writable by
nobody else (a file there too); anything else, and any error at all, is a miss, never a failed
command. Writes are atomic (a temporary file renamed into place); the newest `KEEP` entries are
kept.

Where: `ACCELSTACK_CACHE_DIR`, else `$XDG_CACHE_HOME/accelstack`, else `~/.cache/accelstack`.
`ACCELSTACK_CACHE_DIR=off` turns it off.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import stat
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

ENV = "ACCELSTACK_CACHE_DIR"
OFF = "off"
#: Entries kept; older ones are removed after a write (one per catalog version in use).
KEEP = 8
#: Bumped when what an entry holds changes shape.
FORMAT = b"accelstack-catalog-cache/1"
_SUFFIX = ".pickle"
_CATALOG = Path(__file__).resolve().parent
#: The modules outside the catalog package that it imports (tests/catalog/test_cache.py holds
#: this list to the package's imports): their source is part of the key too.
IMPORTED = ("errors.py", "files.py", "jsonout.py", "naming.py")


def sources() -> list[Path]:
    """The code a loaded catalog depends on: the catalog package and what it imports."""
    return [*sorted(_CATALOG.glob("*.py")), *(_CATALOG.parent / name for name in IMPORTED)]


def cache_dir() -> Path | None:
    """The cache directory in effect (None: turned off)."""
    env = os.environ.get(ENV, "").strip()
    if env.lower() == OFF:
        return None
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg) if xdg else Path.home() / ".cache") / "accelstack"


def key(files: Iterable[tuple[str, bytes]], code: Iterable[Path] | None = None) -> str:
    """The entry name of a catalog read from `files` ((path, bytes) pairs, in reading order)
    by `code` (default: `sources()`)."""
    import pydantic
    import yaml

    digest = hashlib.sha256(FORMAT)
    versions = (sys.version, pydantic.VERSION, yaml.__version__)
    for part in versions:
        _feed(digest, "version", part.encode())
    for source in sources() if code is None else code:
        _feed(digest, source.name, source.read_bytes())
    for path, data in files:
        _feed(digest, path, data)
    return digest.hexdigest()


def _feed(digest: hashlib._Hash, name: str, data: bytes) -> None:
    """Length-prefixed, so no two different inputs feed the same bytes."""
    for part in (name.encode(), data):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)


def _private(path: Path, follow: bool = False) -> bool:
    """Owned by this user and writable by nobody else (a pickle runs code when read); an entry
    must not be a symbolic link, the directory may be one to a private directory."""
    info = path.stat() if follow else path.lstat()
    getuid = getattr(os, "getuid", None)
    owner = getuid is None or info.st_uid == getuid()
    return owner and not stat.S_ISLNK(info.st_mode) and not info.st_mode & 0o022


def read(name: str, kind: str = "catalog") -> object | None:
    """The entry `name` of a kind (None: off, missing, not private, or unreadable)."""
    where = cache_dir()
    if where is None:
        return None
    path = where / f"{kind}-{name}{_SUFFIX}"
    try:
        if not (_private(where, follow=True) and _private(path)):
            return None
        value: object = pickle.loads(path.read_bytes())  # a private file (_private)
        return value
    except Exception:  # a cache never fails a command: anything wrong is a miss
        return None


def write(name: str, value: object, kind: str = "catalog", keep: int = KEEP) -> None:
    """Store an entry atomically; a directory that cannot be written is no cache, not an error.
    The newest `keep` entries of the kind are kept."""
    where = cache_dir()
    if where is None:
        return
    try:
        where.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _private(where, follow=True):
            return
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        fd, tmp = tempfile.mkstemp(dir=where, prefix=".tmp-", suffix=_SUFFIX)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, where / f"{kind}-{name}{_SUFFIX}")
        finally:
            Path(tmp).unlink(missing_ok=True)
        _prune(where, kind, keep)
    except (OSError, pickle.PicklingError, RecursionError):
        return


def _prune(where: Path, kind: str, keep: int) -> None:
    entries = sorted(
        where.glob(f"{kind}-*{_SUFFIX}"), key=lambda p: p.stat().st_mtime, reverse=True
    )
    for old in entries[keep:]:
        old.unlink(missing_ok=True)
