"""A real run: the rendered Neuron and CUDA node scripts start real torchrun (torch CPU build),
2 nodes on 127.0.0.1, with the standalone orchestrator variables: 2 processes per node for the
CUDA script, 1 for the Neuron scripts. The torchrun arguments that make the local ranks
(--nproc_per_node) are node-base.sh.j2's, shared by every script, so one script's run with two
per node checks LOCAL_RANK and LOCAL_WORLD_SIZE for all (tests/render/test_trainjob.py runs
the TrainJob's the same way); each process is a torch start of about two CPU seconds.

Two script invocations run concurrently (node ranks 0 and 1). The entrypoint
(tests/fixtures/render/entry.py) starts a gloo process group, checks WORLD_SIZE, RANK,
LOCAL_RANK and the environment the script promised, all-reduces a tensor and writes its
result. Only the Neuron-only binary `neuron_parallel_compile` is replaced, by the documented
shim in tests/shims/neuron/. Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from accelstack.catalog import load_catalog
from accelstack.resolve import Stack, resolve
from accelstack.spec import Spec, load_spec

from ..conftest import ROOT, STACKS, require_torch
from ..helpers_render import fabric_env, wait_then_end_sessions

require_torch()

pytestmark = pytest.mark.slow

ENTRY = ROOT / "tests" / "fixtures" / "render" / "entry.py"
NEURON_SHIMS = ROOT / "tests" / "shims" / "neuron"
TORCHRUN = Path(sys.executable).parent / "torchrun"
NODES = 2
NPROC_CUDA, NPROC_NEURON = 2, 1  # processes per node
HOSTILE_ARGS = [
    "--lr",
    "3e-4",
    "--",
    "-x",
    "$(touch pwned)",
    "`id`",
    "it's",
    'say "hi"',
    "two\tlines",  # newlines are refused by validation (one line per argument)
    "ünïcødé 😀",
    "",
    "*",
    "${HOME}",
    "a\\b",
]
TIMEOUT_S = 150  # a safety net for loaded machines; a run takes 10-30 s


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _local_stack(preset: str, tmp: Path) -> Stack:
    spec = load_spec(STACKS / f"{preset}.yaml")
    data = spec.model_dump()
    data["workload"]["entrypoint"] = str(ENTRY)
    data["workload"]["args"] = HOSTILE_ARGS
    data["workload"]["env"] = {"SPEC_TEST_MARK": "from spec 'quoted' $(not run)"}
    return resolve(Spec.model_validate(data), load_catalog())


def _run_nodes(script: Path, out: Path, expect: dict[str, object], stack: Stack) -> list[str]:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "PET_"))}
    for k in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK"):
        env.pop(k, None)
    env.update(
        {
            "PATH": f"{NEURON_SHIMS}{os.pathsep}{TORCHRUN.parent}{os.pathsep}{env.get('PATH', '')}",
            "ACCELSTACK_ORCHESTRATOR": "standalone",
            "ACCELSTACK_NNODES": str(NODES),
            "ACCELSTACK_HEAD_ADDR": "127.0.0.1",
            "ACCELSTACK_RDZV_PORT": str(port),
            "ACCELSTACK_RDZV_ID": f"test-{port}",
            "ACCELSTACK_TEST_OUT": str(out),
            "ACCELSTACK_SHIM_DIR": str(out),
            "ACCELSTACK_TEST_EXPECT": json.dumps(expect),
            "GLOO_SOCKET_IFNAME": "lo",
            "OMP_NUM_THREADS": "1",
            "PYTHONUNBUFFERED": "1",
            "ACCELSTACK_STATE_DIR": str(out / "state"),
            "ACCELSTACK_NEFF_CACHE_DIR": str(out / "neff-cache"),
            "ACCELSTACK_CHECKPOINT_DIR": str(out / "checkpoints"),  # never the preset's /fsx
            "ACCELSTACK_NCCL_TRACE_DIR": str(out / "nccl-trace"),  # nor its FSx state dir
        }
    )
    # the fabric self-check runs for real against faked probes showing the catalog's counts
    fabric = fabric_env(out / "sysroot", stack.workload_pool)
    env.update(
        {**fabric, "PATH": f"{fabric['PATH'].split(os.pathsep)[0]}{os.pathsep}{env['PATH']}"}
    )
    procs = []
    logs = []
    for rank in range(NODES):
        log = open(out / f"node{rank}.log", "w+b")  # noqa: SIM115
        logs.append(log)
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
    wait_then_end_sessions(procs, TIMEOUT_S)
    texts = []
    for log in logs:
        log.seek(0)
        texts.append(log.read().decode(errors="replace"))
        log.close()
    for rank, p in enumerate(procs):
        assert p.returncode == 0, f"node {rank} exited {p.returncode}:\n{texts[rank][-4000:]}"
    return texts


def _results(out: Path, phase: str) -> list[dict[str, object]]:
    files = sorted(out.glob(f"{phase}-*.json"))
    return [json.loads(f.read_text()) for f in files]


def _check_phase(
    results: list[dict[str, object]],
    expect_env: dict[str, str],
    nproc: int,
    *,
    collective: bool = True,
) -> None:
    world = NODES * nproc
    assert sorted(r["rank"] for r in results) == list(range(world))  # type: ignore[type-var]
    total = world * (world + 1) / 2
    want = total if collective else None
    assert {r["allreduce"] for r in results} == {want}, "ranks disagree on the all-reduce"
    for r in results:
        checks = r["checks"]
        assert isinstance(checks, dict)
        assert checks["world_size_env"] and checks["rank_env"] and checks["local_rank"]
        assert checks["local_world"], r
        assert all(checks["env"].values()), (checks["env"], expect_env)
        assert r["argv"] == HOSTILE_ARGS, "arguments did not arrive verbatim"


def test_neuron_script_real_torchrun(tmp_path: Path) -> None:
    from accelstack.render import render_node_script

    stack = _local_stack("trn1-multinode", tmp_path)
    assert stack.framework == "xla"  # trn1: the legacy XLA path
    assert stack.workload_pool.procs_per_node == 32  # production value from the catalog
    script = tmp_path / "launch.sh"
    script.write_text(
        render_node_script(
            stack,
            orchestrator="standalone",
            bucket="test-cache",
            procs_per_node_override=NPROC_NEURON,
        )
    )
    promised = {
        "NEURON_COMPILE_CACHE_URL": "s3://test-cache/neuron-cache/trn1/",
        "FI_PROVIDER": "efa",
        "NEURON_RT_NUM_CORES": "1",
        "ACCELSTACK_DIST_BACKEND": "xla",
        "XLA_DOWNCAST_BF16": None,  # deprecated after SDK 2.24: never set
        "SPEC_TEST_MARK": "from spec 'quoted' $(not run)",
    }
    expect = {"world_size": NODES * NPROC_NEURON, "nproc": NPROC_NEURON, "env": promised}
    texts = _run_nodes(script, tmp_path, expect, stack)
    assert all("fabric check passed (8 EFA, 16 accelerators)" in x for x in texts)
    pre, train = _results(tmp_path, "precompile"), _results(tmp_path, "train")
    _check_phase(pre, promised, NPROC_NEURON, collective=False)
    _check_phase(train, promised, NPROC_NEURON)
    steps = stack.spec.workload.precompile_steps
    assert {r["max_steps"] for r in pre} == {str(steps)}
    assert {r["max_steps"] for r in train} == {None}
    # the shim ran once per node and finished before any training process started
    ends = [int(p.read_text()) for p in tmp_path.glob("neuron_parallel_compile.*.end")]
    assert len(ends) == NODES
    assert max(ends) < min(int(r["started_ns"]) for r in train)  # type: ignore[call-overload]
    assert not (tmp_path / "pwned").exists()
    # the one-shot marker: a restarted worker of this job would go straight to training
    markers = [p.name for p in (tmp_path / "state").iterdir()]
    assert len(markers) == 1 and markers[0].startswith("precompiled-test-")


def test_cuda_script_real_torchrun(tmp_path: Path) -> None:
    from accelstack.render import render_node_script

    stack = _local_stack("llama3-70b-p5", tmp_path)
    assert stack.workload_pool.procs_per_node == 8
    script = tmp_path / "launch.sh"
    script.write_text(
        render_node_script(stack, orchestrator="standalone", procs_per_node_override=NPROC_CUDA)
    )
    promised = {
        "NCCL_SOCKET_IFNAME": "^lo,docker",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
        "FI_EFA_SET_CUDA_SYNC_MEMOPS": "0",
        "NCCL_NET_PLUGIN": "ofi",  # aws-ofi-nccl by name
        "NCCL_NET": "Libfabric",  # no silent fallback to sockets
        "NCCL_DEBUG": None,  # off unless the user asks
        "FI_EFA_USE_HUGE_PAGE": None,  # pods (EKS preset): only host runs set it
        "ACCELSTACK_DIST_BACKEND": "nccl",
        "SPEC_TEST_MARK": "from spec 'quoted' $(not run)",
    }
    expect = {"world_size": NODES * NPROC_CUDA, "nproc": NPROC_CUDA, "env": promised}
    texts = _run_nodes(script, tmp_path, expect, stack)
    assert all("fabric check passed (32 EFA, 8 accelerators)" in x for x in texts)
    assert _results(tmp_path, "precompile") == []
    _check_phase(_results(tmp_path, "train"), promised, NPROC_CUDA)
    assert not list(tmp_path.glob("neuron_parallel_compile.*"))
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize(("preset", "ranks"), [("llama3-70b-trn2", 64), ("trn3-preview", 64)])
def test_native_neuron_script_real_torchrun(tmp_path: Path, preset: str, ranks: int) -> None:
    """trn2/trn3 presets render the native TorchNeuron path: one rank per logical NeuronCore,
    the NEFF cache directory, no pre-compile phase; gloo stands in for the `neuron` backend."""
    from accelstack.render import render_node_script

    stack = _local_stack(preset, tmp_path)
    pool = stack.workload_pool
    assert stack.framework == "torchneuron"
    assert pool.procs_per_node == ranks  # one rank per logical NeuronCore at LNC=2 (catalog)
    script = tmp_path / "launch.sh"
    script.write_text(
        render_node_script(stack, orchestrator="standalone", procs_per_node_override=NPROC_NEURON)
    )
    text = script.read_text()
    assert "neuron_parallel_compile" not in text and "NEURON_COMPILE_CACHE_URL" not in text
    promised = {
        "TORCH_NEURONX_NEFF_CACHE_DIR": str(tmp_path / "neff-cache"),
        "NEURON_LOGICAL_NC_CONFIG": "2",
        "ACCELSTACK_DIST_BACKEND": "neuron",
        "FI_PROVIDER": "efa",
        "NEURON_COMPILE_CACHE_URL": None,
        "XLA_DOWNCAST_BF16": None,
        "SPEC_TEST_MARK": "from spec 'quoted' $(not run)",
    }
    expect = {"world_size": NODES * NPROC_NEURON, "nproc": NPROC_NEURON, "env": promised}
    texts = _run_nodes(script, tmp_path, expect, stack)
    efa, chips = pool.efa_interfaces, pool.accelerators_per_node
    assert all(f"fabric check passed ({efa} EFA, {chips} accelerators)" in x for x in texts)
    assert _results(tmp_path, "precompile") == []
    _check_phase(_results(tmp_path, "train"), promised, NPROC_NEURON)
    assert (tmp_path / "neff-cache").is_dir()
    assert not list(tmp_path.glob("neuron_parallel_compile.*"))
    assert not (tmp_path / "pwned").exists()
