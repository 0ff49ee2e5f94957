"""`accelstack trial`: a short benchmark job on N nodes (default one) of each accelerated pool.

For each pool the spec is copied with the workload moved to that pool on N nodes; the
entrypoint becomes the trial wrapper `accelstack_trial.py` (accelstack/trial/runner.py, copied
beside the scripts) with the user's entrypoint and arguments after it, and the trial's
facts travel as environment variables of the workload (ACCELSTACK_MAX_STEPS: steps to run;
ACCELSTACK_TRIAL_*: what the record needs). The node script is the same template as
`accelstack render` (standalone orchestrator; ACCELSTACK_* variables override it at run time).
Each node appends one JSON line to ACCELSTACK_TRIAL_RECORDS; `accelstack calibrate` reads them.
On an EKS stack each pool also gets `trial-POOL.yaml`: the manifest of the stack's job kind
(TrainJob, PyTorchJob or indexed Job, named `<stack>-trial-<pool>`) with the wrapper in its
ConfigMap; records go to FSx when the stack has it, and every record is also printed to the
pod's log with the prefix `ACCELSTACK_TRIAL_RECORD `.
"""

from __future__ import annotations

from pathlib import Path

from accelstack import naming
from accelstack.render.artifacts import (
    FSX_MOUNT_PATH,
    SCRIPT_MOUNT_DIR,
    Artifact,
    RenderError,
    render_manifest,
    render_node_script,
    shared_artifact,
)
from accelstack.render.reference import (
    REFERENCE,
    SHAPE,
    SOURCES,
    ReferenceOptions,
    check_pool,
    reference_args,
    reference_notes,
)
from accelstack.render.registry import ImageCache
from accelstack.render.shared import SHARED_FILE
from accelstack.resolve import Stack, k8snames, resolve_unchecked
from accelstack.spec import Spec

WRAPPER = "accelstack_trial.py"
RUNNER_SOURCE = Path(__file__).resolve().parent.parent / "trial" / "runner.py"
DEFAULT_RECORDS = "trial-records.jsonl"


def trial_pools(stack: Stack) -> list[str]:
    """The candidate pools: every pool with accelerators."""
    return [p.name for p in stack.pools if p.instance.chips > 0]


def trial_env(stack: Stack, pool: str, steps: int, records: str) -> dict[str, str]:
    """The variables the wrapper and the entrypoint read (accelstack/trial/runner.py)."""
    wl = stack.workload
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
        # processes per accelerator: the record's device count is the world size over it
        "ACCELSTACK_TRIAL_RANKS_PER_DEVICE": str(
            ranks_per_device(p.procs_per_node, p.instance.chips)
        ),
    }
    optional = {
        "ACCELSTACK_TRIAL_TRAINING_STACK": wl.stack,
        "ACCELSTACK_TRIAL_ACTIVE_PARAMS_BILLION": wl.model.active_params_billion,
        "ACCELSTACK_TRIAL_LAYERS": wl.model.layers,
        "ACCELSTACK_TRIAL_HIDDEN_SIZE": wl.model.hidden_size,
        "ACCELSTACK_TRIAL_SEQUENCE_LENGTH": wl.sequence_length,
        "ACCELSTACK_TRIAL_GLOBAL_BATCH": wl.global_batch_size,
    }
    env.update({k: str(v) for k, v in optional.items() if v is not None})
    return env


def ranks_per_device(procs_per_node: int, chips: int) -> int:
    """torchrun processes per accelerator: 1 per GPU, a chip's logical NeuronCores."""
    return max(1, procs_per_node // max(1, chips))


def trial_nodes(stack: Stack, pool: str, nodes: int) -> int:
    """The trial's node count on `pool`: `nodes`, at most the pool's own."""
    if nodes < 1:
        raise RenderError(f"--nodes {nodes}: a trial needs at least one node")
    rp = next(p for p in stack.pools if p.name == pool)
    n = min(nodes, rp.nodes)
    us = rp.ultraserver
    if us is not None and n not in (1, us.instances, rp.nodes):
        # the claim's UltraServerConfig mode holds for one node, one whole UltraServer (its
        # pods placed together) or the whole pool (whole UltraServers); other counts could
        # spread over partly used UltraServers
        raise RenderError(
            f"--nodes {nodes}: pool '{pool}' is made of UltraServers of {us.instances} nodes; "
            f"a trial there takes 1, {us.instances} or all {rp.nodes} nodes"
        )
    return n


def trial_stack(
    stack: Stack,
    pool: str,
    steps: int,
    records: str,
    nodes: int = 1,
    *,
    wrapper: str | None = None,
    reference: ReferenceOptions | None = None,
) -> Stack:
    """`stack` with the workload on `nodes` nodes of `pool`, run through the trial wrapper
    (`wrapper`: its path where the nodes run it; default beside the script); `reference`:
    the shipped reference benchmark (beside the wrapper) instead of the user's entrypoint."""
    data = stack.spec.model_dump()
    wl = data["workload"]
    wl["pool"] = pool
    where = (wrapper or f"./{WRAPPER}").rpartition("/")[0] or "."
    if reference is not None:
        target = next(p for p in stack.pools if p.name == pool)
        wl["args"] = reference_args(stack, target, reference, where)
    else:
        wl["args"] = [wl["entrypoint"], *wl["args"]]
    wl["entrypoint"] = wrapper or f"./{WRAPPER}"
    wl["env"] = {**wl["env"], **trial_env(stack, pool, steps, records)}
    for p in data["pools"]:
        if p["name"] == pool:
            p["nodes"] = trial_nodes(stack, pool, nodes)
    # unchecked: the trial runs a few steps on at most the pool's nodes, fewer than the memory
    # fit asks for a full run; the stack it derives from passed the stack rules
    trial = Spec.model_validate(data).read_from(stack.spec.file)
    out = resolve_unchecked(trial, stack.catalog, name=stack.deployment or None)
    if reference is not None:
        check_pool(out.workload_pool)
    return out


def eks_records_path(stack: Stack, records: str) -> str:
    """Where trial pods append records: FSx when the stack has it (they outlive the pods),
    else the pod's /tmp (the log carries every record too)."""
    if stack.fsx_lustre_gib:
        return f"{FSX_MOUNT_PATH}/accelstack-trial/{stack.name}/{records}"
    return f"/tmp/{records}"


def trial_manifest(
    stack: Stack,
    pool: str,
    steps: int,
    records: str,
    nodes: int,
    cache: ImageCache | None = None,
    reference: ReferenceOptions | None = None,
) -> str:
    """The pool's trial as the stack's own job kind, beside (not instead of) the real job;
    `cache`: its image pulled through the stack's pull-through cache (`trial --registry`)."""
    t = trial_stack(
        stack,
        pool,
        steps,
        eks_records_path(stack, records),
        nodes,
        wrapper=f"{SCRIPT_MOUNT_DIR}/{WRAPPER}",
        reference=reference,
    )
    if cache is not None:
        t = cache.apply(t)
    return render_manifest(
        t,
        t.job_kind,  # type: ignore[arg-type]
        name=trial_job_name(stack, pool, nodes),
        extra_files=node_files(reference is not None),
    )


def node_files(reference: bool) -> dict[str, str]:
    """The files beside the trial scripts: the wrapper, and the reference benchmark with its
    shape planner when the trial runs it."""
    out = {WRAPPER: RUNNER_SOURCE.read_text(encoding="utf-8")}
    if reference:
        out.update({name: path.read_text(encoding="utf-8") for name, path in SOURCES.items()})
    return out


def trial_job_name(stack: Stack, pool: str, nodes: int) -> str:
    """`<stack>-trial-<pool>`, or `<stack>-trial<i>` (the pool's position) where the pod names
    JobSet derives from the longer one would not be DNS labels (naming.trial_job_name; the
    stack rule `kubernetes-names` checks the name chosen at the pool's every node)."""
    return k8snames.trial_job_name(stack, pool, nodes)


def trial_warnings(stack: Stack, reference: ReferenceOptions | None = None) -> list[str]:
    """A one-node trial of a model whose training state needs more nodes measures less; the
    reference benchmark scales itself down instead (`reference_notes` says how)."""
    wl = stack.workload
    out: list[str] = []
    if reference is not None:
        return out
    for name in trial_pools(stack):
        p = next(x for x in stack.pools if x.name == name)
        fit = p.memory_fit
        if fit is not None and fit.min_nodes > 1:
            out.append(
                f"pool {name}: {wl.model.params_billion:g}B needs {fit.min_nodes} nodes of "
                f"{p.instance_type} for its training state; one node holds it only with a "
                "smaller model or more sharding/offload (set it in your entrypoint's args)"
            )
    return out


def trial_pulls(
    stack: Stack, nodes: int = 1, cache: ImageCache | None = None
) -> list[tuple[str, str]]:
    """(trial manifest, image its pods pull) per accelerated pool of an EKS stack: the pool's
    image (its framework's default unless workload.image), through `cache` if given."""
    if stack.orchestration != "eks":
        return []
    out = []
    for pool in trial_pools(stack):
        image = trial_stack(stack, pool, 2, DEFAULT_RECORDS, trial_nodes(stack, pool, nodes)).image
        out.append((f"trial-{pool}.yaml", cache.pull(image) if cache else image))
    return out


def trial_pull_notes(stack: Stack, nodes: int = 1, cache: ImageCache | None = None) -> list[str]:
    """With `cache`: one line per trial image pulled as written, and why."""
    if cache is None:
        return []
    images = dict.fromkeys(image for _, image in trial_pulls(stack, nodes, cache))
    return [n for n in map(cache.note, images) if n]


def render_trial(
    stack: Stack,
    steps: int,
    records: str = DEFAULT_RECORDS,
    procs_per_node_override: int | None = None,
    nodes: int = 1,
    cache: ImageCache | None = None,
    reference: ReferenceOptions | None = None,
) -> list[Artifact]:
    """trial-POOL.sh per accelerated pool (and trial-POOL.yaml on EKS), the wrapper (and with
    `reference` the reference benchmark and its shape planner), a README."""
    arts = []
    eks = stack.orchestration == "eks"
    shared = shared_artifact(stack) if eks else None
    arts = [] if shared is None else [shared]
    for pool in trial_pools(stack):
        n = trial_nodes(stack, pool, nodes)
        t = trial_stack(stack, pool, steps, records, n, reference=reference)
        script = render_node_script(
            t, pool, "standalone", procs_per_node_override=procs_per_node_override
        )
        what = f"{steps}-step trial on {n} node(s)"
        arts.append(Artifact(f"trial-{pool}.sh", what, script, True))
        if eks:
            manifest = trial_manifest(stack, pool, steps, records, n, cache, reference)
            arts.append(Artifact(f"trial-{pool}.yaml", f"{what}: `kubectl apply -f`", manifest))
    for name, text in node_files(reference is not None).items():
        arts.append(Artifact(name, _NODE_FILES[name], text))
    pulls = "".join(f"- `{f}`: `{i}`\n" for f, i in trial_pulls(stack, nodes, cache))
    if pulls:
        pulls = f"\nImages the trial manifests pull:\n{pulls}"
    readme = _readme(stack, steps, records, nodes, reference) + pulls
    arts.append(Artifact("README.md", "how to run the trial", readme))
    return arts


_NODE_FILES = {
    WRAPPER: "times the steps, appends one record per node and segment",
    REFERENCE: "the reference benchmark (a Llama-shaped decoder, no user code)",
    SHAPE: "the reference benchmark's shape and how it is fitted to one device",
}


def _readme(
    stack: Stack,
    steps: int,
    records: str,
    nodes: int = 1,
    reference: ReferenceOptions | None = None,
) -> str:
    pools = ", ".join(f"`trial-{p}.sh`" for p in trial_pools(stack))
    where = "one node" if nodes == 1 else f"up to {nodes} nodes"
    return f"""# Trial of {stack.name}: {steps} steps on {where} per pool
{_eks_readme(stack, records, nodes)}
Scripts: {pools}. Copy this directory to one node of each pool (or to shared storage),
`cd` into it and run the pool's script (`ACCELSTACK_NNODES` defaults to the trial's node count;
above one node, set ACCELSTACK_NODE_RANK and ACCELSTACK_HEAD_ADDR on each node).
Each node appends one JSON line per timed segment to `{records}` (override with
ACCELSTACK_TRIAL_RECORDS).
{_what_runs(stack, reference)}
`calibrate` refuses a record from another device kind or device than its pool's (a CPU run,
an H200 labelled p5), or one whose executed FLOP/s exceed the device's peak. Then, on your
workstation:

    accelstack calibrate {records} --spec stacks/{stack.name}.yaml
    accelstack price stacks/{stack.name}.yaml     # MFU basis: measured (...)
"""


def _what_runs(stack: Stack, reference: ReferenceOptions | None) -> str:
    if reference is None:
        return f"""
Your entrypoint must stop after `ACCELSTACK_MAX_STEPS` steps and call `step_done()` after
each one, and should call `model_ran(module=model)` and `shape_ran(...)` once so the record
carries the model and shape that actually ran (see the docstring of `{WRAPPER}`).
"""
    pools = [p for p in stack.pools if p.name in trial_pools(stack)]
    lines = "".join(f"- {n}\n" for n in reference_notes(stack, pools, reference))
    return f"""
The trial runs the reference benchmark `{REFERENCE}` (no user code): a Llama-shaped decoder at
the spec's shape, scaled down to one device, `ACCELSTACK_MAX_STEPS` steps at each sequence
length, data parallel over every process; one record per sequence length and node, each
saying what ran (device, versions, shape, compiled or eager, checkpointing). Planned from the
catalog's memory per device (a GPU re-plans from its own):
{lines}"""


def _eks_readme(stack: Stack, records: str, nodes: int) -> str:
    if stack.orchestration != "eks":
        return ""
    ns = stack.training_namespace
    first = trial_pools(stack)[0]
    job = trial_job_name(stack, first, trial_nodes(stack, first, nodes))
    pattern = naming.trial_job(stack.name, "POOL")
    shared = (
        f"`kubectl apply --server-side -f {SHARED_FILE}` once (objects the trials and the real "
        "job share; deleting a trial's manifest leaves them), then "
        if shared_artifact(stack) is not None
        else ""
    )
    return f"""
On the cluster (EKS): {shared}`kubectl apply --server-side -f trial-{first}.yaml` (one manifest per
pool, the stack's job kind named `{pattern}`, beside the real job). Each node
appends its record to `{eks_records_path(stack, records)}` and prints it to its log; collect them with

    kubectl -n {ns} logs -l app.kubernetes.io/name={job} --tail=-1 \\
      | sed -n 's/^ACCELSTACK_TRIAL_RECORD //p' >> {records}

Run with `--nodes 1`, then `--nodes 2`, `4`, ... to measure how throughput scales with nodes.
"""
