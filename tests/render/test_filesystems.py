"""Render on real file systems: a read-only or full file system is one line,
exit 2; a mount point (which cannot be renamed) is a render target; a render killed inside the
swap is repaired by the next one."""

from __future__ import annotations

import errno
import json
import os
import tempfile
from pathlib import Path

import pytest

from accelstack.cli import main
from accelstack.render import stage

from ..conftest import STACKS

SPEC = str(STACKS / "trn1-finetune.yaml")


def _render(capsys: pytest.CaptureFixture[str], out: Path) -> tuple[int, str]:
    code = main(["render", SPEC, "-o", str(out)])
    return code, capsys.readouterr().err


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
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


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
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


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_a_re_render_copies_none_of_the_users_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stage holds only the rendered files: the user's files stay where they are (same
    inode, never copied, however large) and DIR itself is the same directory."""
    out = tmp_path / "out"
    assert _render(capsys, out)[0] == 0
    (out / "data").mkdir()
    (out / "data" / "big.bin").write_bytes(b"\0" * 1_000_000)
    (out / "notes.txt").write_text("mine\n")
    before = {p: os.stat(out / p).st_ino for p in (".", "notes.txt", "data/big.bin")}
    staged: list[set[str]] = []
    real = os.rename

    def rename(src: object, dst: object) -> None:
        for left in tmp_path.glob(".out.stage-*"):
            staged.append({str(p.relative_to(left)) for p in left.rglob("*") if p.is_file()})
        real(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(stage.os, "rename", rename)
    rc, err = _render(capsys, out)
    assert rc == 0, err
    assert staged and all("notes.txt" not in s and "data/big.bin" not in s for s in staged)
    assert {p: os.stat(out / p).st_ino for p in before} == before
    assert (out / "notes.txt").read_text() == "mine\n"
    assert not list(tmp_path.glob(".out.stage-*"))


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_a_render_killed_while_moving_files_in_is_finished_by_the_next(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed between two renames into DIR: every file there is whole and owned by render
    (the manifest journal lists old and new names), and the next render completes it."""
    out = tmp_path / "out"
    assert _render(capsys, out)[0] == 0
    (out / "notes.txt").write_text("mine\n")
    rendered = sorted(p.name for p in out.iterdir())
    (out / "README.md").write_text((out / "README.md").read_text() + "\n")  # an old render
    real = os.rename
    calls: list[object] = []

    def killed(src: object, dst: object) -> None:
        calls.append(dst)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(stage.os, "rename", killed)
    assert main(["render", SPEC, "-o", str(out)]) == 130
    monkeypatch.undo()
    capsys.readouterr()
    journal = json.loads((out / ".accelstack-render.json").read_text())["files"]
    assert {p.name for p in out.iterdir()} - {"notes.txt", ".accelstack-render.json"} <= set(
        journal
    )
    left = tmp_path / ".out.stage-k1ll3d"  # what SIGKILL (no finally) leaves beside DIR
    left.mkdir()
    (left / "README.md").write_text("half\n")
    rc, err = _render(capsys, out)
    assert rc == 0, err
    assert sorted(p.name for p in out.iterdir()) == rendered
    assert (out / "notes.txt").read_text() == "mine\n"
    assert not list(tmp_path.glob(".out.stage-*"))
