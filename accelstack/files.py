"""Atomic file writes: every command that writes a file goes through `write_text_atomic`.

A write goes to a temporary file in the target's own directory (same file system), is flushed
to disk (fsync), gets its mode, and replaces the target in one `os.replace`. So a reader (or a
killed process) sees the old file or the new one, never a partial one; on any error the
temporary file is removed and one `WriteError` line names the path and the OS reason.

Symlinks are never written through: a target that is a symlink (dangling or not) is refused,
the temporary file is created with O_EXCL (which never follows a link) and `os.replace` swaps
directory entries, so a link planted between the check and the rename is replaced, not followed.
A target that is a directory is refused too.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path

from accelstack.errors import EXIT_BAD_INPUT, EXIT_VERDICT, AccelstackError

#: OS errors that say the path the user named cannot be written (bad input, exit 2: a
#: read-only or full file system, no permission, a quota); any other error (an I/O error) is
#: the machine's state, exit 1.
_PATH_ERRNOS = frozenset(
    {
        errno.EACCES,
        errno.EPERM,
        errno.EROFS,
        errno.EISDIR,
        errno.ENOTDIR,
        errno.ENOENT,
        errno.ELOOP,
        errno.ENAMETOOLONG,
        errno.EEXIST,
        errno.ENOSPC,
        errno.EDQUOT,
        errno.EBUSY,
    }
)


class WriteError(AccelstackError):
    """A file could not be written; nothing partial was left behind."""

    def __init__(self, path: Path | str, reason: str, exit_code: int = EXIT_BAD_INPUT) -> None:
        self.path = Path(path)
        self.exit_code = exit_code
        super().__init__(f"{path}: cannot write: {reason}")


def _os_error(path: Path, exc: OSError) -> WriteError:
    code = EXIT_BAD_INPUT if exc.errno in _PATH_ERRNOS else EXIT_VERDICT
    reason = exc.strerror or type(exc).__name__
    return WriteError(path, reason, code)


def os_failure(path: Path, exc: OSError) -> WriteError:
    """The one-line WriteError for an OS error on `path` (exit 2 for the path's own state)."""
    return _os_error(path, exc)


def check_target(path: Path) -> None:
    """Refuse a target that is a symlink or a directory (checked without following links)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise _os_error(path, exc) from None
    if stat.S_ISLNK(st.st_mode):
        raise WriteError(path, "is a symbolic link; refusing to write through it")
    if stat.S_ISDIR(st.st_mode):
        raise WriteError(path, "is a directory")
    if not stat.S_ISREG(st.st_mode):
        raise WriteError(path, "is not a regular file")


def _default_mode(path: Path) -> int:
    """The mode a plain open() would give: the existing file's, else 0o666 minus the umask."""
    try:
        return stat.S_IMODE(os.lstat(path).st_mode)
    except OSError:
        mask = os.umask(0o022)
        os.umask(mask)
        return 0o666 & ~mask


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _fsync_dir(directory: Path) -> None:
    """Make the rename durable; best effort (some file systems refuse fsync on a directory)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_bytes_atomic(path: Path | str, data: bytes, mode: int | None = None) -> None:
    """Write `data` to `path` atomically (see the module docstring); raises WriteError."""
    target = Path(path)
    check_target(target)
    final_mode = _default_mode(target) if mode is None else mode
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise _os_error(target, exc) from None
    try:
        try:
            _write_all(fd, data)
            os.fchmod(fd, final_mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise _os_error(target, exc) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(target.parent)


def write_text_atomic(path: Path | str, text: str, mode: int | None = None) -> None:
    """Write `text` as UTF-8 to `path` atomically; raises WriteError (one line, nothing left).

    The text is encoded before anything is created, so text that cannot be encoded (a lone
    surrogate) leaves no file at all."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = text[exc.start : exc.end]
        raise WriteError(
            path, f"the text holds {bad!r}, which is not valid in UTF-8", EXIT_VERDICT
        ) from None
    write_bytes_atomic(path, data, mode)


def make_dirs(directory: Path | str) -> None:
    """`mkdir -p` with the same one-line error as a write."""
    target = Path(directory)
    try:
        target.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise WriteError(target, "exists and is not a directory") from None
    except OSError as exc:
        raise _os_error(target, exc) from None


def file_in_force(
    flag: Path | None, option: str, env: str, default: Path, what: str
) -> Path | None:
    """A project file a command option or a variable may name: `flag` (given as `option`),
    else the file $`env` names, else `default` when it exists (None: none is set). A named
    file that does not exist is refused in one line, never skipped."""
    named = flag or (Path(os.environ[env]) if os.environ.get(env) else None)
    if named is not None:
        if not named.is_file():
            raise AccelstackError(f"{named}: the {what} file does not exist ({option} or {env})")
        return named
    return default if default.is_file() else None
