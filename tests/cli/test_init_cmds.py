"""`accelstack init DIR --from PRESET`: a deployable Pulumi project."""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import pytest
import yaml

from accelstack import __version__
from accelstack.cli import main
from accelstack.plan import Plan, run_plan
from accelstack.resolve import Stack, resolve
from accelstack.spec import load_spec
from tests.conftest import ROOT
from tests.helpers_plan import plan_stack
from tests.helpers_program import fill
from tests.plan.test_plan import preset_plan

CI_EXAMPLES = ROOT / "examples" / "ci"


def init(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["init", *args])
    out = capsys.readouterr()
    return code, out.out + out.err


def run_project(project: Path, pulumi_stack: str, monkeypatch: pytest.MonkeyPatch) -> Plan:
    """The project's own __main__.py under mocks, from its directory, with its stack config."""
    import pulumi

    monkeypatch.chdir(project)
    config = yaml.safe_load((project / f"Pulumi.{pulumi_stack}.yaml").read_text())["config"]
    spec_file = project / "stacks" / f"{pulumi_stack}.yaml"  # the user fills the placeholders
    spec_file.write_text(fill(spec_file.read_text()))

    def program(_: Stack) -> dict[str, Any]:
        # a new project has no AMI pins yet (`accelstack amis pin` needs AWS): follow the alias
        pulumi.runtime.set_all_config(
            {**{k: str(v) for k, v in config.items()}, "accelstack:allowUnpinnedAmis": "true"}
        )
        try:
            runpy.run_path(str(project / "__main__.py"), run_name="__main__")
        finally:
            pulumi.runtime.set_all_config({})
        return {}

    spec = load_spec(project / "stacks" / f"{pulumi_stack}.yaml")
    return run_plan(resolve(spec, name=pulumi_stack), build=program, guard=False)


def test_init_writes_a_project_whose_program_builds_the_presets_resources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "my-cluster"
    code, output = init(capsys, str(project), "--from", "trn1-multinode")
    assert code == 0, output
    pulumi_yaml = yaml.safe_load((project / "Pulumi.yaml").read_text())
    assert pulumi_yaml["name"] == "my-cluster"
    assert pulumi_yaml["runtime"] == {
        "name": "python",
        "options": {"toolchain": "pip", "virtualenv": "venv"},
    }
    main_py = (project / "__main__.py").read_text()
    assert "from accelstack.components.entry import main" in main_py
    wheel = f"accelstack-{__version__}-py3-none-any.whl"
    assert (project / "requirements.txt").read_text().splitlines()[-1] == f"./wheels/{wheel}"
    assert sorted(p.name for p in (project / "wheels").iterdir()) == [wheel]
    plan = run_project(project, "trn1-multinode", monkeypatch)
    # the preset's resources, with the placeholders the user filled in (access entry names
    # hash the admin ARN)
    want = plan_stack(resolve(load_spec(project / "stacks" / "trn1-multinode.yaml")))
    assert [(r.type, r.name) for r in plan.resources] == [(r.type, r.name) for r in want.resources]
    assert len(want.resources) == len(preset_plan("trn1-multinode").resources)


def test_init_with_a_stack_name_renames_the_spec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "p"
    assert init(capsys, str(project), "--from", "trn1-multinode", "--stack", "team-a")[0] == 0
    assert load_spec(project / "stacks" / "team-a.yaml").name == "team-a"
    config = yaml.safe_load((project / "Pulumi.team-a.yaml").read_text())["config"]
    assert config == {"aws:region": "us-west-2", "accelstack:spec": "stacks/team-a.yaml"}
    plan = run_project(project, "team-a", monkeypatch)
    assert any(r.name == "team-a-cluster" for r in plan.resources)


@pytest.mark.slow
def test_the_readme_and_workflow_say_how_to_deploy_and_tear_down(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert init(capsys, str(tmp_path / "p"), "--from", "llama3-70b-trn2")[0] == 0
    readme = (tmp_path / "p" / "README.md").read_text()
    for line in (
        "pulumi login --local",
        "pulumi login s3://",
        "pulumi stack init llama3-70b-trn2",
        "pulumi config set aws:region us-east-2",
        "pulumi up",
        "pulumi state unprotect --all",
        "pulumi destroy",
    ):
        assert line in readme
    # the workflow and its script are the shipped examples, byte for byte (one source)
    for written, shipped in (
        (".github/workflows/accelstack.yml", "github-actions.yml"),
        ("ci/accelstack-ci.sh", "accelstack-ci.sh"),
    ):
        assert (tmp_path / "p" / written).read_bytes() == (CI_EXAMPLES / shipped).read_bytes()
    assert "Check and diff" in readme and "repo:ORG/REPO:environment:production" in readme


def test_init_refuses_a_non_empty_directory_unless_forced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    code, output = init(capsys, str(tmp_path), "--from", "trn1-multinode")
    assert code == 2
    assert "is not empty; pass --force" in output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]
    assert init(capsys, str(tmp_path), "--from", "trn1-multinode", "--force")[0] == 0
    assert (tmp_path / "keep.txt").read_text() == "mine"
    assert (tmp_path / "Pulumi.yaml").is_file()


def test_init_refuses_an_unknown_preset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, output = init(capsys, str(tmp_path / "p"), "--from", "trn1-multinod")
    assert code == 2
    assert "did you mean 'trn1-multinode'" in output
    assert not (tmp_path / "p").exists()


def test_init_next_steps_pin_amis_and_the_project_runs_the_policy_pack(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "p"
    code, output = init(capsys, str(project), "--from", "trn1-multinode", "--stack", "team-b")
    assert code == 0, output
    steps = output.split("next:\n", 1)[1].splitlines()
    pin = next(i for i, s in enumerate(steps) if "accelstack amis pin" in s)
    up = next(i for i, s in enumerate(steps) if "pulumi up --policy-pack" in s)
    assert pin < up and "stacks/team-b.yaml --stack team-b" in steps[pin]
    assert "--policy-pack policies" in steps[up]
    assert any("placeholder" in s for s in steps[:up])
    readme = (project / "README.md").read_text()
    assert readme.index("accelstack amis pin stacks/team-b.yaml") < readme.index(
        "pulumi up --policy-pack policies"
    )
    pack = yaml.safe_load((project / "policies" / "PulumiPolicy.yaml").read_text())
    assert pack["runtime"]["options"]["virtualenv"] == "../venv"
    main_py = (project / "policies" / "__main__.py").read_text()
    assert "from accelstack.policypack.budget_policies import POLICIES" in main_py
    compile(main_py, "policies/__main__.py", "exec")
    script = (project / "ci" / "accelstack-ci.sh").read_text()
    assert '--policy-pack "${ACCELSTACK_POLICY_PACK:-policies}"' in script
    from accelstack.policypack.budget_policies import POLICIES  # the module the pack imports

    assert {p.name for p in POLICIES} >= {"accelstack-budget", "accelstack-deploy-rules"}


def test_init_refuses_a_stack_name_the_stack_rules_refuse_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 40-character stack name is a valid name, but the system node role it generates
    (`<name>-system-node-role` + Pulumi's suffix, 65 characters) would pass IAM's 64: refused
    in one line naming the retarget, before any file is written."""
    name = "p" * 38 + "-x"
    project = tmp_path / "proj"
    # a one-node preset: no fabric test, whose pod names would be refused too
    code, out = init(capsys, str(project), "--from", "trn1-finetune", "--stack", name)
    assert code == 2
    (line,) = out.strip().splitlines()
    assert f"-> {name}: name: cannot retarget: the IAM role name '{name}-" in line
    assert not project.exists() or not any(project.iterdir())


def test_wheel_refreshes_an_older_projects_requirements_and_keeps_its_other_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A project made before init kept the wheel pins `accelstack==...`, which no index has:
    `accelstack wheel .` writes the wheel, points that line at it and removes older wheels."""
    wheel = f"accelstack-{__version__}-py3-none-any.whl"
    (tmp_path / "requirements.txt").write_text(f"boto3>=1.34\naccelstack=={__version__}\n")
    (tmp_path / "wheels").mkdir()
    (tmp_path / "wheels" / "accelstack-0.0.1-py3-none-any.whl").write_bytes(b"old")
    (tmp_path / "wheels" / "other-1.0-py3-none-any.whl").write_bytes(b"theirs")
    assert main(["wheel", str(tmp_path)]) == 0, capsys.readouterr().err
    assert (tmp_path / "requirements.txt").read_text() == f"boto3>=1.34\n./wheels/{wheel}\n"
    assert sorted(p.name for p in (tmp_path / "wheels").iterdir()) == [
        wheel,
        "other-1.0-py3-none-any.whl",
    ]
    import zipfile

    with zipfile.ZipFile(tmp_path / "wheels" / wheel) as zf:
        names = zf.namelist()
    assert "accelstack/cli/project_wheel.py" in names and "accelstack/catalog/prices.yaml" in names


def test_a_repacked_install_whose_files_differ_from_its_record_is_refused(tmp_path: Path) -> None:
    """Repacking an installed accelstack checks each file against the install's RECORD: an
    edited installed file is never shipped into a project as if it were the release."""
    import importlib.metadata as md

    from accelstack.cli.project_wheel import _repack
    from accelstack.cli.wheelfile import WheelError, record_hash
    from accelstack.errors import AccelstackError

    info = tmp_path / "accelstack-9.9.dist-info"
    info.mkdir()
    (tmp_path / "accelstack").mkdir()
    files = {
        "accelstack/__init__.py": b"x = 1\n",
        f"{info.name}/METADATA": b"Metadata-Version: 2.1\nName: accelstack\nVersion: 9.9\n",
        f"{info.name}/WHEEL": b"Wheel-Version: 1.0\nTag: py3-none-any\n",
    }
    for rel, data in files.items():
        (tmp_path / rel).write_bytes(data)
    record = [f"{rel},{record_hash(data)},{len(data)}" for rel, data in files.items()]
    (info / "RECORD").write_text("\n".join([*record, f"{info.name}/RECORD,,", ""]))
    name, data = _repack(md.PathDistribution(info))
    assert name == "accelstack-9.9-py3-none-any.whl" and data.startswith(b"PK")
    (tmp_path / "accelstack" / "__init__.py").write_bytes(b"x = 2\n")
    with pytest.raises(WheelError, match="differs from the installed accelstack's RECORD"):
        _repack(md.PathDistribution(info))
    assert issubclass(WheelError, AccelstackError)
