"""From `pulumi up` to a watched run: the kubeconfig, apply, watch, logs, cancel and teardown
sequence plus what each failure state means, rendered from one template (`_runbook.md.j2`) for
the rendered index, the `init` project README and the repository README."""

from __future__ import annotations

from accelstack import naming
from accelstack.render.fabric import fabric_threshold
from accelstack.render.shared import has_shared_objects
from accelstack.resolve import Stack

#: kubectl resource name of each manifest kind's job object.
KUBECTL_RESOURCE = {"trainjob": "trainjob", "pytorchjob": "pytorchjob", "job": "job"}
#: What `pulumi destroy` stops at, in words, when no stack is known (the init README).
PROTECTED_GENERIC = "the secrets KMS key, the S3 buckets, FSx for Lustre"


def protected_resources(stack: Stack) -> str:
    """The stack's protected stateful resources, in words."""
    out = ["the secrets KMS key"]
    if stack.compile_cache_enabled:
        out.append("the compile-cache bucket")
    if stack.fsx_lustre_gib:
        out.append("FSx for Lustre")
    return ", ".join(out)


def runbook_context(
    *,
    name: str,
    region: str,
    namespace: str,
    spec: str,
    kind: str,
    nodes: int | str,
    queue: str | None = None,
    protected: str = PROTECTED_GENERIC,
    fabric: bool = True,
    shared: bool | None = None,
) -> dict[str, object]:
    """The variables of `_runbook.md.j2` (rendered by `accelstack.render.render_runbook`).
    `shared`: whether the render has `shared.yaml` (objects several jobs use, applied once and
    never deleted with a job); None when no stack is known (the sequence applies it if present)."""
    return {
        "name": name,
        "region": region,
        "namespace": namespace,
        "spec": spec,
        "manifest": f"{kind}.yaml",
        "resource": KUBECTL_RESOURCE.get(kind, kind),
        "nodes": nodes,
        "queue": queue,
        "protected": protected,
        "fabric": fabric,
        "shared": shared,
        "pool_label": naming.POOL_LABEL,
    }


def stack_runbook_context(stack: Stack) -> dict[str, object]:
    """The sequence for one stack: its names, region, first manifest and protected resources."""
    return runbook_context(
        name=stack.name,
        region=stack.region,
        namespace=stack.training_namespace,
        spec=f"stacks/{stack.spec.name}.yaml",
        kind=stack.job_kind,
        nodes=stack.workload_pool.nodes,
        queue=stack.queue_name,
        protected=protected_resources(stack),
        fabric=fabric_threshold(stack, stack.workload_pool) is not None,
        shared=has_shared_objects(stack),
    )
