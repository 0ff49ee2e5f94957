"""The objects several of a stack's jobs use, each rendered once in a file of its own
(`shared.yaml`, templates/shared.yaml.j2) with its own lifecycle: applied once before any job,
never carried by a job's file, so deleting a job or its file (a finished fabric test, a trial, a
job re-applied after an immutable change) never deletes what another job needs. Today: the
ResourceClaimTemplates of the UltraServer pools (the training job, the fabric test and the
trials name them)."""

from __future__ import annotations

from accelstack import naming
from accelstack.errors import AccelstackError
from accelstack.resolve import Stack

#: The file of the shared objects.
SHARED_FILE = "shared.yaml"
#: The claim's name in each pod and in the ResourceClaimTemplate's device request.
NEURON_CLAIM = "neurons"


def shared_claims(stack: Stack) -> list[dict[str, object]]:
    """The claim of every ResourceClaimTemplate a job of the stack may name (the `neuron_claim`
    context of `_claim.yaml.j2`): per UltraServer pool with DRA facts, the modes its jobs take,
    one node (1) and whole UltraServers (the server's size), as `ultraserver_mode` picks them
    for the training job, the fabric test and the trials. One template per name: two pools that
    would need different claims under one name are refused."""
    out: dict[str, dict[str, object]] = {}
    for p in stack.ultraserver_pools:
        us = p.ultraserver
        if us is None or us.dra is None:
            continue
        for mode in sorted({1, us.instances} & set(us.dra.modes)):
            name = naming.ultraserver_claim_template(stack.name, mode)
            if name in out and out[name]["dra"] != us.dra:
                raise AccelstackError(
                    f"pool '{p.name}' ({p.instance_type}) needs another claim than an earlier "
                    f"UltraServer pool under the one name {name}: put it in another stack"
                )
            out[name] = {"template": name, "request": NEURON_CLAIM, "mode": mode, "dra": us.dra}
    return list(out.values())


def has_shared_objects(stack: Stack) -> bool:
    """Whether a render of the stack writes `shared.yaml`."""
    return stack.orchestration == "eks" and bool(shared_claims(stack))
