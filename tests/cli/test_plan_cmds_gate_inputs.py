"""One set of deploy inputs per stack, and a gate no pull request walks around:
the Pulumi project file in every form, the ceiling and the catalog overlay are deploy inputs;
the gate judges by the ceiling and overlay of the base ref (or a CI setting), lists a change to
them first; `diff` reads refs as refs; symlinked specs and stack files are refused alike."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from ..conftest import STACKS
from ..helpers_cli import run_cli
from ..helpers_git import commit_all, git


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """main: project `proj`, stack `prod` (Pulumi.prod.yaml) deploys stacks/trn1-finetune.yaml;
    big/llama3-70b-p5.yaml is committed too. The test continues on branch `pr`."""
    (tmp_path / "stacks").mkdir()
    (tmp_path / "big").mkdir()
    shutil.copy(STACKS / "trn1-finetune.yaml", tmp_path / "stacks" / "trn1-finetune.yaml")
    shutil.copy(STACKS / "llama3-70b-p5.yaml", tmp_path / "big" / "llama3-70b-p5.yaml")
    (tmp_path / "Pulumi.yaml").write_text("name: proj\nruntime: python\n", encoding="utf-8")
    prod = {"config": {"aws:region": "us-east-1", "accelstack:spec": "stacks/trn1-finetune.yaml"}}
    (tmp_path / "Pulumi.prod.yaml").write_text(yaml.safe_dump(prod), encoding="utf-8")
    git(tmp_path, "init", "-q", "-b", "main")
    commit_all(tmp_path, "base")
    git(tmp_path, "checkout", "-qb", "pr")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ACCELSTACK_CEILING", raising=False)
    monkeypatch.delenv("ACCELSTACK_CATALOG_DIR", raising=False)
    return tmp_path


def _changed(capsys: pytest.CaptureFixture[str]) -> list[str]:
    code, out, err = run_cli(capsys, "stacks", ".", "--base", "main", "--format", "names")
    assert code == 0, err
    return out.split()


def _specs(capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    code, out, err = run_cli(capsys, "stacks", ".", "--format", "json")
    assert code == 0, err
    return {r["stack"]: r["spec"] for r in json.loads(out)}


# ---- the Pulumi project file, in every form Pulumi reads ---------------------------------------


def test_a_pulumi_yaml_only_edit_changes_the_stacks(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _changed(capsys) == []
    text = "name: proj\nruntime: python\nconfig:\n  accelstack:allowUnpinnedAmis: true\n"
    (repo / "Pulumi.yaml").write_text(text, encoding="utf-8")
    commit_all(repo, "project default only")
    assert _changed(capsys) == ["prod", "trn1-finetune"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("requirements.txt", "accelstack @ https://example.invalid/evil.whl\n"),
        ("wheels/accelstack-0.1.0-py3-none-any.whl", "swapped"),
        ("__main__.py", "import os\n"),
        ("policies/__main__.py", "# no policies\n"),
    ],
)
def test_a_program_file_only_edit_changes_the_stacks(
    repo: Path, capsys: pytest.CaptureFixture[str], name: str, text: str
) -> None:
    """The program, its requirements (with the kept wheel) and the policy pack decide what
    `pulumi up` runs: a pull request that edits only one of them changes every stack."""
    (repo / "wheels").mkdir()
    (repo / "wheels" / "accelstack-0.1.0-py3-none-any.whl").write_text("kept", encoding="utf-8")
    (repo / "requirements.txt").write_text("./wheels/accelstack-0.1.0-py3-none-any.whl\n")
    (repo / "__main__.py").write_text("from accelstack.components.entry import main\n")
    (repo / "policies").mkdir()
    (repo / "policies" / "__main__.py").write_text("# the pack\n", encoding="utf-8")
    commit_all(repo, "program files")
    git(repo, "branch", "-f", "main")
    assert _changed(capsys) == []
    (repo / name).write_text(text, encoding="utf-8")
    commit_all(repo, f"only {name}")
    assert _changed(capsys) == ["prod", "trn1-finetune"]


def test_a_project_default_spec_pointer_is_what_the_stack_deploys(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / "Pulumi.prod.yaml").write_text("config:\n  aws:region: us-east-1\n", encoding="utf-8")
    (repo / "Pulumi.yaml").write_text(
        "name: proj\nruntime: python\nconfig:\n  accelstack:spec:\n"
        "    type: string\n    default: big/llama3-70b-p5.yaml\n",
        encoding="utf-8",
    )
    commit_all(repo, "prod deploys the big spec through the project default")
    assert _specs(capsys)["prod"] == "big/llama3-70b-p5.yaml"
    assert "prod" in _changed(capsys)


def test_stack_config_dir_moves_the_stack_files(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / "config").mkdir()
    git(repo, "mv", "Pulumi.prod.yaml", "config/Pulumi.prod.yaml")
    (repo / "config" / "Pulumi.staging.yaml").write_text(
        "config:\n  aws:region: us-east-1\n  accelstack:spec: big/llama3-70b-p5.yaml\n",
        encoding="utf-8",
    )
    (repo / "Pulumi.yaml").write_text(
        "name: proj\nruntime: python\nstackConfigDir: config\n", encoding="utf-8"
    )
    commit_all(repo, "stack files in config/, a new staging stack on the big spec")
    assert _specs(capsys)["staging"] == "big/llama3-70b-p5.yaml"
    assert "staging" in _changed(capsys) and "prod" in _changed(capsys)


def test_a_json_project_and_its_json_stack_files(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / "Pulumi.yaml").unlink()
    (repo / "Pulumi.prod.yaml").unlink()
    (repo / "Pulumi.json").write_text('{"name": "proj", "runtime": "python"}', encoding="utf-8")
    pointer = {"config": {"aws:region": "us-east-1", "accelstack:spec": "big/llama3-70b-p5.yaml"}}
    (repo / "Pulumi.prod.json").write_text(json.dumps(pointer), encoding="utf-8")
    commit_all(repo, "the project as JSON")
    assert _specs(capsys)["prod"] == "big/llama3-70b-p5.yaml"
    assert "prod" in _changed(capsys)


def test_a_main_that_moves_the_program_is_one_line(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / "Pulumi.yaml").write_text(
        "name: proj\nruntime: python\nmain: other/\n", encoding="utf-8"
    )
    code, out, err = run_cli(capsys, "stacks", ".")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Pulumi.yaml" in err and "main" in err


# ---- the ceiling and the overlay: trusted from the base ref, changes listed first --------------


def test_the_ceiling_is_the_base_refs_and_its_change_is_listed_first(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / "accelstack-ceiling.yaml").write_text("max_hourly_usd: 1\n", encoding="utf-8")
    commit_all(repo, "ceiling on main")
    git(repo, "branch", "-f", "main")
    (repo / "accelstack-ceiling.yaml").write_text("max_hourly_usd: 100000\n", encoding="utf-8")
    commit_all(repo, "the PR raises its own ceiling")
    assert _changed(capsys) == ["prod", "trn1-finetune"]
    code, out, _ = run_cli(capsys, "check", ".", "--base", "main", "--format", "json")
    doc = json.loads(out)
    assert code == 1 and not doc["ok"]
    assert "ceiling" in doc["gate_changes"][0]
    assert all("ceiling" in " ".join(s["errors"]) for s in doc["stacks"])
    code, out, _ = run_cli(capsys, "check", ".", "--base", "main")
    assert out.splitlines()[0].startswith("GATE INPUT: the cost ceiling is changed")


def test_an_overlay_in_the_repository_is_read_from_the_base_ref(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    row = (
        '  - {region: us-east-1, type: trn1.2xlarge, option: on-demand, usd: %s, as_of: "2026-08",'
        ' estimate: false, source: "test"}\n'
    )
    (repo / "catalog").mkdir()
    (repo / "catalog" / "prices.yaml").write_text(
        "instances:\n" + row % "1.34375", encoding="utf-8"
    )
    commit_all(repo, "overlay on main")
    git(repo, "branch", "-f", "main")
    monkeypatch.setenv("ACCELSTACK_CATALOG_DIR", str(repo / "catalog"))
    assert _changed(capsys) == []
    (repo / "catalog" / "prices.yaml").write_text("instances:\n" + row % "0.01", encoding="utf-8")
    commit_all(repo, "the PR cuts its own price")
    assert _changed(capsys) == ["prod", "trn1-finetune"]
    code, out, _ = run_cli(
        capsys, "check", ".", "--base", "main", "--stack", "prod", "--format", "json"
    )
    doc = json.loads(out)
    assert "catalog overlay file prices.yaml" in doc["gate_changes"][0]
    assert doc["stacks"][0]["hourly_usd"] >= 1.34  # priced with main's overlay, not the PR's


# ---- diff reads refs as refs; links are refused the same way everywhere ------------------------


def test_a_folder_named_like_a_ref_never_stands_in_for_it(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(repo / "stacks", repo / "main")  # a forged "base": the head's own specs
    spec = repo / "stacks" / "trn1-finetune.yaml"
    spec.write_text(spec.read_text().replace("max_hourly_usd: 5\n", "max_hourly_usd: 6\n"))
    commit_all(repo, "head changes the budget and commits a folder named main")
    code, out, err = run_cli(capsys, "diff", "main", "pr", "--format", "json", "--stack", "prod")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["base"].startswith("main (") and [s["stack"] for s in doc["stacks"]] == ["prod"]
    code, out, err = run_cli(capsys, "diff", "main", "pr", "--dirs")
    assert code == 2 and "is not a directory" in err and len(err.strip().splitlines()) == 1


def test_a_symlinked_spec_is_refused_by_check_and_diff_alike(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / "stacks" / "llama3-70b-p5.yaml").symlink_to("../big/llama3-70b-p5.yaml")
    commit_all(repo, "a spec that is a link")
    code, out, err = run_cli(capsys, "check", "stacks/llama3-70b-p5.yaml")
    assert code == 2 and "symbolic link" in err
    code, out, err = run_cli(capsys, "diff", "main", "pr", "--format", "json")
    doc = json.loads(out)
    row = next(s for s in doc["stacks"] if s["stack"] == "llama3-70b-p5")
    assert code == 2 and any("symbolic link" in e for e in row["errors"])


def test_a_symlinked_stack_file_is_refused(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "elsewhere.yaml").write_text(
        "config:\n  accelstack:spec: big/llama3-70b-p5.yaml\n", encoding="utf-8"
    )
    (repo / "Pulumi.prod.yaml").unlink()
    (repo / "Pulumi.prod.yaml").symlink_to("elsewhere.yaml")
    code, out, err = run_cli(capsys, "stacks", ".")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "Pulumi.prod.yaml" in err and "symbolic link" in err


# ---- provider settings on an allow-list -------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("aws:endpoints", [{"ec2": "https://attacker.example"}]),
        ("aws:assumeRoles", [{"roleArn": "arn:aws:iam::999999999999:role/x"}]),
        ("aws:skipCredentialsValidation", True),
        ("aws:insecure", True),
        ("kubernetes:kubeconfig", "/tmp/kc"),
    ],
)
def test_a_provider_setting_off_the_allow_list_is_refused_at_check(
    repo: Path, capsys: pytest.CaptureFixture[str], key: str, value: object
) -> None:
    file = repo / "Pulumi.prod.yaml"
    doc = yaml.safe_load(file.read_text())
    doc["config"][key] = value
    file.write_text(yaml.safe_dump(doc), encoding="utf-8")
    code, out, err = run_cli(capsys, "check", ".")
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [err.strip()] and f"config.{key}" in err
    assert "Pulumi.prod.yaml" in err and "aws:region" in err  # names what is allowed


def test_a_provider_setting_as_a_project_default_is_refused(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / "Pulumi.yaml").write_text(
        "name: proj\nruntime: python\nconfig:\n  aws:endpoints:\n    value: [{sts: x}]\n",
        encoding="utf-8",
    )
    code, _, err = run_cli(capsys, "check", ".")
    assert code == 2 and "config.aws:endpoints" in err and "Pulumi.yaml" in err


def test_an_environment_import_is_refused(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = repo / "Pulumi.prod.yaml"
    file.write_text(file.read_text() + "environment:\n  - org/aws-prod\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "check", ".")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "Pulumi.prod.yaml" in err and "environment" in err
