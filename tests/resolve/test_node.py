"""What one node gives a training pod (accelstack/resolve/node.py), attached to each resolved
pool: requests from node allocatable, EFA huge pages and capabilities, the DLAMI Python
environment; a type whose nodes have no room for a pod is refused (`pool-pod-room`)."""

from __future__ import annotations

import pytest

from accelstack.errors import SpecError
from accelstack.resolve import resolve
from accelstack.resolve.node import kube_reserved_millicores
from accelstack.spec import load_spec

from ..conftest import STACKS
from ..helpers_render import preset_stack


def test_kube_reserved_cpu_follows_the_eks_ami_tiers(catalog) -> None:
    tiers = catalog.launch.pods.kube_reserved_cpu_tiers
    # 6% of the first core, 1% of the second, 0.5% of cores 3-4, 0.25% above
    assert [kube_reserved_millicores(n, tiers) for n in (1, 2, 4, 8, 192)] == [60, 70, 80, 90, 550]


def test_requests_fit_the_node_by_hand() -> None:
    """p5.48xlarge: 192 vCPU, 2048 GiB, EFA. trn1.2xlarge: 8 vCPU, 32 GiB, no EFA."""
    p5 = preset_stack("llama3-70b-p5").workload_pool
    res = p5.pod
    assert res.cpu == f"{192_000 - 550 - 1000}m"
    # 7.5% hypervisor, kube-reserved 11 x 250 + 255, eviction 100, DaemonSets 4096, EFA pages
    assert res.memory_mib == int(2048 * 1024 * 0.925) - (3005 + 100 + 4096 + 10256)
    assert (res.hugepages, res.add_capabilities) == ("5120Mi", ("IPC_LOCK",))
    assert p5.hugepages_2mi == 10256 // 2  # the node allocates what the pod asks, and more
    small = preset_stack("trn1-finetune").workload_pool
    res = small.pod
    assert res.cpu == f"{8000 - 90 - 1000}m"
    assert res.memory_mib == int(32 * 1024 * 0.925) - (11 * 110 + 255 + 100 + 4096)
    assert (res.hugepages_mib, res.add_capabilities, small.hugepages_2mi) == (0, (), 0)


def test_each_pool_runs_the_python_environment_of_its_training_path() -> None:
    for stem, activate in (
        ("trn1-multinode", "/opt/aws_neuronx_venv_pytorch_2_9/bin/activate"),
        ("llama3-70b-p5", "/opt/pytorch/bin/activate"),
    ):
        assert preset_stack(stem).workload_pool.python_env.activate == activate


def test_a_type_without_room_for_a_pod_is_refused_in_one_line(catalog) -> None:
    """Was a render-time error: validation now says it (a catalog overlay can add such a
    type)."""
    inst = catalog.instances["trn1.2xlarge"].model_copy(update={"vcpus": 1, "memory_gib": 2})
    tiny = catalog.model_copy(update={"instances": {**catalog.instances, inst.name: inst}})
    spec = load_spec(STACKS / "trn1-finetune.yaml")
    with pytest.raises(SpecError) as err:
        resolve(spec, tiny)
    (line,) = [str(p) for p in err.value.problems]
    assert "pools[0].instance_type: trn1.2xlarge: 1 vCPUs and 2 GiB leave no room" in line
