"""The XLA path's pre-compile marker: keyed to the job and to what the graphs depend on, kept in a
node directory that outlives the pod (or on FSx), and never a deadlock when one node lacks it.

The runs are real: the rendered trn1 node script, real torchrun (CPU, gloo), 2 nodes x 1
process on 127.0.0.1 (local ranks are tests/render/test_launch_torchrun.py's; every process,
torchrun's agents included, is a torch start of about two CPU seconds), with the documented
`neuron_parallel_compile` shim (tests/shims/neuron), which records each call. Each node has its own state directory, as separate hosts would.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from accelstack.catalog import load_catalog
from accelstack.render import render_manifest, render_node_script
from accelstack.render.pods import precompile_key
from accelstack.resolve import Stack, resolve
from accelstack.spec import Spec, load_spec

from ..conftest import ROOT, STACKS
from ..helpers_render import fabric_env, preset_stack, wait_then_end_sessions

ENTRY = ROOT / "tests" / "fixtures" / "render" / "entry.py"
NEURON_SHIMS = ROOT / "tests" / "shims" / "neuron"
TORCHRUN = Path(sys.executable).parent / "torchrun"
NODES, NPROC = 2, 1


def _stack(**workload: Any) -> Stack:
    data = load_spec(STACKS / "trn1-multinode.yaml").model_dump()
    data["workload"].update({"entrypoint": str(ENTRY), "args": ["--model", "7b"], **workload})
    return resolve(Spec.model_validate(data), load_catalog())


# ---- the key --------------------------------------------------------------------------------


def test_key_follows_what_the_graphs_depend_on() -> None:
    base = _stack()
    pool = base.workload_pool
    key = precompile_key(base, pool)
    assert key == precompile_key(_stack(), _stack().workload_pool)  # stable across renders
    for change in (
        {"args": ["--model", "13b"]},
        {"precompile_args": ["--quick"]},
        {"sequence_length": 2048},
        {"model": {"params_billion": 13, "layers": 40, "hidden_size": 5120}},
        {
            "image": "public.ecr.aws/neuron/pytorch-training-neuronx:2.9.0-neuronx-py311-sdk2.29.0-ubuntu22.04"
        },
    ):
        other = _stack(**change)
        assert precompile_key(other, other.workload_pool) != key, change
    assert key in render_node_script(base)


def _pod_of(doc: dict[str, Any]) -> dict[str, Any]:
    if doc["kind"] == "TrainingRuntime":
        rj = doc["spec"]["template"]["spec"]["replicatedJobs"][0]
        return rj["template"]["spec"]["template"]["spec"]  # type: ignore[no-any-return]
    return doc["spec"]["template"]["spec"]  # type: ignore[no-any-return]


def test_pods_keep_the_marker_in_a_node_directory() -> None:
    stack = preset_stack("trn1-multinode")
    assert not stack.spec.storage.fsx_lustre_gib
    for kind in ("trainjob", "job"):
        docs = [d for d in yaml.safe_load_all(render_manifest(stack, kind)) if d]
        pods = [_pod_of(d) for d in docs if d["kind"] in ("TrainingRuntime", "Job")]
        (pod,) = pods
        (state,) = [v for v in pod["volumes"] if v["name"] == "state"]
        assert state == {
            "name": "state",
            "hostPath": {"path": "/var/tmp/accelstack/trn1-multinode", "type": "DirectoryOrCreate"},
        }


# ---- real runs --------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(
    stack: Stack, out: Path, state: list[Path], extra: dict[str, str] | None = None
) -> list[str]:
    """Both nodes of one job run (fixed rendezvous id, so a second run is the same job)."""
    script = out / "launch.sh"
    script.write_text(
        render_node_script(
            stack, orchestrator="standalone", bucket="test-cache", procs_per_node_override=NPROC
        )
    )
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "PET_", "ACCELSTACK_"))
    }
    for k in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK"):
        env.pop(k, None)
    env.update(
        {
            "PATH": f"{NEURON_SHIMS}{os.pathsep}{TORCHRUN.parent}{os.pathsep}{env.get('PATH', '')}",
            "ACCELSTACK_ORCHESTRATOR": "standalone",
            "ACCELSTACK_NNODES": str(NODES),
            "ACCELSTACK_HEAD_ADDR": "127.0.0.1",
            "ACCELSTACK_RDZV_PORT": str(_free_port()),
            "ACCELSTACK_RDZV_ID": "marker-job",
            "ACCELSTACK_RDZV_TIMEOUT": "60",
            "ACCELSTACK_TEST_OUT": str(out),
            "ACCELSTACK_SHIM_DIR": str(out),
            "ACCELSTACK_TEST_EXPECT": json.dumps(
                {"world_size": NODES * NPROC, "nproc": NPROC, "env": {}}
            ),
            "GLOO_SOCKET_IFNAME": "lo",
            "OMP_NUM_THREADS": "1",
            "ACCELSTACK_CHECKPOINT_DIR": str(out / "checkpoints"),
            **(extra or {}),
        }
    )
    fabric = fabric_env(out / "sysroot", stack.workload_pool)
    env.update(
        {**fabric, "PATH": f"{fabric['PATH'].split(os.pathsep)[0]}{os.pathsep}{env['PATH']}"}
    )
    procs, logs = [], []
    for rank in range(NODES):
        log = open(out / f"node{rank}.log", "w+b")  # noqa: SIM115
        logs.append(log)
        node_env = {
            **env,
            "ACCELSTACK_NODE_RANK": str(rank),
            "ACCELSTACK_STATE_DIR": str(state[rank]),
        }
        procs.append(
            subprocess.Popen(
                ["bash", str(script)],
                env=node_env,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=out,
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
    return texts


def _compiles(out: Path) -> int:
    return len(list(out.glob("neuron_parallel_compile.*.end")))


def _trained(out: Path) -> int:
    return len(list(out.glob("train-*.json")))


@pytest.mark.slow
def test_a_restarted_job_skips_the_pre_compile(tmp_path: Path) -> None:
    state = [tmp_path / "node0-state", tmp_path / "node1-state"]
    stack = _stack()
    first = tmp_path / "first"
    first.mkdir()
    _run(stack, first, state)
    assert _compiles(first) == NODES and _trained(first) == NODES * NPROC
    key = precompile_key(stack, stack.workload_pool)
    for s in state:
        assert [p.name for p in s.iterdir()] == [f"precompiled-marker-job-{key}-n{NODES}"]
    # the same job restarted (pods replaced on the same nodes): straight to training
    again = tmp_path / "again"
    again.mkdir()
    texts = _run(stack, again, state)
    assert _compiles(again) == 0 and _trained(again) == NODES * NPROC
    assert all("pre-compile already done" in t for t in texts)


@pytest.mark.slow
def test_a_node_without_the_marker_does_not_deadlock_its_peers(tmp_path: Path) -> None:
    """Node 0 has the marker and goes straight to training. Node 1 holds only the marker of
    the job's previous model (`--model 7b` changed to 13b: another key), so it pre-compiles
    again, as every node of a changed model does; its pre-compile rendezvous gives up after
    ACCELSTACK_PRECOMPILE_TIMEOUT and it joins training instead of waiting for peers that
    never come."""
    stack = _stack(args=["--model", "13b"])
    key = precompile_key(stack, stack.workload_pool)
    old = precompile_key(_stack(), _stack().workload_pool)
    assert old != key
    state = [tmp_path / "node0-state", tmp_path / "node1-state"]
    for s, marker_key in zip(state, (key, old), strict=True):
        s.mkdir()
        (s / f"precompiled-marker-job-{marker_key}-n{NODES}").touch()
    out = tmp_path / "run"
    out.mkdir()
    texts = _run(stack, out, state, {"ACCELSTACK_PRECOMPILE_TIMEOUT": "3"})
    assert "pre-compile already done" in texts[0]
    steps = stack.spec.workload.precompile_steps
    assert f"pre-compiling ({steps} steps, key {key})" in texts[1]
    assert len(list(out.glob("neuron_parallel_compile.*.start"))) == 1  # node 1's alone
    assert "warning: pre-compile did not finish within 3s" in texts[1]
    assert _trained(out) == NODES * NPROC  # both nodes trained together
    # no marker for a phase that did not finish; the old model's stays as it was
    assert [p.name for p in state[1].iterdir()] == [f"precompiled-marker-job-{old}-n{NODES}"]
