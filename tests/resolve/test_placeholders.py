"""Credentials and placeholders: credential-looking values (detect-secrets) are refused with
their YAML path wherever they could reach a node, and rendered files never carry them;
documentation address ranges and example accounts are flagged offline and refused by the
program at deploy. Render writes a directory in one locked step."""

from __future__ import annotations

import asyncio
import runpy
from pathlib import Path
from typing import Any

import pytest

from accelstack.cli import main
from accelstack.errors import AccelstackError
from accelstack.files import WriteError
from accelstack.render.artifacts import Artifact
from accelstack.render.stage import render_lock, write_directory

from .. import factories
from ..conftest import ROOT, STACKS
from ..helpers_program import filled_copy

AWS_KEY = "AKIA" + "IOSFODNN7EXAMPLE"  # AWS's documented example key id
GH_TOKEN = "ghp_" + "x" * 36
PRIVATE_KEY = "-----BEGIN RSA PRIVATE KEY-----"
PASSWORD_URL = "https://trainer:hunter2secret@mlflow.internal/api"


def _spec(tmp_path: Path, edit: Any) -> Path:
    data = factories.preset("trn1-finetune")
    edit(data)
    return factories.write_spec(tmp_path, data, "trn1-finetune")


def _set(*keys: Any, value: Any) -> Any:
    def edit(data: dict[str, Any]) -> None:
        node = data
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = value

    return edit


@pytest.mark.parametrize(
    ("edit", "path", "kind"),
    [
        (
            _set("workload", "env", "WANDB_URL", value=PASSWORD_URL),
            "workload.env.WANDB_URL",
            "Basic Auth",
        ),
        (_set("workload", "args", value=["--token", GH_TOKEN]), "workload.args[1]", "GitHub Token"),
        (_set("tags", "owner-key", value=AWS_KEY), "tags.owner-key", "AWS Access Key"),
        (
            _set("workload", "image", value=f"registry.example/train:{AWS_KEY}"),
            "workload.image",
            "AWS Access Key",
        ),
        (
            _set("workload", "entrypoint", value=f"train.py --key={AWS_KEY}"),
            "workload.entrypoint",
            "AWS",
        ),
        (
            _set("workload", "env", "TLS_KEY", value=PRIVATE_KEY),
            "workload.env.TLS_KEY",
            "Private Key",
        ),
    ],
    ids=[
        "env-url-password",
        "args-github-token",
        "tag-aws-key",
        "image",
        "entrypoint",
        "private-key",
    ],
)
def test_credentials_are_refused_with_the_yaml_path(
    edit: Any, path: str, kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _spec(tmp_path, edit)
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err
    line = next(x for x in err.splitlines() if "looks like a credential" in x)
    assert line.startswith(f"error: {spec}: {path}: looks like a credential (") and kind in line
    for secret in (AWS_KEY, GH_TOKEN, "hunter2secret"):
        assert secret not in err  # the value is never echoed
    out = tmp_path / "out"
    assert main(["render", str(spec), "-o", str(out)]) == 2 and not out.exists()
    capsys.readouterr()


def test_ordinary_values_pass() -> None:
    from accelstack.spec.secrets import secret_kinds

    for value in (
        "meta-llama/Meta-Llama-3-70B",
        "public.ecr.aws/neuron/pytorch-training-neuronx:2.1.2-neuronx-py310-sdk2.20.0",
        "s3://team-bucket/checkpoints/",
        "--tp",
        "10.0.0.0/16",
    ):
        assert secret_kinds(value) == []


def test_rendered_files_never_carry_credentials(tmp_path: Path) -> None:
    out = tmp_path / "out"
    arts = [
        Artifact("README.md", "index", "# run\n"),
        Artifact("node.sh", "launch", f"export HF_TOKEN='{GH_TOKEN}'\n", True),
    ]
    with pytest.raises(WriteError, match=r"node.sh: cannot write: would carry a value"):
        write_directory(out, arts, force=False)
    assert not out.exists()


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_render_is_all_or_nothing_and_locked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    spec = str(STACKS / "trn1-multinode.yaml")
    assert main(["render", spec, "-o", str(out)]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    capsys.readouterr()
    # a render that fails part-way (the third file cannot be written) leaves DIR as it was
    import accelstack.render.output as output
    import accelstack.render.stage as stage

    real, calls = output.write_text_atomic, []

    def flaky(path: Any, text: str, mode: int | None = None) -> None:
        calls.append(path)
        if len(calls) == 3:
            raise WriteError(path, "disk full", 1)
        real(path, text, mode)

    monkeypatch.setattr(output, "write_text_atomic", flaky)
    monkeypatch.setattr(stage, "write_text_atomic", flaky)  # the stage's files are written here
    assert main(["render", str(STACKS / "trn1-finetune.yaml"), "-o", str(out), "--force"]) == 1
    assert f"{out}/" in capsys.readouterr().err  # the message names DIR, not the stage
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert not [p for p in tmp_path.iterdir() if ".stage-" in p.name]
    monkeypatch.undo()
    # a second render into the same directory while one runs is refused
    with render_lock(out):
        assert main(["render", spec, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "another accelstack render is writing this directory" in err
    assert main(["render", spec, "-o", str(out)]) == 0  # and works once it is done
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no lock or stage left


# ---- placeholders ---------------------------------------------------------------------------


def test_placeholders_are_flagged_by_validate_check_and_plan(
    capsys: pytest.CaptureFixture[str],
) -> None:
    spec = str(STACKS / "llama3-70b-trn2.yaml")
    assert main(["validate", spec]) == 0
    out = capsys.readouterr().out
    assert (
        "warning: placeholder cluster.public_access_cidrs[0]: '203.0.113.0/24' is in the "
        "documentation range 203.0.113.0/24"
    ) in out
    assert "cluster.admin_principal_arns[0]: 'arn:aws:iam::111122223333:role/" in out
    assert "workload.image: '111122223333.dkr.ecr." in out
    assert main(["check", spec]) == 0  # flagged, the preset still checks offline
    assert "warning: placeholder" in capsys.readouterr().out
    assert main(["plan", spec]) == 0
    assert "warning: placeholder cluster.public_access_cidrs[0]" in capsys.readouterr().out


def _run_program(spec_rel: str, project: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    import pulumi

    created: list[str] = []

    class Mocks(pulumi.runtime.Mocks):
        def new_resource(self, args: Any) -> tuple[str, dict[str, Any]]:
            created.append(args.typ)
            return f"{args.name}_id", dict(args.inputs)

        def call(self, args: Any) -> tuple[dict[str, Any], None]:
            return {}, None

    monkeypatch.chdir(project)
    asyncio.set_event_loop(asyncio.new_event_loop())
    pulumi.runtime.set_mocks(Mocks(), project="p", stack="trn1-finetune", preview=False)
    pulumi.runtime.set_all_config({"accelstack:spec": spec_rel})
    try:
        runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__")
    finally:
        pulumi.runtime.set_all_config({})
    return created


def test_the_program_refuses_placeholders_before_creating_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "stacks").mkdir()
    spec = tmp_path / "stacks" / "trn1-finetune.yaml"
    spec.write_text((STACKS / "trn1-finetune.yaml").read_text())
    with pytest.raises(AccelstackError, match="placeholder values must be replaced") as info:
        _run_program("stacks/trn1-finetune.yaml", tmp_path, monkeypatch)
    assert "cluster.public_access_cidrs[0]: '203.0.113.0/24'" in str(info.value)
    assert "111122223333" in str(info.value)
    filled = tmp_path / "filled"
    filled_copy(STACKS / "trn1-finetune.yaml", filled)
    # filled in: past the placeholder check, to the AMI pins (refused before the build too)
    with pytest.raises(AccelstackError, match="no AMI pinned for pool"):
        _run_program("stacks/trn1-finetune.yaml", filled, monkeypatch)


def test_the_program_refuses_an_unknown_accelstack_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pulumi

    filled_copy(STACKS / "trn1-finetune.yaml", tmp_path)
    monkeypatch.chdir(tmp_path)
    asyncio.set_event_loop(asyncio.new_event_loop())

    class Mocks(pulumi.runtime.Mocks):
        def new_resource(self, args: Any) -> tuple[str, dict[str, Any]]:
            raise AssertionError("nothing may be created")

        def call(self, args: Any) -> tuple[dict[str, Any], None]:
            raise AssertionError("nothing may be looked up")

    pulumi.runtime.set_mocks(Mocks(), project="p", stack="trn1-finetune")
    pulumi.runtime.set_all_config({"accelstack:allowUnpinnedAMIs": "true"})
    try:
        with pytest.raises(AccelstackError, match="did you mean 'accelstack:allowUnpinnedAmis'"):
            runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__")
    finally:
        pulumi.runtime.set_all_config({})
