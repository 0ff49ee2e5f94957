"""Writers of Pulumi.<stack>.yaml (`new --force`, `init --force`, `amis pin`/`upgrade`) merge:
every key they do not own (secure values, the encryption salt, AMI pins, other providers'
settings), the comments and the file mode survive; the write is atomic."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import yaml

from accelstack.cli import main
from accelstack.errors import SpecError
from accelstack.preflight.amis import write_pins
from accelstack.stackconfig import stack_config_merged

EXISTING = """\
# team-a production: do not drop the salt (passphrase secrets provider)
encryptionsalt: v1:abcdEFGH1234=:v1:xyz:0123456789
config:
  aws:region: us-east-1  # the team's region
  accelstack:spec: stacks/team-a.yaml
  accelstack:amis:
    /aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/neuron/recommended/image_id: ami-0123456789abcdef0
  team-a:dbPassword:
    secure: v1:Zm9vYmFy:c2VjcmV0
  aws:defaultTags:
    tags:
      team: a
"""


def stack_file(folder: Path, name: str = "team-a", mode: int = 0o640) -> Path:
    path = folder / f"Pulumi.{name}.yaml"
    path.write_text(EXISTING.replace("team-a", name), encoding="utf-8")
    path.chmod(mode)
    return path


def assert_kept(path: Path, name: str = "team-a") -> dict[str, object]:
    text = path.read_text(encoding="utf-8")
    doc = yaml.safe_load(text)
    assert doc["encryptionsalt"] == "v1:abcdEFGH1234=:v1:xyz:0123456789"
    assert doc["config"][f"{name}:dbPassword"] == {"secure": "v1:Zm9vYmFy:c2VjcmV0"}
    assert doc["config"]["aws:defaultTags"] == {"tags": {"team": "a"}}
    assert "do not drop the salt" in text and "# the team's region" in text
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    return doc["config"]  # type: ignore[no-any-return]


def test_amis_pin_keeps_every_other_key_the_comments_and_the_mode(tmp_path: Path) -> None:
    """Fails on the old write_pins: comments dropped, the mode became mkstemp's 0600."""
    path = stack_file(tmp_path)
    write_pins(path, {"/aws/service/x": "ami-0fedcba9876543210"})
    config = assert_kept(path)
    assert config["accelstack:amis"] == {"/aws/service/x": "ami-0fedcba9876543210"}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp file left


def test_new_force_over_a_stack_keeps_pins_secrets_and_salt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Fails on the old `new --force`, which wrote region and spec only."""
    (tmp_path / "stacks").mkdir()
    path = stack_file(tmp_path)
    code = main(["new", "team-a", "--from", "trn1-multinode", "--dir", str(tmp_path), "--force"])
    capsys.readouterr()
    assert code == 0
    config = assert_kept(path)
    assert config["accelstack:spec"] == "stacks/team-a.yaml"
    assert list(config["accelstack:amis"]) == [  # type: ignore[call-overload]
        "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/neuron/recommended/image_id"
    ]


@pytest.mark.slow  # writes a whole init project (the wheel included)
def test_init_force_over_a_project_keeps_the_stack_file_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = stack_file(tmp_path, "trn1-multinode")
    code = main(["init", str(tmp_path), "--from", "trn1-multinode", "--force"])
    capsys.readouterr()
    assert code == 0
    assert_kept(path, "trn1-multinode")


def test_a_stack_file_that_is_not_a_mapping_is_one_line_and_unwritten(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text("- a list\n", encoding="utf-8")
    with pytest.raises(SpecError, match="Pulumi.x.yaml: must be a mapping"):
        stack_config_merged(path, {"aws:region": "us-east-1"})
    assert path.read_text(encoding="utf-8") == "- a list\n"
