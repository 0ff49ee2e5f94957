"""examples/ci: the GitHub Actions workflow and GitLab CI file parse, run the gate from trusted
code (the base branch's accelstack and script, the change read as data, no cloud credential
without an approval) and call the shared script; the script passes shellcheck and its steps
work against two commits of a temporary repository (no network: tests/repo/test_ci_workflow_run.py
runs the workflow's jobs with a fake gh and pulumi)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from accelstack.plan.diff import COMMENT_MARKER, QUIET_MARKER

from ..conftest import ROOT
from ..helpers_git import git, two_commits
from ..helpers_render import SHELLCHECK, SHELLCHECK_ARGS

CI = ROOT / "examples" / "ci"
SCRIPT = CI / "accelstack-ci.sh"
SUBCOMMANDS = {
    "changed-stacks",
    "stack-names",
    "stack-matrix",
    "check",
    "diff",
    "github-comment",
    "gitlab-comment",
    "preview",
    "deploy-names",
    "deploy-matrix",
    "check-stack",
    "deploy",
}


def _steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    return [step for job in workflow["jobs"].values() for step in job["steps"]]


def _script_calls(text: str) -> set[str]:
    """The subcommands a CI file runs through the script."""
    return set(re.findall(r'accelstack-ci\.sh"? +([a-z-]+)', text))


def test_script_passes_shellcheck_and_bash_n() -> None:
    assert os.access(SCRIPT, os.X_OK)
    syntax = subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True)
    assert syntax.returncode == 0, syntax.stderr
    sc = subprocess.run(
        [str(SHELLCHECK), *SHELLCHECK_ARGS, str(SCRIPT)], capture_output=True, text=True
    )
    assert sc.returncode == 0, f"shellcheck findings:\n{sc.stdout}{sc.stderr}"


def _workflow() -> tuple[str, dict[str, Any]]:
    text = (CI / "github-actions.yml").read_text(encoding="utf-8")
    return text, yaml.safe_load(text)


def test_github_workflow_parses_and_runs_the_stages() -> None:
    text, wf = _workflow()
    triggers = wf.get("on", wf.get(True))  # YAML 1.1 reads a bare `on` key as true
    assert set(triggers) == {"pull_request_target", "push"}
    assert triggers["push"]["branches"] == ["main"]
    steps = _steps(wf)
    assert any(str(s.get("uses", "")).startswith("actions/setup-python@") for s in steps)
    named = {s["name"]: str(s.get("run", "")) for s in wf["jobs"]["review"]["steps"]}
    order = list(named)
    assert order.index("Post or update the PR comment") < order.index("Check changed stacks")
    assert "accelstack-ci.sh check " in named["Check changed stacks"]
    assert "--format" not in named["Diff against the base branch"]  # the script picks it
    assert "accelstack-ci.sh diff " in named["Diff against the base branch"]
    assert "accelstack-ci.sh github-comment " in named["Post or update the PR comment"]
    runs = "\n".join(str(s.get("run", "")) for s in steps)
    for call in ("preview ", "deploy-matrix ", "check-stack ", "deploy "):
        assert f"accelstack-ci.sh {call}" in runs
    assert wf["jobs"]["deploy"]["needs"] == "changed-on-main"
    assert _script_calls(text) <= SUBCOMMANDS
    assert "${{ matrix.stack }}" not in runs  # no expression interpolated into a shell


def test_the_gate_runs_trusted_code_and_reads_the_pull_request_as_data() -> None:
    _, wf = _workflow()
    review = wf["jobs"]["review"]
    assert "id-token" not in review["permissions"]  # no cloud credential in the gate
    checkouts = [s for s in review["steps"] if "actions/checkout@" in str(s.get("uses"))]
    base, pr = checkouts
    assert base["with"]["ref"] == "${{ github.event.pull_request.base.sha }}"
    assert "path" not in base["with"]  # the root: requirements.txt and ci/ of the base branch
    assert pr["with"]["ref"] == "${{ github.event.pull_request.head.sha }}"
    assert pr["with"]["path"] == "pr"
    assert all(s["with"]["persist-credentials"] is False for s in checkouts)
    install = next(s for s in review["steps"] if "pip install" in str(s.get("run")))
    assert "working-directory" not in install  # the base branch's requirements.txt
    for step in review["steps"]:
        if step.get("working-directory") == "pr":  # in the PR's files: only the base's script
            run = str(step["run"])
            assert "../ci/accelstack-ci.sh " in run, step
            assert not re.search(r"(?<![\w./-])(pip|python3?|make|bash|sh|source)\s", run), step
            assert not re.search(r"(?<![.\w])\./|(?<!\.\./)ci/accelstack", run), step


def test_only_approved_environments_get_cloud_credentials() -> None:
    _, wf = _workflow()
    with_token = {n for n, j in wf["jobs"].items() if j.get("permissions", {}).get("id-token")}
    assert with_token == {"preview", "deploy"}
    assert wf["jobs"]["preview"]["environment"] == "preview"
    assert wf["jobs"]["deploy"]["environment"] == "production"
    assert wf["permissions"] == {"contents": "read"}
    preview = wf["jobs"]["preview"]["steps"]
    role = next(s for s in preview if "configure-aws-credentials" in str(s.get("uses")))
    assert role["with"]["role-to-assume"] == "${{ vars.AWS_PREVIEW_ROLE_ARN }}"
    run = next(s for s in preview if "accelstack-ci.sh preview" in str(s.get("run")))
    assert run["env"]["ACCELSTACK_POLICY_PACK"] == "../policies"  # the base branch's pack


def test_gitlab_ci_parses_and_runs_the_same_stages() -> None:
    text = (CI / "gitlab-ci.yml").read_text(encoding="utf-8")
    ci = yaml.safe_load(text)
    assert ci["stages"] == ["check", "preview", "deploy"]
    assert ci["check"]["stage"] == ci["diff"]["stage"] == "check"  # diff runs even if check fails
    assert ci["variables"]["GIT_DEPTH"] == "0"
    scripts = {job: "\n".join(ci[job]["script"]) for job in ("check", "diff", "preview", "deploy")}
    assert '"$TRUSTED/ci/accelstack-ci.sh" check ' in scripts["check"]
    assert '"$TRUSTED/ci/accelstack-ci.sh" diff ' in scripts["diff"]
    assert 'accelstack-ci.sh" gitlab-comment ' in scripts["diff"]
    trusted = "\n".join(ci[".merge_request"]["before_script"])
    assert 'git worktree add -q --detach "$TRUSTED"' in trusted and '"$TRUSTED/venv/bin' in trusted
    assert 'accelstack-ci.sh" preview ' in scripts["preview"]
    assert ci["preview"]["rules"][0]["when"] == "manual"
    assert ci["preview"]["environment"]["name"] == "preview"
    assert "accelstack-ci.sh deploy-names " in scripts["deploy"]
    assert "accelstack-ci.sh deploy " in scripts["deploy"] and "$CI_DEFAULT_BRANCH" in str(
        ci["deploy"]["rules"]
    )
    assert _script_calls(text) <= SUBCOMMANDS


def _sh(
    repo: Path, *args: str, check: bool = True, threshold: str = "", strict: str = "1"
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "ACCELSTACK": f"{sys.executable} -m accelstack.cli",
        "PYTHONPATH": str(ROOT),
        "ACCELSTACK_COMMENT_THRESHOLD_USD": threshold,
        "ACCELSTACK_STRICT": strict,
    }
    done = subprocess.run(
        [str(SCRIPT), *args], cwd=repo, env=env, capture_output=True, text=True, check=False
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = two_commits(tmp_path_factory.mktemp("ci"))
    (repo / "stacks" / "Pulumi.dev.yaml").write_text("config: {a: 1}\n", encoding="utf-8")
    git(repo, "commit", "-qam", "stack config only")
    return repo


@pytest.mark.slow
def test_changed_stacks_and_names(repo: Path) -> None:
    changed = _sh(repo, "changed-stacks", "main", "pr").stdout.split()
    # deleted specs and Pulumi stack files are not stacks to check or deploy
    assert changed == [
        "stacks/llama3-70b-trn2.yaml",
        "stacks/trn1-finetune.yaml",
        "stacks/trn1-multinode.yaml",
    ]
    names = _sh(repo, "stack-names", "main", "pr").stdout.split()
    assert names == ["llama3-70b-trn2", "trn1-finetune", "trn1-multinode"]
    assert _sh(repo, "changed-stacks", "pr~1", "pr").stdout == ""


def test_check_runs_accelstack_check_on_the_changed_stacks(repo: Path) -> None:
    done = _sh(repo, "check", "main", "pr", check=False, strict="0")
    assert done.returncode == 1  # trn1n.32xlarge puts trn1-multinode over its budget
    assert "FAIL stacks/trn1-multinode.yaml" in done.stdout
    assert "ok   stacks/trn1-finetune.yaml" in done.stdout
    assert "of 3 specs passed" in done.stdout
    quiet = _sh(repo, "check", "pr~1", "pr")
    assert quiet.stdout.strip().startswith("no stack changed since ")


def test_the_gate_checks_strictly_by_default(repo: Path) -> None:
    """`pulumi up` refuses the presets' placeholders and a pool without AMI pins: so does the
    gate, unless ACCELSTACK_STRICT=0."""
    done = _sh(repo, "check", "main", "pr", check=False)
    assert done.returncode != 0
    assert "ok   stacks/trn1-finetune.yaml" not in done.stdout
    assert "FAIL stacks/trn1-finetune.yaml" in done.stdout


@pytest.mark.slow
def test_deploy_names_compare_with_the_commit_deployed_last(repo: Path) -> None:
    git(repo, "checkout", "-q", "main")
    try:
        every = _sh(repo, "deploy-names", "0" * 40, "HEAD")
        assert every.stdout.split() == [
            "trn1-finetune",
            "trn1-multinode",
            "trn1-standalone",
            "trn3-preview",
        ]
        assert "first push: every stack" in every.stderr
        gone = _sh(repo, "deploy-names", "e" * 40, "HEAD")  # not in this clone
        assert gone.stdout == every.stdout and "force-push" in gone.stderr
        # a force-push from pr back to main: what pr's commits deployed is undone too (a
        # merge base, main itself, would see no change at all)
        back = _sh(repo, "deploy-names", "pr", "HEAD").stdout.split()
        assert back == ["trn1-finetune", "trn1-multinode", "trn1-standalone"]
        assert _sh(repo, "deploy-names", "HEAD", "HEAD").stdout == ""
    finally:
        git(repo, "checkout", "-q", "pr")


def test_diff_writes_the_pr_comment(repo: Path) -> None:
    done = _sh(repo, "diff", "main", "pr", "comment.md", check=False)
    # trn1n.32xlarge's zone is not trn1.32xlarge's: the new subnets collide with the old ones
    assert done.returncode == 1, done.stderr
    body = (repo / "comment.md").read_text(encoding="utf-8")
    assert body.startswith(COMMENT_MARKER) and body == done.stdout
    assert "**Refused**" in body.split("| stack |")[0]
    assert "trn1-finetune-compile-cache-bucket" in body.split("| stack |")[0]  # stateful first
    assert "`trn1-multinode` | changed" in body


FAKE_GH = """#!/usr/bin/env bash
# records every call; answers the comment listing with $FAKE_GH_IDS
echo "$*" >> "${FAKE_GH_LOG}"
case "$*" in
  *"--paginate"*) printf '%s\\n' ${FAKE_GH_IDS:-} ;;
  *"-F body=@"*) last="${*: -1}" && cp "${last#body=@}" "${FAKE_GH_LOG}.body" ;;
esac
"""


def _fake_gh(tmp: Path, ids: str) -> dict[str, str]:
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    gh = bin_dir / "gh"
    gh.write_text(FAKE_GH, encoding="utf-8")
    gh.chmod(0o755)
    return {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "FAKE_GH_LOG": str(tmp / "gh.log"),
        "FAKE_GH_IDS": ids,
        "GITHUB_REPOSITORY": "org/repo",
        "PR_NUMBER": "7",
    }


def _post(repo: Path, body: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), "github-comment", body],
        cwd=repo,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )


def test_quiet_run_updates_or_deletes_the_stale_comment(repo: Path, tmp_path: Path) -> None:
    done = _sh(repo, "diff", "pr~1", "pr", "quiet.md", threshold="100")
    body = (repo / "quiet.md").read_text(encoding="utf-8")
    assert body.splitlines()[:2] == [COMMENT_MARKER, QUIET_MARKER]
    assert "no new comment" in done.stdout
    # no earlier comment: nothing is posted
    env = _fake_gh(tmp_path, "")
    assert "nothing to post" in _post(repo, "quiet.md", env).stdout
    assert "pr comment" not in Path(env["FAKE_GH_LOG"]).read_text(encoding="utf-8")
    # an earlier comment (id 42) is updated with the "no longer applies" body ...
    env = _fake_gh(tmp_path, "42")
    _post(repo, "quiet.md", env)
    calls = Path(env["FAKE_GH_LOG"]).read_text(encoding="utf-8")
    assert "--method PATCH repos/org/repo/issues/comments/42" in calls
    assert QUIET_MARKER in Path(env["FAKE_GH_LOG"] + ".body").read_text(encoding="utf-8")
    # ... or deleted on request
    env = {**_fake_gh(tmp_path, "42"), "ACCELSTACK_STALE_COMMENT": "delete"}
    _post(repo, "quiet.md", env)
    assert "--method DELETE repos/org/repo/issues/comments/42" in Path(
        env["FAKE_GH_LOG"]
    ).read_text(encoding="utf-8")
    posted = _sh(repo, "github-comment", "missing.md")  # no body at all: gh is never called
    assert "nothing to post" in posted.stdout


def test_unknown_subcommand_is_one_line_exit_2(repo: Path) -> None:
    done = _sh(repo, "destroy", check=False)
    assert done.returncode == 2 and "unknown command 'destroy'" in done.stderr
    usage = _sh(repo, "deploy", check=False)
    assert usage.returncode == 2 and usage.stderr == "accelstack-ci: usage: deploy STACK\n"


def test_diff_keeps_the_comment_when_a_spec_is_broken(repo: Path) -> None:
    git(repo, "checkout", "-qb", "broken", "pr")
    try:
        (repo / "stacks" / "bad.yaml").write_text("name: bad\nregion: mars-1\n", encoding="utf-8")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "broken spec")
    finally:
        git(repo, "checkout", "-q", "pr")
    done = _sh(repo, "diff", "pr", "broken", "broken.md", threshold="100", check=False)
    assert done.returncode == 2  # the step fails ...
    body = (repo / "broken.md").read_text(encoding="utf-8")
    assert body.startswith(COMMENT_MARKER)  # ... and the comment still says why
    assert "| `bad` | error |" in body and "bad.yaml: pools: is required" in body
