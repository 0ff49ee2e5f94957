"""AMIs are pinned in the stack config, never resolved from a moving alias on
every run; `accelstack amis pin|upgrade` (SSM stubbed with botocore's Stubber: moto has no
/aws/service parameters)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from botocore.stub import Stubber

from accelstack.cli import ami_cmds, main
from accelstack.plan import PlanError
from accelstack.plan.lookups import fake_ami
from accelstack.plan.rules import evaluate
from accelstack.resolve import resolve
from accelstack.spec import load_spec
from tests import factories
from tests.conftest import ROOT
from tests.helpers_plan import plan_stack

NEURON = "/aws/service/neuron/dlami/multi-framework/ubuntu-24.04/latest/image_id"
EKS_NEURON = (
    "/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/x86_64/neuron/recommended/image_id"
)


def _project(tmp_path: Path, preset: str) -> Path:
    (tmp_path / "stacks").mkdir()
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    spec = tmp_path / "stacks" / f"{preset}.yaml"
    shutil.copy(ROOT / "stacks" / f"{preset}.yaml", spec)
    return spec


def _stub(monkeypatch: pytest.MonkeyPatch, answers: list[dict[str, str]]) -> Stubber:
    client = boto3.client(
        "ssm", region_name="us-west-2", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stubber = Stubber(client)
    for answer in answers:
        stubber.add_response(
            "get_parameters",
            {
                "Parameters": [
                    {"Name": k, "Value": v, "Type": "String"} for k, v in answer.items()
                ],
            },
            {"Names": list(answer)},
        )
    stubber.activate()
    monkeypatch.setattr(ami_cmds, "SSM_FACTORY", lambda *a: client)
    return stubber


def test_pin_writes_the_resolved_id_into_the_stack_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    spec = _project(tmp_path, "trn1-standalone")
    cfg = tmp_path / "Pulumi.trn1-standalone.yaml"
    cfg.write_text("config:\n  aws:region: us-west-2\n")
    stub = _stub(monkeypatch, [{NEURON: "ami-0aaaaaaaaaaaaaaa1"}])
    assert main(["amis", "pin", str(spec)]) == 0
    stub.assert_no_pending_responses()
    doc = yaml.safe_load(cfg.read_text())
    assert doc["config"]["aws:region"] == "us-west-2"  # other keys kept
    assert doc["config"]["accelstack:amis"] == {NEURON: "ami-0aaaaaaaaaaaaaaa1"}
    assert "pin   " + NEURON in capsys.readouterr().out
    assert not list(tmp_path.glob(".Pulumi.*"))  # no temporary file left behind
    # a second pin makes no AWS call and changes nothing
    monkeypatch.setattr(ami_cmds, "SSM_FACTORY", lambda *a: _no_calls())
    assert main(["amis", "pin", str(spec)]) == 0
    assert yaml.safe_load(cfg.read_text())["config"]["accelstack:amis"][NEURON].endswith("1")


class _no_calls:
    def get_parameters(self, **kw: Any) -> Any:
        raise AssertionError("no SSM call expected")


def test_upgrade_shows_what_rolls_and_writes_only_with_yes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    spec = _project(tmp_path, "trn1-multinode")
    cfg = tmp_path / "Pulumi.trn1-multinode.yaml"
    cfg.write_text(yaml.safe_dump({"config": {"accelstack:amis": {EKS_NEURON: "ami-0old"}}}))
    _stub(monkeypatch, [{EKS_NEURON: "ami-0new"}, {EKS_NEURON: "ami-0new"}])
    assert main(["amis", "upgrade", str(spec)]) == 0
    out = capsys.readouterr().out
    assert "roll  node groups of pools trn1: ami-0old -> ami-0new" in out
    assert "dry run" in out
    assert yaml.safe_load(cfg.read_text())["config"]["accelstack:amis"][EKS_NEURON] == "ami-0old"
    assert main(["amis", "upgrade", str(spec), "--yes"]) == 0
    assert yaml.safe_load(cfg.read_text())["config"]["accelstack:amis"][EKS_NEURON] == "ami-0new"


def test_a_missing_parameter_is_one_line_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    spec = _project(tmp_path, "trn1-standalone")
    client = boto3.client(
        "ssm", region_name="us-west-2", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stub = Stubber(client)
    stub.add_response(
        "get_parameters", {"Parameters": [], "InvalidParameters": [NEURON]}, {"Names": [NEURON]}
    )
    stub.activate()
    monkeypatch.setattr(ami_cmds, "SSM_FACTORY", lambda *a: client)
    assert main(["amis", "pin", str(spec)]) == 1
    assert f"do not exist in the region: {NEURON}" in capsys.readouterr().err
    assert not (tmp_path / "Pulumi.trn1-standalone.yaml").exists()


@pytest.mark.parametrize("preset", ["trn1-standalone", "llama3-70b-trn2"])
def test_an_unpinned_pool_is_refused(preset: str) -> None:
    stack = resolve(load_spec(ROOT / "stacks" / f"{preset}.yaml"))
    unpinned = stack.with_ami_pins({}, allow_unpinned=False, source="Pulumi.x.yaml")
    with pytest.raises(PlanError, match=r"no AMI pinned for /aws/service/.*`accelstack amis pin"):
        plan_stack(unpinned, guard=False)


@pytest.mark.parametrize("preset", ["trn1-standalone", "llama3-70b-p5"])
def test_following_the_alias_is_a_violation_naming_the_document(preset: str) -> None:
    """The fix turned off (allowUnpinnedAmis): the plan resolves the alias, the rule fails."""
    stack = resolve(load_spec(ROOT / "stacks" / f"{preset}.yaml"))
    moving = stack.with_ami_pins({}, allow_unpinned=True, source="Pulumi.x.yaml")
    plan = plan_stack(moving, guard=False)
    lines = [v.line() for v in evaluate(plan, moving) if v.rule == "ami-pinned"]
    assert lines, "the ami-pinned rule accepted a moving alias"
    assert lines[0].startswith(f"stack '{stack.name}': resolves the moving AMI alias /aws/service/")
    assert "using-systems-manager-parameters.html" in lines[0]


def test_the_pinned_id_is_what_the_launch_templates_boot() -> None:
    stack = resolve(load_spec(ROOT / "stacks" / "trn1-standalone.yaml"))
    pinned = stack.with_ami_pins({NEURON: "ami-0123456789abcdef0"}, False, "Pulumi.x.yaml")
    plan = plan_stack(pinned, guard=False)
    lts = plan.of_type("aws:ec2/launchTemplate:LaunchTemplate")
    assert lts and {lt.inputs["imageId"] for lt in lts} == {"ami-0123456789abcdef0"}
    assert not plan.lookups or all("ssm" not in lk["token"] for lk in plan.lookups)
    assert not [v for v in evaluate(plan, pinned) if v.rule == "ami-pinned"]


def test_the_offline_plan_simulates_pins_and_answers_ami_id_parameters() -> None:
    stack = resolve(load_spec(ROOT / "stacks" / "llama3-70b-p5.yaml"))
    plan = plan_stack(stack, guard=False)
    images = {
        lt.inputs.get("imageId") for lt in plan.of_type("aws:ec2/launchTemplate:LaunchTemplate")
    }
    assert fake_ami(stack.pools[0].ami_parameter or "") in images


def test_the_gpu_dlami_ami_id_parameter_has_an_offline_answer() -> None:
    """The standalone p5 path plans when it looks the alias up (the GPU
    DLAMI parameter ends in /ami-id, not /image_id)."""
    data = yaml.safe_load((ROOT / "stacks" / "p5e-capacity-block.yaml").read_text())
    factories.to_standalone(data)
    from accelstack.spec import parse_spec

    stack = resolve(parse_spec(data, "p5e-capacity-block.yaml"))
    param = stack.pools[0].ami_parameter or ""
    assert param.endswith("/ami-id")
    moving = stack.with_ami_pins({}, allow_unpinned=True, source="Pulumi.x.yaml")
    plan = plan_stack(moving, guard=False)
    assert {"token": "aws:ssm/getParameter:getParameter", "args": {"name": param}} in plan.lookups
    (lt,) = plan.of_type("aws:ec2/launchTemplate:LaunchTemplate")
    assert lt.inputs["imageId"] == fake_ami(param)


EKS_NVIDIA = (
    "/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/x86_64/nvidia/recommended/image_id"
)


def test_upgrade_of_a_capacity_block_pool_scales_it_to_zero_and_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """A capacity-block pool has no room for surge nodes and EKS wants desired size 0 while
    it upgrades: `amis upgrade` prints the scale-to-zero path with the pool's size."""
    spec = _project(tmp_path, "p5e-capacity-block")
    cfg = tmp_path / "Pulumi.p5e-capacity-block.yaml"
    cfg.write_text(yaml.safe_dump({"config": {"accelstack:amis": {EKS_NVIDIA: "ami-0old"}}}))
    _stub(monkeypatch, [{EKS_NVIDIA: "ami-0new"}])
    assert main(["amis", "upgrade", str(spec)]) == 0
    out = capsys.readouterr().out
    assert "roll  node groups of pools h200: ami-0old -> ami-0new" in out
    assert "pool h200 runs on a capacity-block (8 nodes): no room for surge nodes" in out
    steps = [line.strip() for line in out.splitlines() if line.strip()[:2] in ("2.", "4.")]
    assert steps[0].endswith("minSize=0,maxSize=8,desiredSize=0")
    assert steps[1].endswith("minSize=0,maxSize=8,desiredSize=8")
    assert "--cluster-name p5e-capacity-block" in steps[0]


def test_upgrade_of_an_on_demand_pool_prints_no_scale_to_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    spec = _project(tmp_path, "trn1-multinode")
    cfg = tmp_path / "Pulumi.trn1-multinode.yaml"
    cfg.write_text(yaml.safe_dump({"config": {"accelstack:amis": {EKS_NEURON: "ami-0old"}}}))
    _stub(monkeypatch, [{EKS_NEURON: "ami-0new"}])
    assert main(["amis", "upgrade", str(spec)]) == 0
    assert "upgrade it at zero" not in capsys.readouterr().out
