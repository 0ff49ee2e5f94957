"""The GitHub Actions example runs unchanged in an `accelstack init` project:
each job's shell steps run end to end, offline, in the shell GitHub gives them, on a
two-commit repository, with fake `python -m venv`/pip, `gh` and `pulumi` on PATH. A job that
runs accelstack without installing it, or a pipe that hides a failure, fails here."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from accelstack.cli import main

from ..conftest import ROOT
from ..helpers_git import GIT_ENV, git

WORKFLOW = ROOT / "examples" / "ci" / "github-actions.yml"


def _exe(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _fakes(bin_dir: Path, log: Path) -> None:
    """`python -m venv DIR` makes DIR/bin/pip (records its args) and DIR/bin/accelstack (this
    checkout's accelstack); anything else is the real Python. gh and pulumi record their args."""
    bin_dir.mkdir()
    accelstack = f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -m accelstack.cli "$@"\n'
    _exe(
        bin_dir / "python",
        "#!/bin/bash\nset -e\n"
        'if [ "$1" = -m ] && [ "$2" = venv ]; then\n'
        '  mkdir -p "$3/bin"\n'
        f'  printf \'#!/bin/sh\\necho pip "$*" >> {log}\\n\' > "$3/bin/pip"\n'
        f"  cat > \"$3/bin/accelstack\" <<'EOF'\n{accelstack}EOF\n"
        '  chmod +x "$3/bin/pip" "$3/bin/accelstack"\n  exit 0\nfi\n'
        f'exec /usr/bin/python3 "$@"\n',
    )
    for name in ("gh", "pulumi"):
        _exe(bin_dir / name, f'#!/bin/sh\necho {name} "$@" >> {log}\n')


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An `init` project on main; branch pr runs three nodes (a comment-worthy change)."""
    root = tmp_path_factory.mktemp("initci") / "proj"
    assert main(["init", str(root), "--from", "trn1-finetune"]) == 0
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    git(root, "update-ref", "refs/remotes/origin/main", "main")
    git(root, "checkout", "-qb", "pr")
    spec = root / "stacks" / "trn1-finetune.yaml"
    text = spec.read_text().replace("max_hourly_usd: 5", "max_hourly_usd: 50")
    text = text.replace("max_monthly_usd: 3500", "max_monthly_usd: 9000")
    spec.write_text(text.replace("    nodes: 1\n", "    nodes: 3\n"))
    git(root, "commit", "-qam", "three nodes")
    return root


def _expr(text: str, values: dict[str, str]) -> str:
    return re.sub(r"\$\{\{\s*([^}]+?)\s*\}\}", lambda m: values.get(m.group(1), "x"), text)


def _shell(workflow: dict[str, Any], job: dict[str, Any]) -> list[str]:
    """The shell GitHub runs a `run:` step in: `shell: bash` is `bash -eo pipefail`; the
    default (no shell named) is `bash -e`, where a pipe hides its failures."""
    named = (job.get("defaults") or workflow.get("defaults") or {}).get("run", {}).get("shell")
    return (
        ["bash", "--noprofile", "--norc", "-eo", "pipefail"] if named == "bash" else ["bash", "-e"]
    )


def run_job(
    root: Path, name: str, values: dict[str, str], tmp: Path, skip: tuple[str, ...] = ()
) -> tuple[int, dict[str, str], str]:
    """Run a job's `run:` steps in order (actions skipped). (rc, outputs, log)."""
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
    rc, outputs = 0, {}
    for step in job["steps"]:
        if "run" not in step or step.get("name") in skip:
            continue
        env = {**base_env, **{k: _expr(str(v), values) for k, v in (step.get("env") or {}).items()}}
        extra = [p for p in path_file.read_text().splitlines() if p]
        env["PATH"] = ":".join([*reversed(extra), env["PATH"]])
        done = subprocess.run(
            [*_shell(workflow, job), "-c", _expr(step["run"], values)],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        with log.open("a") as f:
            f.write(f"step {step.get('name')}: rc {done.returncode}\n{done.stdout}{done.stderr}")
        if done.returncode != 0:
            rc = done.returncode
            break
    for line in out_file.read_text().splitlines():
        k, _, v = line.partition("=")
        outputs[k] = v
    return rc, outputs, log.read_text()


def _ci_script(root: Path) -> None:
    assert os.access(root / "ci" / "accelstack-ci.sh", os.X_OK)


@pytest.mark.slow  # runs the CI job's shell script in an init project (subprocesses)
def test_the_pull_request_job_runs_in_an_init_project(project: Path, tmp_path: Path) -> None:
    _ci_script(project)
    values = {"GITHUB_BASE_REF": "main", "PR_NUMBER": "7", "github.token": "t"}
    values["github.event.pull_request.number"] = "7"
    rc, outputs, log = run_job(project, "review", values, tmp_path)
    assert rc == 0, log
    assert json.loads(outputs["names"]) == ["trn1-finetune"]
    assert "pip install -r requirements.txt" in log  # the job installed what it runs
    assert "gh pr comment 7 --body-file accelstack-diff.md" in log, log


@pytest.mark.slow  # runs the deploy jobs' shell scripts in an init project (subprocesses)
def test_the_deploy_jobs_run_in_an_init_project(project: Path, tmp_path: Path) -> None:
    before = git(project, "rev-parse", "main").strip()
    values = {"github.event.before": before, "matrix.stack": "trn1-finetune"}
    rc, outputs, log = run_job(project, "changed-on-main", values, tmp_path)
    assert rc == 0, log
    assert json.loads(outputs["names"]) == ["trn1-finetune"]
    rc, _, log = run_job(project, "deploy", values, tmp_path)
    assert rc == 0, log


@pytest.mark.slow
def test_a_job_that_cannot_list_its_stacks_fails(project: Path, tmp_path: Path) -> None:
    """Without its install step the stack list fails, and the job fails with it (not an empty
    matrix and a green run)."""
    before = git(project, "rev-parse", "main").strip()
    values = {"github.event.before": before}
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    installs = [
        s["name"] for s in workflow["jobs"]["changed-on-main"]["steps"] if "pip install" in str(s)
    ]
    assert installs, "the job installs accelstack"
    rc, outputs, _ = run_job(project, "changed-on-main", values, tmp_path, skip=tuple(installs))
    assert rc != 0 and "names" not in outputs


def test_every_job_that_runs_accelstack_installs_it_first() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    for name, job in workflow["jobs"].items():
        runs = [str(s.get("run", "")) for s in job["steps"]]
        uses = [i for i, r in enumerate(runs) if "accelstack" in r and "pip install" not in r]
        uses += [i for i, s in enumerate(job["steps"]) if "pulumi/actions" in str(s.get("uses"))]
        installed = [i for i, r in enumerate(runs) if "pip install -r requirements.txt" in r]
        assert not uses or (installed and installed[0] < min(uses)), name
