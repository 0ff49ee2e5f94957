"""Reading a git ref without touching the working tree: its file list and blob contents."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=False, cwd=cwd)


def tree(ref: str, pathspec: str, cwd: Path | None) -> list[tuple[str, str, str]]:
    """(mode, blob, repository path) of every file matching `pathspec` at `ref` (recursive)."""
    listed = subprocess.run(
        ["git", "ls-tree", "-r", "-z", "--full-name", ref, "--", pathspec],
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
