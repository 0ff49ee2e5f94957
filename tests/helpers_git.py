"""A temporary git repository of specs with two commits: what `diff` and the CI script compare."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from .conftest import STACKS

GIT_ENV = {
    "GIT_AUTHOR_NAME": "test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str) -> str:
    import os

    env = {**os.environ, **GIT_ENV}
    done = subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{path.name}: {old!r} not found"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def two_commits(repo: Path) -> Path:
    """main: trn1-finetune, trn1-multinode, trn1-standalone, trn3-preview. The second commit
    (branch `pr`): finetune gets 2 nodes and an existing cache bucket (the managed bucket is
    removed), multinode moves to trn1n.32xlarge (node group replaced), standalone is deleted,
    llama3-70b-trn2 is added, trn3-preview is untouched."""
    stacks = repo / "stacks"
    stacks.mkdir(parents=True)
    for name in ("trn1-finetune", "trn1-multinode", "trn1-standalone", "trn3-preview"):
        shutil.copy(STACKS / f"{name}.yaml", stacks / f"{name}.yaml")
    (stacks / "Pulumi.dev.yaml").write_text("config: {}\n", encoding="utf-8")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    git(repo, "checkout", "-qb", "pr")
    finetune = stacks / "trn1-finetune.yaml"
    _edit(finetune, "    nodes: 1\n", "    nodes: 2\n")
    _edit(finetune, "max_hourly_usd: 5\n", "max_hourly_usd: 50\n")
    with finetune.open("a", encoding="utf-8") as f:
        f.write("compile_cache:\n  bucket: shared-neuron-cache\n")
    _edit(stacks / "trn1-multinode.yaml", "type: trn1.32xlarge", "type: trn1n.32xlarge")
    (stacks / "trn1-standalone.yaml").unlink()
    shutil.copy(STACKS / "llama3-70b-trn2.yaml", stacks / "llama3-70b-trn2.yaml")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "head")
    return repo


def commit_all(repo: Path, message: str) -> None:
    """Stage everything in `repo` and commit it."""
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
