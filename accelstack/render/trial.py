"""`accelstack trial`: a short benchmark job on ONE node of each accelerated pool of a spec.

For each pool the spec is copied with the workload moved to that pool on one node; the
entrypoint becomes the trial wrapper `accelstack_trial.py` (accelstack/trial/runner.py, copied
beside the scripts) with the user's entrypoint and arguments after it, and the trial's
facts travel as environment variables of the workload (ACCELSTACK_MAX_STEPS: steps to run;
ACCELSTACK_TRIAL_*: what the record needs). The node script is the same template as
`accelstack render` (standalone orchestrator; ACCELSTACK_* variables override it at run time).
Each node appends one JSON line to ACCELSTACK_TRIAL_RECORDS; `accelstack calibrate` reads them.
"""

from __future__ import annotations

from pathlib import Path

from accelstack.catalog.sizing import memory_fit
from accelstack.render.artifacts import Artifact, render_node_script
from accelstack.resolve import Stack, resolve
from accelstack.spec import Spec

WRAPPER = "accelstack_trial.py"
RUNNER_SOURCE = Path(__file__).resolve().parent.parent / "trial" / "runner.py"
DEFAULT_RECORDS = "trial-records.jsonl"


def trial_pools(stack: Stack) -> list[str]:
    """The candidate pools: every pool with accelerators."""
    return [p.name for p in stack.pools if p.instance.chips > 0]


def trial_env(stack: Stack, pool: str, steps: int, records: str) -> dict[str, str]:
    """The variables the wrapper and the entrypoint read (accelstack/trial/runner.py)."""
    wl = stack.spec.workload
    p = next(x for x in stack.pools if x.name == pool)
    # the image identity `price` compares against (cost.estimate.current_sdk)
    framework = p.framework.name if p.framework else None
    sdk = wl.image or stack.catalog.default_image(p.instance_type, framework) or ""
    env = {
        "ACCELSTACK_MAX_STEPS": str(steps),
        "ACCELSTACK_TRIAL_RECORDS": records,
        "ACCELSTACK_TRIAL_STACK": stack.name,
        "ACCELSTACK_TRIAL_POOL": pool,
        "ACCELSTACK_TRIAL_INSTANCE_TYPE": p.instance_type,
        "ACCELSTACK_TRIAL_PARAMS_BILLION": f"{wl.model.params_billion:g}",
        "ACCELSTACK_TRIAL_PRECISION": wl.precision,
        "ACCELSTACK_TRIAL_SDK": sdk,
        "ACCELSTACK_TRIAL_DEVICE_KIND": p.device.name,
    }
    optional = {
        "ACCELSTACK_TRIAL_LAYERS": wl.model.layers,
        "ACCELSTACK_TRIAL_HIDDEN_SIZE": wl.model.hidden_size,
        "ACCELSTACK_TRIAL_SEQUENCE_LENGTH": wl.sequence_length,
        "ACCELSTACK_TRIAL_GLOBAL_BATCH": wl.global_batch_size,
    }
    env.update({k: str(v) for k, v in optional.items() if v is not None})
    return env


def trial_stack(stack: Stack, pool: str, steps: int, records: str) -> Stack:
    """`stack` with the workload on one node of `pool`, run through the trial wrapper."""
    data = stack.spec.model_dump()
    wl = data["workload"]
    wl["pool"] = pool
    wl["args"] = [wl["entrypoint"], *wl["args"]]
    wl["entrypoint"] = f"./{WRAPPER}"
    wl["env"] = {**wl["env"], **trial_env(stack, pool, steps, records)}
    for p in data["pools"]:
        if p["name"] == pool:
            p["nodes"] = 1
    return resolve(Spec.model_validate(data), stack.catalog)


def trial_warnings(stack: Stack) -> list[str]:
    """A one-node trial of a model whose training state needs more nodes measures less."""
    wl = stack.spec.workload
    out = []
    for name in trial_pools(stack):
        p = next(x for x in stack.pools if x.name == name)
        fit = memory_fit(stack.catalog, p.instance_type, wl.model.params_billion, wl.precision)
        if fit.min_nodes > 1:
            out.append(
                f"pool {name}: {wl.model.params_billion:g}B needs {fit.min_nodes} nodes of "
                f"{p.instance_type} for its training state; one node holds it only with a "
                "smaller model or more sharding/offload (set it in your entrypoint's args)"
            )
    return out


def render_trial(
    stack: Stack,
    steps: int,
    records: str = DEFAULT_RECORDS,
    procs_per_node_override: int | None = None,
) -> list[Artifact]:
    """trial-POOL.sh per accelerated pool, the wrapper, and a README."""
    arts = []
    for pool in trial_pools(stack):
        t = trial_stack(stack, pool, steps, records)
        script = render_node_script(
            t, pool, "standalone", procs_per_node_override=procs_per_node_override
        )
        arts.append(Artifact(f"trial-{pool}.sh", f"{steps}-step trial on one node", script, True))
    source = RUNNER_SOURCE.read_text(encoding="utf-8")
    arts.append(Artifact(WRAPPER, "times the steps, appends one record per node", source))
    arts.append(Artifact("README.md", "how to run the trial", _readme(stack, steps, records)))
    return arts


def _readme(stack: Stack, steps: int, records: str) -> str:
    pools = ", ".join(f"`trial-{p}.sh`" for p in trial_pools(stack))
    return f"""# Trial of {stack.name}: {steps} steps on one node per pool

Scripts: {pools}. Copy this directory to one node of each pool (or to shared storage),
`cd` into it and run the pool's script (`ACCELSTACK_NNODES=1` is the default for a trial).
Each node appends one JSON line to `{records}` (override with ACCELSTACK_TRIAL_RECORDS).

Your entrypoint must stop after `ACCELSTACK_MAX_STEPS` steps and call `step_done()` after
each one, and should call `model_ran(module=model)` once so the record carries the model that
actually ran (see the docstring of `{WRAPPER}`). `calibrate` refuses a record from another
device kind than its pool (a CPU run) or with an implausible MFU. Then, on your workstation:

    accelstack calibrate {records} --spec stacks/{stack.name}.yaml
    accelstack price stacks/{stack.name}.yaml     # MFU basis: measured (...)
"""
