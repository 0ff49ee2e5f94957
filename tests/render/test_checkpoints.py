"""Resume from the last checkpoint, not from step 0: the rendered node script of an EKS preset,
real torchrun (torch CPU build, gloo), 2 nodes x 1 process on 127.0.0.1 (local ranks are
tests/render/test_launch_torchrun.py's; each process is a torch start), and a tiny training
loop (tests/fixtures/render/resume_train.py) that saves into the ACCELSTACK_CHECKPOINT_DIR the
script exports. One worker is SIGKILLed mid-run after the step-5 checkpoint; torchrun's restart
budget (the pods' PET_MAX_RESTARTS) starts the worker group again, and every rank continues at
step 6 with the state it saved, ending with exactly the state of an uninterrupted run. And a
whole node lost and replaced (what node auto repair and the job controller do on EKS): the
replacement runs the same script, joins the survivors' next rendezvous round, and every rank
again resumes at step 6.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from accelstack.render import render_manifest, render_node_script
from accelstack.resolve import Stack, resolve
from accelstack.spec import Spec, load_spec

from ..conftest import ROOT, STACKS, require_torch
from ..helpers_render import wait_then_end_sessions

require_torch()

pytestmark = pytest.mark.slow

ENTRY = ROOT / "tests" / "fixtures" / "render" / "resume_train.py"
TORCHRUN = Path(sys.executable).parent / "torchrun"
NODES, NPROC = 2, 1
WORLD = NODES * NPROC
STEPS, EVERY, KILL_STEP = 12, 3, 7  # checkpoints after steps 2, 5, 8, 11
KILL_RANK = WORLD - 1  # node 1's worker
TIMEOUT_S = 120
PRESET = "p5e-capacity-block"  # EKS, no FSx: the script derives nothing, the test sets the dir


def _stack() -> Stack:
    data = load_spec(STACKS / f"{PRESET}.yaml").model_dump()
    data["workload"]["entrypoint"] = str(ENTRY)
    data["workload"]["args"] = []
    return resolve(Spec.model_validate(data))


def _pod_env(stack: Stack) -> dict[str, str]:
    """The restart settings the rendered pods carry."""
    docs = {d["kind"]: d for d in yaml.safe_load_all(render_manifest(stack, "job")) if d}
    pod = docs["Job"]["spec"]["template"]["spec"]
    env = {e["name"]: e["value"] for e in pod["containers"][0]["env"] if "value" in e}
    return {k: env[k] for k in ("PET_MAX_RESTARTS", "TORCH_DISABLE_SHARE_RDZV_TCP_STORE")}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(tmp: Path, extra: dict[str, str]) -> list[subprocess.Popen[bytes]]:
    script = tmp / "launch.sh"
    stack = _stack()
    script.write_text(
        render_node_script(stack, orchestrator="standalone", procs_per_node_override=NPROC)
    )
    port = _free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SLURM_", "PET_", "TORCHELASTIC_", "ACCELSTACK_"))
        and k not in {"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK"}
    }
    env.update(
        {
            **_pod_env(stack),
            "PATH": f"{TORCHRUN.parent}{os.pathsep}{env.get('PATH', '')}",
            "ACCELSTACK_ORCHESTRATOR": "standalone",
            "ACCELSTACK_NNODES": str(NODES),
            "ACCELSTACK_HEAD_ADDR": "127.0.0.1",
            "ACCELSTACK_RDZV_PORT": str(port),
            "ACCELSTACK_RDZV_ID": f"resume-{port}",
            "ACCELSTACK_CHECKPOINT_DIR": str(tmp / "checkpoints"),
            "ACCELSTACK_NCCL_TRACE_DIR": str(tmp / "nccl-trace"),
            "ACCELSTACK_TEST_OUT": str(tmp),
            "ACCELSTACK_TEST_STEPS": str(STEPS),
            "ACCELSTACK_TEST_EVERY": str(EVERY),
            "ACCELSTACK_TEST_KILL_RANK": str(KILL_RANK),
            "ACCELSTACK_TEST_KILL_STEP": str(KILL_STEP),
            "ACCELSTACK_TEST_CRASH_MARKER": str(tmp / "killed"),
            "GLOO_SOCKET_IFNAME": "lo",
            "OMP_NUM_THREADS": "1",
            "ACCELSTACK_SKIP_FABRIC_CHECK": "1",  # no EFA on a CPU runner
            **extra,
        }
    )
    (tmp / "env.json").write_text(json.dumps(env))
    return [_start_node(tmp, rank) for rank in range(NODES)]


def _start_node(tmp: Path, rank: int, log_name: str | None = None) -> subprocess.Popen[bytes]:
    """One node: the rendered script in its own session (so the test can end it whole)."""
    env = json.loads((tmp / "env.json").read_text())
    with (tmp / (log_name or f"node{rank}.log")).open("wb") as log:
        return subprocess.Popen(
            ["bash", str(tmp / "launch.sh")],
            env={**env, "ACCELSTACK_NODE_RANK": str(rank)},
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=tmp,
            start_new_session=True,
        )


def _descendants(pid: int) -> list[int]:
    """Every process under `pid` (from /proc): torchrun starts its workers in sessions of
    their own, so ending the node's session alone would leave them running."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _kill_node(proc: subprocess.Popen[bytes]) -> None:
    """The node is gone: its script, torchrun agent and workers, all at once."""
    for pid in [proc.pid, *_descendants(proc.pid)]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    proc.wait()


def _starts(tmp: Path, rank: int) -> list[dict[str, object]]:
    lines = (tmp / f"starts-{rank}.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_rendered_script_exports_the_checkpoint_dir() -> None:
    script = render_node_script(_stack(), orchestrator="standalone")
    assert "export ACCELSTACK_CHECKPOINT_DIR" in script
    assert '"${ACCELSTACK_CHECKPOINT_URL%/}/p5e-capacity-block/"' in script


def test_a_killed_worker_resumes_from_the_last_checkpoint(tmp_path: Path) -> None:
    procs = _run(tmp_path, {})
    wait_then_end_sessions(procs, TIMEOUT_S)
    logs = [(tmp_path / f"node{r}.log").read_text(errors="replace") for r in range(NODES)]
    assert (tmp_path / "killed").exists(), logs[1][-3000:]
    for rank, p in enumerate(procs):
        assert p.returncode == 0, f"node {rank} exited {p.returncode}:\n{logs[rank][-4000:]}"
    last = STEPS - 1
    assert (tmp_path / "checkpoints" / "latest").read_text() == f"step-{last}"
    for rank in range(WORLD):
        first, second = _starts(tmp_path, rank)
        assert first["start"] == 0 and first["state"] == 0
        # the newest complete checkpoint before the kill at step 7 is step 5: resume at 6
        assert second["start"] == 6, second
        assert second["state"] == 6 * WORLD
        done = json.loads((tmp_path / f"done-{rank}.json").read_text())
        assert done["state"] == STEPS * WORLD  # as if nothing had happened


def test_without_checkpoints_a_restart_starts_over(tmp_path: Path) -> None:
    """The control: checkpoints every 100 steps (never) make the restart begin at step 0, so
    the test above proves the resume, not a lucky schedule."""
    procs = _run(tmp_path, {"ACCELSTACK_TEST_EVERY": "100"})
    wait_then_end_sessions(procs, TIMEOUT_S)
    assert (tmp_path / "killed").exists()
    assert all(p.returncode == 0 for p in procs)
    for rank in range(WORLD):
        assert [s["start"] for s in _starts(tmp_path, rank)] == [0, 0]


def test_a_replaced_node_rejoins_from_the_last_checkpoint(tmp_path: Path) -> None:
    """A whole node dies (its launch script and every process under it are SIGKILLed) after
    the step-5 checkpoint; a replacement node starts the same script (as the job controller
    does on a repaired or spare node); the survivor's collective times out, its torchrun agent
    restarts into a new rendezvous round with the replacement, and every rank resumes at
    step 6."""
    extra = {
        "ACCELSTACK_TEST_KILL_STEP": "-1",
        "ACCELSTACK_TEST_STEP_SECONDS": "0.4",
        "ACCELSTACK_TEST_COLLECTIVE_TIMEOUT": "10",
    }
    procs = _run(tmp_path, extra)
    latest = tmp_path / "checkpoints" / "latest"
    deadline = time.monotonic() + TIMEOUT_S
    while not (latest.exists() and latest.read_text() == "step-5"):
        assert time.monotonic() < deadline, "no step-5 checkpoint"
        assert procs[1].poll() is None, "node 1 ended before the fault"
        time.sleep(0.05)
    _kill_node(procs[1])
    replacement = _start_node(tmp_path, 1, "node1-replacement.log")
    wait_then_end_sessions([procs[0], replacement], TIMEOUT_S)
    logs = [(tmp_path / n).read_text(errors="replace")[-3000:] for n in ("node0.log",)]
    assert procs[0].returncode == 0 and replacement.returncode == 0, logs
    for rank in range(WORLD):
        starts = _starts(tmp_path, rank)
        assert starts[0]["start"] == 0
        assert starts[-1]["start"] == 6, starts  # resumed after the step-5 checkpoint
        done = json.loads((tmp_path / f"done-{rank}.json").read_text())
        assert done["state"] == STEPS * WORLD
