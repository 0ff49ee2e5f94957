"""UltraServer (trn2u) jobs through the Neuron DRA driver: every pod of the training job, the
indexed Job, the fabric test and the trial claims its whole UltraServer node from a rendered
ResourceClaimTemplate and requests no `aws.amazon.com/neuron` (the device plugin is off on
those nodes, so such a pod would stay Pending); Kueue counts the claims. The stack is built
through a catalog overlay with a user-supplied Capacity Block rate (tests/render/test_neuron_allocation.py)."""

from __future__ import annotations

import dataclasses
from typing import Any

import kubernetes_validate
import pytest
import yaml

from accelstack.catalog import load_catalog
from accelstack.render import RenderError, render
from accelstack.render.artifacts import check_device_path, render_manifest, render_shared
from accelstack.render.trial import render_trial
from accelstack.resolve import Stack, resolve
from accelstack.resolve.queue import kueue_configuration
from accelstack.spec import parse_spec

from ..helpers_upstream import model_problems
from .test_neuron_allocation import TRN2U_PRICE, mixed

DEVICE_PLUGIN_RESOURCE = "aws.amazon.com/neuron"
EFA = "vpc.amazonaws.com/efa"

# The DRA claim as the Neuron docs define it for trn2u.48xlarge, restated with its source
# (aws-neuron/aws-neuron-sdk@3afa0fdf deploy/eks/dra.rst): the DeviceClass (:459, and
# aws-neuron/neuron-helm-charts@97e1b7d3 dra-driver-deviceclass.yaml:5), the node selector
# (:462), ExactCount 1 (:463-464), the opaque config's driver and parameters (:468-472), the
# modes 1, 2 or 4 (:439) and the exclusive-topology node label (:479).
DOC_DEVICE_CLASS = "neuron.aws.com"
DOC_SELECTOR = "device.attributes['neuron.aws.com'].resourceType == 'neuron_node'"
DOC_PARAMETER_KEYS = {"apiVersion", "kind", "ultraserverMode"}
DOC_PARAMETERS = {"apiVersion": "neuron.aws.com/v1", "kind": "UltraServerConfig"}
DOC_MODES = {1, 2, 4}
DOC_SERVER_LABEL = "neuron.amazonaws.com/ultraserver-server-id-4"
ULTRASERVER_JOB = "accelstack.io/ultraserver-job"


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Any:
    d = tmp_path_factory.mktemp("overlay")
    trn2 = {**TRN2U_PRICE, "type": "trn2.48xlarge", "option": "on-demand"}
    (d / "prices.yaml").write_text(yaml.safe_dump({"instances": [TRN2U_PRICE, trn2]}))
    return load_catalog(overlay=d)


def trn2u_stack(catalog: Any, **jobs: Any) -> Stack:
    """Two trn2u UltraServers (8 nodes) as the workload pool."""
    data = mixed(False)
    data.setdefault("jobs", {})
    data["jobs"] = {**(data["jobs"] or {}), **jobs}
    return resolve(parse_spec(data, "llama3-70b-trn2.yaml"), catalog)


def _docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def _pod_specs(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Every pod spec in a rendered object (Job, TrainingRuntime, PyTorchJob)."""
    out: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "containers" in node:
                out.append(node)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(doc.get("spec"))
    return out


def _check_claims(text: str, shared: str, version: str) -> int:
    """Every pod in the job file `text` claims one of the shared file's ResourceClaimTemplates
    (the job file carries none of its own) and requests no device-plugin resource; returns how
    many pod specs were checked."""
    docs = _docs(text)
    assert "ResourceClaimTemplate" not in [d["kind"] for d in docs]
    templates = {d["metadata"]["name"]: d for d in _docs(shared)}
    assert {d["kind"] for d in templates.values()} == {"ResourceClaimTemplate"}
    named = {
        c["resourceClaimTemplateName"]
        for d in docs
        for p in _pod_specs(d)
        for c in p.get("resourceClaims", [])
    }
    assert len(named) == 1 and named <= set(templates), (named, set(templates))
    rct = templates[named.pop()]
    kubernetes_validate.validate(rct, version, strict=True)
    (req,) = rct["spec"]["spec"]["devices"]["requests"]
    assert req["exactly"]["deviceClassName"] == DOC_DEVICE_CLASS
    assert req["exactly"]["selectors"] == [{"cel": {"expression": DOC_SELECTOR}}]
    assert (req["exactly"]["allocationMode"], req["exactly"]["count"]) == ("ExactCount", 1)
    (cfg,) = rct["spec"]["spec"]["devices"]["config"]
    assert cfg["requests"] == [req["name"]] and cfg["opaque"]["driver"] == DOC_DEVICE_CLASS
    params = cfg["opaque"]["parameters"]
    assert set(params) == DOC_PARAMETER_KEYS and params["ultraserverMode"] in DOC_MODES
    assert {k: params[k] for k in DOC_PARAMETERS} == DOC_PARAMETERS
    pods = [p for d in docs for p in _pod_specs(d)]
    assert pods
    for pod in pods:
        claims = {c["name"]: c["resourceClaimTemplateName"] for c in pod["resourceClaims"]}
        assert claims == {req["name"]: rct["metadata"]["name"]}
        for c in pod["containers"]:
            res = c["resources"]
            assert [x["name"] for x in res["claims"]] == [req["name"]]
            for kind in ("limits", "requests"):
                assert DEVICE_PLUGIN_RESOURCE not in res.get(kind, {}), (kind, res)
                assert res[kind][EFA] == 16  # the EFA device plugin still serves EFA
    return len(pods)


@pytest.mark.slow
def test_trn2u_pods_claim_their_ultraserver_node_instead_of_the_device_plugin(
    catalog: Any,
) -> None:
    stack = trn2u_stack(catalog)
    version = stack.kubernetes_version
    files = {a.path: a.content for a in render(stack)}
    assert {"shared.yaml", "trainjob.yaml", "job.yaml", "fabric-test.yaml"} <= set(files)
    for name in ("trainjob.yaml", "job.yaml", "fabric-test.yaml"):
        assert _check_claims(files[name], files["shared.yaml"], version) >= 1, name
        for d in _docs(files[name]):
            if d["kind"] in ("TrainJob", "TrainingRuntime"):
                assert model_problems(d) == [], (name, d["kind"])
            elif d["kind"] in ("Job", "Service", "ConfigMap", "NetworkPolicy"):
                kubernetes_validate.validate(d, version, strict=True)
    # the TrainingRuntime's pod templates, as the Jobs JobSet creates from them
    (rt,) = [d for d in _docs(files["trainjob.yaml"]) if d["kind"] == "TrainingRuntime"]
    for rj in rt["spec"]["template"]["spec"]["replicatedJobs"]:
        job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x"}}
        kubernetes_validate.validate({**job, "spec": rj["template"]["spec"]}, version, True)
    # the legacy PyTorchJob path carries the same pod template
    assert _check_claims(render_manifest(stack, "pytorchjob"), files["shared.yaml"], version) >= 1


def test_a_job_over_two_ultraservers_uses_mode_four_and_keeps_other_jobs_off(
    catalog: Any,
) -> None:
    """8 nodes = 2 whole UltraServers: UltraServerConfig mode 4 (the UltraServer's size); as
    Neuron's multi-UltraServer recipe places a job (ultraserver.rst:251-292): required
    anti-affinity against other jobs' pods and preferred affinity to its own, on the server
    label. Fails on the old render, which placed a multi-server job with no constraint."""
    stack = trn2u_stack(catalog)
    text = render_manifest(stack, "job")
    (job,) = [d for d in _docs(text) if d["kind"] == "Job"]
    (claim,) = job["spec"]["template"]["spec"]["resourceClaims"]
    shared = {d["metadata"]["name"]: d for d in _docs(render_shared(stack) or "")}
    rct = shared[claim["resourceClaimTemplateName"]]
    cfg = rct["spec"]["spec"]["devices"]["config"][0]["opaque"]["parameters"]
    assert cfg["ultraserverMode"] == stack.workload_pool.ultraserver.instances == 4
    assert job["spec"]["completions"] == stack.workload_pool.nodes == 8
    pod = job["spec"]["template"]
    assert pod["metadata"]["labels"][ULTRASERVER_JOB] == job["metadata"]["name"]
    aff = pod["spec"]["affinity"]
    (anti,) = aff["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert anti["topologyKey"] == DOC_SERVER_LABEL
    (pref,) = aff["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert pref["weight"] == 100 and pref["podAffinityTerm"]["topologyKey"] == DOC_SERVER_LABEL
    assert "requiredDuringSchedulingIgnoredDuringExecution" not in aff["podAffinity"]
    # the anti-affinity selects other jobs' UltraServer pods only: not this job's, not a pod
    # without the label (a DaemonSet's, a job on another pool)
    own = job["metadata"]["name"]
    assert _selects(anti["labelSelector"], {ULTRASERVER_JOB: f"{own}-trial-trn2"})
    assert not _selects(anti["labelSelector"], {ULTRASERVER_JOB: own})
    assert not _selects(anti["labelSelector"], {"app.kubernetes.io/name": "neuron-dra-driver"})


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A metav1.LabelSelector against a pod's labels (matchLabels and the four operators,
    k8s.io/apimachinery pkg/labels/selector.go)."""
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for e in selector.get("matchExpressions", []):
        key, op, values = e["key"], e["operator"], e.get("values", [])
        ok = {
            "In": key in labels and labels[key] in values,
            "NotIn": key not in labels or labels[key] not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }[op]
        if not ok:
            return False
    return True


@pytest.mark.parametrize(("nodes", "mode", "together"), [(1, 1, False), (4, 4, True)])
def test_trial_claims_one_node_or_one_whole_ultraserver(
    catalog: Any, nodes: int, mode: int, together: bool
) -> None:
    stack = trn2u_stack(catalog)
    arts = {a.path: a.content for a in render_trial(stack, 5, nodes=nodes)}
    (text,) = [c for p, c in arts.items() if p.endswith(".yaml") and p != "shared.yaml"]
    assert _check_claims(text, arts["shared.yaml"], stack.kubernetes_version) >= 1
    shared = {d["metadata"]["name"]: d for d in _docs(arts["shared.yaml"])}
    (name,) = {
        c["resourceClaimTemplateName"]
        for d in _docs(text)
        for p in _pod_specs(d)
        for c in p["resourceClaims"]
    }
    rct = shared[name]
    assert (
        rct["spec"]["spec"]["devices"]["config"][0]["opaque"]["parameters"]["ultraserverMode"]
        == mode
    )
    for pod in [p for d in _docs(text) for p in _pod_specs(d)]:
        aff = pod.get("affinity", {})
        if together:
            (term,) = aff["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            assert term["topologyKey"] == DOC_SERVER_LABEL
            (anti,) = aff["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            assert anti["topologyKey"] == DOC_SERVER_LABEL
        else:
            assert aff == {}  # a one-node trial (mode 1) uses no NeuronLink peer


def test_trial_refuses_node_counts_that_split_ultraservers(catalog: Any) -> None:
    stack = trn2u_stack(catalog)
    with pytest.raises(RenderError, match=r"a trial there takes 1, 4 or all 8 nodes"):
        render_trial(stack, 5, nodes=2)


def test_kueue_counts_the_claims(catalog: Any) -> None:
    """Kueue (v0.19.2, KueueDRAIntegration on by default) counts a ResourceClaimTemplate's
    devices only under a deviceClassMappings name; the ClusterQueue's quota for the pool is in
    that name, one per node, and holds no device-plugin resource."""
    from components.job_controller import cluster_queue_spec, flavor_name

    stack = trn2u_stack(catalog, kueue=True)
    chart = stack.catalog.charts["kueue"]
    dra = stack.workload_pool.ultraserver.dra
    conf = kueue_configuration(stack, chart)
    assert conf["resources"]["deviceClassMappings"] == [
        {"name": dra.kueue_resource, "deviceClassNames": [DOC_DEVICE_CLASS]}
    ]
    assert "waitForPodsReady" in conf
    cq = cluster_queue_spec(stack, "training")
    (group,) = cq["resourceGroups"]
    assert dra.kueue_resource in group["coveredResources"]
    assert DEVICE_PLUGIN_RESOURCE not in group["coveredResources"]
    (flavor,) = [f for f in group["flavors"] if f["name"] == flavor_name(stack, "trn2")]
    quota = {r["name"]: r["nominalQuota"] for r in flavor["resources"]}
    assert quota[dra.kueue_resource] == str(stack.workload_pool.nodes)
    # the job's pods are queued and claim what the quota covers
    tj = [d for d in _docs(render_manifest(stack, "trainjob")) if d["kind"] == "TrainJob"]
    assert tj[0]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == stack.queue_name


def test_an_ultraserver_type_without_dra_facts_is_still_refused(catalog: Any) -> None:
    """A catalog UltraServer row without its DRA claim facts: no manifest, one line naming
    where the facts belong."""
    pool = trn2u_stack(catalog).workload_pool
    assert pool.ultraserver is not None
    bare = dataclasses.replace(pool, ultraserver=pool.ultraserver.model_copy(update={"dra": None}))
    with pytest.raises(RenderError, match=r"ultraservers\.trn2u\.48xlarge\.dra") as e:
        check_device_path(trn2u_stack(catalog), bare)
    assert "\n" not in str(e.value)


def test_the_catalog_restates_the_docs(catalog: Any) -> None:
    us = catalog.scale.ultraservers["trn2u.48xlarge"]
    assert us.dra is not None
    assert (us.dra.device_class, us.dra.selector) == (DOC_DEVICE_CLASS, DOC_SELECTOR)
    assert (us.dra.config_api_version, us.dra.config_kind) == tuple(DOC_PARAMETERS.values())
    assert set(us.dra.modes) == DOC_MODES and us.dra.server_label == DOC_SERVER_LABEL
    assert "dra.rst" in us.dra.source


def test_the_planned_stack_serves_what_the_pods_claim_and_request(catalog: Any) -> None:
    """Under Pulumi mocks: the Kueue release's configuration maps the DeviceClass the claims
    name, the planned ClusterQueue covers that resource, and the EFA device plugin serves the
    UltraServer nodes (the pods still request vpc.amazonaws.com/efa)."""
    from ..helpers_plan import plan_stack

    stack = trn2u_stack(catalog, kueue=True)
    plan = plan_stack(stack, guard=False)
    releases = plan.of_type("kubernetes:helm.sh/v3:Release")
    (kueue,) = [r for r in releases if r.name.endswith("-jobs-kueue")]
    conf = yaml.safe_load(kueue.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
    dra = stack.workload_pool.ultraserver.dra
    assert {"name": dra.kueue_resource, "deviceClassNames": [DOC_DEVICE_CLASS]} in conf[
        "resources"
    ]["deviceClassMappings"]
    (cq,) = plan.of_type("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue")
    assert dra.kueue_resource in cq.inputs["spec"]["resourceGroups"][0]["coveredResources"]
    (efa,) = [r for r in releases if r.name.endswith("-efa")]
    assert (
        stack.workload_pool.instance_type
        in efa.inputs["values"]["supportedInstanceLabels"]["values"]
    )


def test_the_allocation_label_is_in_the_nodeadm_flags(catalog: Any) -> None:
    """With `labels_at_boot` (what `new` and `init` write), the DRA driver's nodeSelector label
    accelstack.io/neuron-allocation=dra is there from the moment an UltraServer node
    registers (with a custom AMI, EKS applies the node group's labels asynchronously); without
    it, only the pool's own labels, as specs written before the setting boot."""
    import base64
    import json

    from ..helpers_plan import plan_stack

    def registered(labels_at_boot: bool) -> tuple[dict[str, str], Any]:
        data = mixed(False)
        for pool in data["pools"]:
            pool["labels_at_boot"] = labels_at_boot
        plan = plan_stack(resolve(parse_spec(data, "llama3-70b-trn2.yaml"), catalog), guard=False)
        (lt,) = [
            r
            for r in plan.of_type("aws:ec2/launchTemplate:LaunchTemplate")
            if r.name.endswith("-trn2-lt")
        ]
        text = base64.b64decode(lt.inputs["userData"]).decode()
        doc = json.loads(text.split("application/node.eks.aws\n\n", 1)[1].split("\n\n--", 1)[0])
        (flag,) = [f for f in doc["spec"]["kubelet"]["flags"] if f.startswith("--node-labels=")]
        labels = dict(kv.split("=", 1) for kv in flag.removeprefix("--node-labels=").split(","))
        return labels, plan

    labels, plan = registered(True)
    assert labels["accelstack.io/neuron-allocation"] == "dra"
    assert "accelstack.io/neuron-allocation" not in registered(False)[0]
    # the node group carries every label the node registers with
    (ng,) = [r for r in plan.of_type("aws:eks/nodeGroup:NodeGroup") if r.name.endswith("-trn2-ng")]
    assert {k: v for k, v in ng.inputs["labels"].items() if k in labels} == labels
