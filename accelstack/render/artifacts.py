"""Render launch artifacts from Jinja templates: node scripts, Kubernetes jobs, an sbatch file.

Pure: reads a resolved `Stack`, returns text. No pulumi, no AWS, no file writes (the CLI
writes). Every count in a rendered file comes from the resolved stack (catalog facts), never
from a template literal; every user value is shell-quoted (`shquote`) in scripts and
JSON-quoted (`yamlstr`) in manifests.

Names other parts of accelstack must agree on live here, in one place each:
`training_service_account(stack)` (bound to the compile-cache role by the components) and
`fsx_claim_name(stack)` (the FSx for Lustre PersistentVolumeClaim).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import jinja2

from accelstack import naming
from accelstack.catalog import FlightRecorder, Framework
from accelstack.errors import AccelstackError
from accelstack.naming import POOL_LABEL, STACK_LABEL
from accelstack.render.fabric import fabric_threshold, fabric_tool
from accelstack.render.pods import (
    backoff_limit,
    image_warnings,
    precompile_key,
    torchrun_max_restarts,
)
from accelstack.render.registry import ImageCache
from accelstack.render.runbook import stack_runbook_context
from accelstack.render.shared import NEURON_CLAIM, SHARED_FILE, shared_claims
from accelstack.render.templatecache import TemplateCache
from accelstack.resolve import ResolvedPool, Stack

TEMPLATES_DIR = Path(__file__).resolve().parents[1] / "templates"

Orchestrator = Literal["auto", "trainjob", "pytorchjob", "slurm", "standalone"]
ORCHESTRATORS: tuple[str, ...] = ("auto", "trainjob", "pytorchjob", "slurm", "standalone")
ManifestKind = Literal["trainjob", "pytorchjob", "job"]


#: Where the FSx for Lustre volume is mounted in training pods.
FSX_MOUNT_PATH = "/fsx"
#: Where the node script is mounted in training pods (from the launch ConfigMap).
SCRIPT_MOUNT_DIR = "/etc/accelstack"
#: Environment variable that carries the compile-cache URL at run time.
CACHE_URL_VAR = "ACCELSTACK_COMPILE_CACHE_URL"
#: Kubeflow Trainer's names for the training step: the replicated Job `node` and its container
#: `node`, which the torch plugin gives the PET_* variables (kubeflow/trainer pkg/constants
#: constants.go at the pinned tag: Node = "node", AncestorTrainer = "trainer").
TRAINER_JOB = "node"
TRAINER_CONTAINER = "node"
#: Node-local directory for the TorchNeuron NEFF cache when the stack has no FSx.
LOCAL_NEFF_CACHE_DIR = "/var/tmp/neuron-neff-cache"
#: Node-local directory for launch state (the pre-compile marker) when the stack has no FSx;
#: the Kubernetes pods mount an emptyDir here so it survives a container restart.
LOCAL_STATE_DIR = "/var/tmp/accelstack"


class RenderError(AccelstackError):
    """A spec value that cannot be rendered safely (one line, exit 2)."""


@dataclass(frozen=True)
class Artifact:
    """One rendered file: relative path, what it is for, text, and whether it is executable."""

    path: str
    purpose: str
    content: str
    executable: bool = False


# ---------------------------------------------------------------------------------------
# Names shared with the EKS components and the standalone cluster
# ---------------------------------------------------------------------------------------


def training_service_account(stack: Stack) -> str:
    """Kubernetes ServiceAccount the training pods run as (catalog default; the components
    bind it to the compile-cache IAM role through EKS Pod Identity)."""
    return stack.training_service_account


def fsx_claim_name(stack: Stack) -> str:
    """PersistentVolumeClaim for the stack's FSx for Lustre file system (components/filesystem.py
    creates it when storage.fsx_lustre_gib is set)."""
    return naming.fsx(stack.name)


def job_name(stack: Stack) -> str:
    """Name of the PyTorchJob / indexed Job (a DNS label: the stack name is one already)."""
    return stack.name


def launch_script_name(pool: ResolvedPool) -> str:
    return f"launch-{pool.name}.sh"


# ---------------------------------------------------------------------------------------
# Filters
# ---------------------------------------------------------------------------------------


def shquote(value: object) -> str:
    """Quote one value for bash so it reaches the program verbatim as one argument."""
    text = str(value)
    if "\x00" in text:
        raise RenderError(f"{text[:40]!r}: a NUL character cannot be passed to a program")
    return shlex.quote(text)


def yamlstr(value: object) -> str:
    """A JSON string literal that YAML 1.1 and 1.2 parsers read back exactly.

    JSON escapes quotes, backslashes and control characters; on top of that every BMP
    character outside printable ASCII is written as \\uXXXX, because YAML treats some of
    them (NEL, LS, PS) as line breaks and refuses others (C1 controls, U+FFFE) in a stream.
    Characters outside the BMP stay literal (a \\u escape would need a surrogate pair,
    which PyYAML does not join).
    """
    text = str(value)
    if "\x00" in text:
        raise RenderError(f"{text[:40]!r}: a NUL character cannot be rendered")
    literal = json.dumps(text, ensure_ascii=False)
    if literal.isascii() and literal.isprintable():  # nothing to escape (a whole node script)
        return literal
    out = []
    for ch in literal:
        code = ord(ch)
        if 0x20 <= code < 0x7F or code > 0xFFFF:
            out.append(ch)
        else:
            out.append(f"\\u{code:04x}")
    return "".join(out)


def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        bytecode_cache=TemplateCache(),  # compiled once per template source, across processes
    )
    env.filters["shquote"] = shquote
    env.filters["yamlstr"] = yamlstr
    # the index template (rendered with stack and pool only) asks for the per-path values
    env.globals["path_context"] = _path_context
    return env


_ENV: jinja2.Environment | None = None


def environment() -> jinja2.Environment:
    global _ENV
    if _ENV is None:
        _ENV = _env()
    return _ENV


# ---------------------------------------------------------------------------------------
# Context
# ---------------------------------------------------------------------------------------


def _pool(stack: Stack, pool: ResolvedPool | str | None) -> ResolvedPool:
    if pool is None:
        return stack.workload_pool
    if isinstance(pool, str):
        try:
            return stack.pool(pool)
        except KeyError:
            names = ", ".join(p.name for p in stack.pools)
            raise RenderError(f"no pool '{pool}' in stack {stack.name} (pools: {names})") from None
    return pool


def cache_url(stack: Stack, pool: ResolvedPool, bucket: str | None) -> str | None:
    """The pool's compile-cache URL, or None when the bucket is known only at deploy time."""
    name = bucket or stack.compile_cache_bucket
    if not pool.compile_cache or name is None:
        return None
    return stack.compile_cache_url(pool.name, name)


#: The variables of the resume contract (docs/checkpoints.md).
CHECKPOINT_DIR_VAR = "ACCELSTACK_CHECKPOINT_DIR"
CHECKPOINT_URL_VAR = "ACCELSTACK_CHECKPOINT_URL"


def checkpoint_context(stack: Stack) -> dict[str, str] | None:
    """What the node script and pods need for durable checkpoints (None: the stack has no
    checkpoint location, orchestration ec2): the rendered default directory (the FSx path
    linked to the S3 prefix, per job), else empty and the script derives it from the URL."""
    plan = stack.checkpoint
    if plan is None:
        return None
    job = job_name(stack)
    fsx_dir = f"{FSX_MOUNT_PATH}{plan.fsx_path}{job}/" if plan.fsx_path else ""
    return {
        "dir_var": CHECKPOINT_DIR_VAR,
        "url_var": CHECKPOINT_URL_VAR,
        "dir_default": fsx_dir,
        "job": job,
        "config_map": stack.checkpoint_config_name,
        "prefix": plan.prefix,
    }


def _framework(pool: ResolvedPool) -> Framework:
    if pool.framework is None:
        raise RenderError(
            f"pool '{pool.name}' ({pool.instance_type}) has no training framework: nothing to launch"
        )
    return pool.framework


def _path_context(stack: Stack, pool: ResolvedPool) -> dict[str, object]:
    """What differs per training path: framework row, caches, pre-compile, fabric counts."""
    fw = _framework(pool)
    wl = stack.workload
    fsx = bool(stack.fsx_lustre_gib)
    return {
        "framework": fw,
        "precompile_steps": (wl.precompile_steps or 0) if fw.precompile else 0,
        "precompile_key": precompile_key(stack, pool),
        "neff_cache_shared": fsx,
        "neff_cache_dir": (
            f"{FSX_MOUNT_PATH}/neuron-neff-cache/{pool.name}" if fsx else LOCAL_NEFF_CACHE_DIR
        ),
        "state_dir": f"{FSX_MOUNT_PATH}/.accelstack/{pool.name}" if fsx else LOCAL_STATE_DIR,
        "local_state_dir": LOCAL_STATE_DIR,
        "host_run": stack.orchestration == "ec2",
        "fabric_efa": pool.efa_interfaces,
        "fabric_accelerators": pool.accelerators_per_node,
        "flight_recorder": flight_recorder(stack, fw),
    }


def flight_recorder(stack: Stack, fw: Framework) -> FlightRecorder | None:
    """PyTorch's NCCL flight recorder facts where the training path's backend is one it
    applies to (catalog launch.yaml nccl_flight_recorder), else None."""
    fr = stack.launch.nccl_flight_recorder
    return fr if fr is not None and fw.dist_backend in fr.dist_backends else None


def _context(
    stack: Stack,
    pool: ResolvedPool,
    *,
    orchestrator: str,
    bucket: str | None,
    procs_per_node_override: int | None,
) -> dict[str, object]:
    if orchestrator not in ORCHESTRATORS:
        raise RenderError(f"orchestrator '{orchestrator}' is not one of {', '.join(ORCHESTRATORS)}")
    if procs_per_node_override is not None and procs_per_node_override < 1:
        raise RenderError("procs_per_node_override must be at least 1")
    wl = stack.workload
    procs = procs_per_node_override or pool.procs_per_node
    return {
        "stack": stack,
        "pool": pool,
        "spec": stack.spec,
        "workload": wl,
        "orchestrator": orchestrator,
        "procs_per_node": procs,
        "procs_overridden": procs_per_node_override is not None,
        "cores_per_process": pool.cores_per_process,
        "lnc_configurable": pool.family.default_logical_cores > 1 or pool.logical_cores > 1,
        "cache_url": cache_url(stack, pool, bucket),
        "cache_url_var": CACHE_URL_VAR,
        "cache_prefix": stack.compile_cache_prefix_for(pool.name),
        **_path_context(stack, pool),
        "script_name": launch_script_name(pool),
        "namespace": stack.training_namespace,
        "service_account": training_service_account(stack),
        "job_name": job_name(stack),
        "fsx_claim": fsx_claim_name(stack) if stack.fsx_lustre_gib else None,
        "fsx_mount": FSX_MOUNT_PATH,
        "script_dir": SCRIPT_MOUNT_DIR,
        "efa_resource": "vpc.amazonaws.com/efa",
        "pool_label": POOL_LABEL,
        "stack_label": STACK_LABEL,
        "pod": pool.pod,
        "backoff_limit": backoff_limit(stack, pool),
        "max_restarts": torchrun_max_restarts(stack),
        "python_env": pool.python_env,
        "pod_image": None,  # the training image; the fabric test may name its tool's image
        "queue_name": stack.queue_name,
        "queue_label": naming.QUEUE_LABEL,
        "checkpoint": checkpoint_context(stack),
        "neuron_claim": neuron_claim(stack, pool),
        "ultraserver_job_label": naming.ULTRASERVER_JOB_LABEL,
        "topology_preference": stack.topology_preference,
        # the job's own objects (launch ConfigMap, NetworkPolicy) are named after the job; an
        # alternative kind of the same job adds its kind, so no two files carry one object
        "object_suffix": "",
    }


# ---------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------


def render_node_script(
    stack: Stack,
    pool: ResolvedPool | str | None = None,
    orchestrator: str = "standalone",
    *,
    bucket: str | None = None,
    procs_per_node_override: int | None = None,
) -> str:
    """The bash script each node runs: environment, optional pre-compile, then torchrun.

    `orchestrator` is the rendered default (the variable ACCELSTACK_ORCHESTRATOR overrides it
    at run time): auto (PyTorchJob, then Slurm, then standalone variables), pytorchjob, slurm
    or standalone. `bucket`: the compile-cache bucket (default: the spec's existing bucket;
    when neither is known the script reads ACCELSTACK_COMPILE_CACHE_URL and stops if unset).
    `procs_per_node_override` is for local testing only (e.g. 2 processes on a laptop); the
    production value always comes from the catalog through `pool.procs_per_node`.
    """
    p = _pool(stack, pool)
    template = _framework(p).node_template
    ctx = _context(
        stack,
        p,
        orchestrator=orchestrator,
        bucket=bucket,
        procs_per_node_override=procs_per_node_override,
    )
    ctx["template_name"] = template
    return environment().get_template(template).render(ctx)


def node_script(stack: Stack, pool: ResolvedPool, bucket: str | None) -> tuple[str, str]:
    """(file name, text) of a standalone pool's node launch script with the compile-cache
    `bucket` it writes to: what the standalone component installs through SSM (handed to
    `components.program.build` as its `node_script`)."""
    return launch_script_name(pool), render_node_script(stack, pool, "standalone", bucket=bucket)


def check_device_path(stack: Stack, pool: ResolvedPool) -> None:
    """Refuse manifests a pool's nodes could never schedule: an UltraServer pool's nodes get
    their Neuron devices through the DRA driver (the stack turns the device plugin off there);
    without the catalog's DRA facts for its type (scale.yaml ultraservers.<type>.dra) the pods
    could not claim them, and a job must take whole UltraServers (or one node, mode 1)."""
    us = pool.ultraserver
    if us is None:
        return
    if us.dra is None:
        raise RenderError(
            f"pool '{pool.name}' ({pool.instance_type}) is an UltraServer pool: its nodes "
            "advertise Neuron devices through the DRA driver, and the catalog has no DRA claim "
            f"facts for {pool.instance_type} (scale.yaml ultraservers.{pool.instance_type}.dra); "
            f"jobs requesting {pool.device.device_resource} would stay Pending there, so no "
            "Kubernetes manifest is rendered for it"
        )
    if ultraserver_mode(pool) is None:
        raise RenderError(
            f"pool '{pool.name}' ({pool.instance_type}): a job of {pool.nodes} nodes does not "
            f"fill whole UltraServers of {us.instances}; use 1 node or a multiple of "
            f"{us.instances}"
        )


def ultraserver_mode(pool: ResolvedPool) -> int | None:
    """The UltraServerConfig mode of a job on the pool: the UltraServer's size when the job
    fills whole UltraServers, 1 for a one-node job; None otherwise (or no DRA facts)."""
    us = pool.ultraserver
    if us is None or us.dra is None:
        return None
    if us.whole(pool.nodes) and us.instances in us.dra.modes:
        return us.instances
    return 1 if pool.nodes == 1 and 1 in us.dra.modes else None


def neuron_claim(stack: Stack, pool: ResolvedPool) -> dict[str, object] | None:
    """What the templates need for an UltraServer pool's DRA claim (None elsewhere): the
    template's name, the request name, the mode, the catalog's DRA facts, and whether the
    job's pods must share one UltraServer (a job of exactly one UltraServer's nodes; a job of
    several fills the pool, whose nodes are whole UltraServers)."""
    us = pool.ultraserver
    mode = ultraserver_mode(pool)
    if us is None or us.dra is None or mode is None:
        return None
    return {
        "template": naming.ultraserver_claim_template(stack.name, mode),
        "request": NEURON_CLAIM,
        "mode": mode,
        "dra": us.dra,
        "same_server": pool.nodes == us.instances,
        "servers": pool.nodes // us.instances,
    }


def render_shared(stack: Stack) -> str | None:
    """`shared.yaml`: the objects several jobs use (the UltraServer ResourceClaimTemplates),
    or None when the stack has none."""
    claims = shared_claims(stack)
    if not claims:
        return None
    return (
        environment()
        .get_template("shared.yaml.j2")
        .render(
            stack=stack,
            claims=claims,
            namespace=stack.training_namespace,
            stack_label=STACK_LABEL,
        )
    )


def shared_artifact(stack: Stack) -> Artifact | None:
    """The shared objects as a file of their own, with its lifecycle in its purpose."""
    text = render_shared(stack)
    if text is None:
        return None
    return Artifact(
        SHARED_FILE,
        "objects several jobs use (the UltraServer ResourceClaimTemplates), rendered once: "
        f"`kubectl apply --server-side -f {SHARED_FILE}` before any job; no job's file carries "
        "them, so deleting a job or its file never deletes them",
        text,
    )


def render_manifest(
    stack: Stack,
    kind: ManifestKind,
    *,
    bucket: str | None = None,
    name: str | None = None,
    extra_files: dict[str, str] | None = None,
    alternative: bool = False,
) -> str:
    """Kubernetes manifests: a launch ConfigMap and NetworkPolicy plus a TrainingRuntime and
    TrainJob (`trainjob`, Kubeflow Trainer v2), a PyTorchJob (`pytorchjob`, Training Operator
    v1), or a headless Service and an indexed batch/v1 Job (`job`, no controller). `name`
    replaces the job name (a trial beside the real job); `extra_files` go into the ConfigMap
    beside the script (mounted in SCRIPT_MOUNT_DIR); `alternative`: the same job as another kind
    than the one `render` lists first, its ConfigMap and NetworkPolicy named with the kind so
    deleting one file never deletes the other's objects."""
    p = stack.workload_pool
    check_device_path(stack, p)
    orch = {"trainjob": "trainjob", "pytorchjob": "pytorchjob"}.get(kind, "standalone")
    ctx = _context(stack, p, orchestrator=orch, bucket=bucket, procs_per_node_override=None)
    ctx["script"] = render_node_script(stack, p, orch, bucket=bucket)
    if kind == "trainjob":
        ctx.update(_trainer_context(stack))
    if name:
        ctx.update(job_name=name, runtime_name=naming.training_runtime(name))
    ctx["extra_files"] = extra_files or {}
    if alternative:
        ctx["object_suffix"] = f"-{kind}"
    return environment().get_template(f"{kind}.yaml.j2").render(ctx)


def _trainer_context(stack: Stack) -> dict[str, object]:
    """The pinned Trainer row (API version) and the names the TrainJob and runtime share."""
    chart = stack.catalog.controller_chart("trainer")
    if chart is None:
        raise RenderError("the catalog has no Kubeflow Trainer row (charts, controller trainer)")
    return {
        "controller": chart,
        "runtime_name": naming.training_runtime(job_name(stack)),
        "trainer_job": TRAINER_JOB,
        "trainer_container": TRAINER_CONTAINER,
    }


#: A DNS label's length limit (naming.DNS_LABEL_MAX; kept here for callers).
DNS_LABEL_MAX = naming.DNS_LABEL_MAX


def jobset_pod_name_fits(name: str, replicated_job: str, pods: int) -> bool:
    """Whether the longest pod name JobSet's webhook checks for `name` (one replicated Job of
    `pods` indexed pods, the 5-character suffix included: naming.jobset_pod) is a DNS label."""
    return len(naming.jobset_pod(name, replicated_job, 1, pods)) <= DNS_LABEL_MAX


#: Port of the Neuron collectives' root communicator in the fabric test (any free port;
#: aws-neuron-sdk nccom-test.rst "MPI Execution").
FABRIC_ROOT_COMM_PORT = 63182
#: The port sshd listens on in the fabric test's pods (mpirun reaches it through
#: OMPI_MCA_plm_rsh_args): unprivileged, so binding it needs no NET_BIND_SERVICE.
FABRIC_SSH_PORT = 2222


#: The port the indexed-Job fabric test's launcher serves its public key on to the other pods
#: (any free port; within the job's NetworkPolicy, which admits only the job's own pods).
FABRIC_KEY_PORT = 2223


def fabric_topology(stack: Stack, pool: ResolvedPool) -> dict[str, object] | None:
    """What the fabric test's launcher needs to order its hosts by UltraServer (a job of whole
    UltraServers, mode > 1): the mode, each node's id files and the recipe's source; None on
    other pools or where the catalog names no id files."""
    mode = ultraserver_mode(pool)
    dra = pool.ultraserver.dra if pool.ultraserver else None
    if mode is None or mode <= 1 or dra is None:
        return None
    files = dra.id_files(mode)
    if files is None:
        return None
    return {
        "mode": mode,
        "server_file": files[0],
        "node_file": files[1],
        "source": dra.placement_source,
    }


def render_fabric_test(stack: Stack, cache: ImageCache | None = None) -> str | None:
    """The fabric acceptance job, or None where it does not apply (one node, no EFA, no
    benchmark for the device kind, not on EKS). With Kubeflow Trainer: a TrainJob on its MPI
    runtime (ConfigMap with the script and parser, NetworkPolicy, TrainingRuntime, TrainJob);
    with `jobs.controller` pytorchjob or none: an indexed Job and its headless Service, whose pod
    0 launches. `cache`: the tool's image is pulled through the stack's pull-through cache
    (`render --registry`)."""
    p = stack.workload_pool
    th, tool = fabric_threshold(stack, p), fabric_tool(stack, p)
    if th is None or tool is None or stack.orchestration != "eks":
        return None
    check_device_path(stack, p)
    trainer = stack.job_controller == "trainer"
    orch = "trainjob" if trainer else "standalone"
    ctx = _context(stack, p, orchestrator=orch, bucket=None, procs_per_node_override=None)
    if trainer:
        ctx.update(_trainer_context(stack))
    name = naming.fabric_job(job_name(stack))
    ctx.update(
        job_name=name,
        runtime_name=naming.training_runtime(name),
        script_name="fabric-test.sh",
        th=th,
        tool=tool,
        facts=stack.launch.fabric_test,
        root_comm_port=FABRIC_ROOT_COMM_PORT,
        ssh_port=FABRIC_SSH_PORT,
        key_port=FABRIC_KEY_PORT,
        trainer_mpi=trainer,
        topology=fabric_topology(stack, p),
        fabric_image=fabric_image(stack, cache),
        parser=(Path(__file__).resolve().parents[1] / "trial" / "fabric.py").read_text(),
    )
    ctx["script"] = environment().get_template("fabric-test.sh.j2").render(ctx)
    template = "fabric-test.yaml.j2" if trainer else "fabric-job.yaml.j2"
    return environment().get_template(template).render(ctx)


def fabric_kind(stack: Stack) -> str:
    """The fabric test's kind for kubectl: a TrainJob with Kubeflow Trainer, else a Job."""
    return "trainjob" if stack.job_controller == "trainer" else "job"


def fabric_image(stack: Stack, cache: ImageCache | None = None) -> str:
    """The image the fabric test pulls: its tool's own, else the training image."""
    tool = fabric_tool(stack, stack.workload_pool)
    image = (tool.image if tool else None) or stack.image
    return cache.pull(image) if cache else image


def render_sbatch(stack: Stack, *, bucket: str | None = None) -> str:
    p = stack.workload_pool
    ctx = _context(stack, p, orchestrator="slurm", bucket=bucket, procs_per_node_override=None)
    return environment().get_template("sbatch.sh.j2").render(ctx)


#: What each manifest file is, for the index (the apply command is added per file).
_MANIFEST_PURPOSE: dict[str, str] = {
    "trainjob": "Kubeflow Trainer v2 TrainJob plus the TrainingRuntime that carries the pod "
    "template, the ConfigMap holding the script and the NetworkPolicy",
    "pytorchjob": "Kubeflow PyTorchJob (legacy Training Operator v1, installed by the stack "
    "because jobs.controller is pytorchjob) plus the ConfigMap and NetworkPolicy",
    "job": "the same job without a job controller: ConfigMap, NetworkPolicy, headless Service "
    "and an indexed batch/v1 Job",
}


def manifest_kinds(stack: Stack) -> list[ManifestKind]:
    """The manifests an EKS stack renders, the one to apply first: the spec's kind (default:
    the installed controller's), then the controller's own, then the indexed Job, which needs
    no controller."""
    chart = stack.job_controller_chart
    own = [chart.manifest_kind] if chart and chart.manifest_kind else []
    out: list[ManifestKind] = []
    for kind in [stack.job_kind, *own, "job"]:
        if kind in _MANIFEST_PURPOSE and kind not in out:
            out.append(kind)  # type: ignore[arg-type]
    return out


def _eks_artifacts(
    stack: Stack, p: ResolvedPool, bucket: str | None, cache: ImageCache | None = None
) -> list[Artifact]:
    """The manifests (the one to apply first leads) and the node script they embed."""
    kinds = manifest_kinds(stack)
    shared = shared_artifact(stack)
    out = [] if shared is None else [shared]
    out += [
        Artifact(
            f"{kind}.yaml",
            f"{_MANIFEST_PURPOSE[kind]}: `kubectl apply --server-side -f {kind}.yaml`"
            + ("" if i == 0 else f"; instead of `{kinds[0]}.yaml`, not beside it (the same job)"),
            render_manifest(stack, kind, bucket=bucket, alternative=i > 0),
        )
        for i, kind in enumerate(kinds)
    ]
    fabric = render_fabric_test(stack, cache)
    if fabric is not None:
        th = fabric_threshold(stack, p)
        assert th is not None
        out.append(
            Artifact(
                "fabric-test.yaml",
                f"fabric acceptance job: all-reduce across all {p.nodes} nodes, fails below "
                f"{th.min_gbs} GB/s bus bandwidth; apply it before the training job; to run it "
                f"again, `kubectl -n {stack.training_namespace} delete {fabric_kind(stack)} "
                f"{naming.fabric_job(job_name(stack))} --ignore-not-found --wait` first",
                fabric,
            )
        )
    out.append(
        Artifact(
            launch_script_name(p),
            f"node launch script for pool {p.name} (auto-detects TrainJob, PyTorchJob, Slurm "
            "or standalone variables); the manifests embed the same script in a ConfigMap",
            render_node_script(stack, p, "auto", bucket=bucket),
            executable=True,
        )
    )
    return out


def _standalone_artifacts(stack: Stack, p: ResolvedPool, bucket: str | None) -> list[Artifact]:
    """The node script, plus a Slurm batch file when the stack installs Slurm."""
    script = launch_script_name(p)
    out = [
        Artifact(
            script,
            f"node launch script for pool {p.name}: run it on every node with "
            "ACCELSTACK_NODE_RANK and ACCELSTACK_HEAD_ADDR set",
            render_node_script(stack, p, "standalone", bucket=bucket),
            executable=True,
        )
    ]
    if stack.standalone.install_slurm:
        out.append(
            Artifact(
                "train.sbatch",
                f"Slurm batch file: `sbatch train.sbatch` runs {script} once per node",
                render_sbatch(stack, bucket=bucket),
                executable=True,
            )
        )
    return out


def image_pulls(
    stack: Stack, artifacts: list[Artifact], cache: ImageCache | None = None
) -> list[tuple[str, str]]:
    """(manifest, image its pods pull) for each rendered Kubernetes job."""
    out = []
    for a in artifacts:
        if a.path == "fabric-test.yaml":
            out.append((a.path, fabric_image(stack, cache)))
        elif a.path.endswith(".yaml") and a.path != SHARED_FILE:
            out.append((a.path, stack.image))
    return out


def _index_artifact(
    stack: Stack,
    p: ResolvedPool,
    artifacts: list[Artifact],
    bucket: str | None,
    cache: ImageCache | None = None,
) -> Artifact:
    """README.md listing `artifacts`."""
    index = (
        environment()
        .get_template("index.md.j2")
        .render(
            stack=stack,
            pool=p,
            artifacts=artifacts,
            cache_url=cache_url(stack, p, bucket),
            cache_url_var=CACHE_URL_VAR,
            namespace=stack.training_namespace,
            service_account=training_service_account(stack),
            warnings=render_warnings(stack, cache),
            pulls=image_pulls(stack, artifacts, cache),
            runbook=stack_runbook_context(stack) if stack.orchestration == "eks" else None,
        )
    )
    return Artifact("README.md", "this index", index)


def render_runbook(context: dict[str, object]) -> str:
    """The run sequence (`_runbook.md.j2`) for the given `runbook_context`."""
    return environment().get_template("_runbook.md.j2").render(context)


def render_warnings(stack: Stack, cache: ImageCache | None = None) -> list[str]:
    """Things the rendered files cannot fix and the user should (printed by `render`, listed
    in the index): a mutable image reference; with `cache` (`render --registry`), each image
    left as written and why."""
    if cache is not None:
        stack = cache.apply(stack)  # idempotent: a cached reference stays as it is
    out = image_warnings(stack.image)
    if cache is not None and stack.orchestration == "eks":
        images = dict.fromkeys([stack.image, fabric_image(stack, cache)])
        out += [n for n in map(cache.note, images) if n]
    return out


def render(
    stack: Stack, bucket: str | None = None, cache: ImageCache | None = None
) -> list[Artifact]:
    """Every launch artifact for the stack's workload pool, with an index (README.md).
    `cache`: the jobs pull their images through the stack's pull-through cache."""
    if cache is not None:
        stack = cache.apply(stack)
    p = stack.workload_pool
    if stack.orchestration == "eks":
        out = _eks_artifacts(stack, p, bucket, cache)
    else:
        out = _standalone_artifacts(stack, p, bucket)
    out.append(_index_artifact(stack, p, out, bucket, cache))
    return out
