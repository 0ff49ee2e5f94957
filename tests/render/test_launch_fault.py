"""A node fault mid-run: the rendered node script, real torchrun (torch CPU build, gloo), 2
nodes x 1 process on 127.0.0.1 (several processes per node, their local ranks and environment,
are tests/render/test_launch_torchrun.py's; each process here is a torch start of about two
CPU seconds). One worker on node 1 is SIGKILLed after joining the process
group (tests/fixtures/render/crash_once.py); the job must still finish, because the manifests
give torchrun a restart budget (PET_MAX_RESTARTS, which torchrun reads for --max-restarts), a
fresh rendezvous store per restart round (TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1: with the shared
store, restarted workers read the failed round's peer addresses and the restart fails), and the
PyTorchJob a backoffLimit that absorbs one restart of every pod (tests/render/test_pods.py).
The run takes the variables from the rendered indexed Job's pod environment.
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

from accelstack.render import render_manifest, render_node_script
from accelstack.resolve import Stack, resolve
from accelstack.spec import Spec, load_spec

from ..conftest import ROOT, STACKS, require_torch
from ..helpers_render import wait_then_end_sessions

require_torch()

pytestmark = pytest.mark.slow

FIXTURES = ROOT / "tests" / "fixtures" / "render"
TORCHRUN = Path(sys.executable).parent / "torchrun"
NODES, NPROC = 2, 1
TIMEOUT_S = 90  # a safety net: a run with one restart takes 25-50 s on 2 busy CPUs, ~20 s idle
PRESET = "llama3-70b-p5"  # 16 nodes


def _stack() -> Stack:
    data = load_spec(STACKS / f"{PRESET}.yaml").model_dump()
    data["workload"]["entrypoint"] = str(FIXTURES / "crash_once.py")
    data["workload"]["args"] = ["--steps", "1"]
    return resolve(Spec.model_validate(data))


def _docs(text: str) -> dict[str, dict[str, Any]]:
    return {d["kind"]: d for d in yaml.safe_load_all(text) if d}


def _restart_env(stack: Stack) -> dict[str, str]:
    """The restart settings the rendered pods carry (the indexed Job's; the PyTorchJob's are
    the same template)."""
    pod = _docs(render_manifest(stack, "job"))["Job"]["spec"]["template"]["spec"]
    env = {e["name"]: e["value"] for e in pod["containers"][0]["env"] if "value" in e}
    return {k: env[k] for k in ("PET_MAX_RESTARTS", "TORCH_DISABLE_SHARE_RDZV_TCP_STORE")}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(script: Path, out: Path, extra: dict[str, str]) -> list[subprocess.Popen[bytes]]:
    port = _free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SLURM_", "PET_", "TORCHELASTIC_"))
        and k not in {"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK"}
    }
    env.update(
        {
            "PATH": f"{TORCHRUN.parent}{os.pathsep}{env.get('PATH', '')}",
            "ACCELSTACK_ORCHESTRATOR": "standalone",
            "ACCELSTACK_NNODES": str(NODES),
            "ACCELSTACK_HEAD_ADDR": "127.0.0.1",
            "ACCELSTACK_RDZV_PORT": str(port),
            "ACCELSTACK_RDZV_ID": f"fault-{port}",
            "ACCELSTACK_TEST_OUT": str(out),
            "ACCELSTACK_TEST_CRASH_MARKER": str(out / "crashed"),
            "ACCELSTACK_CHECKPOINT_DIR": str(out / "checkpoints"),  # not the preset's /fsx
            "ACCELSTACK_NCCL_TRACE_DIR": str(out / "nccl-trace"),  # nor its FSx state dir
            "ACCELSTACK_TEST_EXPECT": json.dumps(
                {"world_size": NODES * NPROC, "nproc": NPROC, "env": {}}
            ),
            "GLOO_SOCKET_IFNAME": "lo",
            "OMP_NUM_THREADS": "1",
            # no EFA on a CPU runner: the fabric self-check has its own tests
            "ACCELSTACK_SKIP_FABRIC_CHECK": "1",
            **extra,
        }
    )
    procs = []
    for rank in range(NODES):
        with (out / f"node{rank}.log").open("wb") as log:  # the child keeps its own copy
            procs.append(
                subprocess.Popen(
                    ["bash", str(script)],
                    env={**env, "ACCELSTACK_NODE_RANK": str(rank)},
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=out,
                    start_new_session=True,
                )
            )
    return procs


def _script(tmp: Path) -> Path:
    script = tmp / "launch.sh"
    script.write_text(
        render_node_script(_stack(), orchestrator="standalone", procs_per_node_override=NPROC)
    )
    return script


def test_job_survives_a_worker_killed_mid_run(tmp_path: Path) -> None:
    env = _restart_env(_stack())
    assert int(env["PET_MAX_RESTARTS"]) >= 1
    procs = _start(_script(tmp_path), tmp_path, env)
    wait_then_end_sessions(procs, TIMEOUT_S)
    logs = [(tmp_path / f"node{r}.log").read_text(errors="replace") for r in range(NODES)]
    assert (tmp_path / "crashed").exists(), logs[1][-3000:]
    for rank, p in enumerate(procs):
        assert p.returncode == 0, f"node {rank} exited {p.returncode}:\n{logs[rank][-4000:]}"
    results = [json.loads(f.read_text()) for f in tmp_path.glob("train-*.json")]
    world = NODES * NPROC
    assert sorted(r["rank"] for r in results) == list(range(world))
    assert {r["allreduce"] for r in results} == {world * (world + 1) / 2}
    # the whole worker group started twice; node 1's agent counted a restart
    starts = [p.name.split("-") for p in tmp_path.glob("start-*")]
    assert len(starts) == 2 * world
    assert any(restart != "0" for _, restart, _, _ in starts)


def test_without_a_restart_budget_the_fault_fails_the_job(tmp_path: Path) -> None:
    """The control: the same fault with --max-restarts 0 ends the job (so the test above
    proves the budget, not a lucky run)."""
    env = {**_restart_env(_stack()), "PET_MAX_RESTARTS": "0"}
    procs = _start(_script(tmp_path), tmp_path, env)
    wait_then_end_sessions(procs, TIMEOUT_S)
    assert (tmp_path / "crashed").exists()
    assert any(p.returncode != 0 for p in procs)
    assert len(list(tmp_path.glob("start-*"))) == NODES * NPROC  # nothing restarted
