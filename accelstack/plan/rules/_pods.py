"""The pods a rendered job runs, as the scheduler reads them: from a rendered file's documents,
each pod template with the number of pods its controller makes of it, and what each pod
requests (containers' requests, a ResourceClaimTemplate's devices from `shared.yaml`), selects
and tolerates. Pure: YAML text in, `placement.Pod`s out."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from accelstack.catalog.yamlread import SafeLoader
from accelstack.naming import POOL_LABEL
from accelstack.plan.placement import Claim, Pod

Doc = dict[str, Any]

#: Binary and decimal suffixes of a resource.Quantity (k8s.io/apimachinery
#: pkg/api/resource/quantity.go), as multiples of one byte.
_SUFFIX = {
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40,
    "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "": 1,
}  # fmt: skip
_QUANTITY = re.compile(r"^([0-9.]+)(m|Ki|Mi|Gi|Ti|k|M|G|T)?$")
#: Resources counted in MiB (memory and huge pages), in millicores (cpu); the rest in units.
_MIB = ("memory", "hugepages-")


def quantity(resource: str, value: object) -> int:
    """A request as the placement model counts it: cpu in millicores, memory and huge pages
    in MiB (rounded up), anything else in units."""
    match = _QUANTITY.match(str(value))
    if match is None:
        raise ValueError(f"{resource}: {value!r} is not a quantity")
    number, suffix = float(match.group(1)), match.group(2) or ""
    if resource == "cpu":
        return round(number if suffix == "m" else number * 1000)
    if resource.startswith(_MIB):
        return -(-int(number * _SUFFIX[suffix]) // 2**20)
    return int(number * _SUFFIX.get(suffix, 1))


def _requests(spec: Doc) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in spec.get("containers") or []:
        res = c.get("resources") or {}
        wanted = {**(res.get("limits") or {}), **(res.get("requests") or {})}
        for name, value in wanted.items():
            out[name] = out.get(name, 0) + quantity(name, value)
    return out


def _claims(spec: Doc, templates: Mapping[str, Doc]) -> tuple[Claim, ...]:
    """Each device request of the ResourceClaimTemplates the pod names (an unknown template
    becomes a claim no node can meet)."""
    out = []
    for rc in spec.get("resourceClaims") or []:
        template = templates.get(str(rc.get("resourceClaimTemplateName")))
        if template is None:
            out.append(
                Claim(f"missing ResourceClaimTemplate {rc.get('resourceClaimTemplateName')}", "", 1)
            )
            continue
        for req in template["spec"]["spec"]["devices"]["requests"]:
            exactly = req.get("exactly") or {}
            selectors = [s["cel"]["expression"] for s in exactly.get("selectors") or []]
            out.append(
                Claim(
                    str(exactly.get("deviceClassName")),
                    selectors[0] if selectors else "",
                    int(exactly.get("count", 1)),
                )
            )
    return tuple(out)


def pod(name: str, template: str, pod_template: Doc, claims: Mapping[str, Doc]) -> Pod:
    """One pod of a pod template (`metadata` and `spec`)."""
    spec = pod_template.get("spec") or {}
    aff = spec.get("affinity") or {}
    pa, anti = aff.get("podAffinity") or {}, aff.get("podAntiAffinity") or {}
    node = (aff.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    return Pod(
        name=name,
        template=template,
        labels=dict((pod_template.get("metadata") or {}).get("labels") or {}),
        requests=_requests(spec),
        node_selector=dict(spec.get("nodeSelector") or {}),
        node_affinity=tuple((node or {}).get("nodeSelectorTerms") or []),
        tolerations=tuple(spec.get("tolerations") or []),
        affinity=tuple(pa.get("requiredDuringSchedulingIgnoredDuringExecution") or []),
        anti_affinity=tuple(anti.get("requiredDuringSchedulingIgnoredDuringExecution") or []),
        preferred=tuple(
            (int(p["weight"]), p["podAffinityTerm"])
            for p in pa.get("preferredDuringSchedulingIgnoredDuringExecution") or []
        ),
        claims=_claims(spec, claims),
    )


@dataclass(frozen=True)
class Job:
    """One rendered job: the file, its name, its pods in the order they are made, and the pool
    its pods select."""

    file: str
    name: str
    pods: tuple[Pod, ...]
    pool: str | None


def _trainer_counts(trainjob: Doc, runtime: Doc) -> dict[str, int]:
    """Pods per replicated Job as Kubeflow Trainer makes them: the torch plugin gives `node`
    the TrainJob's numNodes (kubeflow/trainer@658725bd pkg/runtime/framework/plugins/torch/
    torch.go:117-118); the MPI plugin with runLauncherAsNode gives `node` max(numNodes - 1, 1)
    and the launcher 1 (mpi.go:117-124)."""
    policy = runtime["spec"]["mlPolicy"]
    nodes = (trainjob["spec"].get("trainer") or {}).get("numNodes") or policy.get("numNodes", 1)
    mpi = policy.get("mpi") or {}
    out = {}
    for rj in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        if rj["name"] == "launcher":
            out[rj["name"]] = 1
        elif mpi.get("runLauncherAsNode"):
            out[rj["name"]] = max(int(nodes) - 1, 1)
        else:
            out[rj["name"]] = int(nodes)
    return out


def _templates(docs: list[Doc]) -> Iterator[tuple[str, Doc, int]]:
    """(role, pod template, pods made of it) of every job in one file's documents."""
    runtimes = {d["metadata"]["name"]: d for d in docs if d["kind"] == "TrainingRuntime"}
    for d in docs:
        if d["kind"] == "TrainJob":
            rt = runtimes[d["spec"]["runtimeRef"]["name"]]
            counts = _trainer_counts(d, rt)
            for rj in rt["spec"]["template"]["spec"]["replicatedJobs"]:
                yield rj["name"], rj["template"]["spec"]["template"], counts[rj["name"]]
        elif d["kind"] == "PyTorchJob":
            for role, rs in d["spec"]["pytorchReplicaSpecs"].items():
                yield role.lower(), rs["template"], int(rs.get("replicas", 1))
        elif d["kind"] == "Job":
            spec = d["spec"]
            yield "pod", spec["template"], int(spec.get("parallelism", spec.get("completions", 1)))


def jobs(files: Mapping[str, str], claims: Mapping[str, Doc]) -> list[Job]:
    """Every job of the rendered files (file -> YAML text): its pods, in order."""
    out = []
    for path, text in files.items():
        docs = [d for d in yaml.load_all(text, Loader=SafeLoader) if d]
        pods: list[Pod] = []
        name = next((d["metadata"]["name"] for d in docs if d["kind"] in _JOB_KINDS), path)
        for role, template, count in _templates(docs):
            pods += [pod(f"{role}-{i}", f"{path}:{role}", template, claims) for i in range(count)]
        if pods:
            pool = pods[0].node_selector.get(POOL_LABEL)
            out.append(Job(path, name, tuple(pods), pool))
    return out


_JOB_KINDS = ("TrainJob", "PyTorchJob", "Job")
