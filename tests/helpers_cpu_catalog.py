"""A catalog overlay that makes this machine's CPU an accelerator type, for the reference
benchmark's end-to-end test (tests/trial/test_reference.py): a family, an instance type, a
training path that launches torchrun with gloo, where it is offered and its price, the Python
environment its node script activates, and the throughput rows every accelerated family needs.
Added as a team adds a type (README: "Your own catalog facts ... live in a catalog overlay").

The family's dense BF16 peak is twice the rate one core reaches here on a large BF16 matrix
product, measured when the overlay is written: an upper bound of what the benchmark's
processes (one thread each) can execute, as a datasheet peak is. A CPU step at a small shape
runs far below that, so the overlay lowers throughput.yaml's MFU floor (spreads.mfu_floor, which
exists to catch a CPU run recorded as an accelerator) for this CPU family's catalog.

Throughput.yaml rows here follow its current layout (`curves`, `step`, `spreads`); when the run
model's layout changes, this is the one test file to follow it."""

from __future__ import annotations

import math
import time
from pathlib import Path

import yaml

CPU_TYPE = "cpu.trial"
FAMILY = "cpu-trial"


def bf16_gemm_tflops(size: int = 1024, seconds: float = 0.3) -> float:
    """The BF16 matrix-product rate of one thread on this machine, TFLOP/s."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        a = torch.randn(size, size, dtype=torch.bfloat16)
        b = torch.randn(size, size, dtype=torch.bfloat16)
        a @ b  # warm-up
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            a @ b
            n += 1
        return 2 * size**3 * n / (time.perf_counter() - start) / 1e12
    finally:
        torch.set_num_threads(threads)


def _instances(peak: float) -> dict[str, object]:
    return {
        "families": {
            FAMILY: {
                "accelerator": "CPU (test stand-in)",
                "device_kind": "cpu",
                "peak_tflops": {"bf16": peak},
                "peak_source": "twice one core's measured BF16 GEMM rate (tests)",
                "peak_as_of": "2026",
                "device_names": ["*"],
                "default_logical_cores": 1,
                "default_root_volume_gib": 100,
            }
        },
        "instances": {
            CPU_TYPE: {
                "family": FAMILY,
                "chips": 2,
                "physical_cores_per_chip": 1,
                "accelerator_memory_gib": 8,
                "vcpus": 16,
                "memory_gib": 64,
                "network_cards": 1,
                "efa_interfaces": 0,
                "efa_gbps": 0,
                "ipv4_per_interface": 10,
                "source": "test stand-in",
            }
        },
        "frameworks": {
            "torch-cpu": {
                "device_kind": "cpu",
                "title": "PyTorch on CPU with gloo (test stand-in)",
                "status": "supported",
                "status_note": "",
                "node_template": "cuda-node.sh.j2",
                "dist_backend": "gloo",
                "ranks_note": "one process per core",
                "default_image": None,
                "image_note": "tests",
                "compile_cache": "none",
                "cache_var": None,
                "precompile": False,
                "reference_benchmark": True,
                "source": "tests",
            }
        },
        "device_kinds": {"cpu": {"frameworks": ["torch-cpu"], "default_framework": "torch-cpu"}},
    }


def cpu_overlay(tmp: Path) -> Path:
    """The overlay directory (under `tmp`), with the peak measured now."""
    peak = math.ceil(2 * bf16_gemm_tflops() * 1000) / 1000
    d = tmp / "cpu-catalog"
    d.mkdir()
    files: dict[str, object] = {
        "instances.yaml": _instances(peak),
        "offerings_extra.yaml": {"regions": {"us-east-2": {"types": {CPU_TYPE: ["use2-az1"]}}}},
        "prices.yaml": {
            "instances": [
                {
                    "region": "us-east-2",
                    "type": CPU_TYPE,
                    "option": "on-demand",
                    "usd": 1.0,
                    "as_of": "2026-11",
                    "estimate": False,
                    "source": "test stand-in",
                }
            ]
        },
        "launch.yaml": {
            "dlami_python_envs": [
                {
                    "device_kind": "cpu",
                    "path": "torch-cpu",
                    "families": [FAMILY],
                    "activate": "/opt/venv/bin/activate",
                    "source": "tests",
                }
            ]
        },
        "throughput.yaml": {
            "curves": [
                {
                    "family": FAMILY,
                    "precisions": ["bf16"],
                    "basis": "extrapolated",
                    "from_curve": {"family": "h100", "precision": "bf16"},
                    "factor": 1.0,
                    "extra_spread": 0.5,
                    "reason": "a test stand-in: priced from its measurement",
                }
            ],
            "step": [
                {
                    "family": FAMILY,
                    "basis": "extrapolated",
                    "from_family": "h100",
                    "attention_relative_to_dense": True,
                    "inherit_experts": False,
                    "reason": "a test stand-in: priced from its measurement",
                }
            ],
            "spreads": {"mfu_floor": 0.001},
        },
    }
    for name, data in files.items():
        (d / name).write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return d
