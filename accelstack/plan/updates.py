"""What `pulumi up` sends to AWS for an edit, and whether AWS accepts it: a pure simulator.

Pulumi's update of one resource (pulumi/pulumi docs, resource option `ignoreChanges`): on
*create* every input is sent as the program gives it; on *update* each input the program lists
in `ignoreChanges` keeps its **stored** value (the state of the last `pulumi up`), the others
take the new value. The bridged EKS provider then sends one `UpdateNodegroupConfig` with the
whole `scalingConfig` (min, max and desired together: terraform-provider-aws
internal/service/eks/node_group.go, `expandNodegroupScalingConfig` on a `scaling_config`
change) and one `UpdateNodegroupVersion` when the launch-template version or the Kubernetes
version changes; FSx `UpdateFileSystem` changes the Lustre throughput tier in place.

Each request is checked against what the API documents: the botocore service model's shapes
(required members, minimums, enums: `botocore.validate`) plus the rules the API states in words
(EKS `NodegroupScalingConfig`: minSize <= desiredSize <= maxSize, EKS answering "Minimum
capacity N can't be greater than desired size M" otherwise, as terraform-aws-modules/
terraform-aws-eks issues #748, #2508 and #3306 report; FSx `PerUnitStorageThroughput`: the
valid values per deployment type, botocore fsx `UpdateFileSystemLustreConfiguration`).

A Kubernetes upgrade is one `UpdateClusterVersion` (the cluster's `version`), which EKS accepts
only one minor version up ("Unsupported Kubernetes minor version update from 1.22 to 1.25":
terraform-aws-modules/terraform-aws-eks#2607) and only while every managed node group runs the
cluster's current version ("If your cluster has managed node groups attached to it, all of your
node groups' Kubernetes versions must match the cluster's Kubernetes version in order to update
the cluster to a new Kubernetes version": botocore eks 2017-11-01 UpdateClusterVersion; EKS
answers "Nodegroups X must be updated to match cluster version 1.18 before updating cluster
version", hashicorp/terraform-provider-aws#19478). `node_group_versions` follows each group
through an update: an EKS-AMI group runs its `version` input (the provider stores the cluster's
when the input is left out, and nothing moves it afterwards), a custom-AMI group the version of
the AMI it launched last (the pinned AMI of the cluster's version: docs/amis.md).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from accelstack import tokens

if TYPE_CHECKING:
    from botocore.model import ServiceModel

#: Node-group inputs updated through UpdateNodegroupConfig, with their API member names.
NODEGROUP_CONFIG = {
    "scalingConfig": "scalingConfig",
    "labels": "labels",
    "taints": "taints",
    "updateConfig": "updateConfig",
    "nodeRepairConfig": "nodeRepairConfig",
}
#: Node-group inputs updated through UpdateNodegroupVersion (the nodes roll).
NODEGROUP_VERSION = ("launchTemplate.version", "version", "releaseVersion")
#: FSx for Lustre PerUnitStorageThroughput values by deployment type (botocore fsx model,
#: UpdateFileSystemLustreConfiguration.PerUnitStorageThroughput documentation).
LUSTRE_THROUGHPUT = {"PERSISTENT_1": (50, 100, 200), "PERSISTENT_2": (125, 250, 500, 1000)}
#: FSx for Lustre SSD storage grows in steps of this many GiB, to more than it has (botocore fsx
#: 2018-03-01 UpdateFileSystemRequest.StorageCapacity: "For SCRATCH_2, PERSISTENT_1, and
#: PERSISTENT_2 SSD deployment types, valid values are in multiples of 2400 GiB. The value must
#: be greater than the current storage capacity.")
LUSTRE_SSD_STEP_GIB = 2400
_PLACEHOLDER = "placeholder"  # the names and ids an update request carries (not simulated)


@dataclass(frozen=True)
class Request:
    """One AWS API request: service, operation and its parameters (API casing)."""

    service: str
    operation: str
    params: dict[str, Any] = field(default_factory=dict)

    def line(self) -> str:
        return f"{self.service} {self.operation} {self.params}"


def get_path(inputs: Mapping[str, Any] | None, dotted: str) -> Any:
    value: Any = inputs
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _set_path(inputs: dict[str, Any], dotted: str, value: Any) -> None:
    *head, last = dotted.split(".")
    node = inputs
    for part in head:
        nxt = node.get(part)
        if not isinstance(nxt, dict):
            nxt = node[part] = {}
        node = nxt
    if value is None:
        node.pop(last, None)
    else:
        node[last] = value


def sent_inputs(
    stored: Mapping[str, Any] | None, new: Mapping[str, Any], ignore: Iterable[str] = ()
) -> dict[str, Any]:
    """The inputs Pulumi hands the provider: `new` on create (`stored` None), else `new` with
    every `ignoreChanges` path taken from `stored`."""
    out = copy.deepcopy(dict(new))
    if stored is None:
        return out
    for path in ignore:
        _set_path(out, path, copy.deepcopy(get_path(stored, path)))
    return out


def operation(
    stored: Mapping[str, Any] | None,
    new: Mapping[str, Any] | None,
    ignore: Iterable[str] = (),
    replace_keys: Iterable[str] = (),
    rtype: str | None = None,
) -> str:
    """'create' | 'delete' | 'replace' | 'update' | 'same' for one resource; `replace_keys` are
    the inputs whose change the provider cannot apply in place (ForceNew); `rtype`: also the
    pinned provider's own table for that type, its conditional replacements included
    (plan/replacements.py)."""
    if new is None:
        return "delete" if stored is not None else "same"
    if stored is None:
        return "create"
    sent = sent_inputs(stored, new, ignore)
    if any(get_path(stored, k) != get_path(sent, k) for k in replace_keys):
        return "replace"
    if rtype is not None:
        from accelstack.plan.replacements import provider_table

        if provider_table().forcing(rtype, stored, sent):
            return "replace"
    return "update" if dict(stored) != sent else "same"


def _scaling(inputs: Mapping[str, Any]) -> dict[str, Any]:
    s = inputs.get("scalingConfig") or {}
    return {k: s.get(k) for k in ("minSize", "maxSize", "desiredSize")}


def nodegroup_requests(stored: Mapping[str, Any] | None, sent: Mapping[str, Any]) -> list[Request]:
    """The EKS requests for one node group: CreateNodegroup, else UpdateNodegroupConfig (the
    config inputs that changed; the whole scalingConfig when any of it changed) and
    UpdateNodegroupVersion (a new launch-template or Kubernetes version)."""
    names = {"clusterName": _PLACEHOLDER, "nodegroupName": _PLACEHOLDER}
    if stored is None:
        create = {"subnets": [_PLACEHOLDER], "nodeRole": _PLACEHOLDER}
        return [
            Request("eks", "CreateNodegroup", {**names, **create, "scalingConfig": _scaling(sent)})
        ]
    out: list[Request] = []
    config = {
        api: sent.get(key)
        for key, api in NODEGROUP_CONFIG.items()
        if stored.get(key) != sent.get(key)
    }
    if config:
        params: dict[str, Any] = {**names}
        if "scalingConfig" in config:
            params["scalingConfig"] = _scaling(sent)
        if "labels" in config:
            params["labels"] = _labels_payload(stored.get("labels"), sent.get("labels"))
        if config.get("nodeRepairConfig") is not None:
            params["nodeRepairConfig"] = config["nodeRepairConfig"]
        out.append(Request("eks", "UpdateNodegroupConfig", params))
    if any(get_path(stored, k) != get_path(sent, k) for k in NODEGROUP_VERSION):
        version = get_path(sent, "launchTemplate.version")
        params = {**names}
        if version is not None:
            params["launchTemplate"] = {"version": str(version)}
        out.append(Request("eks", "UpdateNodegroupVersion", params))
    return out


def _labels_payload(old: Any, new: Any) -> dict[str, Any]:
    a, b = dict(old or {}), dict(new or {})
    payload: dict[str, Any] = {}
    add = {k: str(v) for k, v in b.items() if a.get(k) != v}
    gone = sorted(k for k in a if k not in b)
    if add:
        payload["addOrUpdateLabels"] = add
    if gone:
        payload["removeLabels"] = gone
    return payload


def lustre_requests(stored: Mapping[str, Any] | None, sent: Mapping[str, Any]) -> list[Request]:
    """FSx requests for one Lustre file system: CreateFileSystem, else UpdateFileSystem for a
    throughput tier or a larger storage capacity (both in place: FSx API UpdateFileSystem)."""
    if stored is None:
        return [Request("fsx", "CreateFileSystem", {})]
    lustre: dict[str, Any] = {}
    params: dict[str, Any] = {"FileSystemId": "fs-0123456789abcdef0"}
    if stored.get("perUnitStorageThroughput") != sent.get("perUnitStorageThroughput"):
        lustre["PerUnitStorageThroughput"] = sent.get("perUnitStorageThroughput")
    if stored.get("storageCapacity") != sent.get("storageCapacity"):
        params["StorageCapacity"] = sent.get("storageCapacity")
    if lustre:
        params["LustreConfiguration"] = lustre
    return [Request("fsx", "UpdateFileSystem", params)] if len(params) > 1 else []


PVC = "kubernetes:core/v1:PersistentVolumeClaim"
PV = "kubernetes:core/v1:PersistentVolume"
_STORAGE = "spec.resources.requests.storage"


def claim_requests(stored: Mapping[str, Any] | None, sent: Mapping[str, Any]) -> list[Request]:
    """The Kubernetes patch of a claim whose storage request changes (a create: none modelled)."""
    if stored is None or get_path(stored, _STORAGE) == get_path(sent, _STORAGE):
        return []
    params = {
        "from": get_path(stored, _STORAGE),
        "storage": get_path(sent, _STORAGE),
        "storageClassName": get_path(sent, "spec.storageClassName"),
    }
    return [Request("kubernetes", "PatchPersistentVolumeClaim", params)]


def _gib(quantity: Any) -> float:
    text = str(quantity or "0")
    return float(text[:-2]) if text.endswith("Gi") else float(text or 0)


def _claim_problems(params: Mapping[str, Any]) -> list[str]:
    """Kubernetes grows a bound claim only when a StorageClass that allows expansion provisioned
    it (kubernetes/kubernetes@76434bd62ab6c21818b04c7d21cd06d394b13a28
    plugin/pkg/admission/storage/persistentvolume/resize/admission.go: Validate, allowResize:
    an empty storageClassName never resizes)."""
    if _gib(params.get("storage")) > _gib(params.get("from")) and not params.get(
        "storageClassName"
    ):
        return [
            "only dynamically provisioned pvc can be resized and the storageclass that "
            "provisions the pvc must support resize"
        ]
    return []


def cluster_requests(stored: Mapping[str, Any] | None, sent: Mapping[str, Any]) -> list[Request]:
    """EKS requests for the cluster: UpdateClusterVersion for a new Kubernetes version and
    UpdateClusterConfig for deletion protection (both in place; a create: none modelled)."""
    if stored is None:
        return []
    out = []
    if stored.get("version") != sent.get("version") and sent.get("version") is not None:
        params = {"name": _PLACEHOLDER, "version": str(sent.get("version"))}
        out.append(Request("eks", "UpdateClusterVersion", params))
    if stored.get("deletionProtection") != sent.get("deletionProtection"):
        protect = bool(sent.get("deletionProtection"))
        out.append(
            Request(
                "eks", "UpdateClusterConfig", {"name": _PLACEHOLDER, "deletionProtection": protect}
            )
        )
    return out


def minor_version(version: Any) -> tuple[int, int] | None:
    """(major, minor) of a Kubernetes version such as '1.35'; None for anything else."""
    parts = str(version or "").split(".")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1])


def version_step_problem(current: Any, wanted: Any) -> str | None:
    """EKS moves a control plane one minor version up at a time, never down."""
    a, b = minor_version(current), minor_version(wanted)
    if a is None or b is None or a == b:
        return None
    if b[0] != a[0] or b[1] - a[1] != 1:
        return f"Unsupported Kubernetes minor version update from {current} to {wanted}"
    return None


def lagging_groups(current: Any, groups: Mapping[str, str]) -> list[str]:
    """The managed node groups (name -> the Kubernetes version they run) that keep EKS from
    updating a cluster at `current`: every group must run the cluster's version."""
    return sorted(name for name, v in groups.items() if v != str(current))


def upgrade_problems(current: Any, wanted: Any, groups: Mapping[str, str]) -> list[str]:
    """Why EKS refuses UpdateClusterVersion from `current` to `wanted` (empty: accepted)."""
    out = [p for p in [version_step_problem(current, wanted)] if p]
    lag = lagging_groups(current, groups)
    if lag:
        out.append(
            f"Nodegroups {', '.join(lag)} must be updated to match cluster version {current} "
            "before updating cluster version"
        )
    return out


def node_group_version(
    sent: Mapping[str, Any], before: str | None, cluster_version: str, new_image: bool
) -> str:
    """The Kubernetes version a node group runs after an update: an EKS-AMI group its `version`
    input (left out: the version it had, or the cluster's when it is created now); a custom-AMI
    group (a launch template with its own image, no amiType) the cluster's when it launched a new
    AMI in this update (the pin of the cluster's version) or is created now, else its old one."""
    if sent.get("amiType") or sent.get("version"):
        return str(sent.get("version") or before or cluster_version)
    if new_image or before is None:
        return cluster_version
    return before


def requests_for(
    rtype: str, stored: Mapping[str, Any] | None, sent: Mapping[str, Any]
) -> list[Request]:
    """The modelled AWS (and Kubernetes) requests of one resource's create or update (others:
    none modelled)."""
    if rtype == tokens.CLUSTER:
        return cluster_requests(stored, sent)
    if rtype == tokens.NODE_GROUP:
        return nodegroup_requests(stored, sent)
    if rtype == tokens.LUSTRE:
        return lustre_requests(stored, sent)
    if rtype == PVC:
        return claim_requests(stored, sent)
    if rtype == PV and stored is not None and stored.get("spec") != sent.get("spec"):
        return [Request("kubernetes", "PatchPersistentVolume", {})]
    return []


@functools.cache
def _service_model(service: str) -> ServiceModel:
    """botocore's model of an AWS service: the `service-2` file it ships at its newest API
    version (`limits.model_file`, the file the verdict cache is keyed by), read once per
    process. A botocore session or loader would also search `~/.aws/models`, which the key does
    not cover, and register its ~120 event handlers, none of which a shape check uses."""
    from botocore.model import ServiceModel

    from accelstack.catalog.limits import model_file, read_model

    return ServiceModel(read_model(model_file(service)), service_name=service)


def _shape_problems(req: Request) -> list[str]:
    """botocore's verdict on the request's shape, from the on-disk cache when this botocore has
    judged the same request before (`_verdicts`): importing `botocore.validate` (urllib3, the
    XML parser, ...) cost `accelstack plan` about a tenth of its time."""
    digest = _request_digest(req)
    known = _verdicts(req.service)
    if digest not in known:
        known[digest] = tuple(_validated(req))
        while len(known) > VERDICTS_KEPT:  # the oldest first (dicts keep insertion order)
            del known[next(iter(known))]
        _keep(req.service, known)
    return list(known[digest])


#: The cache kind of botocore's shape verdicts (accelstack/catalog/cache.py), and how many
#: verdicts an entry keeps (a plan asks a handful; the newest are kept)
VERDICTS = "shape-verdicts"
VERDICTS_KEPT = 512


def _request_digest(req: Request) -> str:
    """A request's identity for the verdict cache: its operation and parameters, canonical."""
    text = json.dumps([req.operation, req.params], sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


@functools.cache
def _verdict_entry(service: str) -> str:
    """The cache entry of `service`'s verdicts, named by what a verdict depends on besides the
    request: botocore's model file of the service and its validator module (path, size,
    modification time), found without importing botocore, and this module's source."""
    from accelstack.catalog import cache as disk
    from accelstack.catalog.limits import model_file

    model = model_file(service)
    validator = model.parents[3] / "validate.py"  # botocore/data/<service>/<date>/service-2
    stamps = []
    for path in (model, validator):
        st = path.stat()
        stamps.append((str(path), f"{st.st_size}:{st.st_mtime_ns}".encode()))
    return disk.key(stamps, [Path(__file__)])


@functools.cache
def _verdicts(service: str) -> dict[str, tuple[str, ...]]:
    """The verdicts kept for `service` (request digest -> problems), read once per process."""
    from accelstack.catalog import cache as disk

    hit = disk.read(_verdict_entry(service), kind=VERDICTS)
    return dict(hit) if isinstance(hit, dict) else {}


def _keep(service: str, known: dict[str, tuple[str, ...]]) -> None:
    from accelstack.catalog import cache as disk

    disk.write(_verdict_entry(service), known, kind=VERDICTS)


def _validated(req: Request) -> list[str]:
    """botocore's own validation of the request against the service model's input shape."""
    from botocore.exceptions import ParamValidationError
    from botocore.validate import ParamValidator

    shape = _service_model(req.service).operation_model(req.operation).input_shape
    if shape is None:  # pragma: no cover - every modelled operation takes input
        return []
    try:
        report = ParamValidator().validate(req.params, shape)
    except ParamValidationError as e:  # pragma: no cover - validate() returns a report
        return [str(e)]
    return [report.generate_report()] if report.has_errors() else []


def _scaling_problems(scaling: Mapping[str, Any], per_group: int | None) -> list[str]:
    lo, want, hi = (scaling.get(k) for k in ("minSize", "desiredSize", "maxSize"))
    out = []
    if isinstance(lo, int) and isinstance(want, int) and lo > want:
        out.append(f"Minimum capacity {lo} can't be greater than desired size {want}")
    if isinstance(want, int) and isinstance(hi, int) and want > hi:
        out.append(f"desiredSize {want} can't be greater than maxSize {hi}")
    if per_group is not None and isinstance(hi, int) and hi > per_group:
        out.append(f"maxSize {hi} is over the {per_group} nodes a managed node group allows")
    return out


def problems(
    req: Request, per_group: int | None = None, stored: Mapping[str, Any] | None = None
) -> list[str]:
    """Why AWS would refuse `req` (empty: accepted): the botocore shape, then the documented
    rules. `per_group`: nodes per managed node group (catalog scale limits); `stored`: the
    resource's stored inputs (an FSx file system's deployment type)."""
    if req.service == "kubernetes":
        return _claim_problems(req.params)
    shape = [] if req.params == {} else _shape_problems(req)
    if req.service == "eks" and "scalingConfig" in req.params:
        return shape + _scaling_problems(req.params["scalingConfig"], per_group)
    tier = get_path(req.params, "LustreConfiguration.PerUnitStorageThroughput")
    deployment = (stored or {}).get("deploymentType")
    allowed = LUSTRE_THROUGHPUT.get(str(deployment))
    if tier is not None and allowed and tier not in allowed:
        shape.append(f"PerUnitStorageThroughput {tier} is not one of {allowed} on {deployment}")
    return shape + _capacity_problems(req.params.get("StorageCapacity"), stored or {})


def _capacity_problems(target: Any, stored: Mapping[str, Any]) -> list[str]:
    """FSx for Lustre SSD capacity: only up, in multiples of the step (SCRATCH_1: never)."""
    if target is None or stored.get("storageType", "SSD") != "SSD":
        return []
    current = stored.get("storageCapacity")
    if stored.get("deploymentType") == "SCRATCH_1":
        return ["StorageCapacity: a SCRATCH_1 file system cannot grow"]
    out = []
    if isinstance(current, int) and target <= current:
        out.append(f"StorageCapacity {target} must be greater than the current {current}")
    if target % LUSTRE_SSD_STEP_GIB:
        out.append(f"StorageCapacity {target} is not a multiple of {LUSTRE_SSD_STEP_GIB} GiB")
    return out


def reached(sent: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """The size the program asks for is the size EKS is told to keep."""
    want = get_path(new, "scalingConfig.desiredSize")
    return bool(get_path(sent, "scalingConfig.desiredSize") == want)
