"""The admission rules accelstack's rendered jobs rely on, restated from their sources so tests
can apply them to rendered manifests the way the cluster would. Each rule names its source
(repo@commit file:line); nothing here is copied from upstream.

The names are computed from the rendered documents alone (never from accelstack's own naming
helpers), so a test using them checks the renderer against the controllers, not against
itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import yaml

Doc = dict[str, Any]

#: k8s.io/apimachinery pkg/util/validation/validation.go: DNS1035LabelMaxLength = 63,
#: dns1035LabelFmt = "[a-z]([-a-z0-9]*[a-z0-9])?"; label values at most 63 characters.
DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
DNS_LABEL_MAX = 63
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


def docs(text: str) -> list[Doc]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def dns1035_problems(name: str) -> list[str]:
    out = []
    if len(name) > DNS_LABEL_MAX:
        out.append(f"{name!r}: must be no more than 63 characters")
    if not DNS1035.fullmatch(name):
        out.append(f"{name!r}: not a DNS-1035 label")
    return out


def _pod_counts(trainjob: Doc, runtime: Doc) -> dict[str, int]:
    """Pods per replicated Job as Trainer sets them: the torch plugin's `node` gets numNodes;
    the MPI plugin with runLauncherAsNode gives `node` max(numNodes - 1, 1) and the launcher 1
    (kubeflow/trainer@658725bd pkg/runtime/framework/plugins/mpi/mpi.go:117-124)."""
    policy = runtime["spec"]["mlPolicy"]
    nodes = trainjob["spec"].get("trainer", {}).get("numNodes") or policy.get("numNodes", 1)
    out = {}
    for rj in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        if rj["name"] == "launcher":
            out[rj["name"]] = 1
        elif "mpi" in policy and policy["mpi"].get("runLauncherAsNode"):
            out[rj["name"]] = max(nodes - 1, 1)
        else:
            out[rj["name"]] = nodes
    return out


def jobset_webhook_problems(trainjob: Doc, runtime: Doc) -> list[str]:
    """JobSet's create webhook on the JobSet Trainer builds from `trainjob` and `runtime`.

    Trainer names the JobSet after the TrainJob (kubeflow/trainer@658725bd
    pkg/runtime/framework/plugins/jobset/jobset.go:413) and its Service after it too
    (jobset.go:281, the default subdomain). JobSet's webhook (kubernetes-sigs/jobset@f22e565a
    pkg/webhooks/jobset_webhook.go): the longest Job name `<jobset>-<rjob>-<replicas-1>` is a
    DNS-1035 label (:234-242); for an indexed Job, the longest pod name
    `<jobset>-<rjob>-<replicas-1>-<completions-1>` plus "-abcde" is one too (:243-256); a
    replicated Job other than the first may depend only on an earlier one, the first on none
    (ValidateCreate, DependsOn checks); successPolicy targets name replicated Jobs."""
    js = trainjob["metadata"]["name"]
    spec = runtime["spec"]["template"]["spec"]
    out = dns1035_problems(js)  # the Service (subdomain) named after it
    counts = _pod_counts(trainjob, runtime)
    seen: list[str] = []
    for i, rj in enumerate(spec["replicatedJobs"]):
        replicas = rj.get("replicas", 1)
        out += dns1035_problems(f"{js}-{rj['name']}-{replicas - 1}")
        mode = rj["template"]["spec"].get("completionMode", "Indexed")  # JobSet's default
        if mode == "Indexed":
            pod = f"{js}-{rj['name']}-{replicas - 1}-{counts[rj['name']] - 1}-abcde"
            out += dns1035_problems(pod)
        for dep in rj.get("dependsOn") or []:
            if i == 0 or dep["name"] not in seen:
                out.append(f"replicatedJob {rj['name']} cannot depend on {dep['name']}")
        seen.append(rj["name"])
    for target in (spec.get("successPolicy") or {}).get("targetReplicatedJobs", []):
        if target not in seen:
            out.append(f"successPolicy target {target} is not a replicatedJob")
    return out


#: The env names Trainer's torch plugin sets itself (kubeflow/trainer@658725bd
#: pkg/constants/constants.go:191-203, the set at :300 TorchRunReservedEnvNames).
TORCH_RESERVED_ENV = frozenset(
    {"PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT"}
)


def trainer_webhook_problems(trainjob: Doc, runtime: Doc) -> list[str]:
    """Trainer's TrainJob webhook, torch plugin (kubeflow/trainer@658725bd
    pkg/runtime/framework/plugins/torch/torch.go:65-77): with a torch runtime, spec.trainer.env
    must not set a reserved PET_* name. The plugin also upserts those names into the runtime's
    `node` container (torch.go:171-174), so one set there would be silently replaced: refused
    here too."""
    if "torch" not in runtime["spec"].get("mlPolicy", {}):
        return []
    env = trainjob["spec"].get("trainer", {}).get("env") or []
    out = [
        f"spec.trainer.env: must not have reserved envs ({e['name']})"
        for e in env
        if e["name"] in TORCH_RESERVED_ENV
    ]
    for rj in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        pod = rj["template"]["spec"]["template"]["spec"]
        for c in pod.get("containers", []):
            for e in c.get("env") or []:
                if rj["name"] == "node" and c["name"] == "node" and e["name"] in TORCH_RESERVED_ENV:
                    out.append(f"runtime container node sets {e['name']}, which Trainer replaces")
    return out


def trainjobs(manifest: str) -> Iterator[tuple[Doc, Doc]]:
    """(TrainJob, the TrainingRuntime it names) in one rendered file."""
    all_docs = docs(manifest)
    runtimes = {d["metadata"]["name"]: d for d in all_docs if d["kind"] == "TrainingRuntime"}
    for d in all_docs:
        if d["kind"] == "TrainJob":
            yield d, runtimes[d["spec"]["runtimeRef"]["name"]]


def indexed_job_problems(manifest: str) -> list[str]:
    """The indexed Job's Service is a DNS-1035 label; with a subdomain the Job controller
    gives pod i the hostname `<job>-<i>`, a DNS label."""
    out = []
    for d in docs(manifest):
        if d["kind"] == "Service":
            out += dns1035_problems(d["metadata"]["name"])
        if d["kind"] == "Job":
            last = d["spec"]["completions"] - 1
            out += dns1035_problems(f"{d['metadata']['name']}-{last}")
    return out


def label_value_problems(manifest: str) -> list[str]:
    """Every label value in every object and pod template: at most 63 characters, the label
    value format (apimachinery validation.go IsValidLabelValue)."""
    out: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            labels = node.get("labels")
            if isinstance(labels, dict) and isinstance(node.get("name", ""), str):
                for k, v in labels.items():
                    v = str(v)
                    if len(v) > DNS_LABEL_MAX or not LABEL_VALUE.fullmatch(v):
                        out.append(f"label {k}={v!r}")
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for d in docs(manifest):
        walk(d)
    return out


def admission_problems(manifest: str) -> list[str]:
    """Everything above for one rendered file."""
    out = label_value_problems(manifest) + indexed_job_problems(manifest)
    for tj, rt in trainjobs(manifest):
        out += jobset_webhook_problems(tj, rt) + trainer_webhook_problems(tj, rt)
    return out
