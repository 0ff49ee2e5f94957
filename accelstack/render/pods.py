"""What a rendered training pod or Slurm job carries beyond what `resolve` puts on the pool (its
requests, huge pages and DLAMI Python environment: accelstack/resolve/node.py): the
pre-compile key, restart budgets, and warnings about the image reference."""

from __future__ import annotations

import hashlib
import json
import re

from accelstack.render.registry import upstream_image
from accelstack.resolve import ResolvedPool, Stack

#: A digest reference (`repo@sha256:...`): immutable, never warned about.
_DIGEST_RE = re.compile(r"@[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[0-9a-fA-F]{32,}$")


#: workload.model fields only the step model reads (docs/cost.md): not in the pre-compile key
ESTIMATE_ONLY_MODEL_FIELDS = {
    "active_params_billion",
    "heads",
    "head_dim",
    "attention_layers",
    "experts",
    "experts_per_token",
    "expert_hidden_size",
    "moe_layers",
}


def precompile_key(stack: Stack, pool: ResolvedPool) -> str:
    """What the compiled graphs depend on, hashed: the pre-compile marker carries it, so a
    changed model, argument, image, precision, batch or process layout compiles again while a
    restart of the same job does not (the node count is added at run time)."""
    wl = stack.workload
    facts = {
        "entrypoint": wl.entrypoint,
        "args": list(wl.args),
        "precompile_args": list(wl.precompile_args),
        "precompile_steps": wl.precompile_steps,
        "env": dict(sorted(wl.env.items())),
        "image": upstream_image(stack, stack.image),  # the same through the pull-through cache
        # the fields the estimate alone reads (active parameters, attention width, the
        # experts' shape) change no graph the entrypoint compiles
        "model": wl.model.model_dump(exclude=ESTIMATE_ONLY_MODEL_FIELDS),
        "sequence_length": wl.sequence_length,
        "global_batch_size": wl.global_batch_size,
        "precision": wl.precision,
        "framework": pool.framework.name if pool.framework else None,
        "procs_per_node": pool.procs_per_node,
        "logical_cores": pool.logical_cores,
    }
    text = json.dumps(facts, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def backoff_limit(stack: Stack, pool: ResolvedPool) -> int:
    """PyTorchJob runPolicy.backoffLimit: the operator sums container restarts over every pod,
    and one node fault can restart all of them, so the budget scales with the node count."""
    return pool.nodes * stack.launch.fault_tolerance.job_restarts


def torchrun_max_restarts(stack: Stack) -> int:
    """Worker-group restarts each torchrun agent performs in place (PET_MAX_RESTARTS)."""
    return stack.launch.fault_tolerance.torchrun_max_restarts


def image_warnings(image: str) -> list[str]:
    """A warning when the image reference can change under a running job (`:latest` or no
    tag): a restarted pod could pull a different build than its peers. Digests are fine."""
    if not image or _DIGEST_RE.search(image):
        return []
    last = image.rsplit("/", 1)[-1]
    tag = last.split(":", 1)[1] if ":" in last else None
    if tag is None or tag == "latest":
        what = "no tag (it means :latest)" if tag is None else "the tag ':latest'"
        return [
            f"image {image} has {what}, which moves: pods restarted later may pull a "
            "different build than their peers; pin a version tag or a digest (@sha256:...)"
        ]
    return []
