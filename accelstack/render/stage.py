"""`render -o DIR` as one step: checked, locked, staged, then swapped in.

1. Every artifact is scanned for credential-looking text (detect-secrets, the same detectors
   as the spec rule `no-credentials`): a hit refuses the render, naming the file, before
   anything is written.
2. A lock (`.DIR.render-lock` beside DIR, an exclusive `flock`, removed when the render ends)
   refuses a second render into the same directory while one runs: one line, exit 2.
3. Every rendered file is written into a stage beside DIR first (only the rendered files:
   the user's other files in DIR are never copied). A new DIR is the stage, renamed in. An
   existing DIR is checked by `write_artifacts`' rules (foreign files, symlinks) before the
   stage is written, so a refusal, a full disk or text that cannot be encoded leaves DIR as
   it was; then each staged file is renamed into DIR under the manifest journal (old and new
   names listed first): a render killed there leaves only files `render` owns, each whole,
   and the next render finishes the job.
4. Real file systems: a mount point (which cannot be renamed) is written in place, each file
   atomically with the same journal (a folder of DIR on another file system too); a
   read-only or full file system or a missing permission is one line, exit 2; a render of
   an earlier version killed inside its whole-directory swap (DIR moved aside to
   `.DIR.stage-*.old`) is repaired by the next render, which puts the old tree back first.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from accelstack.files import WriteError, make_dirs, os_failure, write_text_atomic
from accelstack.render.artifacts import Artifact
from accelstack.render.output import Written, check_artifacts, commit_artifacts, write_artifacts
from accelstack.spec.secrets import secret_kinds


def refuse_credentials(directory: Path, artifacts: Sequence[Artifact]) -> None:
    """One line naming the first rendered file that would carry a credential-looking value."""
    for art in artifacts:
        kinds = secret_kinds(art.content)
        if kinds:
            raise WriteError(
                directory / art.path,
                f"would carry a value that looks like a credential ({', '.join(kinds)}); "
                "keep credentials in AWS Secrets Manager or a Kubernetes Secret",
            )


@contextlib.contextmanager
def render_lock(directory: Path) -> Iterator[None]:
    """Hold the render lock of `directory`; refuse (exit 2) while another render holds it."""
    make_dirs(directory.parent)
    lock = directory.parent / f".{directory.name}.render-lock"
    busy = WriteError(directory, "another accelstack render is writing this directory; wait")
    fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise busy from None
        if not _same_file(lock, fd):  # the holder removed it as we opened it: it just ran
            raise busy
        try:
            yield
        finally:
            lock.unlink(missing_ok=True)  # removed while held: nothing is left beside DIR
    finally:
        os.close(fd)


def _same_file(path: Path, fd: int) -> bool:
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _restage_error(exc: WriteError, stage: Path, directory: Path) -> WriteError:
    text = str(exc).replace(str(stage), str(directory))
    path, _, reason = text.partition(": cannot write: ")
    return WriteError(path, reason, exc.exit_code)


#: rename(2) errors that say DIR cannot be moved (a mount point, another file system).
_UNMOVABLE = frozenset({errno.EBUSY, errno.EXDEV})


def _recover(directory: Path) -> None:
    """Before anything else: a render killed inside the whole-directory swap of earlier
    versions left DIR missing and its old tree at `.DIR.stage-*.old`: put that tree back.
    A killed render's stage (only rendered files) is removed."""
    if not os.path.lexists(directory):
        olds = sorted(directory.parent.glob(f".{directory.name}.stage-*.old"), key=os.path.getmtime)
        if olds:
            os.rename(olds[-1], directory)
    for left in directory.parent.glob(f".{directory.name}.stage-*"):
        if not left.name.endswith(".old") and left.is_dir() and not left.is_symlink():
            shutil.rmtree(left, ignore_errors=True)


def write_directory(directory: Path, artifacts: Sequence[Artifact], force: bool) -> Written:
    """Write the artifacts into `directory` in one step (see the module docstring)."""
    refuse_credentials(directory, artifacts)
    try:
        return _write_directory(directory, artifacts, force)
    except OSError as exc:  # read-only, full, no permission: one line, never "internal error"
        raise os_failure(Path(exc.filename or directory), exc) from None


def _write_directory(directory: Path, artifacts: Sequence[Artifact], force: bool) -> Written:
    if directory.is_symlink() or (directory.exists() and not directory.is_dir()):
        raise WriteError(directory, "is a symbolic link or not a directory; refusing to write")
    with render_lock(directory):
        _recover(directory)
        if os.path.ismount(directory):  # cannot be swapped: each file atomically, in place
            return write_artifacts(directory, artifacts, force)
        stage = Path(tempfile.mkdtemp(prefix=f".{directory.name}.stage-", dir=directory.parent))
        try:
            if directory.exists():
                return _stage_files(stage, directory, artifacts, force)
            os.chmod(stage, 0o777 & ~_umask())  # mkdtemp makes it 0700
            done = write_artifacts(stage, artifacts, force)
            try:
                os.rename(stage, directory)
            except OSError as exc:
                if exc.errno not in _UNMOVABLE:
                    raise
                done = write_artifacts(directory, artifacts, force)
        except WriteError as exc:
            raise _restage_error(exc, stage, directory) from None
        finally:
            shutil.rmtree(stage, ignore_errors=True)
    return done


def _stage_files(
    stage: Path, directory: Path, artifacts: Sequence[Artifact], force: bool
) -> Written:
    """An existing DIR: only the rendered files are written into the stage (the user's other
    files are never copied), then each is renamed into DIR under the manifest journal."""
    previous = check_artifacts(directory, artifacts, force)  # DIR's rules, before any write
    for art in artifacts:  # every byte written (a full disk fails here): DIR still untouched
        target = stage / art.path
        make_dirs(target.parent)
        write_text_atomic(target, art.content, mode=0o755 if art.executable else 0o644)

    def move_in(target: Path, art: Artifact) -> None:
        try:
            os.rename(stage / art.path, target)
        except OSError as exc:
            if exc.errno not in _UNMOVABLE:  # a folder of DIR on another file system
                raise
            write_text_atomic(target, art.content, mode=0o755 if art.executable else 0o644)

    return commit_artifacts(directory, artifacts, previous, move_in)
