"""`accelstack new`: price and verdict after writing, pools renamed after
the silicon, comments kept, Neuron settings restored when retargeting back to Trainium."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from accelstack.catalog import load_catalog
from accelstack.cli import main
from accelstack.resolve.retarget import retarget
from accelstack.spec import load_spec, read_yaml

from .. import factories
from ..conftest import PRESETS, STACKS


def new(capsys: pytest.CaptureFixture[str], tmp_path: Path, *argv: str) -> tuple[int, str]:
    code = main(["new", *argv, "--dir", str(tmp_path)])
    out, err = capsys.readouterr()
    return code, out + err


def test_new_prints_the_price_and_a_within_budget_verdict(tmp_path: Path, capsys: Any) -> None:
    code, out = new(capsys, tmp_path, "my-run", "--from", "llama3-70b-trn2")
    assert code == 0, out
    assert re.search(r"^price: \$[\d,.]+/h, \$[\d,]+/month, training run \$[\d,]+ \(", out, re.M)
    assert "my-run: within budget" in out
    assert "warning" not in out


#: the CUDA path's default image (catalog frameworks.torch-cuda): a trn2 preset names a
#: TorchNeuron image, so a move to p5 must say which CUDA image to run
CUDA_IMAGE = (
    "public.ecr.aws/deep-learning-containers/pytorch-training:2.9.0-gpu-py312-cu130-ubuntu22.04-ec2"
)


def test_new_over_budget_warns_and_exits_0(tmp_path: Path, capsys: Any) -> None:
    code, out = new(
        capsys,
        tmp_path,
        "on-h100",
        "--from",
        "llama3-70b-trn2",
        "--instance-type",
        "p5.48xlarge",
        "--image",
        CUDA_IMAGE,
    )
    assert code == 0
    assert "on-h100 is over budget: hourly $" in out
    assert "warning: over budget:" in out
    assert (tmp_path / "stacks" / "on-h100.yaml").is_file()


def test_a_pool_named_after_the_silicon_is_renamed(tmp_path: Path, capsys: Any) -> None:
    code, out = new(
        capsys,
        tmp_path,
        "on-h100",
        "--from",
        "llama3-70b-trn2",
        "--instance-type",
        "p5.48xlarge",
        "--image",
        CUDA_IMAGE,
    )
    assert code == 0, out
    spec = load_spec(tmp_path / "stacks" / "on-h100.yaml")
    assert [p.name for p in spec.pools] == ["p5"]
    assert spec.workload.pool == "p5"
    assert "pools.trn2.name -> p5" in out


def test_renamed_pools_stay_unique_and_other_names_are_kept() -> None:
    cat = load_catalog()
    data = read_yaml(STACKS / "mixed-trn2-p5.yaml")  # pools trn2 (the workload's) and h100
    out = retarget(
        data, cat, name="bake", source="t", instance_type="p5.48xlarge", image=CUDA_IMAGE
    )
    assert [p.name for p in out.spec.pools] == ["p5", "h100"]
    data["pools"][1]["name"] = "p5"  # the other pool already has the new silicon's name
    out = retarget(
        data, cat, name="bake", source="t", instance_type="p5.48xlarge", image=CUDA_IMAGE
    )
    assert [p.name for p in out.spec.pools] == ["p5-2", "p5"]
    assert out.spec.workload.pool == "p5-2"
    data["pools"][0]["name"] = "workers"
    data["workload"]["pool"] = "workers"
    out = retarget(
        data, cat, name="bake", source="t", instance_type="p5.48xlarge", image=CUDA_IMAGE
    )
    assert [p.name for p in out.spec.pools] == ["workers", "p5"]


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.stem)
def test_new_keeps_every_comment_of_the_preset(preset: Path, tmp_path: Path, capsys: Any) -> None:
    code, out = new(capsys, tmp_path, "clone-x", "--from", str(preset))
    assert code in (0,), out
    source = preset.read_text().splitlines()
    clone = (tmp_path / "stacks" / "clone-x.yaml").read_text().splitlines()
    comments = [line.strip() for line in source if line.strip().startswith("#")]
    kept = [line.strip() for line in clone]
    for c in comments:
        assert c in kept
    body = [x for x in clone if not x.startswith("#")]
    want = [x for x in source if not x.startswith("#")]
    # a new stack's EKS pools also register with their scheduling labels (written, not default)
    added = [x for x in body if x.strip() == "labels_at_boot: true"]
    eks = "orchestration: ec2" not in preset.read_text()
    assert len(added) == (preset.read_text().count("  - name: ") if eks else 0)
    assert [x for x in body if not x.startswith("name:") and x not in added] == [
        x for x in want if not x.startswith("name:")
    ]


def test_retargeting_back_to_trainium_restores_compile_cache_and_precompile(
    tmp_path: Path, capsys: Any
) -> None:
    # trn1 runs the XLA path, whose pre-compile phase trn1-multinode uses
    preset = factories.preset("trn1-multinode")
    assert preset["workload"]["precompile_steps"] == 10 and "compile_cache" in preset
    code, out = new(
        capsys, tmp_path, "on-p5", "--from", "trn1-multinode", "--instance-type", "p5.48xlarge"
    )
    assert code == 0, out
    away = yaml.safe_load((tmp_path / "stacks" / "on-p5.yaml").read_text())
    assert "compile_cache" not in away and "precompile_steps" not in away["workload"]
    code, out = new(
        capsys,
        tmp_path,
        "back",
        "--from",
        str(tmp_path / "stacks" / "on-p5.yaml"),
        "--instance-type",
        "trn1.32xlarge",
    )
    assert code == 0, out
    back = yaml.safe_load((tmp_path / "stacks" / "back.yaml").read_text())
    assert back["compile_cache"] == preset["compile_cache"]
    assert back["workload"]["precompile_steps"] == 10
    assert [p["name"] for p in back["pools"]] == ["trn1"]
    assert "workload.precompile_steps: restored (10)" in out
    back_text = (tmp_path / "stacks" / "back.yaml").read_text()
    assert "accelstack:neuron-settings" not in back_text
    # the round trip gives the preset back, comments and key order included (name aside), and
    # the new stack's labels_at_boot after its container storage
    body = [x for x in back_text.splitlines() if not x.startswith(("# Cloned", "# - ", "name:"))]
    source = (STACKS / "trn1-multinode.yaml").read_text().splitlines()
    want = [x for x in source if not x.startswith("name:")]
    at = next(i for i, x in enumerate(want) if x.strip().startswith("container_storage:"))
    assert body == [*want[: at + 1], "    labels_at_boot: true", *want[at + 1 :]]


def test_pool_level_neuron_keys_round_trip() -> None:
    cat = load_catalog()
    data = read_yaml(STACKS / "trn1-multinode.yaml")
    pool = data["pools"][0]
    pool["logical_cores"], pool["compile_cache"] = 1, False
    away = retarget(
        data, cat, name="away", source="t", instance_type="p5.48xlarge", image=CUDA_IMAGE
    )
    assert away.stash["pool.logical_cores"] == 1 and away.stash["pool.compile_cache"] is False
    back = retarget(
        away.data, cat, name="back", source="t", instance_type="trn1.32xlarge", stash=away.stash
    )
    restored = back.spec.workload_pool
    assert restored.logical_cores == 1 and restored.compile_cache is False
    assert back.stash == {}
    # keys back in their place (and the new stack's labels_at_boot after the storage)
    keys = list(data["pools"][0])
    keys.insert(keys.index("container_storage") + 1, "labels_at_boot")
    assert list(back.data["pools"][0]) == keys
