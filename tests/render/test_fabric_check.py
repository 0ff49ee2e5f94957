"""The fabric self-check each node script runs before torchrun: the EFA provider is present,
the EFA interface count and the accelerator count equal the catalog's, else one clear line and
a non-zero exit. The probes are faked on CPU: `fi_info` and `nvidia-smi` shims first on PATH
(tests/shims/fabric) and a fake /sys and /dev tree through ACCELSTACK_TEST_SYSROOT."""

from __future__ import annotations

from pathlib import Path

import pytest

from accelstack.render import render_node_script

from ..helpers_render import fabric_env, fake_sysroot, preset_stack, run_script

STANDALONE = {"ACCELSTACK_ORCHESTRATOR": "standalone", "ACCELSTACK_NNODES": "1"}
#: (preset, what the catalog says: EFA interfaces, accelerators)
CASES = [
    ("llama3-70b-trn2", 16, 16),  # native TorchNeuron path
    ("trn1-multinode", 8, 16),  # XLA path
    ("llama3-70b-p5", 32, 8),  # CUDA
    ("trn1-finetune", 0, 1),  # no EFA on trn1.2xlarge: only the device count
]


def _script(preset: str) -> tuple[str, object]:
    stack = preset_stack(preset)
    return render_node_script(stack, None, "standalone", bucket="b"), stack.workload_pool


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("accelstack: error:")]


@pytest.mark.parametrize(("preset", "efa", "accel"), CASES)
def test_counts_come_from_the_catalog(preset: str, efa: int, accel: int) -> None:
    script, pool = _script(preset)
    assert pool.efa_interfaces == efa and pool.accelerators_per_node == accel  # type: ignore[attr-defined]
    assert f'[[ "$accel_found" == {accel} ]]' in script
    assert (f'[[ "$efa_found" == {efa} ]]' in script) == (efa > 0)
    assert ("fi_info" in script) == (efa > 0)
    # the check runs before any torchrun
    assert script.index("fabric self-check") < script.index('"$torchrun_bin"')


@pytest.mark.parametrize(("preset", "efa", "accel"), CASES)
def test_matching_node_proceeds_to_torchrun(
    tmp_path: Path, preset: str, efa: int, accel: int
) -> None:
    script, pool = _script(preset)
    proc, dump = run_script(script, tmp_path, {**STANDALONE, **fabric_env(tmp_path / "root", pool)})
    assert proc.returncode == 0, proc.stderr
    assert f"fabric check passed ({efa} EFA, {accel} accelerators)" in proc.stderr
    assert dump is not None  # torchrun started


@pytest.mark.parametrize("preset", ["llama3-70b-trn2", "trn1-multinode", "llama3-70b-p5"])
def test_missing_efa_interface_stops_the_node(tmp_path: Path, preset: str) -> None:
    script, pool = _script(preset)
    env = fabric_env(tmp_path / "root", pool)
    ib = tmp_path / "root" / "dev" / "infiniband"
    next(ib.iterdir()).unlink()  # the pod was given one interface fewer than the node has
    # the host's sysfs still lists every device: the check must not count those
    sysfs = tmp_path / "root" / "sys" / "class" / "infiniband"
    sysfs.mkdir(parents=True)
    for i in range(pool.efa_interfaces):  # type: ignore[attr-defined]
        (sysfs / f"rdmap{i}s0").mkdir()
    proc, dump = run_script(script, tmp_path, {**STANDALONE, **env})
    want = pool.efa_interfaces  # type: ignore[attr-defined]
    assert proc.returncode == 2 and dump is None
    assert _errors(proc.stderr) == [
        f"accelstack: error: fabric check: {want - 1} EFA device(s) in /dev/infiniband, "
        f"{pool.instance_type} has {want} (pool {pool.name}): "  # type: ignore[attr-defined]
        f"request all {want} vpc.amazonaws.com/efa"
    ]


def test_missing_nccl_plugin_stops_a_cuda_node(tmp_path: Path) -> None:
    script, pool = _script("llama3-70b-p5")
    env = fabric_env(tmp_path / "root", pool)
    assert "libnccl-net-ofi.so" in script
    (tmp_path / "root" / "nccl-plugin" / "libnccl-net-ofi.so").unlink()
    proc, dump = run_script(script, tmp_path, {**STANDALONE, **env})
    assert proc.returncode == 2 and dump is None
    (line,) = _errors(proc.stderr)
    assert "NCCL network plugin libnccl-net-ofi.so (aws-ofi-nccl) does not load" in line


def test_neuron_nodes_do_not_check_an_nccl_plugin() -> None:
    script, _ = _script("llama3-70b-trn2")
    assert "libnccl-net" not in script


def test_missing_efa_provider_stops_the_node(tmp_path: Path) -> None:
    script, pool = _script("llama3-70b-p5")
    env = {**fabric_env(tmp_path / "root", pool), "ACCELSTACK_FAKE_EFA_PROVIDER": "absent"}
    proc, dump = run_script(script, tmp_path, {**STANDALONE, **env})
    assert proc.returncode == 2 and dump is None
    (line,) = _errors(proc.stderr)
    assert "libfabric has no EFA provider ('fi_info -p efa' failed)" in line


def test_wrong_gpu_count_stops_the_node(tmp_path: Path) -> None:
    script, pool = _script("llama3-70b-p5")
    env = fabric_env(tmp_path / "root", pool, gpus=7)
    proc, dump = run_script(script, tmp_path, {**STANDALONE, **env})
    assert proc.returncode == 2 and dump is None
    assert _errors(proc.stderr) == [
        "accelstack: error: fabric check: 7 NVIDIA H100 80GB SXM device(s) visible, "
        "p5.48xlarge has 8 (pool h100)"
    ]


def test_wrong_neuron_device_count_stops_the_node(tmp_path: Path) -> None:
    script, pool = _script("llama3-70b-trn2")
    root = tmp_path / "root"
    env = fabric_env(root, pool)
    (root / "dev" / "neuron15").unlink()
    proc, dump = run_script(script, tmp_path, {**STANDALONE, **env})
    assert proc.returncode == 2 and dump is None
    assert _errors(proc.stderr) == [
        "accelstack: error: fabric check: 15 AWS Trainium2 device(s) visible, "
        "trn2.48xlarge has 16 (pool trn2)"
    ]


def test_empty_node_reports_zero(tmp_path: Path) -> None:
    script, _ = _script("trn1-finetune")
    root = fake_sysroot(tmp_path / "root", efa=0)
    env = {"ACCELSTACK_SKIP_FABRIC_CHECK": "0", "ACCELSTACK_TEST_SYSROOT": str(root)}
    proc, _dump = run_script(script, tmp_path, {**STANDALONE, **env})
    assert proc.returncode == 2
    assert _errors(proc.stderr) == [
        "accelstack: error: fabric check: 0 AWS Trainium device(s) visible, "
        "trn1.2xlarge has 1 (pool trn1)"
    ]


def test_skip_switch(tmp_path: Path) -> None:
    script, _ = _script("llama3-70b-p5")
    proc, dump = run_script(script, tmp_path, {**STANDALONE, "ACCELSTACK_SKIP_FABRIC_CHECK": "1"})
    assert proc.returncode == 0 and dump is not None
    assert "fabric check skipped" in proc.stderr
