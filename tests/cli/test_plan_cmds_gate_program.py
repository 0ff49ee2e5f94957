"""A closed deploy-input set: every committed file `pulumi up` can read or run is a deploy input.
A change the gate cannot plan (the program, a module that shadows an import, requirements and
what they pull in, a lock file, the policy pack, the runtime settings) is named in the comment
with its diff stat, is never quiet, and fails `check --strict` until a reviewer accepts it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from accelstack.plan import fake_ami
from accelstack.plan.diff import QUIET_MARKER
from accelstack.programinputs import ACCEPT_FILE
from accelstack.resolve import resolve
from accelstack.spec import load_spec

from .. import factories
from ..helpers_cli import run_cli
from ..helpers_git import commit_all, git

#: A spec `check --strict` passes: no documentation CIDR or example account.
CLEAN = {
    "cluster.public_access_cidrs": ["34.200.10.0/24"],
    "cluster.admin_principal_arns": ["arn:aws:iam::210987654321:role/deployer"],
}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository whose Pulumi project lives in infra/ (a monorepo): the stack of
    stacks/trn1-finetune.yaml, its AMIs pinned (`check --strict` passes it); the program,
    requirements.txt (with `-r ../shared/base.txt`) and a policy pack. main is committed; the
    test continues on branch `pr`, in infra/."""
    infra = tmp_path / "infra"
    (infra / "stacks").mkdir(parents=True)
    (infra / "policies").mkdir()
    (tmp_path / "shared").mkdir()
    spec = yaml.safe_dump(factories.preset("trn1-finetune", CLEAN), sort_keys=False)
    (infra / "stacks" / "trn1-finetune.yaml").write_text(spec, encoding="utf-8")
    (infra / "Pulumi.yaml").write_text(
        "name: proj\nruntime:\n  name: python\n  options: {virtualenv: venv}\n", encoding="utf-8"
    )
    pins = {
        p: fake_ami(p)
        for p in resolve(load_spec(infra / "stacks" / "trn1-finetune.yaml")).ami_parameters
    }
    own = {"aws:region": "us-east-1", "accelstack:amis": pins}  # the spec's own stack
    (infra / "Pulumi.trn1-finetune.yaml").write_text(
        yaml.safe_dump({"config": own}), encoding="utf-8"
    )
    (infra / "__main__.py").write_text(
        "from accelstack.components.entry import main\n\nmain()\n", encoding="utf-8"
    )
    (infra / "requirements.txt").write_text("-r ../shared/base.txt\n", encoding="utf-8")
    (tmp_path / "shared" / "base.txt").write_text("pulumi>=3\n", encoding="utf-8")
    (infra / "policies" / "__main__.py").write_text("# the pack\n", encoding="utf-8")
    (infra / "README.md").write_text("# infra\n", encoding="utf-8")
    git(tmp_path, "init", "-q", "-b", "main")
    commit_all(tmp_path, "base")
    git(tmp_path, "checkout", "-qb", "pr")
    monkeypatch.chdir(infra)
    monkeypatch.delenv("ACCELSTACK_CEILING", raising=False)
    monkeypatch.delenv("ACCELSTACK_CATALOG_DIR", raising=False)
    return infra


def _write(infra: Path, rel: str, text: str) -> None:
    path = (infra / rel).resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


EDITS = [
    ("__main__.py", "from accelstack.components.entry import main\nimport os\n\nmain()\n"),
    ("accelstack/__init__.py", "# shadows the installed accelstack\n"),
    ("pulumi_aws/__init__.py", "# shadows the provider\n"),
    ("yaml/__init__.py", "# shadows PyYAML\n"),
    ("components.py", "x = 1\n"),
    ("policies/__main__.py", ""),
    ("../shared/base.txt", "pulumi>=3\nevil-package\n"),
    ("../uv.lock", "version = 1\n"),
    ("requirements.txt", "-r ../shared/base.txt\n--extra-index-url https://pkgs.invalid/\n"),
    ("Pulumi.yaml", "name: proj\nruntime:\n  name: python\n  options: {virtualenv: /opt/v}\n"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("rel", "text"), EDITS, ids=[e[0] for e in EDITS])
def test_a_program_edit_is_named_never_quiet_and_fails_strict(
    project: Path, capsys: pytest.CaptureFixture[str], rel: str, text: str
) -> None:
    """Before, each of these was "unchanged, +$0" and, at a $100 threshold, the quiet body."""
    _write(project, rel, text)
    commit_all(project, f"only {rel}")
    code, out, err = run_cli(capsys, "stacks", ".", "--base", "main", "--format", "names")
    assert (code, out.split()) == (0, ["trn1-finetune"]), err
    code, out, err = run_cli(
        capsys, "diff", "main", "pr", "--format", "github-comment", "--threshold-usd", "100"
    )
    assert code == 0, err
    assert QUIET_MARKER not in out and "**Program inputs changed**" in out
    (line,) = [x for x in out.splitlines() if x.startswith(f"> - {rel} ")]
    assert " (+" in line or "binary" in line  # its diff stat
    code, out, _ = run_cli(capsys, "check", ".", "--base", "main", "--strict", "--format", "json")
    doc = json.loads(out)
    assert code == 1 and not doc["ok"] and doc["program_refused"]
    paths = [c["path"] for c in doc["program_changes"]]
    unseen = "/opt/v" in text or "index-url" in text  # a virtualenv, an index: no review
    assert paths == ([rel, "(unseen)"] if unseen else [rel])
    assert all(row["ok"] for row in doc["stacks"])  # only the program inputs fail


def test_a_documentation_edit_changes_nothing(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(project, "README.md", "# infra\n\nmore words\n")
    commit_all(project, "docs")
    code, out, err = run_cli(capsys, "stacks", ".", "--base", "main", "--format", "names")
    assert (code, out) == (0, ""), err


@pytest.mark.slow
def test_a_reviewer_accepts_and_a_later_edit_needs_accepting_again(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(project, "__main__.py", "import os\nfrom accelstack.components.entry import main\n")
    commit_all(project, "program edit")
    code, out, _ = run_cli(capsys, "check", ".", "--base", "main", "--strict")
    assert code == 1
    assert out.splitlines()[0].startswith("PROGRAM INPUT: __main__.py changed (+1 -2)")
    assert out.splitlines()[-1].startswith("FAIL program inputs: 1 program input(s) changed")
    code, out, err = run_cli(capsys, "accept", ".", "--base", "main")
    assert code == 0 and "accepts sha256:" in out, err
    accepted = (project / ACCEPT_FILE).read_text()
    assert "#   __main__.py changed (+1 -2)" in accepted
    commit_all(project, "accepted by a reviewer")
    code, out, err = run_cli(capsys, "check", ".", "--base", "main", "--strict")
    assert code == 0, out + err
    assert out.splitlines()[0].startswith("PROGRAM INPUT: __main__.py")  # still named
    code, out, _ = run_cli(capsys, "diff", "main", "pr", "--format", "github-comment")
    assert "accepted by this change's accelstack-accept.yaml" in out
    assert run_cli(capsys, "check", ".", "--strict")[0] == 0  # no base: the file still holds
    _write(project, "__main__.py", "import sys\nfrom accelstack.components.entry import main\n")
    commit_all(project, "another edit after the acceptance")
    code, out, _ = run_cli(capsys, "check", ".", "--base", "main", "--strict")
    assert code == 1 and "FAIL program inputs" in out
    code, out, _ = run_cli(capsys, "check", ".", "--strict")
    assert code == 1 and "they changed after they were accepted" in out


def test_a_malformed_acceptance_file_is_one_line(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / ACCEPT_FILE).write_text("fingerprint: nope\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "check", ".", "--strict")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"{ACCEPT_FILE}: fingerprint: is 'nope'" in err


def test_a_spec_pointed_at_from_outside_stacks_is_data_on_both_sides(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """big.yaml is a committed spec no stack deploys on main; pointing the stack at it is a
    stack-config change, not a program change."""
    shutil.copy(project / "stacks" / "trn1-finetune.yaml", project / "big.yaml")
    commit_all(project, "another spec")
    git(project, "branch", "-f", "main")
    stack_file = project / "Pulumi.trn1-finetune.yaml"
    doc = yaml.safe_load(stack_file.read_text())
    doc["config"]["accelstack:spec"] = "big.yaml"
    stack_file.write_text(yaml.safe_dump(doc), encoding="utf-8")
    commit_all(project, "the stack deploys big.yaml")
    code, out, err = run_cli(capsys, "check", ".", "--base", "main", "--strict", "--format", "json")
    assert json.loads(out)["program_changes"] == [], err


@pytest.mark.slow
def test_python_m_never_imports_the_checkouts_modules(project: Path) -> None:
    """`python -m accelstack.cli` run in the checkout: a committed module that shadows one the
    gate imports lazily (PyYAML, the provider) is never imported by the gate itself."""
    import os
    import subprocess
    import sys

    from ..conftest import ROOT

    for name in ("yaml", "pulumi_aws"):
        _write(project, f"{name}/__init__.py", "raise SystemExit('the checkout ran in the gate')\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "accelstack.cli", "check", "stacks/trn1-finetune.yaml"],
        capture_output=True,
        text=True,
        cwd=project,
        env=env,
        check=False,
    )
    assert "the checkout ran in the gate" not in done.stdout + done.stderr
    assert done.returncode == 0, done.stdout + done.stderr
