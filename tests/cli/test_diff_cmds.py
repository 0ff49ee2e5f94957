"""The diff comment leads with errors: a stack that does not parse or plan is the headline
(`cannot plan: file:line: reason`) and never counts as a saving; a diff whose stacks cannot be
listed still prints its comment (CI posts or updates it); a deleted file is named deleted."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from accelstack.plan.diff import COMMENT_MARKER, QUIET_MARKER

from ..conftest import STACKS
from ..helpers_cli import run_cli
from ..helpers_git import commit_all, git

SPEC = "stacks/trn1-finetune.yaml"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """main: project `proj`, stack `prod` (Pulumi.prod.yaml) deploys stacks/trn1-finetune.yaml
    (which is also its own stack). The test continues on branch `pr`."""
    (tmp_path / "stacks").mkdir()
    shutil.copy(STACKS / "trn1-finetune.yaml", tmp_path / SPEC)
    (tmp_path / "Pulumi.yaml").write_text("name: proj\nruntime: python\n", encoding="utf-8")
    prod = {"config": {"aws:region": "us-east-1", "accelstack:spec": SPEC}}
    (tmp_path / "Pulumi.prod.yaml").write_text(yaml.safe_dump(prod), encoding="utf-8")
    git(tmp_path, "init", "-q", "-b", "main")
    commit_all(tmp_path, "base")
    git(tmp_path, "checkout", "-qb", "pr")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ACCELSTACK_CEILING", raising=False)
    monkeypatch.delenv("ACCELSTACK_CATALOG_DIR", raising=False)
    return tmp_path


def _comment(capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str], str]:
    code, out, err = run_cli(
        capsys, "diff", "main", "pr", "--format", "github-comment", "--threshold-usd", "100"
    )
    return code, out.splitlines(), err


def _edit(repo: Path, old: str, new: str) -> None:
    spec = repo / SPEC
    spec.write_text(spec.read_text().replace(old, new, 1), encoding="utf-8")


def test_a_spec_that_stops_parsing_is_the_headline_never_a_saving(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a -100% saving, the error in a collapsed section, and (at the threshold) a
    comment that could go quiet."""
    _edit(repo, "  - name: trn1\n", "\t- name: trn1\n")
    commit_all(repo, "a tab")
    line = next(n for n, t in enumerate((repo / SPEC).read_text().splitlines(), 1) if "\t" in t)
    code, lines, _ = _comment(capsys)
    assert code == 2 and lines[0] == COMMENT_MARKER and QUIET_MARKER not in lines
    assert lines[3:5] == ["> [!CAUTION]", "> **Cannot plan** (not priced, counted in no total):"]
    assert lines[5].startswith(f"> - prod: cannot plan: {SPEC}:{line}: YAML syntax error")
    code, out, _ = run_cli(capsys, "diff", "main", "pr", "--format", "json")
    doc = json.loads(out)
    assert doc["totals"]["delta_monthly_usd"] == 0 and doc["totals"]["head_monthly_usd"] == 0
    assert all(s["cost"]["delta"]["monthly_usd"] == 0 for s in doc["stacks"])
    assert "-100" not in "\n".join(lines)
    assert "_(none)_" not in lines  # an unreadable spec's values are unknown, not removed


def test_a_validation_error_names_the_line_of_its_yaml_path(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _edit(repo, "    nodes: 1\n", "    nodes: 0\n")
    commit_all(repo, "no nodes")
    line = (repo / SPEC).read_text().splitlines().index("    nodes: 0") + 1
    code, lines, _ = _comment(capsys)
    assert code == 2
    assert f"> - prod: cannot plan: {SPEC}:{line}: pools[0].nodes: 0 is out of range" in lines[5]
    assert "| `prod` | `spec.pools[0].nodes` | `1` | `0` |" in lines  # the edit that broke it


def test_a_spec_without_a_budget_cannot_be_planned(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = yaml.safe_load((repo / SPEC).read_text())
    del spec["budget"]
    (repo / SPEC).write_text(yaml.safe_dump(spec), encoding="utf-8")
    commit_all(repo, "no budget")
    code, lines, _ = _comment(capsys)
    assert code == 2  # bad input, never a verdict
    assert "cannot plan: trn1-finetune-prod has no budget" in lines[5]


def test_a_diff_whose_stacks_cannot_be_listed_still_prints_its_comment(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: no comment at all, and the old one stayed up."""
    (repo / "Pulumi.json").write_text('{"name": "proj", "runtime": "python"}', encoding="utf-8")
    commit_all(repo, "a second project file")
    code, lines, err = _comment(capsys)
    assert code == 2 and lines[0] == COMMENT_MARKER
    assert lines[4] == "> **Cannot plan** (not priced, counted in no total):"
    assert lines[5].startswith("> - cannot list the stacks: ") and "second project file" in lines[5]
    assert "No stack could be listed." in lines
    assert len(err.strip().splitlines()) == 1 and "second project file" in err
    code, out, _ = run_cli(capsys, "diff", "main", "pr", "--format", "json")
    doc = json.loads(out)
    assert code == 2 and not doc["ok"] and "second project file" in doc["errors"][0]


def test_a_deleted_stack_file_is_named_deleted(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / "Pulumi.prod.yaml").unlink()
    commit_all(repo, "drop the prod stack file")
    code, lines, _ = _comment(capsys)
    assert code == 0
    (orphan,) = [x for x in lines if x.startswith("> - prod: ")]
    assert orphan.startswith("> - prod: Pulumi.prod.yaml is deleted, but the stack is NOT")


def test_a_deleted_spec_a_stack_file_still_deploys_is_named_deleted(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / SPEC).unlink()
    commit_all(repo, "drop the spec, keep Pulumi.prod.yaml")
    code, lines, _ = _comment(capsys)
    assert code == 2
    assert lines[5] == (
        f"> - prod: cannot plan: {SPEC} is deleted by this change, but Pulumi.prod.yaml deploys it"
    )
    (orphan,) = [x for x in lines if x.startswith("> - trn1-finetune: ")]
    assert f"{SPEC} is deleted, but the stack is NOT destroyed" in orphan
