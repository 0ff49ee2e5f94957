"""Render on real file systems: a read-only or full file system is one line,
exit 2; a mount point (which cannot be renamed) is a render target; a render killed inside the
swap is repaired by the next one."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

import pytest

from accelstack.cli import main
from accelstack.render import stage

from .conftest import STACKS

SPEC = str(STACKS / "trn1-finetune.yaml")


def _render(capsys: pytest.CaptureFixture[str], out: Path) -> tuple[int, str]:
    code = main(["render", SPEC, "-o", str(out)])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("code", "text"),
    [(errno.EROFS, "Read-only file system"), (errno.EACCES, "Permission denied")],
)
def test_a_read_only_or_forbidden_parent_is_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    code: int,
    text: str,
) -> None:
    def refuse(*args: object, **kwargs: object) -> str:
        raise OSError(code, text, str(tmp_path))

    monkeypatch.setattr(tempfile, "mkdtemp", refuse)
    rc, err = _render(capsys, tmp_path / "out")
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert text in err and "internal error" not in err


def test_a_full_disk_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.write

    def full(fd: int, data: bytes) -> int:
        if fd <= 2:
            return real(fd, data)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    rc, err = _render(capsys, tmp_path / "out")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "No space left" in err
    assert not (tmp_path / "out").exists()


def test_a_mount_point_is_written_in_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "mnt"
    out.mkdir()
    real = os.rename

    def rename(src: object, dst: object) -> None:
        if Path(str(src)) == out:  # the kernel refuses to move a mount point
            raise OSError(errno.EBUSY, "Device or resource busy", str(src))
        real(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(stage.os, "rename", rename)
    rc, err = _render(capsys, out)
    assert rc == 0, err
    assert (out / ".accelstack-render.json").is_file() and any(out.glob("*.sh"))
    assert not list(tmp_path.glob(".mnt.stage-*"))  # no stage left beside it
    rc, err = _render(capsys, out)  # and again, over its own render
    assert rc == 0, err


def test_a_render_killed_inside_the_swap_is_repaired(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert _render(capsys, out)[0] == 0
    (out / "notes.txt").write_text("mine\n")
    os.rename(out, tmp_path / ".out.stage-abc123.old")  # killed after the first rename
    rc, err = _render(capsys, out)
    assert rc == 0, err
    assert (out / "notes.txt").read_text() == "mine\n"  # the user's file came back
    assert not list(tmp_path.glob(".out.stage-*"))
