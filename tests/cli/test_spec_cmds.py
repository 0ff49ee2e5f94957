"""CLI: validate, schema, new — as a new user would run them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from accelstack.catalog import load_catalog
from accelstack.cli import main
from accelstack.errors import allowed
from accelstack.spec import load_spec

from ..conftest import PRESETS, ROOT, STACKS

TN_IMAGE = "registry.example/torchneuron:2.14.3-neuronx-sdk2.33.0"
CUDA_IMAGE = "registry.example/pytorch-cuda:2.9.0"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_validate_every_preset(capsys):
    code, out, err = run(capsys, "validate", *map(str, PRESETS))
    assert code == 0, err
    assert out.count("ok: ") == len(PRESETS)
    assert "warning: trn3: trn3.48xlarge is a preview type" in out


def test_validate_bad_spec_exit_2_one_line_per_problem(tmp_path: Path, capsys):
    f = tmp_path / "bad.yaml"
    f.write_text(
        "name: bad\nregion: us-east-2\npools:\n  - {name: a, instance_type: trn2.48xl, nodes: 1}\n"
        "workload: {model: {params_billion: 1}, tokens_billion: 1, entrypoint: t.py}\n"
        "cluster: {public_access_cidrs: [203.0.113.0/24], creator_admin: true}\n"
    )
    code, out, err = run(capsys, "validate", str(f))
    assert code == 2
    known = allowed(load_catalog().accelerated_types())  # the list grows with the catalog
    assert err.strip() == (
        f"error: {f}: pools[0].instance_type: 'trn2.48xl' is not a supported instance type; did "
        f"you mean 'trn2.48xlarge'? (supported: {known})"
    )


def test_validate_reports_good_and_bad_files(tmp_path: Path, capsys):
    f = tmp_path / "empty.yaml"
    f.write_text("")
    code, out, err = run(capsys, "validate", str(PRESETS[0]), str(f))
    assert code == 2
    assert "ok: " in out and "is empty" in err


@pytest.mark.slow
def test_cli_subprocess_no_traceback(tmp_path: Path):
    f = tmp_path / "broken.yaml"
    f.write_text("name: [unclosed\n")
    proc = subprocess.run(
        [sys.executable, "-m", "accelstack.cli", "validate", str(f)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and "YAML syntax error at line" in proc.stderr


def test_schema_is_valid_json_schema_and_accepts_presets(capsys):
    code, out, _ = run(capsys, "schema")
    assert code == 0
    schema = json.loads(out)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for preset in PRESETS:
        errors = list(validator.iter_errors(yaml.safe_load(preset.read_text())))
        assert not errors, (preset, errors[:1])
    bad = yaml.safe_load(PRESETS[0].read_text())
    bad["pools"][0]["nodez"] = 1
    assert list(validator.iter_errors(bad)), "unknown keys must be refused by the schema too"


def test_committed_schema_file_is_current(capsys):
    """schema/spec.schema.json (what presets point editors at) matches `accelstack schema`."""
    run(capsys, "schema")
    code, out, _ = run(capsys, "schema")
    assert (ROOT / "schema" / "spec.schema.json").read_text() == out, "run `make schema`"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(STACKS, tmp_path / "stacks")
    return tmp_path


def test_new_clones_preset_and_writes_pulumi_stack_file(project: Path, capsys):
    code, out, err = run(capsys, "new", "team-a", "--from", "trn1-multinode", "--dir", str(project))
    assert code == 0, err
    spec = load_spec(project / "stacks" / "team-a.yaml")
    assert spec.name == "team-a" and spec.pools[0].instance_type == "trn1.32xlarge"
    cfg = yaml.safe_load((project / "Pulumi.team-a.yaml").read_text())
    assert cfg["config"] == {"aws:region": "us-west-2", "accelstack:spec": "stacks/team-a.yaml"}
    assert "next: accelstack amis pin stacks/team-a.yaml" in out  # AMIs are pinned


def test_new_retarget_trainium_to_p5_switches_derived_fields(project: Path, capsys):
    code, out, err = run(
        capsys,
        "new",
        "on-h100",
        "--from",
        "llama3-70b-trn2",
        "--instance-type",
        "p5.48xlarge",
        "--image",
        CUDA_IMAGE,  # the preset names its TorchNeuron image: it cannot follow to CUDA
        "--dir",
        str(project),
    )
    assert code == 0, err
    text = (project / "stacks" / "on-h100.yaml").read_text()
    data = yaml.safe_load(text)
    assert "compile_cache" not in data
    assert "precompile_steps" not in data["workload"]
    assert "workload.framework (derived): torchneuron -> torch-cuda" in text
    assert data["workload"]["image"] == CUDA_IMAGE
    from accelstack.resolve import resolve

    stack = resolve(load_spec(project / "stacks" / "on-h100.yaml"))
    assert stack.framework == "torch-cuda"
    assert stack.workload_pool.procs_per_node == 8
    assert stack.workload_pool.efa_interfaces == 32
    assert not stack.compile_cache_enabled


def test_new_retarget_p5_to_trainium_and_back(project: Path, capsys):
    code, _, err = run(
        capsys,
        "new",
        "to-trn",
        "--from",
        "llama3-70b-p5",
        "--instance-type",
        "trn2.48xlarge",
        "--dir",
        str(project),
    )
    # the native Neuron path has no public image: --image is required, and the message says so
    assert code == 2
    assert "framework torchneuron needs --image" in err
    code, _, err = run(
        capsys,
        "new",
        "to-trn",
        "--from",
        "llama3-70b-p5",
        "--instance-type",
        "trn2.48xlarge",
        "--image",
        TN_IMAGE,
        "--dir",
        str(project),
    )
    assert code == 0, err
    from accelstack.resolve import resolve

    stack = resolve(load_spec(project / "stacks" / "to-trn.yaml"))
    assert stack.framework == "torchneuron" and stack.compile_cache_enabled
    assert stack.image == TN_IMAGE
    assert stack.workload_pool.procs_per_node == 64


def test_new_refuses_when_target_cannot_hold_workload(project: Path, capsys):
    code, out, err = run(
        capsys,
        "new",
        "tiny",
        "--from",
        "llama3-70b-trn2",
        "--instance-type",
        "trn1.2xlarge",
        "--image",
        "registry.example/xla-train:1",  # the preset's TorchNeuron image cannot follow to XLA
        "--dir",
        str(project),
    )
    assert code == 2
    assert "cannot hold the workload: 70.6B parameters need 1,052 GiB" in err
    assert "use --nodes 42 or more" in err  # `new` names its own flag
    assert not (project / "stacks" / "tiny.yaml").exists()
    assert not (project / "Pulumi.tiny.yaml").exists()


def test_new_refuses_efa_on_target_without_it(project: Path, capsys):
    data = yaml.safe_load((project / "stacks" / "trn1-multinode.yaml").read_text())
    data["pools"][0]["efa"] = True
    data["name"] = "efa-on"
    (project / "stacks" / "efa-on.yaml").write_text(yaml.safe_dump(data))
    code, _, err = run(
        capsys,
        "new",
        "small",
        "--from",
        "efa-on",
        "--instance-type",
        "trn1.2xlarge",
        "--nodes",
        "1",
        "--dir",
        str(project),
    )
    assert code == 2
    assert "asks for EFA, which trn1.2xlarge does not have" in err


def test_new_refuses_custom_image_across_device_kinds(project: Path, capsys):
    data = yaml.safe_load((project / "stacks" / "llama3-70b-trn2.yaml").read_text())
    data["workload"]["image"] = "123456789012.dkr.ecr.us-east-2.amazonaws.com/neuron-train:1"
    data["name"] = "custom"
    (project / "stacks" / "custom.yaml").write_text(yaml.safe_dump(data))
    code, _, err = run(
        capsys,
        "new",
        "x-p5",
        "--from",
        "custom",
        "--instance-type",
        "p5.48xlarge",
        "--dir",
        str(project),
    )
    assert code == 2 and "pass --image" in err
    code, _, err = run(
        capsys,
        "new",
        "x-p5",
        "--from",
        "custom",
        "--instance-type",
        "p5.48xlarge",
        "--image",
        "nvcr.io/nvidia/pytorch:25.01-py3",
        "--dir",
        str(project),
    )
    assert code == 0, err


def test_new_refuses_capacity_block_retarget_without_price(project: Path, capsys):
    code, _, err = run(
        capsys,
        "new",
        "cb-trn1n",
        "--from",
        "p5e-capacity-block",
        "--instance-type",
        "trn1n.32xlarge",
        "--dir",
        str(project),
    )
    assert code == 2
    assert "no capacity-block price for trn1n.32xlarge in us-east-2" in err


def test_new_unknown_preset_did_you_mean(project: Path, capsys):
    code, _, err = run(capsys, "new", "x-y", "--from", "trn1-multinod", "--dir", str(project))
    assert code == 2 and "did you mean 'trn1-multinode'?" in err


def test_new_will_not_overwrite(project: Path, capsys):
    assert run(capsys, "new", "dup", "--from", "trn1-finetune", "--dir", str(project))[0] == 0
    code, _, err = run(capsys, "new", "dup", "--from", "trn1-finetune", "--dir", str(project))
    assert code == 2 and "exists already; pass --force" in err


def test_new_rejects_bad_name(project: Path, capsys):
    code, _, err = run(capsys, "new", "Bad_Name", "--from", "trn1-finetune", "--dir", str(project))
    assert code == 2 and "'Bad_Name' must be 3-40 lowercase letters" in err


def test_help_everywhere(capsys):
    for argv in (["--help"], ["validate", "--help"], ["schema", "--help"], ["new", "--help"]):
        code, out, _ = run(capsys, *argv)
        assert code == 0 and "Usage" in out


def test_spec_reference_doc_is_current():
    from accelstack.docs import spec_reference

    assert (ROOT / "docs" / "spec.md").read_text() == spec_reference(), (
        "run `python -m accelstack.docs`"
    )


def test_new_cheapest_matches_compare_pick(project: Path, capsys):
    from accelstack.cost.compare import cheapest_target

    expected = cheapest_target(
        load_spec(project / "stacks" / "llama3-70b-p5.yaml"), options=("on-demand",)
    )
    code, out, err = run(
        capsys,
        "new",
        "cheap-run",
        "--from",
        "llama3-70b-p5",
        "--cheapest",
        "--image",
        TN_IMAGE,  # the pick is trn2 (native Neuron path, no public image)
        "--dir",
        str(project),
    )
    assert code == 0, err
    spec = load_spec(project / "stacks" / "cheap-run.yaml")
    pool = spec.workload_pool
    assert (pool.instance_type, pool.nodes, pool.purchase.option) == expected
    assert f"--cheapest picked {expected[1]} x {expected[0]}, on-demand" in out


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
def test_new_cheapest_with_impossible_deadline_exits_1(project: Path, capsys):
    code, _, err = run(
        capsys,
        "new",
        "never",
        "--from",
        "llama3-70b-p5",
        "--cheapest",
        "--deadline-hours",
        "1",
        "--dir",
        str(project),
    )
    assert code == 1
    assert "no candidate instance type fits the budget and a 1 h deadline" in err
    assert not (project / "stacks" / "never.yaml").exists()


def test_new_cheapest_refuses_explicit_type(project: Path, capsys):
    code, _, err = run(
        capsys,
        "new",
        "both",
        "--from",
        "llama3-70b-p5",
        "--cheapest",
        "--instance-type",
        "p5.48xlarge",
        "--dir",
        str(project),
    )
    assert code == 2 and "drop --instance-type and --nodes" in err


def test_usage_errors_are_one_line_exit_2(capsys):
    code, out, err = run(capsys, "valdate")
    assert code == 2
    assert err.strip() == (
        "error: No such command 'valdate'. Did you mean 'validate', 'calibrate'? "
        "(see 'accelstack --help')"
    )
    code, _, err = run(capsys, "new", "x-y-z", "--from", "a", "--cheapst")
    assert code == 2 and err.count("\n") == 1 and "No such option: --cheapst" in err


def test_new_finds_bundled_presets_from_an_empty_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "new", "team-b", "--from", "trn1-finetune")
    assert code == 0, err
    assert load_spec(tmp_path / "stacks" / "team-b.yaml").name == "team-b"
    header = (tmp_path / "stacks" / "team-b.yaml").read_text().splitlines()[1]
    assert header == "# Cloned from the bundled preset trn1-finetune by `accelstack new`."
    # the header's $schema hint resolves in a new project too
    written = (tmp_path / "schema" / "spec.schema.json").read_text()
    assert written == (ROOT / "schema" / "spec.schema.json").read_text()


def test_new_accepts_a_path_to_the_users_own_preset(tmp_path, monkeypatch, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    shutil.copy(STACKS / "trn1-finetune.yaml", mine / "trn1-finetune.yaml")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    code, out, err = run(capsys, "new", "own-copy", "--from", str(mine / "trn1-finetune.yaml"))
    assert code == 0, err
    assert (
        "Cloned from " + (mine / "trn1-finetune.yaml").as_posix()
        in (work / "stacks" / "own-copy.yaml").read_text()
    )


def test_new_unknown_preset_lists_bundled_presets_from_an_empty_directory(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "new", "x-y", "--from", "trn1-multinod")
    assert code == 2 and "did you mean 'trn1-multinode'?" in err
    assert "llama3-70b-p5" in err and not (tmp_path / "stacks").exists()
