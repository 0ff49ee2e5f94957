"""The gate resolves every stack as the program does: a commit that edits only
`Pulumi.<stack>.yaml` (the spec pointer, any accelstack: key) shows up in `stacks`, `check`,
`diff` and the CI script; per-stack comment thresholds are never netted across stacks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from accelstack.plan import fake_ami
from accelstack.plan.diff import below_threshold
from accelstack.resolve import resolve
from accelstack.spec import load_spec

from .. import factories
from ..conftest import ROOT, STACKS
from ..helpers_cli import run_cli
from ..helpers_git import git

SCRIPT = ROOT / "examples" / "ci" / "accelstack-ci.sh"


def _pins(spec: Path) -> dict[str, str]:
    return {p: fake_ami(p) for p in resolve(load_spec(spec)).ami_parameters}


def _stack_file(repo: Path, stack: str, spec: str, region: str) -> None:
    config = {"aws:region": region, "accelstack:spec": spec}
    config["accelstack:amis"] = _pins(repo / spec)  # type: ignore[assignment]
    text = yaml.safe_dump({"config": config}, sort_keys=False)
    (repo / f"Pulumi.{stack}.yaml").write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def pointer_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """main: stack `prod` deploys stacks/trn1-finetune.yaml. pr: only Pulumi.prod.yaml
    changes, pointing `prod` at big/llama3-70b-p5.yaml (a file outside stacks/, committed
    on main already) with that spec's region and pins."""
    repo = tmp_path_factory.mktemp("pointer")
    (repo / "stacks").mkdir()
    (repo / "big").mkdir()
    shutil.copy(STACKS / "trn1-finetune.yaml", repo / "stacks" / "trn1-finetune.yaml")
    shutil.copy(STACKS / "llama3-70b-p5.yaml", repo / "big" / "llama3-70b-p5.yaml")
    (repo / "Pulumi.yaml").write_text("name: proj\nruntime: python\n", encoding="utf-8")
    _stack_file(repo, "prod", "stacks/trn1-finetune.yaml", "us-east-1")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    git(repo, "checkout", "-qb", "pr")
    _stack_file(repo, "prod", "big/llama3-70b-p5.yaml", "us-east-2")
    git(repo, "commit", "-qam", "point prod at another spec")
    changed = git(repo, "diff", "--name-only", "main", "pr").split()
    assert changed == ["Pulumi.prod.yaml"]  # the only file the commit touches
    return repo


def test_stacks_lists_the_stack_whose_config_changed(
    pointer_repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(pointer_repo)
    code, out, _ = run_cli(capsys, "stacks", ".", "--base", "main", "--format", "json")
    assert code == 0
    config_file = str(pointer_repo.resolve() / "Pulumi.prod.yaml")
    assert json.loads(out) == [
        {"stack": "prod", "spec": "big/llama3-70b-p5.yaml", "config_file": config_file}
    ]
    code, out, _ = run_cli(capsys, "stacks", ".", "--format", "names")
    assert out.split() == ["prod", "trn1-finetune"]  # the spec's own stack too


def test_check_plans_what_the_pointer_names(
    pointer_repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(pointer_repo)
    code, out, err = run_cli(capsys, "check", ".", "--base", "main", "--format", "json")
    doc = json.loads(out)
    assert doc["total"] == 1, err
    row = doc["stacks"][0]
    assert row["file"] == "big/llama3-70b-p5.yaml [stack prod]"
    assert row["stack"] == "llama3-70b-p5-prod"  # the program's name prefix for stack prod
    assert row["hourly_usd"] > 500  # sixteen p5.48xlarge, not one trn1.2xlarge
    code, out, _ = run_cli(capsys, "check", ".", "--stack", "prod", "--format", "json")
    assert [r["pulumi_stack"] for r in json.loads(out)["stacks"]] == ["prod"]  # the deploy step


def test_diff_shows_the_pointer_change_before_and_after(
    pointer_repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(pointer_repo)
    code, out, _ = run_cli(capsys, "diff", "main", "pr", "--format", "json")
    doc = json.loads(out)
    assert [s["stack"] for s in doc["stacks"]] == ["prod"]
    prod = doc["stacks"][0]
    # the old spec's protected key and buckets would be deleted: Pulumi stops, so diff refuses
    refused = [c for c in prod["create_before_delete"] if c["kind"] == "refused"]
    assert code == 1 and {c["field"] for c in refused} == {"(removed)"}
    assert any("secrets-key is removed but protected" in c["line"] for c in refused)
    assert prod["status"] == "changed"
    changes = {c["key"]: (c["before"], c["after"]) for c in prod["inputs"]}
    assert changes["config.accelstack:spec"] == (
        "stacks/trn1-finetune.yaml",
        "big/llama3-70b-p5.yaml",
    )
    assert changes["config.aws:region"] == ("us-east-1", "us-east-2")
    assert prod["cost"]["delta"]["monthly_usd"] > 300_000
    assert doc["unchanged"] == ["trn1-finetune"]
    code, md, _ = run_cli(capsys, "diff", "main", "pr", "--format", "markdown")
    assert "| `prod` | `config.accelstack:spec` | `stacks/trn1-finetune.yaml` |" in md
    assert md.index("**Refused**") < md.index("**Cost:**")


def _script(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ACCELSTACK": f"{sys.executable} -m accelstack.cli"}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [str(SCRIPT), *args], cwd=repo, env=env, capture_output=True, text=True, check=False
    )


def test_ci_script_sees_a_stack_config_only_change(pointer_repo: Path) -> None:
    assert _script(pointer_repo, "stack-names", "main", "pr").stdout.split() == ["prod"]
    assert _script(pointer_repo, "changed-stacks", "main", "pr").stdout.split() == [
        "big/llama3-70b-p5.yaml"
    ]
    done = _script(pointer_repo, "check", "main", "pr")
    assert "big/llama3-70b-p5.yaml [stack prod]" in done.stdout, done.stderr
    assert "1 of 1 specs passed" in done.stdout or "0 of 1 specs passed" in done.stdout


def test_an_unknown_accelstack_key_or_an_escaping_pointer_is_one_line(
    pointer_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "p"
    shutil.copytree(pointer_repo, project, ignore=shutil.ignore_patterns(".git"))
    stack_file = project / "Pulumi.prod.yaml"
    config = yaml.safe_load(stack_file.read_text(encoding="utf-8"))
    config["config"]["accelstack:allowUnpinnedAMIs"] = True
    stack_file.write_text(yaml.safe_dump(config), encoding="utf-8")
    code, out, err = run_cli(capsys, "check", str(project))
    assert code == 2 and err.count("\n") == 1
    assert (
        "config.accelstack:allowUnpinnedAMIs: is not a key accelstack reads; did you mean "
        "'accelstack:allowUnpinnedAmis'?"
    ) in err
    del config["config"]["accelstack:allowUnpinnedAMIs"]
    config["config"]["accelstack:spec"] = "../outside/llama3-70b-p5.yaml"
    stack_file.write_text(yaml.safe_dump(config), encoding="utf-8")
    code, out, err = run_cli(capsys, "check", str(project))
    assert code == 2 and "allowed: a path inside the project" in err


def test_plan_with_stack_reads_its_config(
    pointer_repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(pointer_repo)
    git(pointer_repo, "checkout", "-q", "main")
    try:
        spec = "stacks/trn1-finetune.yaml"
        code, out, _ = run_cli(capsys, "plan", spec, "--stack", "prod", "--format", "json")
        assert code == 0
        names = {r["name"] for r in json.loads(out)["resources"]}
        assert "trn1-finetune-prod-cluster-eks" in names  # the stack-prefixed names
        code, _, err = run_cli(capsys, "plan", "big/llama3-70b-p5.yaml", "--stack", "prod")
        assert code == 2 and "stack 'prod' deploys stacks/trn1-finetune.yaml" in err
    finally:
        git(pointer_repo, "checkout", "-q", "pr")


# ---- per-stack thresholds: +$X on one stack and -$Y on another are never netted ----------


def _p5(repo: Path, name: str, nodes: int) -> None:
    data: dict[str, Any] = factories.preset("llama3-70b-p5")
    data["name"] = name
    data["pools"][0]["nodes"] = nodes
    data["budget"] = {"max_hourly_usd": 5000, "max_monthly_usd": 4_000_000}
    (repo / "stacks" / f"{name}.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")


@pytest.fixture(scope="module")
def netted_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("netted")
    (repo / "stacks").mkdir()
    _p5(repo, "p5-grow", 16)
    _p5(repo, "p5-shrink", 24)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    git(repo, "checkout", "-qb", "pr")
    _p5(repo, "p5-grow", 24)
    _p5(repo, "p5-shrink", 16)
    git(repo, "commit", "-qam", "move eight nodes from one stack to the other")
    return repo


def test_cost_moves_on_two_stacks_are_not_netted(
    netted_repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(netted_repo)
    argv = ("diff", "main", "pr", "--threshold-usd", "100000")
    code, out, _ = run_cli(capsys, *argv, "--format", "json")
    doc = json.loads(out)
    deltas = {s["stack"]: s["cost"]["delta"]["monthly_usd"] for s in doc["stacks"]}
    assert deltas["p5-grow"] > 300_000 and deltas["p5-shrink"] < -300_000
    assert abs(doc["totals"]["delta_monthly_usd"]) < 1  # netted, the change looks free
    assert doc["comment"] is True
    code, body, _ = run_cli(capsys, *argv, "--format", "github-comment")
    assert "accelstack-diff:quiet" not in body and "| `p5-grow` | changed |" in body
    # per-stack thresholds: both stacks given one above their move stay quiet
    code, out, _ = run_cli(
        capsys,
        *argv,
        "--format",
        "json",
        "--stack-threshold",
        "p5-grow=400000",
        "--stack-threshold",
        "p5-shrink=400000",
    )
    doc = json.loads(out)
    # a smaller node group is listed first, and always comments (accelerated nodes go away)
    (removal,) = doc["rolls"]
    assert (removal["action"], removal["count"], removal["instance_type"]) == (
        "removes",
        8,
        "p5.48xlarge",
    )
    assert doc["comment"] is True
    quiet = below_threshold({**doc, "rolls": []}, 100000, None, {"p5-grow": 4e5, "p5-shrink": 4e5})
    assert quiet  # without that removal, both stacks under their own thresholds stay quiet
    code, _, err = run_cli(capsys, *argv, "--stack-threshold", "p5-grow")
    assert code == 2 and "allowed: STACK=USD" in err


# ---- node rolls: an AMI pin change rolls the accelerated node group, listed first ---------


def _project(folder: Path, pins: dict[str, str], logical_cores: int | None = None) -> Path:
    (folder / "stacks").mkdir(parents=True)
    (folder / "Pulumi.yaml").write_text("name: proj\nruntime: python\n", encoding="utf-8")
    data: dict[str, Any] = factories.preset("llama3-70b-trn2")
    if logical_cores is not None:
        data["pools"][0]["logical_cores"] = logical_cores
    spec = folder / "stacks" / "llama3-70b-trn2.yaml"
    spec.write_text(yaml.safe_dump(data), encoding="utf-8")
    config = {"aws:region": data["region"], "accelstack:amis": pins}
    text = yaml.safe_dump({"config": config})
    (folder / "Pulumi.llama3-70b-trn2.yaml").write_text(text, encoding="utf-8")
    return folder


def test_ami_and_lnc_changes_roll_the_accelerated_nodes_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pins = _pins(STACKS / "llama3-70b-trn2.yaml")
    ((param, old_ami),) = pins.items()
    old = _project(tmp_path / "old", pins)
    new = _project(tmp_path / "new", {param: "ami-0123456789abcdef0"})
    code, out, _ = run_cli(capsys, "diff", "--dirs", str(old), str(new), "--format", "json")
    doc = json.loads(out)
    (roll,) = doc["rolls"]
    assert (roll["count"], roll["instance_type"], roll["accelerated"]) == (
        16,
        "trn2.48xlarge",
        True,
    )
    causes = {c["key"]: (c["before"], c["after"]) for c in roll["causes"]}
    assert causes["llama3-70b-trn2-trn2-lt.imageId"] == (old_ami, "ami-0123456789abcdef0")
    code, text, _ = run_cli(capsys, "diff", "--dirs", str(old), str(new))
    lines = text.splitlines()
    assert lines[1] == "NODES ROLL OR ARE REMOVED (a running job on them is interrupted):"
    assert lines[2].startswith(
        "  ! llama3-70b-trn2: rolls 16 x trn2.48xlarge (llama3-70b-trn2-trn2-ng): "
        "a running job is interrupted; llama3-70b-trn2-trn2-lt.imageId: "
    )
    code, md, _ = run_cli(
        capsys, "diff", "--dirs", str(old), str(new), "--format", "github-comment"
    )
    assert md.index("rolls 16 x trn2.48xlarge") < md.index("| stack |")
    # the Neuron LNC setting is user data: a change rolls the same nodes
    lnc = _project(tmp_path / "lnc", pins, logical_cores=1)
    code, out, _ = run_cli(capsys, "diff", "--dirs", str(old), str(lnc), "--format", "json")
    (roll,) = json.loads(out)["rolls"]
    assert "llama3-70b-trn2-trn2-lt.userData" in {c["key"] for c in roll["causes"]}
    # the AMI pin is shown as an input before -> after
    stack = json.loads(out)["stacks"][0]
    assert any(c["key"] == "spec.pools[0].logical_cores" for c in stack["inputs"])


def test_plan_against_a_ref_lists_the_roll_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pins = _pins(STACKS / "llama3-70b-trn2.yaml")
    ((param, _),) = pins.items()
    repo = _project(tmp_path / "repo", pins)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    _stack_file_pins = {param: "ami-0123456789abcdef0"}
    config = yaml.safe_load((repo / "Pulumi.llama3-70b-trn2.yaml").read_text())
    config["config"]["accelstack:amis"] = _stack_file_pins
    (repo / "Pulumi.llama3-70b-trn2.yaml").write_text(yaml.safe_dump(config))
    monkeypatch.chdir(repo)
    spec = "stacks/llama3-70b-trn2.yaml"
    code, out, _ = run_cli(capsys, "plan", spec, "--against", "main")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("changes against main (") and "1 changed" in lines[0]
    assert lines[1].startswith("  ! rolls 16 x trn2.48xlarge (llama3-70b-trn2-trn2-ng)")
    assert "imageId: " in lines[1] and "-> ami-0123456789abcdef0" in lines[1]
    code, out, _ = run_cli(capsys, "plan", spec, "--against", "main", "--format", "json")
    (roll,) = json.loads(out)["changes"]["rolls"]
    assert roll["count"] == 16 and roll["accelerated"]


def test_a_stack_awaiting_its_pins_plans_with_a_warning_and_wrong_pins_fail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _project(tmp_path / "p", {})
    stack_file = project / "Pulumi.llama3-70b-trn2.yaml"
    config = yaml.safe_load(stack_file.read_text())
    del config["config"]["accelstack:amis"]  # as `new`/`init` write it: not pinned yet
    stack_file.write_text(yaml.safe_dump(config))
    code, out, _ = run_cli(capsys, "check", str(project))
    assert code == 0 and "Pulumi.llama3-70b-trn2.yaml: no accelstack:amis yet" in out
    assert "accelstack amis pin stacks/llama3-70b-trn2.yaml --stack llama3-70b-trn2" in out
    config["config"]["accelstack:amis"] = {"/aws/service/other": "ami-0123456789abcdef0"}
    stack_file.write_text(yaml.safe_dump(config))
    code, out, err = run_cli(capsys, "check", str(project))
    assert code == 1 and "no AMI pinned for /aws/service/eks/" in out + err  # as the program


def test_a_tag_edit_rolls_no_node(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pins = _pins(STACKS / "llama3-70b-trn2.yaml")
    old, new = _project(tmp_path / "old", pins), _project(tmp_path / "new", pins)
    spec = new / "stacks" / "llama3-70b-trn2.yaml"
    data = yaml.safe_load(spec.read_text())
    data["tags"]["team"] = "another-team"
    spec.write_text(yaml.safe_dump(data))
    code, out, _ = run_cli(capsys, "diff", "--dirs", str(old), str(new), "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["rolls"] == []  # tags reach instances without a new template
    assert doc["stacks"][0]["status"] == "changed"  # the edit itself is still reported
