"""PyTorch's NCCL flight recorder on CUDA jobs, as awsome-distributed-training's EKS jobs set it
(catalog launch.yaml nccl_flight_recorder, with the source): the ring buffer, the dump on a
collective timeout, the watchdog's heartbeat monitor and where each rank's dump goes, each
with its one-line reason; not on Neuron pools, whose collectives are not NCCL's."""

from __future__ import annotations

from pathlib import Path

from accelstack.render import render_node_script

from ..helpers_render import preset_stack, run_script

VARS = (
    "TORCH_NCCL_TRACE_BUFFER_SIZE",
    "TORCH_NCCL_DUMP_ON_TIMEOUT",
    "TORCH_NCCL_ENABLE_MONITORING",
    "TORCH_NCCL_DEBUG_INFO_TEMP_FILE",
)


def test_cuda_jobs_run_with_the_flight_recorder(tmp_path: Path) -> None:
    """Fails on the old CUDA script, which set none of them."""
    stack = preset_stack("llama3-70b-p5")
    fr = stack.launch.nccl_flight_recorder
    assert fr is not None and "awsome-distributed-training@" in fr.source
    script = render_node_script(stack, None, "standalone")
    for var in VARS:
        (line,) = [x for x in script.splitlines() if x.startswith(f"export {var}=")]
        assert "  # " in line, line  # its one-line reason
    env = {
        "ACCELSTACK_NNODES": "1",
        "ACCELSTACK_NCCL_TRACE_DIR": str(tmp_path / "trace"),
        "ACCELSTACK_ARGV_ENV": ",".join(VARS),
    }
    proc, dump = run_script(script, tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    assert dump is not None
    got = dump["env"]
    assert got["TORCH_NCCL_TRACE_BUFFER_SIZE"] == str(fr.trace_buffer_size)
    assert got["TORCH_NCCL_DUMP_ON_TIMEOUT"] == got["TORCH_NCCL_ENABLE_MONITORING"] == "1"
    assert got["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"] == f"{tmp_path / 'trace'}/rank_"
    assert (tmp_path / "trace").is_dir()
    # by default under the state directory: FSx on this preset, kept after the pod
    assert "${ACCELSTACK_STATE_DIR:-/fsx/.accelstack/h100}/nccl-trace/llama3-70b-p5" in script


def test_neuron_jobs_do_not_set_nccl_variables() -> None:
    script = render_node_script(preset_stack("llama3-70b-trn2"), None, "standalone")
    assert not [v for v in VARS if v in script]
