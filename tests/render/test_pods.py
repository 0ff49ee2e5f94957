"""Training pods and the sbatch file: requests from node allocatable, EFA huge pages and
capabilities, the hardened security context, the job's NetworkPolicy, restart budgets that
survive a node fault, image-reference warnings, and the sbatch file's Python environment and
--kill-on-bad-exit. Sizes come from accelstack/catalog/launch.yaml."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from accelstack.catalog import CATALOG_DIR, load_catalog
from accelstack.cli import main
from accelstack.errors import CatalogError
from accelstack.render import render, render_manifest, render_sbatch
from accelstack.render.pods import image_warnings
from accelstack.resolve import Stack

from .. import factories
from ..conftest import PRESETS
from ..helpers_render import preset_stack, standalone_variant, variant

EKS = [p.stem for p in PRESETS if preset_stack(p.stem).spec.orchestration == "eks"]


def _docs(stack: Stack, kind: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(render_manifest(stack, kind)) if d]  # type: ignore[arg-type]


def _pods(stack: Stack) -> list[dict[str, Any]]:
    """Every pod template of both manifests."""
    out = []
    for doc in _docs(stack, "pytorchjob") + _docs(stack, "job"):
        if doc["kind"] == "PyTorchJob":
            out += [rs["template"] for rs in doc["spec"]["pytorchReplicaSpecs"].values()]
        elif doc["kind"] == "Job":
            out.append(doc["spec"]["template"])
    return out


# ---- requests from node allocatable (sized by resolve: tests/resolve/test_node.py) ------------


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
@pytest.mark.parametrize("preset", EKS)
def test_pods_are_sized_and_hardened(preset: str) -> None:
    stack = preset_stack(preset)
    pool = stack.workload_pool
    want = pool.pod  # what resolve sized for one node of the pool
    for tpl in _pods(stack):
        spec = tpl["spec"]
        assert spec["automountServiceAccountToken"] is False
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        assert spec["serviceAccountName"] == stack.training_service_account  # every EKS pod
        (c,) = spec["containers"]
        sc = c["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False
        assert sc["capabilities"]["drop"] == ["ALL"]
        assert sc["capabilities"].get("add", []) == (["IPC_LOCK"] if pool.efa else [])
        limits, requests = c["resources"]["limits"], c["resources"]["requests"]
        assert "cpu" not in limits  # no CPU limit
        assert requests["cpu"] == want.cpu and requests["memory"] == limits["memory"] == want.memory
        assert int(want.cpu[:-1]) < pool.instance.vcpus * 1000
        assert want.memory_mib < pool.instance.memory_gib * 1024
        if pool.efa:
            assert requests["hugepages-2Mi"] == limits["hugepages-2Mi"] == "5120Mi"
        else:
            assert "hugepages-2Mi" not in limits
        env = {e["name"]: e.get("value") for e in c["env"]}
        assert int(env["PET_MAX_RESTARTS"]) >= 1


# ---- NetworkPolicy --------------------------------------------------------------------------


@pytest.mark.slow  # about half a second or more: make test (not test-fast)
@pytest.mark.parametrize("kind", ["pytorchjob", "job"])
def test_network_policy_admits_only_the_jobs_own_pods(kind: str) -> None:
    stack = preset_stack("llama3-70b-p5")
    docs = _docs(stack, kind)
    (np,) = [d for d in docs if d["kind"] == "NetworkPolicy"]
    selector = np["spec"]["podSelector"]["matchLabels"]
    assert np["spec"]["policyTypes"] == ["Ingress"]
    # the job's own pods only (tests/render/test_network_policy.py)
    (rule,) = np["spec"]["ingress"]
    assert rule["from"] == [{"podSelector": {"matchLabels": selector}}]  # no namespace, no CIDR
    assert rule["ports"] == [{"protocol": "TCP"}]  # every TCP port: rendezvous + bootstrap
    for tpl in _pods(stack):
        labels = tpl["metadata"]["labels"]
        assert selector.items() <= labels.items()  # the policy selects every pod of the job
    other = preset_stack("trn1-multinode")
    assert not selector.items() <= _pods(other)[0]["metadata"]["labels"].items()


# ---- restart budgets ------------------------------------------------------------------------


def test_backoff_limit_survives_a_node_fault_on_16_nodes() -> None:
    """The operator sums restarts over all pods; one node fault can restart all 16."""
    stack = preset_stack("llama3-70b-p5")
    assert stack.workload_pool.nodes == 16
    ft = stack.catalog.launch.fault_tolerance
    (pj,) = [d for d in _docs(stack, "pytorchjob") if d["kind"] == "PyTorchJob"]
    (job,) = [d for d in _docs(stack, "job") if d["kind"] == "Job"]
    for limit in (pj["spec"]["runPolicy"]["backoffLimit"], job["spec"]["backoffLimit"]):
        assert limit == 16 * ft.job_restarts >= 16
    small = preset_stack("trn1-multinode")
    (pj,) = [d for d in _docs(small, "pytorchjob") if d["kind"] == "PyTorchJob"]
    assert pj["spec"]["runPolicy"]["backoffLimit"] == small.workload_pool.nodes * ft.job_restarts


# ---- image warnings -------------------------------------------------------------------------


def test_image_warnings() -> None:
    digest = "sha256:" + "a" * 64
    for image in ("repo", "repo:latest", "registry.local:5000/team/repo", "a/b/c:latest"):
        (w,) = image_warnings(image)
        assert image in w and "digest" in w
    for image in (
        "repo:1.2",
        "registry.local:5000/team/repo:2.0",
        f"repo@{digest}",
        f"repo:latest@{digest}",
        "public.ecr.aws/neuron/pytorch-training-neuronx:2.7.0-neuronx-py310-sdk2.24.1-ubuntu22.04",
    ):
        assert image_warnings(image) == [], image


def test_render_warns_on_a_latest_image(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stack = variant("llama3-70b-p5", wl_image="myrepo/train:latest")
    (index,) = [a for a in render(stack) if a.path == "README.md"]
    assert "Warnings:" in index.content and "myrepo/train:latest" in index.content
    spec = factories.preset("llama3-70b-p5")
    spec["workload"]["image"] = "myrepo/train:latest"  # (validation refuses an untagged image)
    path = tmp_path / "llama3-70b-p5.yaml"
    path.write_text(yaml.safe_dump(spec))
    assert main(["render", str(path), "-o", str(tmp_path / "o")]) == 0
    assert "warning: image myrepo/train:latest has the tag ':latest'" in capsys.readouterr().out
    plain = [a for a in render(preset_stack("llama3-70b-trn2")) if a.path == "README.md"]
    assert "Warnings:" not in plain[0].content


# ---- sbatch ---------------------------------------------------------------------------------


def _slurm(preset: str) -> Stack:
    return standalone_variant(preset, standalone={"install_slurm": True})


@pytest.mark.parametrize(
    ("preset", "activate"),
    [
        ("trn1-multinode", "/opt/aws_neuronx_venv_pytorch_2_9/bin/activate"),
        ("llama3-70b-trn2", "/opt/aws_neuronx_venv_torch_neuronx_2_14_0/bin/activate"),
        ("llama3-70b-p5", "/opt/pytorch/bin/activate"),
    ],
)
def test_sbatch_activates_the_dlami_env_and_kills_on_bad_exit(preset: str, activate: str) -> None:
    text = render_sbatch(_slurm(preset))
    assert f"python_activate_default={activate}\n" in text
    (srun,) = [line for line in text.splitlines() if line.startswith("srun ")]
    assert srun.startswith("srun --kill-on-bad-exit=1 ")


def _run_sbatch(tmp: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    srun = bin_dir / "srun"
    srun.write_text(
        '#!/usr/bin/env bash\nprintf "%s\\n" "$*" > "$OUT/srun.args"\n'
        'printf "%s|%s\\n" "${FROM_ACTIVATE:-}" "$PET_MAX_RESTARTS" > "$OUT/srun.env"\n'
    )
    srun.chmod(0o755)
    script = tmp / "train.sbatch"
    script.write_text(render_sbatch(_slurm("trn1-multinode")))
    full = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "OUT": str(tmp), **env}
    return subprocess.run(
        ["bash", str(script)], env=full, capture_output=True, text=True, cwd=tmp, check=False
    )


def test_sbatch_runs_srun_inside_the_environment(tmp_path: Path) -> None:
    activate = tmp_path / "activate"
    activate.write_text('export FROM_ACTIVATE="yes $UNSET_IN_ACTIVATE"\n')  # reads an unset name
    proc = _run_sbatch(tmp_path, {"ACCELSTACK_PYTHON_ACTIVATE": str(activate)})
    assert proc.returncode == 0, proc.stderr
    args = (tmp_path / "srun.args").read_text().split()
    assert args[0] == "--kill-on-bad-exit=1" and args[-1].endswith("launch-trn1.sh")
    assert (tmp_path / "srun.env").read_text() == "yes |3\n"
    proc = _run_sbatch(tmp_path, {"ACCELSTACK_PYTHON_ACTIVATE": "none"})
    assert proc.returncode == 0 and (tmp_path / "srun.env").read_text() == "|3\n"


def test_sbatch_without_the_dlami_env_stops_clearly(tmp_path: Path) -> None:
    proc = _run_sbatch(tmp_path, {"ACCELSTACK_PYTHON_ACTIVATE": str(tmp_path / "nope")})
    assert proc.returncode == 2 and not (tmp_path / "srun.args").exists()
    assert "nope not found" in proc.stderr and "ACCELSTACK_PYTHON_ACTIVATE" in proc.stderr


# ---- catalog --------------------------------------------------------------------------------


def test_every_accelerated_family_has_one_python_env(tmp_path: Path) -> None:
    for f in CATALOG_DIR.glob("*.yaml"):
        (tmp_path / f.name).write_text(f.read_text())
    launch = yaml.safe_load((tmp_path / "launch.yaml").read_text())
    launch["dlami_python_envs"][0]["families"] = ["h100"]  # h200 loses its environment
    (tmp_path / "launch.yaml").write_text(yaml.safe_dump(launch))
    with pytest.raises(CatalogError, match="family 'h200' needs exactly one default"):
        load_catalog(tmp_path)
    launch["dlami_python_envs"][0]["families"] = ["h100", "h200", "trainium"]
    (tmp_path / "launch.yaml").write_text(yaml.safe_dump(launch))
    with pytest.raises(CatalogError, match="'trainium' is not a nvidia family"):
        load_catalog(tmp_path)
