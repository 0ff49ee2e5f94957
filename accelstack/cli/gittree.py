"""Reading a git ref without touching the working tree: its file list and blob contents; and the
files of a side as `accelstack.programinputs.Tree` (a ref, a checkout, a folder)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from accelstack.programinputs import Tree, blob_id


def git(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=False, cwd=cwd)


def tree(ref: str, pathspec: str, cwd: Path | None) -> list[tuple[str, str, str]]:
    """(mode, blob, repository path) of every file matching `pathspec` at `ref` (recursive);
    `pathspec` is relative to the repository's top (`--full-tree`), wherever `cwd` is in it."""
    listed = subprocess.run(
        ["git", "ls-tree", "-r", "-z", "--full-tree", ref, "--", pathspec],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
    )
    out = []
    for entry in listed.stdout.split("\0"):
        meta, _, name = entry.partition("\t")
        parts = meta.split()
        if len(parts) == 3 and parts[1] == "blob":
            out.append((parts[0], parts[2], name))
    return out


def blobs(shas: list[str], cwd: Path | None) -> list[bytes]:
    """The contents of `shas`, in order, from one `git cat-file --batch`."""
    if not shas:
        return []
    done = subprocess.run(
        ["git", "cat-file", "--batch"],
        input=("\n".join(shas) + "\n").encode(),
        capture_output=True,
        check=True,
        cwd=cwd,
    )
    data, out, at = done.stdout, [], 0
    for _ in shas:
        header_end = data.index(b"\n", at)
        size = int(data[at:header_end].split()[2])
        out.append(data[header_end + 1 : header_end + 1 + size])
        at = header_end + 1 + size + 1
    return out


def ref_tree(ref: str, cwd: Path) -> Tree:
    """Every file of the repository at `ref` (the repository holding `cwd`), with the project
    folder `cwd` is in; contents read from git on demand."""
    listed = subprocess.run(
        ["git", "ls-tree", "-r", "-z", "--full-tree", ref],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
    )
    files: dict[str, str] = {}
    shas: dict[str, str] = {}
    for entry in listed.stdout.split("\0"):
        meta, _, name = entry.partition("\t")
        parts = meta.split()
        if len(parts) == 3 and parts[1] == "blob":
            files[name], shas[name] = parts[0], parts[2]
    prefix = git("rev-parse", "--show-prefix", cwd=cwd).stdout.strip().rstrip("/")

    def read(path: str) -> bytes | None:
        return blobs([shas[path]], cwd)[0] if path in shas else None

    return Tree(files, prefix, shas.__getitem__, read)


def _disk_tree(top: Path, files: dict[str, str], prefix: str) -> Tree:
    """A tree whose contents are the files under `top` as they are on disk."""
    from functools import cache

    def read(path: str) -> bytes | None:
        target = top / path
        if target.is_symlink():
            return os.readlink(target).encode()
        return target.read_bytes() if target.is_file() else None

    @cache
    def blob(path: str) -> str:
        return blob_id(read(path) or b"")

    return Tree(files, prefix, blob, read)


def checkout_tree(root: Path) -> Tree:
    """The files of the checkout holding the project at `root`: its tracked files (what a
    commit holds) with their contents on disk; outside git, every file under `root`
    (`folder_tree`)."""
    top_line = git("rev-parse", "--show-toplevel", cwd=root)
    if top_line.returncode != 0:
        return folder_tree(root)
    top = Path(top_line.stdout.strip())
    listed = subprocess.run(
        ["git", "ls-files", "-s", "-z"], capture_output=True, text=True, check=False, cwd=top
    )
    files: dict[str, str] = {}
    for entry in listed.stdout.split("\0"):
        meta, _, name = entry.partition("\t")
        parts = meta.split()
        if len(parts) == 3 and os.path.lexists(top / name):
            files[name] = "120000" if (top / name).is_symlink() else parts[0]
    prefix = root.resolve().relative_to(top.resolve()).as_posix()
    return _disk_tree(top, files, "" if prefix == "." else prefix)


def folder_tree(root: Path) -> Tree:
    """Every file under `root` (a folder outside git: `diff --dirs`), but `.git`, byte-code
    caches and virtualenvs (a folder holding `pyvenv.cfg`)."""
    files: dict[str, str] = {}
    for folder, dirs, names in os.walk(root):
        here = Path(folder)
        dirs[:] = [
            d
            for d in dirs
            if d not in (".git", "__pycache__") and not (here / d / "pyvenv.cfg").exists()
        ]
        for name in names:
            path = here / name
            mode = (
                "120000"
                if path.is_symlink()
                else "100755"
                if os.access(path, os.X_OK)
                else "100644"
            )
            files[path.relative_to(root).as_posix()] = mode
    return _disk_tree(root, files, "")
