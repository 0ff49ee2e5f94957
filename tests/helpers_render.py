"""Helpers for the render tests: preset stacks, spec variants, running rendered scripts."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from accelstack.catalog import load_catalog
from accelstack.resolve import Stack, resolve, resolve_unchecked
from accelstack.spec import Spec, load_spec

from .conftest import ROOT, STACKS
from .factories import EKS_NODE_SETTINGS

SHIMS = ROOT / "tests" / "shims"
ARGV_SHIM_DIR = SHIMS / "argv"
SHELLCHECK = Path(sys.executable).parent / "shellcheck"
#: shellcheck severity used everywhere: style, the strictest level (every finding fails).
SHELLCHECK_ARGS = ["-S", "style", "-s", "bash", "-f", "gcc"]
#: Variables an orchestrator may set; cleared before running a script under test.
ORCH_VARS = (
    "MASTER_ADDR",
    "MASTER_PORT",
    "WORLD_SIZE",
    "RANK",
    "PET_NNODES",
    "PET_NODE_RANK",
    "PET_MASTER_ADDR",
    "PET_MASTER_PORT",
    "SLURM_JOB_ID",
    "SLURM_NNODES",
    "SLURM_NODEID",
    "SLURM_JOB_NODELIST",
    "ACCELSTACK_ORCHESTRATOR",
    "ACCELSTACK_NNODES",
    "ACCELSTACK_NODE_RANK",
    "ACCELSTACK_HEAD_ADDR",
    "ACCELSTACK_RDZV_PORT",
    "ACCELSTACK_RDZV_ID",
    "ACCELSTACK_COMPILE_CACHE_URL",
)


def preset_stack(name: str) -> Stack:
    return resolve(load_spec(STACKS / f"{name}.yaml"), load_catalog())


def variant(name: str, **changes: Any) -> Stack:
    """A preset with top-level, `workload` (keys prefixed `wl_`) or every pool's (prefixed
    `pool_`) changes, resolved: every rule holds it."""
    data = load_spec(STACKS / f"{name}.yaml").model_dump()
    for key, value in changes.items():
        if key.startswith("wl_"):
            data["workload"][key[3:]] = value
        elif key.startswith("pool_"):
            for pool in data["pools"]:
                pool[key[5:]] = value
        else:
            data[key] = value
    return resolve(Spec.model_validate(data), load_catalog())


def standalone_variant(name: str, **changes: Any) -> Stack:
    """A preset moved to orchestration ec2 (standalone instances) as a user would move it:
    its EKS-only pool settings (factories.EKS_NODE_SETTINGS) unset."""
    unset = {f"pool_{key}": None for key in EKS_NODE_SETTINGS}
    return variant(name, orchestration="ec2", **unset, **changes)


def unchecked_variant(name: str, **workload: Any) -> Stack:
    """A preset with `workload` fields replaced WITHOUT validation: render's own quoting must
    hold even for values validation refuses (newlines, C1 controls: defence in depth)."""
    spec = load_spec(STACKS / f"{name}.yaml")
    wl = spec.workload.model_copy(update=workload)
    return resolve_unchecked(spec.model_copy(update={"workload": wl}), load_catalog())


def run_script(
    script: str, tmp: Path, env: dict[str, str], *, timeout: float = 20
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    """Run a rendered script with the argv-dumping fake torchrun; return (process, dump)."""
    path = tmp / "launch.sh"
    path.write_text(script, encoding="utf-8")
    out = tmp / "argv.bin"
    for f in (out, out.with_name("argv.bin.env")):
        if f.exists():
            f.unlink()
    base = {k: v for k, v in os.environ.items() if k not in ORCH_VARS}
    full = {
        **base,
        "ACCELSTACK_TORCHRUN": str(ARGV_SHIM_DIR / "torchrun"),
        "ACCELSTACK_ARGV_OUT": str(out),
        "ACCELSTACK_SKIP_PRECOMPILE": "1",
        "ACCELSTACK_SKIP_FABRIC_CHECK": "1",  # tests/render/test_fabric_check.py covers the check
        "ACCELSTACK_CHECKPOINT_DIR": str(tmp / "checkpoints"),  # an EKS script needs one
        "ACCELSTACK_NCCL_TRACE_DIR": str(tmp / "nccl-trace"),  # CUDA scripts: not the FSx state dir
        **env,
    }
    proc = subprocess.run(
        ["bash", str(path)],
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=tmp,
        check=False,
    )
    dump = _read_dump(out) if out.exists() else None
    return proc, dump


def _read_dump(out: Path) -> dict[str, Any]:
    """Decode the NUL-separated files the fake torchrun writes."""
    argv = [b.decode() for b in out.read_bytes().split(b"\0")[:-1]]
    raw = out.with_name(out.name + ".env").read_bytes().split(b"\0")[:-1]
    env = {raw[i].decode(): raw[i + 1].decode() for i in range(0, len(raw), 2)}
    return {"argv": argv, "env": env}


def torchrun_opts(argv: list[str]) -> dict[str, str]:
    """--key=value options before the entrypoint."""
    opts = {}
    for a in argv:
        if not a.startswith("--"):
            break
        key, _, value = a[2:].partition("=")
        opts[key] = value
    return opts


FABRIC_SHIM_DIR = SHIMS / "fabric"


def fake_sysroot(root: Path, *, efa: int, neuron_devices: int = 0) -> Path:
    """A directory standing in for / (ACCELSTACK_TEST_SYSROOT): `efa` uverbs devices under
    dev/infiniband (what the EFA device plugin mounts into a pod) and `neuron_devices`
    dev/neuron<N> files."""
    ib = root / "dev" / "infiniband"
    ib.mkdir(parents=True, exist_ok=True)
    for i in range(efa):
        (ib / f"uverbs{i}").touch()
    dev = root / "dev"
    for i in range(neuron_devices):
        (dev / f"neuron{i}").touch()
    return root


def nccl_plugin_env(root: Path, pool: Any) -> dict[str, str]:
    """LD_LIBRARY_PATH with a loadable stand-in for the pool's NCCL network plugin (a copy of
    the C math library under the plugin's file name: dlopen only needs a valid shared object),
    and the test's Python for the load check; empty for pools without the plugin."""
    plugin = pool.framework.nccl_net_plugin if pool.framework and pool.efa else None
    if not plugin:
        return {}
    import ctypes.util
    import shutil

    libdir = root / "nccl-plugin"
    libdir.mkdir(parents=True, exist_ok=True)
    libm = ctypes.util.find_library("m") or "libm.so.6"
    src = next(
        (
            Path(d) / libm
            for d in (
                "/lib/x86_64-linux-gnu",
                "/usr/lib/x86_64-linux-gnu",
                "/lib64",
                "/usr/lib64",
                "/lib/aarch64-linux-gnu",
            )
            if (Path(d) / libm).exists()
        ),
        None,
    )
    assert src is not None, "no C math library to stand in for the NCCL plugin"
    shutil.copy(src, libdir / f"libnccl-net-{plugin}.so")
    old = os.environ.get("LD_LIBRARY_PATH", "")
    return {
        "LD_LIBRARY_PATH": f"{libdir}{os.pathsep}{old}" if old else str(libdir),
        "ACCELSTACK_PYTHON": sys.executable,
    }


def fabric_env(root: Path, pool: Any, *, gpus: int | None = None) -> dict[str, str]:
    """Environment that makes the fabric self-check of `pool` see what the catalog promises
    (fake probes first on PATH, fake sysroot); pass `gpus` to fake another GPU count."""
    neuron = pool.accelerators_per_node if pool.device.accelerator_probe == "neuron-dev" else 0
    fake_sysroot(root, efa=pool.efa_interfaces, neuron_devices=neuron)
    return {
        **nccl_plugin_env(root, pool),
        "ACCELSTACK_SKIP_FABRIC_CHECK": "0",
        "ACCELSTACK_TEST_SYSROOT": str(root),
        "ACCELSTACK_FAKE_GPUS": str(pool.accelerators_per_node if gpus is None else gpus),
        "PATH": f"{FABRIC_SHIM_DIR}{os.pathsep}{os.environ.get('PATH', '')}",
    }


def wait_then_end_sessions(procs: list[subprocess.Popen[bytes]], timeout_s: float) -> None:
    """Wait up to `timeout_s` for every node (each started with start_new_session=True), then
    end each node's whole session, even when its bash has exited: a failed node can leave its
    own or its peer's torchrun workers hanging in a collective."""
    deadline = time.monotonic() + timeout_s
    try:
        for p in procs:
            p.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        pass
    finally:
        for p in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
