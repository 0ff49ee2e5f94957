"""The job layer: Kubeflow Trainer v2 TrainJob + TrainingRuntime rendered for every EKS preset,
validated against the upstream's own API models at the pinned version (kubeflow-trainer-api,
tests/helpers_upstream.py) and kubernetes-validate; the controller release in every EKS plan; the `jobs` spec rules; a real
2-node x 2-process CPU torchrun run of the TrainJob's node script with the variables Trainer's
torch plugin sets."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from accelstack.catalog import load_catalog
from accelstack.errors import SpecError
from accelstack.render import render, render_manifest, render_node_script
from accelstack.render.artifacts import manifest_kinds
from accelstack.resolve import Stack, resolve
from accelstack.spec import Spec, load_spec, parse_spec

from .. import factories
from ..conftest import PRESETS, ROOT, STACKS, require_torch
from ..helpers_plan import plan_stack
from ..helpers_render import fabric_env, preset_stack, wait_then_end_sessions
from ..helpers_upstream import model_problems

EKS = [p.stem for p in PRESETS if load_spec(p).orchestration == "eks"]


def _docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def _jobs(preset: str, **jobs: Any) -> Stack:
    data = load_spec(STACKS / f"{preset}.yaml").model_dump()
    data["jobs"] = {**data["jobs"], **jobs}
    return resolve(Spec.model_validate(data), load_catalog())


def _trainjob(stack: Stack) -> tuple[dict[str, Any], dict[str, Any]]:
    docs = _docs(render_manifest(stack, "trainjob", bucket="cache-bucket"))
    (rt,) = [d for d in docs if d["kind"] == "TrainingRuntime"]
    (tj,) = [d for d in docs if d["kind"] == "TrainJob"]
    return rt, tj


@pytest.mark.slow
@pytest.mark.parametrize("preset", EKS)
def test_trainjob_validates_against_the_pinned_crds(preset: str) -> None:
    stack = preset_stack(preset)
    rt, tj = _trainjob(stack)
    assert model_problems(tj) == [] and model_problems(rt) == []
    version = stack.kubernetes_version
    for rj in rt["spec"]["template"]["spec"]["replicatedJobs"]:
        job = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": rj["name"], "namespace": "x"},
            "spec": rj["template"]["spec"],
        }
        kubernetes_validate.validate(job, version, strict=True)
    # the rest of the file (ConfigMap, NetworkPolicy) is core Kubernetes
    for doc in _docs(render_manifest(stack, "trainjob")):
        if doc["apiVersion"].startswith("trainer.kubeflow.org"):
            continue
        kubernetes_validate.validate(doc, version, strict=True)


@pytest.mark.parametrize("preset", EKS)
def test_trainjob_carries_the_pool_and_trainer_contract(preset: str) -> None:
    stack = preset_stack(preset)
    pool = stack.workload_pool
    rt, tj = _trainjob(stack)
    chart = stack.catalog.charts["trainer"]
    assert tj["apiVersion"] == rt["apiVersion"] == chart.api_version
    assert tj["spec"]["runtimeRef"] == {
        "name": rt["metadata"]["name"],
        "apiGroup": "trainer.kubeflow.org",
        "kind": "TrainingRuntime",
    }
    assert tj["spec"]["trainer"] == {"numNodes": pool.nodes, "numProcPerNode": pool.procs_per_node}
    assert rt["metadata"]["namespace"] == tj["metadata"]["namespace"]
    js = rt["spec"]["template"]["spec"]
    (rj,) = js["replicatedJobs"]
    # Trainer finds the trainer step by this label and injects PET_* into the container "node"
    assert rj["name"] == "node"
    assert rj["template"]["metadata"]["labels"]["trainer.kubeflow.org/trainjob-ancestor-step"] == (
        "trainer"
    )
    job = rj["template"]["spec"]
    ft = stack.catalog.launch.fault_tolerance
    assert job["backoffLimit"] == pool.nodes * ft.job_restarts
    assert js["failurePolicy"] == {"maxRestarts": ft.job_restarts, "restartStrategy": "Recreate"}
    pod = job["template"]["spec"]
    assert pod["restartPolicy"] == "OnFailure"
    (c,) = pod["containers"]
    assert c["name"] == "node"
    assert c["resources"]["limits"][pool.device.device_resource] == pool.accelerators_per_node
    if pool.efa_interfaces:
        assert c["resources"]["limits"]["vpc.amazonaws.com/efa"] == pool.efa_interfaces
        assert "hugepages-2Mi" in c["resources"]["requests"]
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert env["ACCELSTACK_ORCHESTRATOR"] == "trainjob"
    reserved = {"PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR"}
    assert not reserved & set(env), "Trainer sets these itself"
    if pool.device.taint:
        assert pod["tolerations"][0]["key"] == pool.device.taint.key
    # the same pod template as the indexed Job (one source for env, volumes, account)
    (plain,) = [d for d in _docs(render_manifest(stack, "job")) if d["kind"] == "Job"]
    ppod = plain["spec"]["template"]["spec"]
    assert ppod["volumes"] == pod["volumes"]
    assert ppod.get("serviceAccountName") == pod.get("serviceAccountName")
    assert ppod["containers"][0]["resources"] == c["resources"]


def test_the_upstream_models_refuse_what_the_api_refuses() -> None:
    rt, tj = _trainjob(preset_stack("llama3-70b-p5"))
    bad = json.loads(json.dumps(tj))
    bad["spec"]["trainer"]["numProcPerNode"] = "auto"  # an int at v2.3.0
    assert any("numProcPerNode" in p for p in model_problems(bad))
    bad = json.loads(json.dumps(tj))
    bad["spec"]["podTemplateOverrides"] = []  # replaced by runtimePatches in v2.2.0
    assert model_problems(bad) == ["TrainJob: unknown field spec.podTemplateOverrides"]
    bad = json.loads(json.dumps(rt))
    bad["spec"]["mlPolicy"]["torch"] = {"numProcPerNode": 8}  # removed from the torch policy
    assert model_problems(bad) == [
        "TrainingRuntime: unknown field spec.mlPolicy.torch.numProcPerNode"
    ]
    # the model types restartStrategy as a string; the CRD's enum (kubeflow/trainer@658725bd
    # manifests/base/crds/trainer.kubeflow.org_trainingruntimes.yaml:307-310) is restated
    strategies = {"Recreate", "BlockingRecreate", "InPlaceRestart"}
    assert rt["spec"]["template"]["spec"]["failurePolicy"]["restartStrategy"] in strategies


@pytest.mark.parametrize("preset", EKS)
def test_trainjob_is_listed_first_and_pytorchjob_only_when_chosen(preset: str) -> None:
    arts = render(preset_stack(preset))
    names = [a.path for a in arts]
    assert names[0] == "trainjob.yaml" and "job.yaml" in names
    assert "pytorchjob.yaml" not in names
    index = arts[-1].content
    assert index.index("trainjob.yaml") < index.index("job.yaml")
    legacy = _jobs(preset, controller="pytorchjob")
    assert manifest_kinds(legacy) == ["pytorchjob", "job"]
    assert manifest_kinds(_jobs(preset, controller="none")) == ["job"]
    assert manifest_kinds(_jobs(preset, kind="job")) == ["job", "trainjob"]


def test_kueue_label_on_every_job_manifest() -> None:
    stack = _jobs("llama3-70b-p5", kueue=True)
    assert stack.queue_name == "llama3-70b-p5-queue"
    _, tj = _trainjob(stack)
    assert tj["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == stack.queue_name
    (job,) = [d for d in _docs(render_manifest(stack, "job")) if d["kind"] == "Job"]
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == stack.queue_name
    _, plain = _trainjob(preset_stack("llama3-70b-p5"))
    assert "kueue.x-k8s.io/queue-name" not in plain["metadata"]["labels"]


# ---------------------------------------------------------------------------------------
# Plans: the controller release, Kueue sized to the pools
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("preset", EKS)
def test_every_eks_plan_installs_the_pinned_controller(preset: str) -> None:
    plan = plan_stack(preset_stack(preset))
    chart = load_catalog().charts["trainer"]
    (rel,) = [
        r
        for r in plan.of_type("kubernetes:helm.sh/v3:Release")
        if r.inputs.get("chart") == chart.chart
    ]
    assert rel.inputs["version"] == chart.version
    assert rel.inputs["namespace"] == chart.namespace
    assert rel.inputs["values"] == {"jobset": {"install": True}}
    assert chart.bundles == {"jobset": "0.12.0"} and "@" in (chart.bundles_source or "")
    assert plan.outputs["jobController"] == "trainer"


def test_kueue_plan_sizes_the_queue_to_the_pools() -> None:
    stack = _jobs("mixed-trn2-p5", kueue=True)
    plan = plan_stack(stack)
    kueue = load_catalog().charts["kueue"]
    assert [r.inputs["version"] for r in plan.of_type("kubernetes:helm.sh/v3:Release")].count(
        kueue.version
    ) == 1
    (cq,) = plan.of_type("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue")
    (group,) = cq.inputs["spec"]["resourceGroups"]
    flavors = {
        f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]} for f in group["flavors"]
    }
    for pool in stack.pools:
        q = flavors[f"{stack.name}-{pool.name}"]
        assert q[pool.device.device_resource] == str(pool.accelerators_per_node * pool.nodes)
        if pool.efa_interfaces:
            assert q["vpc.amazonaws.com/efa"] == str(pool.efa_interfaces * pool.nodes)
    (lq,) = plan.of_type("kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue")
    assert lq.inputs["metadata"]["name"] == stack.queue_name
    assert len(plan.of_type("kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor")) == len(stack.pools)


def test_pytorchjob_controller_installs_the_training_operator() -> None:
    plan = plan_stack(_jobs("trn1-multinode", controller="pytorchjob"))
    (d,) = plan.of_type("kubernetes:kustomize/v2:Directory")
    assert "v1.9.4" in d.inputs["directory"]
    charts = {r.inputs.get("chart") for r in plan.of_type("kubernetes:helm.sh/v3:Release")}
    assert load_catalog().charts["trainer"].chart not in charts


# ---------------------------------------------------------------------------------------
# Bad input: one line each, with the allowed values
# ---------------------------------------------------------------------------------------


def _problems(tmp_path: Path, jobs: dict[str, Any], preset: str = "llama3-70b-p5") -> list[str]:
    data = factories.preset(preset)
    data["jobs"] = jobs
    try:
        resolve(parse_spec(data, str(tmp_path / f"{data['name']}.yaml")))
    except SpecError as exc:
        return [str(p) for p in exc.problems]
    return []


@pytest.mark.parametrize(
    ("jobs", "needle"),
    [
        ({"controller": "trainr"}, "(allowed: pytorchjob, trainer, none); did you mean 'trainer'"),
        ({"controller": "none", "kind": "trainjob"}, "trainjob needs jobs.controller 'trainer'"),
        ({"controller": "trainer", "kind": "pytorchjob"}, "pytorchjob needs jobs.controller"),
        ({"version": "2.1.0"}, "allowed: 2.3.0"),
        ({"controller": "none", "version": "2.3.0"}, "installs nothing"),
        ({"controller": "pytorchjob", "kueue": True}, "does not admit pytorchjob"),
    ],
)
def test_bad_job_settings_are_one_line(tmp_path: Path, jobs: dict[str, Any], needle: str) -> None:
    problems = _problems(tmp_path, jobs)
    assert len(problems) == 1, problems
    assert needle in problems[0] and "jobs." in problems[0]


def test_good_job_settings_pass(tmp_path: Path) -> None:
    assert _problems(tmp_path, {"controller": "trainer", "version": "v2.3.0", "kueue": True}) == []
    assert _problems(tmp_path, {"controller": "none", "kind": "job"}) == []
    assert _problems(tmp_path, {"controller": "pytorchjob", "kind": "pytorchjob"}) == []


def test_standalone_refuses_job_settings(tmp_path: Path) -> None:
    problems = _problems(tmp_path, {"kueue": True}, preset="trn1-standalone")
    assert problems and "eks only" in problems[0]


# ---------------------------------------------------------------------------------------
# A real run of the TrainJob's node script (CPU, gloo), with the PET_* variables Trainer sets
# ---------------------------------------------------------------------------------------

require_torch()
ENTRY = ROOT / "tests" / "fixtures" / "render" / "entry.py"
TORCHRUN = Path(sys.executable).parent / "torchrun"
NODES, NPROC = 2, 2


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pod_env(rt: dict[str, Any]) -> dict[str, str]:
    (rj,) = rt["spec"]["template"]["spec"]["replicatedJobs"]
    (c,) = rj["template"]["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e["value"] for e in c["env"] if "value" in e}


@pytest.mark.slow
def test_trainjob_node_script_real_torchrun(tmp_path: Path) -> None:
    data = load_spec(STACKS / "llama3-70b-p5.yaml").model_dump()
    data["workload"]["entrypoint"] = str(ENTRY)
    data["workload"]["args"] = ["--lr", "3e-4", "it's $(x)"]
    stack = resolve(Spec.model_validate(data), load_catalog())
    rt, tj = _trainjob(stack)
    (cm,) = [
        d
        for d in _docs(render_manifest(stack, "trainjob", bucket="cache-bucket"))
        if d["kind"] == "ConfigMap"
    ]
    (shipped,) = cm["data"].values()
    # the ConfigMap ships the trainjob script; the run below differs only in --nproc_per_node
    assert shipped == render_node_script(stack, orchestrator="trainjob", bucket="cache-bucket")
    script = tmp_path / "launch.sh"
    local = render_node_script(
        stack, orchestrator="trainjob", bucket="cache-bucket", procs_per_node_override=NPROC
    )
    changed = set(local.splitlines()) ^ set(shipped.splitlines())
    assert changed and all(
        "nproc_per_node" in line or "processes per node" in line or "LOCAL TESTING" in line
        for line in changed
    ), changed
    assert tj["spec"]["trainer"]["numNodes"] == stack.workload_pool.nodes
    script.write_text(local)
    port = _free_port()
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "PET_", "ACCELSTACK_"))
    }
    for k in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK"):
        env.pop(k, None)
    env.update(_pod_env(rt))  # what the pod template sets (ACCELSTACK_ORCHESTRATOR=trainjob, ...)
    env.update(
        {
            "PATH": f"{TORCHRUN.parent}{os.pathsep}{env.get('PATH', '')}",
            # what Trainer's torch plugin injects (pkg/runtime/framework/plugins/torch/torch.go)
            "PET_NNODES": str(NODES),
            "PET_NPROC_PER_NODE": str(NPROC),
            "PET_MASTER_ADDR": "127.0.0.1",
            "PET_MASTER_PORT": str(port),
            "ACCELSTACK_RDZV_ID": f"tj-{port}",
            "ACCELSTACK_TEST_OUT": str(tmp_path),
            "ACCELSTACK_TEST_EXPECT": json.dumps(
                {"world_size": NODES * NPROC, "nproc": NPROC, "env": {"PET_MAX_RESTARTS": "3"}}
            ),
            "GLOO_SOCKET_IFNAME": "lo",
            "OMP_NUM_THREADS": "1",
            "ACCELSTACK_CHECKPOINT_DIR": str(tmp_path / "checkpoints"),
            "ACCELSTACK_NCCL_TRACE_DIR": str(tmp_path / "nccl-trace"),
        }
    )
    fabric = fabric_env(tmp_path / "sysroot", stack.workload_pool)
    env.update(
        {**fabric, "PATH": f"{fabric['PATH'].split(os.pathsep)[0]}{os.pathsep}{env['PATH']}"}
    )
    procs, logs = [], []
    for rank in range(NODES):
        log = open(tmp_path / f"node{rank}.log", "w+b")  # noqa: SIM115
        logs.append(log)
        procs.append(
            subprocess.Popen(
                ["bash", str(script)],
                env={**env, "PET_NODE_RANK": str(rank)},
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=tmp_path,
                start_new_session=True,
            )
        )
    wait_then_end_sessions(procs, 150)
    texts = []
    for log in logs:
        log.seek(0)
        texts.append(log.read().decode(errors="replace"))
        log.close()
    for rank, p in enumerate(procs):
        assert p.returncode == 0, f"node {rank} exited {p.returncode}:\n{texts[rank][-3000:]}"
    assert all("trainjob node" in t for t in texts)
    results = [json.loads(f.read_text()) for f in sorted(tmp_path.glob("train-*.json"))]
    world = NODES * NPROC
    assert sorted(r["rank"] for r in results) == list(range(world))
    assert {r["allreduce"] for r in results} == {world * (world + 1) / 2}
    assert all(all(r["checks"]["env"].values()) for r in results)
    assert all(r["argv"] == ["--lr", "3e-4", "it's $(x)"] for r in results)


# ---------------------------------------------------------------------------------------
# From `pulumi up` to a watched run: one sequence in the README, the init README, the index
# ---------------------------------------------------------------------------------------


def test_run_sequence_is_the_same_everywhere(tmp_path: Path) -> None:
    from accelstack.cli.init_cmds import project_files
    from accelstack.render import render_runbook, runbook_context

    generic = render_runbook(
        runbook_context(
            name="my-run",
            region="us-east-2",
            namespace="training",
            spec="stacks/my-run.yaml",
            kind="trainjob",
            nodes=16,
        )
    )
    readme = (ROOT / "README.md").read_text()
    body = generic.split("\n", 1)[1]  # the README uses its own heading
    assert body.split("\n\n", 1)[1] in readme
    init = project_files("p", "dev", "llama3-70b-p5", "us-east-2", "0")["README.md"]
    assert "aws eks update-kubeconfig --region us-east-2 --name dev" in init
    assert "kubectl apply --server-side -f run/trainjob.yaml" in init
    index = render(preset_stack("llama3-70b-trn2"))[-1].content
    for needle in (
        "aws eks update-kubeconfig --region us-east-2 --name llama3-70b-trn2",
        "kubectl -n training get trainjob llama3-70b-trn2 -w",
        "logs -f -l app.kubernetes.io/name=llama3-70b-trn2,batch.kubernetes.io/job-completion-index=0",
        "kubectl -n training delete trainjob llama3-70b-trn2",
        "pulumi state unprotect --all",
        "Insufficient hugepages-2Mi",
        "ImagePullBackOff",
        "RendezvousTimeoutError",
    ):
        assert needle in index, needle
    legacy = render(_jobs("trn1-multinode", controller="pytorchjob"))[-1].content
    assert "kubectl -n training get pytorchjob trn1-multinode -w" in legacy
    queued = render(_jobs("llama3-70b-p5", kueue=True))[-1].content
    assert "get workloads" in queued and "llama3-70b-p5-queue" in queued


def test_plan_outputs_the_kubeconfig_command() -> None:
    plan = plan_stack(preset_stack("llama3-70b-trn2"))
    assert plan.outputs["kubeconfigCommand"] == (
        "aws eks update-kubeconfig --region us-east-2 --name llama3-70b-trn2"
    )
    assert plan.outputs["region"] == "us-east-2" and plan.outputs["clusterName"]
